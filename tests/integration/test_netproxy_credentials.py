# SPDX-License-Identifier: MIT
"""Credential masking in the managed network proxy (networkProxy.proxy.credentialMasking and
credentialProviders; /work/notes/credmask-semantics.md, docs/NETWORK-PROXY.md). The command
sees placeholders instead of recognised credentials; the proxy puts the real value back only
into the authorization headers of requests to the credential's destinations. The origins here
record the heads they get and never echo them, so the command's output could only hold the
secret if uexec leaked it."""
import http.server
import os
import json
import re
import threading

import pytest

from test_sandbox import area  # noqa: F401

pytestmark = [pytest.mark.needs_programs("/bin/bash", "/usr/bin/curl")]

REAL = "vendor_abcdefghijklmnopqrstuvwx"
GH_REAL = "ghp_" + "Z" * 36
VENDOR_RE = re.compile(r"^vendor_[a-z]{24}$")


def launch(providers=None, masking=True, domains=None, mode="full", socks=False):
    proxy = {"enabled": True, "enableSocks5": socks, "enableSocks5Udp": False,
             "allowUpstreamProxy": False, "dangerouslyAllowAllUnixSockets": False,
             "mode": mode, "domains": domains or {"127.0.0.1": "allow"},
             "allowLocalBinding": False, "credentialMasking": masking}
    if providers is not None:
        proxy["credentialProviders"] = providers
    return {"proxy": proxy}


class Recorder(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        self.server.heads.append({"path": self.path,
                                  "headers": {k.lower(): v for k, v in self.headers.items()}})
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")

    def log_message(self, *a):
        pass


def recording_origins(tls=None):
    """Yields two recording origins (HTTPS with the ssl context tls), then stops them."""
    out = []
    for _ in range(2):
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
        if tls:
            srv.socket = tls.wrap_socket(srv.socket, server_side=True)
        srv.heads = []
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        out.append(srv)
    yield out
    for srv in out:
        srv.shutdown()
        srv.server_close()


@pytest.fixture
def origins():
    """Two recording origins: [0] the credential's destination, [1] some other host:port."""
    yield from recording_origins()


@pytest.fixture
def dbg(server_factory):
    """A server of its own at debug level: its whole log is searched for the secret."""
    srv = server_factory("--log-level", "debug")
    c = srv.connect()
    c.srv = srv
    yield c
    c.close()


def vendor(port, **extra):
    p = {"env": ["VENDOR_TOKEN"], "patterns": ["^vendor_[a-z]{24}$"],
         "url_prefixes": ["http://127.0.0.1:%d/v1" % port]}
    p.update(extra)
    return {"vendor": p}


def run(client, pid, area, script, np, env=None):
    e = {"PATH": "/usr/bin:/bin", "VENDOR_TOKEN": REAL}
    e.update(env or {})
    client.start(pid, ["/bin/bash", "-c", script], cwd=area.ws, env=e, networkProxy=np)
    r = client.collect(pid)
    assert r.exit_code == 0, r.stderr
    return r.stdout.decode()


def curl(port, path, *headers):
    hs = " ".join('-H "%s"' % h for h in headers)
    return "curl -sS -o /dev/null %s http://127.0.0.1:%d%s; " % (hs, port, path)


def no_secret_anywhere(out, srv):
    assert REAL not in out and GH_REAL not in out
    log = srv.stderr()
    assert REAL.encode() not in log and GH_REAL.encode() not in log


def test_command_sees_placeholders_and_markers(dbg, area, origins):
    port = origins[0].server_address[1]
    out = run(dbg, "env1", area, "env", launch(vendor(port)),
              env={"GH_TOKEN": GH_REAL, "EMB": "https://u:%s@h/x" % REAL, "PLAIN": "hello"})
    env = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    dummy = env["VENDOR_TOKEN"]
    assert VENDOR_RE.match(dummy) and dummy != REAL
    gh = env["GH_TOKEN"]
    assert gh.startswith("ghp_masked") and len(gh) == 40 and re.match(r"^[A-Za-z0-9_]+$", gh)
    assert env["EMB"] == "https://u:%s@h/x" % dummy       # a copy inside a longer value too
    assert env["PLAIN"] == "hello"
    assert env["CODEX_NETWORK_PROXY_CREDENTIAL_BROKER_ACTIVE"] == "1"
    assert json.loads(env["CODEX_NETWORK_PROXY_BROKERED_CREDENTIALS"]) == [
        ["@alias:EMB", dummy], ["@alias:GH_TOKEN", gh], ["@alias:VENDOR_TOKEN", dummy],
        ["GH_TOKEN", gh], ["VENDOR_TOKEN", dummy]]
    no_secret_anywhere(out, dbg.srv)


def test_real_value_goes_only_to_the_bound_destination(dbg, area, origins):
    port, other = (s.server_address[1] for s in origins)
    script = ("echo $VENDOR_TOKEN; " +
              curl(port, "/v1/a", "Authorization: Bearer $VENDOR_TOKEN",
                   "X-Other: $VENDOR_TOKEN") +
              curl(port, "/v1", "Authorization: bearer $VENDOR_TOKEN") +
              curl(port, "/v1x", "Authorization: Bearer $VENDOR_TOKEN") +
              curl(port, "/v2/a", "Authorization: Bearer $VENDOR_TOKEN") +
              curl(port, "/v1/t", "Authorization: token $VENDOR_TOKEN") +
              curl(other, "/v1/a", "Authorization: Bearer $VENDOR_TOKEN"))
    out = run(dbg, "bound", area, script, launch(vendor(port)))
    dummy = out.splitlines()[0]
    assert VENDOR_RE.match(dummy)
    got = {(h["path"], h["headers"].get("authorization"), h["headers"].get("x-other"))
           for h in origins[0].heads}
    assert got == {("/v1/a", "Bearer " + REAL, dummy),     # only the declared header form
                   ("/v1", "bearer " + REAL, None),        # scheme in any case
                   ("/v1x", "Bearer " + dummy, None),      # not the prefix's segment
                   ("/v2/a", "Bearer " + dummy, None),     # outside the prefix
                   ("/v1/t", "token " + dummy, None)}      # a form the provider did not declare
    # another host:port gets the placeholder: the secret never leaves for it
    assert [h["headers"]["authorization"] for h in origins[1].heads] == ["Bearer " + dummy]
    no_secret_anywhere(out, dbg.srv)


def test_basic_and_custom_header_forms(sclient, uniq, area, origins):
    import base64
    port = origins[0].server_address[1]
    basic = vendor(port, auth=["basic"])
    script = ("echo $VENDOR_TOKEN; curl -sS -o /dev/null -u \"user:$VENDOR_TOKEN\" "
              "http://127.0.0.1:%d/v1/b1; curl -sS -o /dev/null -u \"$VENDOR_TOKEN:\" "
              "http://127.0.0.1:%d/v1/b2" % (port, port))
    out = run(sclient, uniq("basic"), area, script, launch(basic))
    assert REAL not in out
    got = sorted((h["path"], base64.b64decode(h["headers"]["authorization"].split()[1]).decode())
                 for h in origins[0].heads)
    assert got == [("/v1/b1", "user:" + REAL), ("/v1/b2", REAL + ":")]
    origins[0].heads.clear()
    header = vendor(port, auth=["header"], header="X-Api-Key", prefix="Key ")
    script = (curl(port, "/v1/h1", "X-Api-Key: Key $VENDOR_TOKEN") +
              curl(port, "/v1/h2", "X-Api-Key: $VENDOR_TOKEN") +
              curl(port, "/v1/h3", "Authorization: Bearer $VENDOR_TOKEN") + "echo $VENDOR_TOKEN")
    out = run(sclient, uniq("hdr"), area, script, launch(header))
    dummy = out.strip()
    got = sorted((h["path"], h["headers"].get("x-api-key"), h["headers"].get("authorization"))
                 for h in origins[0].heads)
    assert got == [("/v1/h1", "Key " + REAL, None), ("/v1/h2", dummy, None),
                   ("/v1/h3", None, "Bearer " + dummy)]


@pytest.mark.parametrize("bad", [
    {"env": []}, {"env": ["VENDOR_TOKEN"]},
    {"env": ["VENDOR_TOKEN"], "patterns": ["^vendor_[a-z]{24}$"]},
    {"env": ["1BAD"], "patterns": ["x+"], "url_prefixes": ["https://x.example"]},
    {"env": ["VENDOR_TOKEN"], "patterns": [".*"], "url_prefixes": ["https://x.example"]},
    {"env": ["VENDOR_TOKEN"], "patterns": ["(["], "url_prefixes": ["https://x.example"]},
    # bounded: repetition counts over 64, or unrolling past the size limit
    {"env": ["VENDOR_TOKEN"], "patterns": ["^vendor_[a-z]{65}$"],
     "url_prefixes": ["https://x.example"]},
    {"env": ["VENDOR_TOKEN"], "patterns": ["^(((vendor_){64}){64}){64}$"],
     "url_prefixes": ["https://x.example"]},

    {"env": ["VENDOR_TOKEN"], "patterns": ["^vendor_[a-z]{24}$"],
     "url_prefixes": ["ftp://x.example"]},
    {"env": ["VENDOR_TOKEN"], "patterns": ["^vendor_[a-z]{24}$"],
     "url_prefixes": ["https://x.example"], "auth": ["header"]},
    {"env": ["VENDOR_TOKEN"], "patterns": ["^vendor_[a-z]{24}$"],
     "url_prefixes": ["https://x.example"], "prefix": "K "},
    {"env": ["GH_TOKEN"], "patterns": ["^vendor_[a-z]{24}$"],
     "url_prefixes": ["https://x.example"]},
])
def test_broken_provider_is_dropped_not_refused(sclient, uniq, area, bad):
    """The reference starts the process and ignores the provider (a warning in its log)."""
    out = run(sclient, uniq("bad"), area, "echo $VENDOR_TOKEN $CODEX_NETWORK_PROXY_CREDENTIAL_"
              "BROKER_ACTIVE", launch({"vendor": bad}))
    assert out == REAL + " 1\n"


def test_case_insensitive_pattern(sclient, uniq, area, origins):
    port = origins[0].server_address[1]
    prov = vendor(port, patterns=["(?i)^VENDOR_[A-Z]{24}$"])
    out = run(sclient, uniq("ci"), area, "echo $VENDOR_TOKEN", launch(prov))
    assert re.match(r"(?i)^vendor_[a-z]{24}$", out.strip()) and out.strip() != REAL


def test_masking_off_leaves_the_environment(sclient, uniq, area, origins):
    port = origins[0].server_address[1]
    out = run(sclient, uniq("off"), area,
              "echo $VENDOR_TOKEN $GH_TOKEN [$CODEX_NETWORK_PROXY_CREDENTIAL_BROKER_ACTIVE]",
              launch(vendor(port), masking=False),
              env={"GH_TOKEN": GH_REAL, "CODEX_NETWORK_PROXY_CREDENTIAL_BROKER_ACTIVE": "1"})
    assert out == "%s %s [1]\n" % (REAL, GH_REAL)


def test_client_markers_are_replaced(sclient, uniq, area, origins):
    port = origins[0].server_address[1]
    out = run(sclient, uniq("mk"), area, "env | grep -c ^CODEX_NETWORK_PROXY_BROKERED; "
              "echo $CODEX_NETWORK_PROXY_BROKERED_CREDENTIALS",
              launch(vendor(port)),
              env={"CODEX_NETWORK_PROXY_BROKERED_CREDENTIALS": '[["VENDOR_TOKEN","forged"]]'})
    count, marker = out.splitlines()
    assert count == "1" and "forged" not in marker


# ---- HTTPS: interception of the bound targets' tunnels ----

def openssl(*args):
    import subprocess
    subprocess.run(["/usr/bin/openssl"] + list(args), check=True, capture_output=True)


@pytest.fixture
def pki(tmp_path):
    """A test CA, a certificate of it for 127.0.0.1, and a roots file: the system's + the CA."""
    d = tmp_path / "pki"
    d.mkdir()
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", str(d / "ca.key"), "-out", str(d / "ca.pem"), "-days", "2",
            "-subj", "/CN=credmask test CA")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", str(d / "leaf.key"), "-out", str(d / "leaf.csr"), "-subj", "/CN=127.0.0.1")
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                               "extendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", str(d / "leaf.csr"), "-CA", str(d / "ca.pem"), "-CAkey",
            str(d / "ca.key"), "-CAcreateserial", "-out", str(d / "leaf.pem"), "-days", "2",
            "-extfile", str(d / "ext.cnf"))
    import ssl
    system = ssl.get_default_verify_paths().cafile
    roots = (open(system).read() if system and os.path.exists(system) else "")
    (d / "roots.pem").write_text(roots + (d / "ca.pem").read_text())
    return d


@pytest.fixture
def tls_origins(pki):
    """Two HTTPS recording origins with certificates of the test CA."""
    import ssl
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(pki / "leaf.pem"), str(pki / "leaf.key"))
    yield from recording_origins(ctx)


def https_vendor(port):
    return {"vendor": {"env": ["VENDOR_TOKEN"], "patterns": ["^vendor_[a-z]{24}$"],
                       "url_prefixes": ["https://127.0.0.1:%d/api" % port]}}


CA_VARS = ["BUNDLE_SSL_CA_CERT", "CARGO_HTTP_CAINFO", "CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE",
           "CODEX_CA_CERTIFICATE", "CURL_CA_BUNDLE", "DENO_CERT", "GIT_SSL_CAINFO",
           "NODE_EXTRA_CA_CERTS", "NPM_CONFIG_CAFILE", "PIP_CERT", "REQUESTS_CA_BUNDLE",
           "SSL_CERT_FILE", "npm_config_cafile"]


@pytest.mark.needs_programs("/usr/bin/openssl")
def test_https_bound_target_is_intercepted(server_factory, tmp_path, area, pki, tls_origins):
    tmp = tmp_path / "srvtmp"
    tmp.mkdir()
    srv = server_factory("--log-level", "debug",
                         env=dict(os.environ, SSL_CERT_FILE=str(pki / "roots.pem"), TMPDIR=str(tmp)))
    c = srv.connect()
    port, other = (s.server_address[1] for s in tls_origins)
    script = ("echo $VENDOR_TOKEN; " + " ".join("echo $%s;" % v for v in CA_VARS) +
              "curl -sS -o /dev/null -o /dev/null -H \"Authorization: Bearer $VENDOR_TOKEN\" "
              "https://127.0.0.1:%d/api/a https://127.0.0.1:%d/api/b; " % (port, port) +
              "curl -sS -o /dev/null -H \"Authorization: Bearer $VENDOR_TOKEN\" "
              "https://127.0.0.1:%d/api/c; " % other +
              "curl -sS -v -o /dev/null https://127.0.0.1:%d/x 2>&1 | grep -i 'issuer:'; "
              "curl -sS -v -o /dev/null https://127.0.0.1:%d/x 2>&1 | grep -i 'issuer:'"
              % (port, other))
    out = run(c, "tls1", area, script, launch(https_vendor(port)))
    lines = out.splitlines()
    dummy, ca_files, issuers = lines[0], lines[1:1 + len(CA_VARS)], lines[1 + len(CA_VARS):]
    assert VENDOR_RE.match(dummy)
    bundle = ca_files[0]
    assert ca_files == [bundle] * len(CA_VARS) and bundle.startswith(str(tmp) + "/")
    # the bound target's certificate is the server's CA's; the other target's is its own
    assert "uexec network proxy MITM CA" in issuers[0] and "credmask test CA" in issuers[1]
    # both requests of the kept-alive intercepted connection carried the real value, verified
    # TLS toward the target; the other target got the placeholder through an opaque tunnel
    assert sorted((h["path"], h["headers"]["authorization"]) for h in tls_origins[0].heads
                  if h["path"].startswith("/api")) == [("/api/a", "Bearer " + REAL),
                                                      ("/api/b", "Bearer " + REAL)]
    assert [h["headers"]["authorization"] for h in tls_origins[1].heads
            if h["path"].startswith("/api")] == ["Bearer " + dummy]
    # on disk: the CA certificate and the bundle in a private directory, never a key
    d = os.path.dirname(bundle)
    assert os.stat(d).st_mode & 0o777 == 0o700
    assert sorted(os.listdir(d)) == ["ca-bundle.pem", "ca.pem"]
    text_ = open(bundle).read()
    assert "PRIVATE KEY" not in text_ and open(os.path.join(d, "ca.pem")).read() in text_
    assert (pki / "ca.pem").read_text() in text_       # the server's own roots are kept
    no_secret_anywhere(out, srv)
    c.close()
    assert srv.terminate() == 0
    assert not os.path.exists(d)                        # removed with the server


@pytest.mark.needs_programs("/usr/bin/openssl")
def test_unverified_target_never_gets_the_secret(server_factory, area, pki, tls_origins):
    """The server does not trust the target's certificate: the intercepted request ends in a
    502 inside the tunnel and nothing reaches the target."""
    srv = server_factory(env=dict(os.environ, SSL_CERT_FILE=str(pki / "ca.key")))  # no roots
    c = srv.connect()
    port = tls_origins[0].server_address[1]
    out = run(c, "tls2", area,
              "curl -sS -w ' %%{http_code}' -H \"Authorization: Bearer "
              "$VENDOR_TOKEN\" https://127.0.0.1:%d/api/a; echo; "
              "curl -sS -w ' %%{http_code}' -H 'Host: other.example' "
              "https://127.0.0.1:%d/api/b" % (port, port), launch(https_vendor(port)))
    assert out == "mitm upstream error 502\nhost mismatch 400"   # the reference's texts
    assert [h for h in tls_origins[0].heads if h["path"].startswith("/api")] == []
    c.close()


@pytest.mark.needs("x86_64", "seccomp", "sandbox")
@pytest.mark.needs_programs("/usr/bin/openssl")
def test_https_interception_in_the_managed_sandbox(server_factory, tmp_path, area, pki,
                                                   tls_origins):
    from test_sandbox import ws_policy
    srv = server_factory(env=dict(os.environ, SSL_CERT_FILE=str(pki / "roots.pem")))
    c = srv.connect()
    port = tls_origins[0].server_address[1]
    c.start("sb1", ["/bin/bash", "-c", "curl -sS -o /dev/null -H \"Authorization: Bearer "
                    "$VENDOR_TOKEN\" https://127.0.0.1:%d/api/s; echo $VENDOR_TOKEN" % port],
            cwd=area.ws, env={"PATH": "/usr/bin:/bin", "VENDOR_TOKEN": REAL},
            sandbox=ws_policy(area.ws, network="enabled"), enforceManagedNetwork=True,
            networkProxy=launch(https_vendor(port)))
    r = c.collect("sb1")
    assert r.exit_code == 0, r.stderr
    assert VENDOR_RE.match(r.stdout.decode().strip())
    assert [h["headers"]["authorization"] for h in tls_origins[0].heads
            if h["path"] == "/api/s"] == ["Bearer " + REAL]
    c.close()


@pytest.mark.needs_programs("/usr/bin/openssl")
def test_limited_mode_intercepts_every_tunnel(server_factory, area, pki, tls_origins):
    """With masking on, limited mode intercepts any HTTPS (not only bound targets) and holds
    the requests inside to the read-only methods, answering as the reference does."""
    srv = server_factory(env=dict(os.environ, SSL_CERT_FILE=str(pki / "roots.pem")))
    c = srv.connect()
    other = tls_origins[1].server_address[1]
    out = run(c, "lim", area,
              "curl -sS -v -o /dev/null https://127.0.0.1:%d/g 2>&1 | grep -i 'issuer:'; "
              "curl -sS -i -X POST https://127.0.0.1:%d/p" % (other, other),
              launch(https_vendor(tls_origins[0].server_address[1]), mode="limited"))
    issuer, rest = out.split("\n", 1)
    assert "uexec network proxy MITM CA" in issuer
    assert rest.startswith("HTTP/1.1 200 OK\r\ndate: ")            # the CONNECT's answer
    inner = rest.split("\r\n\r\n", 1)[1]
    assert inner.startswith("HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\n"
                            "x-proxy-error: blocked-by-method-policy\r\ncontent-length: 35\r\n")
    assert inner.endswith("\r\n\r\nMethod not allowed in limited mode.")
    assert [h["path"] for h in tls_origins[1].heads] == ["/g"]
    c.close()


@pytest.mark.parametrize("argv", [
    ["/bin/sh", "-c", "echo $VENDOR_TOKEN [$CODEX_NETWORK_PROXY_CREDENTIAL_BROKER_ACTIVE]"],
    ["/bin/bash", "-c", "echo $VENDOR_TOKEN [$CODEX_NETWORK_PROXY_CREDENTIAL_BROKER_ACTIVE]",
     "arg0"],
    ["/bin/bash", "--noprofile", "--norc", "-c",
     "echo $VENDOR_TOKEN [$CODEX_NETWORK_PROXY_CREDENTIAL_BROKER_ACTIVE]"],
])
def test_only_the_bash_c_form_is_masked(sclient, uniq, area, origins, argv):
    """The reference masks [bash, -c, script] only (any other startup could bring the real
    values back); other commands run unmasked, the CA variables still set."""
    pid = uniq("form")
    sclient.start(pid, argv, cwd=area.ws, env={"PATH": "/usr/bin:/bin", "VENDOR_TOKEN": REAL},
                  networkProxy=launch(vendor(origins[0].server_address[1])))
    r = sclient.collect(pid)
    assert r.stdout.decode() == REAL + " []\n"


def test_bound_name_resolving_locally_is_refused_before_interception(sclient, uniq, area):
    """An allowlisted name is looked up before the tunnel is answered (the reference's policy
    time): one that resolves to a local address gets the CONNECT refusal, no interception."""
    from test_netproxy import local_name
    name = local_name()
    if not name:
        pytest.skip("no host name resolving to a local address here (the host's own name, "
                    "ip6-localhost)")
    prov = {"vendor": {"env": ["VENDOR_TOKEN"], "patterns": ["^vendor_[a-z]{24}$"],
                       "url_prefixes": ["https://%s:8443/" % name]}}
    out = run(sclient, uniq("rebind"), area,
              "curl -sS -i -p -x \"$HTTP_PROXY\" https://%s:8443/x 2>/dev/null | head -3" % name,
              launch(prov, domains={name: "allow"}))
    assert out.startswith("HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\n"
                          "x-proxy-error: blocked-by-allowlist\r\n"), out


@pytest.mark.needs_programs("/usr/bin/openssl")
def test_socks5_tunnels_to_bound_targets_are_intercepted(server_factory, area, pki, tls_origins,
                                                         origins):
    """Through SOCKS5 too (the reference's): a bound https target is intercepted in TLS, a bound
    http one read as plain HTTP; another target stays an opaque tunnel."""
    srv = server_factory(env=dict(os.environ, SSL_CERT_FILE=str(pki / "roots.pem")))
    c = srv.connect()
    tport, tother = (s.server_address[1] for s in tls_origins)
    hport = origins[0].server_address[1]
    prov = {"vendor": {"env": ["VENDOR_TOKEN"], "patterns": ["^vendor_[a-z]{24}$"],
                       "url_prefixes": ["https://127.0.0.1:%d/api" % tport,
                                        "http://127.0.0.1:%d/v1" % hport]}}
    s5 = "--socks5-hostname \"${ALL_PROXY#socks5h://}\" -H \"Authorization: Bearer $VENDOR_TOKEN\""
    out = run(c, "s5", area,
              "echo $VENDOR_TOKEN; "
              "curl -sS -o /dev/null %s https://127.0.0.1:%d/api/t; " % (s5, tport) +
              "curl -sS -o /dev/null %s http://127.0.0.1:%d/v1/h; " % (s5, hport) +
              "curl -sS -o /dev/null %s https://127.0.0.1:%d/api/o" % (s5, tother),
              launch(prov, socks=True))
    dummy = out.strip()
    assert VENDOR_RE.match(dummy)
    assert [h["headers"]["authorization"] for h in tls_origins[0].heads] == ["Bearer " + REAL]
    assert [h["headers"]["authorization"] for h in origins[0].heads] == ["Bearer " + REAL]
    assert [h["headers"]["authorization"] for h in tls_origins[1].heads] == ["Bearer " + dummy]
    c.close()
