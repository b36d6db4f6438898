# SPDX-License-Identifier: MIT
"""WebSocket listener auth (--ws-auth, RELAY.md §9; issue 16 item 1).

Every status, body and start-up message below was probed on the reference,
`codex exec-server` 0.169.0 (scripts/install-reference.sh, run with a clean
HOME): the 401 texts, the order of the checks (Origin, routing and the
upgrade's own checks come first, then auth), the Authorization header split
and the JWT claim rules. Beyond the reference: /metrics is behind the same
auth, /readyz stays open, and a non-loopback --listen without auth refuses to
start unless --allow-unauthenticated is given.
"""

import base64
import hashlib
import hmac
import json
import os
import time

import pytest

import wsclient
from conftest import HOST, run_once
from wsclient import http_exchange, upgrade_request, headers_dict

TOKEN = "cap-token-6f1d2a9c7e"
SECRET = b"0123456789abcdef0123456789abcdef-hs256-key"


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def jwt(claims, header=None, key=SECRET, tamper=False, raw_claims=None):
    h = b64url(json.dumps(header or {"alg": "HS256", "typ": "JWT"}).encode())
    p = b64url(raw_claims if raw_claims is not None else json.dumps(claims).encode())
    sig = hmac.new(key, (h + "." + p).encode(), hashlib.sha256).digest()
    if tamper:
        sig = bytes([sig[0] ^ 1]) + sig[1:]
    return h + "." + p + "." + b64url(sig)


def upgrade(server, auth=None, path="/", **kw):
    extra = list(kw.pop("extra_headers", ()))
    if auth is not None:
        extra.append(("Authorization", auth))
    req, _ = upgrade_request(server.host, server.port, path=path, extra_headers=extra, **kw)
    return http_exchange(server.host, server.port, req)


def get(server, path, auth=None):
    req = "GET %s HTTP/1.1\r\nHost: x\r\n" % path
    if auth is not None:
        req += "Authorization: %s\r\n" % auth
    return http_exchange(server.host, server.port, (req + "\r\n").encode())


def assert_401(resp, text):
    status, headers, body = resp
    assert status == "HTTP/1.1 401 Unauthorized", (status, body)
    hd = headers_dict(headers)
    assert hd["content-type"] == "text/plain; charset=utf-8"
    assert hd["content-length"] == str(len(text))
    assert body == text.encode()


def assert_101(resp):
    assert resp[0] == "HTTP/1.1 101 Switching Protocols", resp


@pytest.fixture
def token_file(tmp_path):
    p = tmp_path / "token"
    p.write_text("  %s \n" % TOKEN)   # the file's content is trimmed
    os.chmod(p, 0o600)
    return str(p)


@pytest.fixture
def secret_file(tmp_path):
    p = tmp_path / "secret"
    p.write_bytes(SECRET + b"\n")
    os.chmod(p, 0o600)
    return str(p)


@pytest.fixture
def cap_server(server_factory, token_file):
    return server_factory("--ws-auth", "capability-token", "--ws-token-file", token_file,
                          "--log-level", "debug")


@pytest.fixture
def jwt_server(server_factory, secret_file):
    return server_factory("--ws-auth", "signed-bearer-token", "--ws-shared-secret-file",
                          secret_file, "--ws-issuer", "iss-1", "--ws-audience", "aud-1",
                          "--ws-max-clock-skew-seconds", "10", "--log-level", "debug")


# ---- capability token


@pytest.mark.parametrize("value,text", [
    (None, "missing websocket bearer token"),
    ("", "invalid authorization header"),
    ("Bearer", "invalid authorization header"),
    ("Basic " + TOKEN, "invalid authorization header"),
    ("Bearer\t" + TOKEN, "invalid authorization header"),
    ("Bearer" + TOKEN, "invalid authorization header"),
    ("Bearer wrong-token", "invalid websocket bearer token"),
    ("Bearer " + TOKEN + " extra", "invalid websocket bearer token"),
    ("Bearer " + TOKEN[:-1], "invalid websocket bearer token"),
])
def test_capability_token_failures(cap_server, value, text):
    assert_401(upgrade(cap_server, value), text)


@pytest.mark.parametrize("value", ["Bearer " + TOKEN, "bearer " + TOKEN, "BEARER " + TOKEN,
                                   "Bearer   " + TOKEN + "  "])
def test_capability_token_accepted(cap_server, value):
    assert_101(upgrade(cap_server, value))


def test_capability_token_session_works(cap_server):
    """The upgraded connection is a full exec-server connection."""
    c = cap_server.connect(extra_headers=[("Authorization", "Bearer " + TOKEN)])
    assert c.run("p1", ["/bin/echo", "hi"]).stdout == b"hi\n"
    with pytest.raises(wsclient.HandshakeError) as e:
        cap_server.connect()
    assert "401" in str(e.value)


def test_token_sha256(server_factory):
    digest = hashlib.sha256(TOKEN.encode()).hexdigest().upper()  # either case
    s = server_factory("--ws-auth", "capability-token", "--ws-token-sha256", digest)
    assert_101(upgrade(s, "Bearer " + TOKEN))
    assert_401(upgrade(s, "Bearer " + TOKEN.upper()), "invalid websocket bearer token")


def test_auth_comes_after_routing_and_upgrade_checks(cap_server):
    """As the reference: Origin (403), unknown paths (404), the upgrade's own checks (400,
    405, 426) answer before auth; /readyz is open."""
    assert upgrade(cap_server, None, extra_headers=[("Origin", "http://x")])[0] == \
        "HTTP/1.1 403 Forbidden"
    assert upgrade(cap_server, None, path="/nothere")[0] == "HTTP/1.1 404 Not Found"
    assert upgrade(cap_server, None, omit=("Connection",))[0] == "HTTP/1.1 400 Bad Request"
    assert upgrade(cap_server, None, method="POST")[0] == "HTTP/1.1 405 Method Not Allowed"
    assert upgrade(cap_server, None, http_version="HTTP/1.0")[0] == \
        "HTTP/1.0 426 Upgrade Required"
    status, _, body = get(cap_server, "/readyz")
    assert (status, body) == ("HTTP/1.1 200 OK", b"")


def test_metrics_behind_auth(cap_server):
    assert_401(get(cap_server, "/metrics"), "missing websocket bearer token")
    assert_401(get(cap_server, "/metrics", "Bearer nope"), "invalid websocket bearer token")
    status, headers, body = get(cap_server, "/metrics", "Bearer " + TOKEN)
    assert status == "HTTP/1.1 200 OK"
    assert headers_dict(headers)["content-type"].startswith("text/plain; version=0.0.4")
    assert b"uexec_auth_failures_total 2" in body


def test_secrets_never_logged(cap_server, token_file):
    assert_401(upgrade(cap_server, "Bearer wrong-token-xyz"), "invalid websocket bearer token")
    assert_101(upgrade(cap_server, "Bearer " + TOKEN))
    err = cap_server.stderr()
    assert b"Refusing a WebSocket upgrade" in err   # debug logging is on and says why
    assert TOKEN.encode() not in err
    assert b"wrong-token-xyz" not in err


# ---- signed bearer token (HS256 JWT)


def claims(**over):
    c = {"iss": "iss-1", "aud": "aud-1", "exp": int(time.time()) + 300}
    c.update(over)
    return {k: v for k, v in c.items() if v is not _DROP}


_DROP = object()


def test_jwt_accepted(jwt_server):
    now = int(time.time())
    for tok in [jwt(claims()),
                jwt(claims(aud=["other", "aud-1"])),
                jwt(claims(exp=now - 5)),            # expired, but within the 10 s skew
                jwt(claims(nbf=now + 5)),            # not yet valid, but within the skew
                jwt(claims(), header={"alg": "HS256"}),
                jwt(claims(), header={"alg": "HS256", "typ": "other", "kid": "k1"})]:
        assert_101(upgrade(jwt_server, "Bearer " + tok))
    c = jwt_server.connect(extra_headers=[("Authorization", "Bearer " + jwt(claims()))])
    assert c.run("p1", ["/bin/echo", "jwt"]).stdout == b"jwt\n"


def test_jwt_failures(jwt_server):
    now = int(time.time())
    rsa_like = {"alg": "RS256", "typ": "JWT"}
    cases = [
        (jwt(claims(exp=now - 30)), "expired websocket jwt"),
        (jwt(claims(exp=-1)), "expired websocket jwt"),
        (jwt(claims(nbf=now + 30)), "websocket jwt is not valid yet"),
        (jwt(claims(exp=now - 30, nbf=now + 30, iss="x")), "expired websocket jwt"),
        (jwt(claims(iss="other")), "websocket jwt issuer mismatch"),
        (jwt(claims(iss=_DROP)), "websocket jwt issuer mismatch"),
        (jwt(claims(iss=None)), "websocket jwt issuer mismatch"),
        (jwt(claims(iss="x", aud="x")), "websocket jwt issuer mismatch"),
        (jwt(claims(aud="other")), "websocket jwt audience mismatch"),
        (jwt(claims(aud=[])), "websocket jwt audience mismatch"),
        (jwt(claims(aud=_DROP)), "websocket jwt audience mismatch"),
        (jwt(claims(exp=_DROP)), "invalid websocket jwt"),
        (jwt(claims(exp=now + 60.5)), "invalid websocket jwt"),
        (jwt(claims(exp=str(now + 60))), "invalid websocket jwt"),
        (jwt(claims(exp=2 ** 63)), "invalid websocket jwt"),
        (jwt(claims(nbf="x")), "invalid websocket jwt"),
        (jwt(claims(iss=5)), "invalid websocket jwt"),
        (jwt(claims(aud=5)), "invalid websocket jwt"),
        (jwt(claims(aud=["aud-1", 5])), "invalid websocket jwt"),
        (jwt(None, raw_claims=b'{"iss":"iss-1","aud":"aud-1","exp":1,"exp":%d}' % (now + 60)),
         "invalid websocket jwt"),
        (jwt(None, raw_claims=b"[1]"), "invalid websocket jwt"),
        (jwt(None, raw_claims=b"not json"), "invalid websocket jwt"),
        (jwt(claims(), header={"alg": "none", "typ": "JWT"}), "invalid websocket jwt"),
        (jwt(claims(), header=rsa_like), "invalid websocket jwt"),
        (jwt(claims(), header={"alg": "HS384"}), "invalid websocket jwt"),
        (jwt(claims(), header={"alg": "hs256"}), "invalid websocket jwt"),
        (jwt(claims(), header={"typ": "JWT"}), "invalid websocket jwt"),
        (jwt(claims(), header={"alg": "HS256", "typ": 5}), "invalid websocket jwt"),
        (jwt(claims(), tamper=True), "invalid websocket jwt"),
        (jwt(claims(), key=b"k" * 40), "invalid websocket jwt"),
        (jwt(claims()) + "=", "invalid websocket jwt"),
        (jwt(claims()).rsplit(".", 1)[0], "invalid websocket jwt"),
        (jwt(claims()) + ".x", "invalid websocket jwt"),
        ("abc.def.ghi", "invalid websocket jwt"),
    ]
    for tok, text in cases:
        assert_401(upgrade(jwt_server, "Bearer " + tok), text)
    # an unsigned token: header alg none and an empty signature part
    unsigned = b64url(b'{"alg":"none"}') + "." + b64url(json.dumps(claims()).encode()) + "."
    assert_401(upgrade(jwt_server, "Bearer " + unsigned), "invalid websocket jwt")
    assert_401(upgrade(jwt_server, None), "missing websocket bearer token")
    assert_401(upgrade(jwt_server, "Token x"), "invalid authorization header")
    assert SECRET not in jwt_server.stderr()


def test_jwt_without_issuer_audience_and_default_skew(server_factory, secret_file):
    """Without --ws-issuer/--ws-audience any iss/aud pass; the default skew is 30 s."""
    s = server_factory("--ws-auth", "signed-bearer-token", "--ws-shared-secret-file",
                       secret_file, "--ws-issuer", "  ")   # blank: ignored
    now = int(time.time())
    assert_101(upgrade(s, "Bearer " + jwt({"exp": now + 60})))
    assert_101(upgrade(s, "Bearer " + jwt({"exp": now - 20, "iss": "any", "aud": ["a"]})))
    assert_401(upgrade(s, "Bearer " + jwt({"exp": now - 45})), "expired websocket jwt")
    assert_401(upgrade(s, "Bearer " + jwt({"exp": now + 60, "nbf": now + 45})),
               "websocket jwt is not valid yet")


# ---- start-up


def run_bin(*args):
    return run_once(*args, text=True)


def test_startup_errors(tmp_path, token_file, secret_file):
    short = tmp_path / "short"
    short.write_text("x" * 31 + "   \n")   # 31 bytes once trimmed
    empty = tmp_path / "empty"
    empty.write_text(" \n")
    missing = str(tmp_path / "missing")
    L = ["--listen", "ws://127.0.0.1:0"]
    cases = [
        (["--ws-token-file", token_file],
         "websocket auth flags require `--ws-auth capability-token` or "
         "`--ws-auth signed-bearer-token`"),
        (["--ws-auth", "capability-token"],
         "`--ws-token-file` or `--ws-token-sha256` is required when `--ws-auth "
         "capability-token` is set"),
        (["--ws-auth", "capability-token", "--ws-token-file", token_file,
          "--ws-token-sha256", "00"],
         "`--ws-token-file` and `--ws-token-sha256` are mutually exclusive"),
        (["--ws-auth", "capability-token", "--ws-token-sha256", "00"],
         "--ws-token-sha256 must be a 64-character hex SHA-256 digest"),
        (["--ws-auth", "capability-token", "--ws-token-file", token_file, "--ws-issuer", "x"],
         "`--ws-shared-secret-file`, `--ws-issuer`, `--ws-audience`, and "
         "`--ws-max-clock-skew-seconds` require `--ws-auth signed-bearer-token`"),
        (["--ws-auth", "signed-bearer-token"],
         "`--ws-shared-secret-file` is required when `--ws-auth signed-bearer-token` is set"),
        (["--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", secret_file,
          "--ws-token-file", token_file],
         "`--ws-token-file` and `--ws-token-sha256` require `--ws-auth capability-token`, "
         "not `signed-bearer-token`"),
        (["--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", str(short)],
         "signed websocket bearer secret %s must be at least 32 bytes" % short),
        (["--ws-auth", "capability-token", "--ws-token-file", str(empty)],
         "websocket auth secret %s must not be empty" % empty),
        (["--ws-auth", "capability-token", "--ws-token-file", missing],
         "failed to read websocket auth secret %s: No such file or directory (os error 2)"
         % missing),
    ]
    for args, text in cases:
        r = run_bin(*L, *args)
        assert (r.returncode, r.stdout) == (1, ""), (args, r)
        assert "Error: %s\n" % text in r.stderr, (args, r.stderr)
    r = run_bin("--listen", "stdio", "--ws-auth", "capability-token", "--ws-token-file",
                token_file)
    assert r.returncode == 1 and \
        "Error: WebSocket auth requires a WebSocket listener, not stdio" in r.stderr
    r = run_bin(*L, "--ws-auth", "bogus")
    assert r.returncode == 2 and "invalid value 'bogus' for '--ws-auth <MODE>'" in r.stderr
    r = run_bin(*L, "--ws-auth", "signed-bearer-token", "--ws-shared-secret-file", secret_file,
                "--ws-max-clock-skew-seconds", "-1")
    assert r.returncode == 2


@pytest.mark.parametrize("addr", ["0.0.0.0", "[::]"])
def test_non_loopback_needs_auth(addr, token_file, server_factory):
    if addr.startswith("[") and HOST.missing("ipv6"):
        pytest.skip(HOST.missing("ipv6"))
    r = run_bin("--listen", "ws://%s:0" % addr)
    assert r.returncode == 1 and r.stdout == ""
    assert "refusing to start non-loopback websocket listener ws://%s:0 without --ws-auth" \
        % addr in r.stderr
    assert "--allow-unauthenticated" in r.stderr

    for extra in (["--allow-unauthenticated"],
                  ["--ws-auth", "capability-token", "--ws-token-file", token_file]):
        # started on any address (kinds off: a test of the listener)
        s = server_factory(*extra, listen="ws://%s:0" % addr, kinds=False)
        assert s.url.startswith("ws://%s:" % addr.strip("[]") if addr == "0.0.0.0"
                                else "ws://[::]:"), s.url
        loop = "127.0.0.1" if addr == "0.0.0.0" else "::1"
        req, _ = upgrade_request(loop, s.port)
        status = http_exchange(loop, s.port, req)[0]
        assert status == ("HTTP/1.1 101 Switching Protocols" if extra[0].startswith("--allow")
                          else "HTTP/1.1 401 Unauthorized")
        assert s.terminate() == 0


@pytest.mark.parametrize("addr", ["127.0.0.1", "127.3.4.5", "[::1]"])
def test_loopback_needs_no_flag(addr, server_factory):
    if addr.startswith("[") and HOST.missing("ipv6"):
        pytest.skip(HOST.missing("ipv6"))
    s = server_factory(listen="ws://%s:0" % addr, kinds=False)
    assert s.url.startswith("ws://%s:" % addr)
    assert s.terminate() == 0


def test_help_names_the_flags():
    r = run_bin("--help")
    assert r.returncode == 0
    for flag in ("--ws-auth", "--ws-token-file", "--ws-token-sha256", "--ws-shared-secret-file",
                 "--ws-issuer", "--ws-audience", "--ws-max-clock-skew-seconds",
                 "--allow-unauthenticated", "--tls-cert", "--tls-key", "wss://", "/metrics"):
        assert flag in r.stdout, flag
