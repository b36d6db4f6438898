# SPDX-License-Identifier: MIT
"""TLS on the listener (issue 16 item 2): --listen wss://IP:PORT with --tls-cert and
--tls-key, OpenSSL through memory BIOs on the ring (src/tls/tls-mem.c, shared with the
outbound connections). A verified TLS 1.2+ handshake, the protocol and large output
unchanged over it, auth and the HTTP routes over it, what a plain-text client gets, the
handshake deadline, and the start-up checks."""

import os
import shutil
import signal
import socket
import ssl
import subprocess
import time

import pytest

import wsclient
from conftest import EVENT_TIMEOUT, HOST, UEXEC_BIN, Server, run_once, wait_until
from wsclient import headers_dict

TOKEN = "tls-token-5be0c1"


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """A self-signed EC certificate for IP 127.0.0.1 and a second, unrelated key."""
    if not HOST.program("openssl"):
        pytest.skip("needs openssl (the program) to make a test certificate")
    d = tmp_path_factory.mktemp("tls")
    cert, key, other = d / "cert.pem", d / "key.pem", d / "other.pem"
    subprocess.run([HOST.program("openssl"), "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj",
                    "/CN=uexec-test", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    subprocess.run([HOST.program("openssl"), "genpkey", "-algorithm", "EC", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-out", str(other)],
                   check=True, capture_output=True, timeout=60)
    return {"cert": str(cert), "key": str(key), "other": str(other), "dir": d}


class TlsServer(Server):
    """uexec on wss://127.0.0.1:0 with the test certificate (servers.Server, kinds off: a
    test of the listener); connect() and https() speak TLS to it."""

    def __init__(self, args, certs, **kw):
        super().__init__(("--tls-cert", certs["cert"], "--tls-key", certs["key"], *args),
                         listen="wss://127.0.0.1:0", kinds=False, **kw)
        self.ctx = ssl.create_default_context(cafile=certs["cert"])

    def connect(self, **kw):
        return wsclient.connect("ws://127.0.0.1:%d" % self.port, ssl_context=self.ctx, **kw)

    def https(self, request):
        """One raw request over TLS; returns (status line, headers, body)."""
        sock = self.ctx.wrap_socket(
            socket.create_connection(("127.0.0.1", self.port), EVENT_TIMEOUT),
            server_hostname="127.0.0.1")
        try:
            sock.sendall(request)
            data = b""
            while True:
                try:
                    chunk = sock.recv(65536)
                except (ssl.SSLEOFError, ConnectionResetError):
                    break
                if not chunk:
                    break
                data += chunk
        finally:
            sock.close()
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        return lines[0], [tuple(x.split(": ", 1)) for x in lines[1:]], body


@pytest.fixture
def tls_server(server_factory, certs):
    """make(*flags) -> a TlsServer, checked at teardown (exit 0, no sanitizer report)."""
    return lambda *args: server_factory(*args, cls=TlsServer, certs=certs)


def test_wss_session_and_large_output(tls_server, tmp_path):
    s = tls_server()
    c = s.connect()
    assert c.ws.sock.version() in ("TLSv1.2", "TLSv1.3")
    run = c.run("t1", ["/bin/echo", "over-tls"])
    assert run.stdout == b"over-tls\n" and run.exit_code == 0
    # 3 MB through TLS records: many reads and writes, the output queue's backpressure
    big = c.run("t2", ["/bin/sh", "-c", "yes abcdefghij | head -c 3000000"], timeout=60)
    assert big.stdout == (b"abcdefghij\n" * 300000)[:3000000]
    big.check_sequencing()
    # stdin through TLS too
    c.start("t3", ["/bin/cat"], pipeStdin=True)
    c.write("t3", b"typed over tls\n", "w1")
    got = c.collect_until_output("t3", b"typed over tls\n")
    assert b"typed over tls\n" in got.stdout
    c.terminate("t3")
    # one message larger than a TLS write piece (256 KiB): 3 MiB of file, about 4 MiB of JSON
    data = os.urandom(3 << 20)
    path = os.path.join(str(tmp_path), "blob")
    with open(path, "wb") as f:
        f.write(data)
    assert c.fs_read_file(path) == data
    c.fs_write_file(path + ".copy", data)
    with open(path + ".copy", "rb") as f:
        assert f.read() == data
    c.close()


def test_wss_http_routes_and_auth(tls_server, tmp_path):
    tok = tmp_path / "token"
    tok.write_text(TOKEN)
    s = tls_server("--ws-auth", "capability-token", "--ws-token-file", str(tok))
    status, _, body = s.https(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert (status, body) == ("HTTP/1.1 200 OK", b"")
    status, _, body = s.https(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    assert (status, body) == ("HTTP/1.1 401 Unauthorized", b"missing websocket bearer token")
    status, headers, body = s.https(b"GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: "
                                    b"Bearer " + TOKEN.encode() + b"\r\n\r\n")
    assert status == "HTTP/1.1 200 OK" and b"uexec_auth_failures_total 1\n" in body
    assert headers_dict(headers)["content-length"] == str(len(body))
    with pytest.raises(wsclient.HandshakeError) as e:
        s.connect()
    assert e.value.status_line == "HTTP/1.1 401 Unauthorized"
    c = s.connect(extra_headers=[("Authorization", "Bearer " + TOKEN)])
    assert c.run("a1", ["/bin/echo", "ok"]).stdout == b"ok\n"


def test_plaintext_client_and_untrusting_client(tls_server):
    s = tls_server()
    # a plain HTTP request is not TLS: the handshake fails and the connection is closed
    sock = socket.create_connection(("127.0.0.1", s.port), EVENT_TIMEOUT)
    sock.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
    sock.settimeout(EVENT_TIMEOUT)
    try:
        data = sock.recv(65536)
    except ConnectionResetError:
        data = b""
    sock.close()
    assert not data.startswith(b"HTTP/"), data
    wait_until(lambda: b"TLS handshake failed" in s.stderr(), what="the handshake failure logged")
    # a client that does not trust the certificate gives up; the server stays up
    with pytest.raises(ssl.SSLCertVerificationError):
        wsclient.WebSocket.connect("ws://127.0.0.1:%d" % s.port,
                                   ssl_context=ssl.create_default_context())
    assert s.connect().run("u1", ["/bin/true"]).exit_code == 0


def test_tls_handshake_deadline(tls_server):
    """A client that opens TCP and never sends a ClientHello is closed at the deadline."""
    s = tls_server("--handshake-timeout-ms", "300")
    t0 = time.monotonic()
    sock = socket.create_connection(("127.0.0.1", s.port), EVENT_TIMEOUT)
    sock.settimeout(EVENT_TIMEOUT)    # the close is the event: no bound on how soon
    try:
        data = sock.recv(100)
    except ConnectionResetError:
        data = b""
    assert data == b""
    assert time.monotonic() - t0 >= 0.3   # not before the deadline (t0 precedes the accept)
    sock.close()


def run_bin(*args):
    return run_once(*args, text=True)


def test_startup_checks(certs, tmp_path):
    # wss:// without them: the reference's answer (exit 1), with a hint
    r = run_bin("--listen", "wss://127.0.0.1:0")
    assert r.returncode == 1 and r.stdout == ""
    assert "unsupported --listen URL `wss://127.0.0.1:0`; expected `ws://IP:PORT` or `stdio` " \
        "(wss://IP:PORT needs --tls-cert and --tls-key)" in r.stderr
    r = run_bin("--listen", "wss://127.0.0.1:0", "--tls-cert", certs["cert"])
    assert r.returncode == 2 and "--listen wss:// needs --tls-cert and --tls-key" in r.stderr
    r = run_bin("--listen", "ws://127.0.0.1:0", "--tls-cert", certs["cert"], "--tls-key",
                certs["key"])
    assert r.returncode == 2 and "need --listen wss://" in r.stderr
    missing = str(tmp_path / "missing.pem")
    r = run_bin("--listen", "wss://127.0.0.1:0", "--tls-cert", missing, "--tls-key",
                certs["key"])
    assert (r.returncode, r.stdout) == (1, "")
    assert "Error: cannot load --tls-cert %s: " % missing in r.stderr
    r = run_bin("--listen", "wss://127.0.0.1:0", "--tls-cert", certs["cert"], "--tls-key",
                certs["other"])
    assert r.returncode == 1 and "Error: cannot load --tls-key %s: " % certs["other"] in r.stderr
    assert "key values mismatch" in r.stderr
    # the key never shows up in what uexec prints
    with open(certs["other"]) as f:
        body = "".join(f.read().splitlines()[1:-1])
    assert body[:40] not in r.stderr


def test_sighup_loads_the_certificate_the_new_configuration_names(certs, tmp_path,
                                                                    server_factory):
    """A certificate renewed into new files: after SIGHUP new connections get it (the
    reload used to read the start-up files again, keeping the old certificate)."""
    openssl = HOST.program("openssl")
    cert2, key2 = tmp_path / "cert2.pem", tmp_path / "key2.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj",
                    "/CN=uexec-renewed", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key2), "-out", str(cert2)],
                   check=True, capture_output=True, timeout=60)
    conf = tmp_path / "u.toml"
    conf.write_text('tls-cert = "%s"\ntls-key = "%s"\n' % (certs["cert"], certs["key"]))
    srv = server_factory("--config", str(conf), listen="wss://127.0.0.1:0", kinds=False)

    def peer_cn(cafile):
        ctx = ssl.create_default_context(cafile=cafile)
        with ctx.wrap_socket(socket.create_connection(("127.0.0.1", srv.port), 10),
                             server_hostname="127.0.0.1") as s:
            return dict(x[0] for x in s.getpeercert()["subject"])["commonName"]

    assert peer_cn(certs["cert"]) == "uexec-test"
    conf.write_text('tls-cert = "%s"\ntls-key = "%s"\n' % (cert2, key2))
    srv.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: b"Configuration reloaded" in srv.stderr(), what="the reload")
    assert peer_cn(str(cert2)) == "uexec-renewed"
    # a key that does not match: the renewed pair stays in force
    conf.write_text('tls-cert = "%s"\ntls-key = "%s"\n' % (cert2, certs["key"]))
    srv.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: srv.stderr().count(b"Configuration reloaded") >= 2, what="the 2nd reload")
    assert b"keeping the previous one" in srv.stderr()
    assert peer_cn(str(cert2)) == "uexec-renewed"
    srv.check_stop()   # exit 0 on SIGTERM, no sanitizer report


def _mapped_libraries(pid):
    names = set()
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            parts = line.split()
            if len(parts) > 5 and parts[5].startswith("/"):
                names.add(os.path.basename(parts[5]))
    return names


def _openssl(names):
    return sorted(n for n in names if n.startswith(("libssl.so", "libcrypto.so", "uexec-openssl")))


def test_openssl_is_loaded_only_for_tls(server_factory, tls_server):
    """uexec links neither libssl nor libcrypto: they come with the OpenSSL module
    (src/tls/tls-module.h), loaded on first need. A ws:// server that ran a process maps
    none of them; a wss:// one maps the module and both libraries."""
    plain = server_factory(kinds=False)
    c = plain.connect()
    assert c.run("p1", ["/bin/true"]).exit_code == 0
    assert _openssl(_mapped_libraries(plain.pid)) == []
    s = tls_server()
    got = _openssl(_mapped_libraries(s.pid))
    assert "uexec-openssl.so" in got, got
    assert any(n.startswith("libssl.so") for n in got) and \
        any(n.startswith("libcrypto.so") for n in got), got


def test_wss_without_the_openssl_module_fails_at_start(certs, tmp_path):
    """A copy of uexec in a directory without uexec-openssl.so: --listen wss:// fails at
    start naming where the module was looked for; ws:// still serves. Skips when the
    module is installed where the copy looks next (the install dir is compiled in)."""
    d = tmp_path / "lone"
    d.mkdir()
    exe = d / "uexec"
    shutil.copy2(UEXEC_BIN, exe)
    try:
        p = subprocess.run([str(exe), "--listen", "wss://127.0.0.1:0", "--tls-cert",
                            certs["cert"], "--tls-key", certs["key"]], capture_output=True,
                           stdin=subprocess.DEVNULL, timeout=EVENT_TIMEOUT)
    except subprocess.TimeoutExpired:  # it serves: it found a module
        p = None
    err = p.stderr.decode() if p else ""
    if not p or "cannot load the OpenSSL module" not in err:
        pytest.skip("an installed uexec-openssl.so is found by a uexec outside the build tree")
    assert p.returncode == 1, err
    assert "Error: cannot load the OpenSSL module: uexec-openssl.so is neither next to the " \
        "uexec binary nor in " in err, err
    assert "/uexec-openssl.so: No such file or directory" in err, err
    assert err.count("OpenSSL module") == 1, err
    assert p.stdout == b""


def test_openssl_module_replaced_after_start_is_not_loaded(server_factory, tmp_path):
    """The OpenSSL module is found at start and loaded through the fd opened then: a file
    renamed over it later (a sandbox that can write the binary's directory, a package
    upgrade) is never loaded. A ws:// server's first https http/request loads the module
    it started with (and libssl with it)."""
    d = tmp_path / "copy"
    d.mkdir()
    for name in ("uexec", "uexec-openssl.so"):
        shutil.copy2(os.path.join(os.path.dirname(UEXEC_BIN), name), d / name)
    launcher = ["/bin/sh", "-c", 'shift; exec "$0" "$@"', str(d / "uexec")]
    srv = server_factory(launcher=launcher, kinds=False)
    c = srv.connect()
    assert _openssl(_mapped_libraries(srv.pid)) == []
    planted = d / "planted.so"
    planted.write_bytes(b"not an ELF file\n")
    os.rename(planted, d / "uexec-openssl.so")
    with socket.socket() as s:       # a port nothing listens on: the TLS set-up comes first
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    reply = c.call("http/request", {"method": "GET", "requestId": "r",
                                    "url": "https://127.0.0.1:%d/" % port})
    assert "error" in reply, reply    # refused, after the module was loaded
    got = _openssl(_mapped_libraries(srv.pid))
    assert "uexec-openssl.so" in got and any(n.startswith("libssl.so") for n in got), got
    assert b"Cannot load the OpenSSL module" not in srv.stderr()
