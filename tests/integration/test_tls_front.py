# SPDX-License-Identifier: MIT
"""wss:// through a TLS terminator in front of uexec (issue 16 item 2; ARCHITECTURE.md
"TLS": uexec does not terminate TLS itself). The recipe of README "Running in production"
with Debian's stunnel4: a verified TLS 1.2+ handshake to stunnel, the bearer token passing
through untouched to uexec's --ws-auth, and a command run over the encrypted connection."""

import os
import socket
import ssl
import subprocess
import time

import pytest

import wsclient
from conftest import EVENT_TIMEOUT, HOST

TOKEN = "tls-front-token-93b1"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def tls_front(server_factory, tmp_path):
    """uexec with --ws-auth on loopback, stunnel on another loopback port with a fresh
    self-signed certificate for IP 127.0.0.1. Yields (wss_url, ssl_context)."""
    stunnel = HOST.program("stunnel4") or HOST.program("stunnel")
    if not stunnel:
        pytest.skip("needs stunnel4 (Debian package stunnel4, scripts/deps.sh)")
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    os.chmod(token, 0o600)
    srv = server_factory("--ws-auth", "capability-token", "--ws-token-file", str(token))
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run([HOST.program("openssl"), "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj",
                    "/CN=uexec-test", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    port = free_port()
    conf = tmp_path / "stunnel.conf"
    conf.write_text("foreground = yes\n"
                    "pid =\n"
                    "debug = 4\n"
                    "[uexec]\n"
                    "accept = 127.0.0.1:%d\n"
                    "connect = %s:%d\n"
                    "cert = %s\n"
                    "key = %s\n"
                    "sslVersionMin = TLSv1.2\n" % (port, srv.host, srv.port, cert, key))
    log = open(tmp_path / "stunnel.log", "wb")
    st = subprocess.Popen([stunnel, str(conf)],
                          stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                          start_new_session=True)
    try:
        deadline = time.monotonic() + EVENT_TIMEOUT
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=EVENT_TIMEOUT).close()
                break
            except OSError:
                assert st.poll() is None, open(tmp_path / "stunnel.log").read()
                assert time.monotonic() < deadline, "stunnel did not listen"
                time.sleep(0.05)
        ctx = ssl.create_default_context(cafile=str(cert))
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        yield "wss://127.0.0.1:%d" % port, ctx
    finally:
        st.terminate()
        st.wait(EVENT_TIMEOUT)
        log.close()


@pytest.mark.needs_programs("openssl")
def test_wss_through_stunnel(tls_front):
    url, ctx = tls_front
    url = url.replace("wss://", "ws://")   # wsclient takes host:port from it; TLS from ctx
    c = wsclient.connect(url, ssl_context=ctx,
                         extra_headers=[("Authorization", "Bearer " + TOKEN)])
    assert isinstance(c.ws.sock, ssl.SSLSocket) and c.ws.sock.version() in ("TLSv1.2", "TLSv1.3")
    run = c.run("t1", ["/bin/echo", "over-tls"])
    assert run.stdout == b"over-tls\n" and run.exit_code == 0
    c.close()
    # the token is still checked by uexec behind the terminator
    with pytest.raises(wsclient.HandshakeError) as e:
        wsclient.WebSocket.connect(url, ssl_context=ctx)
    assert e.value.status_line == "HTTP/1.1 401 Unauthorized"
    assert e.value.body.endswith(b"missing websocket bearer token")
    # a client that does not trust the certificate never reaches uexec
    with pytest.raises(ssl.SSLCertVerificationError):
        wsclient.WebSocket.connect(url, ssl_context=ssl.create_default_context())
