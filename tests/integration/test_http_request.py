# SPDX-License-Identifier: MIT
"""http/request and http/request/bodyDelta (PROTOCOL.md §6.23, §7.5; issue 23 item 1):
HTTP(S) requests made by uexec for a client, against HTTP and HTTPS servers started by
the test (a CA and leaf certificates made with the openssl program; uexec trusts the CA
through SSL_CERT_FILE). Result shape, methods, bodies, headers and valueEnvVar, the
parameter errors, redirects (follow, stop, loops, the limit, the Referer, credentials
across origins), timeouts, streamed bodies (seq from 1, the terminal delta, requestId
reuse), servers that close mid-body, TLS failures, the response limit, the per-connection
request limit, a 1 GiB streamed body to a client that does not read (uexec's RSS stays
bounded and the upstream is paced), and a client that goes away mid-request."""

import base64
import http.server
import json
import os
import shutil
import socket
import socketserver
import ssl
import subprocess
import threading
import time
import urllib.parse

import pytest

import wsclient
from conftest import EVENT_TIMEOUT, accept_forever, pipe_bytes, settled_fd_count, wait_until

SECRET = "hr-secret-91f2"
ENV = "UEXEC_TEST_HTTP_SECRET"
DELTA = "http/request/bodyDelta"


def b64(b):
    return base64.b64encode(b).decode()


def unb64(s):
    return base64.b64decode(s)


# ---- the test's HTTP server ----

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _send(self, code, body=b"", hdrs=()):
        self.send_response(code)
        for k, v in hdrs:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _hang(self):
        """Answers nothing more; waits until uexec closes the connection."""
        st = self.server.state
        st["hang_started"].set()
        self.connection.settimeout(EVENT_TIMEOUT * 2)
        try:
            while self.connection.recv(65536):
                pass
        except OSError:
            pass
        st["hang_closed"].set()
        self.close_connection = True

    def _raw(self, data, close=True):
        self.wfile.write(data)
        self.wfile.flush()
        if close:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)

    def handle_any(self):
        st = self.server.state
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        path, _, query = self.path.partition("?")
        q = dict(urllib.parse.parse_qsl(query))
        if path == "/echo":
            head = [[k, v] for k, v in self.headers.raw_items()]
            return self._send(200, json.dumps({
                "line": self.raw_requestline.decode("latin1").rstrip("\r\n"),
                "headers": head, "body": b64(body)}).encode(),
                [("Content-Type", "application/json"), ("X-Multi", "a"), ("X-Multi", "b")])
        if path.startswith("/redir/"):
            return self._send(int(path.split("/")[2]), b"", [("Location", q["to"])])
        if path.startswith("/chain/"):
            k = int(path.split("/")[2])
            if k == 0:
                return self._send(200, b"end of chain")
            return self._send(302, b"", [("Location", "/chain/%d" % (k - 1))])
        if path == "/loop":
            return self._send(302, b"", [("Location", "/loop")])
        if path == "/status":
            return self._send(int(q["code"]), q.get("body", "").encode())
        if path == "/binary":
            return self._send(200, bytes(range(256)))
        if path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(int(q.get("n", 3))):
                d = b"event %d\n" % i
                self.wfile.write(b"%x\r\n%s\r\n" % (len(d), d))
                self.wfile.flush()
                time.sleep(float(q.get("gap", 0.02)))
            self.wfile.write(b"0\r\nX-Trailer: t\r\n\r\n")
            return
        if path.startswith("/canned/"):
            # a whole response the test prepared (st["canned"]), then the connection ends
            return self._raw(st["canned"][path[len("/canned/"):]])
        if path == "/close-delimited":
            return self._raw(b"HTTP/1.1 200 OK\r\nX-A: 1\r\n\r\nuntil the close")
        if path == "/abort":
            # Content-Length 1000, 7 bytes, then the connection ends
            return self._raw(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npartial")
        if path == "/bad-chunk":
            return self._raw(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                             b"5\r\nhello\r\nZZ\r\n")
        if path == "/many-headers":
            return self._raw(b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-H%d: v\r\n" % i
                                                              for i in range(200))
                             + b"Content-Length: 0\r\n\r\n")
        if path == "/odd-values":
            return self._raw(b"HTTP/1.1 200 OK\r\nX-Good: ok\r\nX-Bad: \xff\xfe\r\n"
                             b"X-Pad:   padded  \r\nContent-Length: 2\r\n\r\nok", close=False)
        if path == "/hang":
            # Nothing is answered: the request waits until uexec closes the connection.
            return self._hang()
        if path == "/hang-body":
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b"first")
            self.wfile.flush()
            return self._hang()
        if path == "/gen":
            # n bytes made on the fly; st["gen_sent"] counts what the socket took.
            total = int(q["n"])
            block = bytes(range(256)) * 4096
            self.send_response(200)
            if q.get("chunked"):
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Content-Length", str(total))
            self.end_headers()
            sent = 0
            try:
                while sent < total:
                    d = block[:min(len(block), total - sent)]
                    if q.get("chunked"):
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(d), d))
                    else:
                        self.wfile.write(d)
                    sent += len(d)
                    st["gen_sent"] = sent
                if q.get("chunked"):
                    self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except OSError:
                st["gen_closed"].set()
                self.close_connection = True
            return
        return self._send(404, b"nope", [("Content-Type", "text/plain")])

    def __getattr__(self, name):
        if name.startswith("do_"):
            return self.handle_any
        raise AttributeError(name)


class WebServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def start_http(ssl_ctx=None):
    srv = WebServer(("127.0.0.1", 0), Handler)
    srv.state = {"canned": {}, "gen_sent": 0, "gen_closed": threading.Event(),
                 "hang_started": threading.Event(), "hang_closed": threading.Event()}
    if ssl_ctx is not None:
        srv.socket = ssl_ctx.wrap_socket(srv.socket, server_side=True)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    srv.port = srv.server_address[1]
    return srv


def _openssl():
    exe = shutil.which("openssl")
    if not exe:
        pytest.skip("needs the openssl command line tool to make a throwaway CA")
    return exe


def make_pki(d):
    """A CA, a leaf for 127.0.0.1/localhost, a leaf for another name (same CA), and a
    self-signed leaf for 127.0.0.1 that no CA vouches for."""
    openssl = _openssl()
    d = str(d)

    def run(*a):
        subprocess.run([openssl] + list(a), check=True, capture_output=True, cwd=d, timeout=60)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
        "-subj", "/CN=uexec-http-test-ca", "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    for name, san in (("good", "IP:127.0.0.1,DNS:localhost"), ("wrong", "DNS:other.example")):
        run("req", *ec, "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=" + name)
        with open(os.path.join(d, name + ".cnf"), "w") as f:
            f.write("subjectAltName=%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
                    % san)
        run("x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", name + ".pem", "-days", "2", "-extfile", name + ".cnf")
    run("req", "-x509", *ec, "-keyout", "self.key", "-out", "self.pem", "-days", "2",
        "-subj", "/CN=self", "-addext", "subjectAltName=IP:127.0.0.1")
    return d


def tls_ctx(d, name):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(d, name + ".pem"), os.path.join(d, name + ".key"))
    return ctx


@pytest.fixture(scope="module")
def web():
    srv = start_http()
    yield srv
    srv.shutdown()


PROXY_VARS = ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY",
              "all_proxy", "NO_PROXY", "no_proxy")


def clean_env(**extra):
    """The test's environment without proxy variables (uexec would honour them, as the
    reference does, even for loopback), plus extra."""
    env = {k: v for k, v in os.environ.items() if k not in PROXY_VARS}
    env.update(extra)
    return env


@pytest.fixture
def uexec(server_factory, tmp_path):
    """uexec with the test's secret in its environment."""
    return server_factory(env=clean_env(**{ENV: SECRET}))


@pytest.fixture
def client(uexec):
    c = uexec.connect()
    yield c
    c.ws.close()


def url(web, path):
    return "http://127.0.0.1:%d%s" % (web.port, path)


def req(c, timeout=EVENT_TIMEOUT, **params):
    params.setdefault("method", "GET")
    params.setdefault("requestId", "r")
    return c.call("http/request", params, timeout=timeout)


def ok(c, **params):
    reply = req(c, **params)
    assert "result" in reply, reply
    return reply["result"]


def err(c, **params):
    reply = req(c, **params)
    assert "error" in reply, reply
    return reply["error"]["code"], reply["error"]["message"]


def echo(result):
    assert result["status"] == 200, result
    return json.loads(unb64(result["bodyBase64"]))


def deltas(c, rid, timeout=EVENT_TIMEOUT):
    """The bodyDelta notifications of rid up to the terminal one."""
    out = []
    while True:
        n = c.next_notification(DELTA, timeout=timeout, pred=lambda p: p["requestId"] == rid)
        out.append(n["params"])
        if n["params"]["done"]:
            return out


# ---- result shape, methods, bodies ----

def test_capability_advertised(client):
    assert client.init_result["environmentInfo"]["capabilities"]["httpHeaderEnvVars"] is True


def test_get_result_shape(client, web):
    reply = req(client, url=url(web, "/echo"))
    assert list(reply.keys()) == ["id", "result"]
    res = reply["result"]
    assert list(res.keys()) == ["status", "headers", "bodyBase64"]
    names = [h["name"] for h in res["headers"]]
    # lower case, wire order, duplicates kept
    assert names == ["server", "date", "content-type", "x-multi", "x-multi", "content-length"]
    assert [h["value"] for h in res["headers"] if h["name"] == "x-multi"] == ["a", "b"]
    assert all(list(h.keys()) == ["name", "value"] for h in res["headers"])
    e = echo(res)
    assert e["line"] == "GET /echo HTTP/1.1"
    # what the reference's client adds, in its order
    assert e["headers"] == [["accept", "*/*"], ["accept-encoding", "zstd,gzip"],
                            ["host", "127.0.0.1:%d" % web.port]]


def test_methods_and_bodies(client, web):
    for m in ("POST", "PUT", "PATCH", "DELETE", "OPTIONS", "FOO", "get"):
        e = echo(ok(client, method=m, url=url(web, "/echo"), bodyBase64=b64(b"body of " +
                                                                             m.encode())))
        assert e["line"] == "%s /echo HTTP/1.1" % m     # sent as given, even lower case
        assert ["content-length", str(len(m) + 8)] in e["headers"]
        assert unb64(e["body"]) == b"body of " + m.encode()
    # an empty body sends no Content-Length, as the reference
    e = echo(ok(client, method="POST", url=url(web, "/echo"), bodyBase64=""))
    assert [h for h in e["headers"] if h[0] == "content-length"] == []
    # HEAD: the head's headers, no body
    res = ok(client, method="HEAD", url=url(web, "/echo"))
    assert res["status"] == 200 and res["bodyBase64"] == ""
    assert any(h["name"] == "content-length" and h["value"] != "0" for h in res["headers"])
    # non-2xx statuses are results
    res = ok(client, url=url(web, "/status?code=404&body=nope"))
    assert res["status"] == 404 and unb64(res["bodyBase64"]) == b"nope"
    res = ok(client, url=url(web, "/status?code=204"))
    assert res["status"] == 204 and res["bodyBase64"] == ""
    # binary bodies round-trip
    assert unb64(ok(client, url=url(web, "/binary"))["bodyBase64"]) == bytes(range(256))
    body = bytes(range(256)) * 300
    e = echo(ok(client, method="POST", url=url(web, "/echo"), bodyBase64=b64(body)))
    assert unb64(e["body"]) == body


def test_body_framings(client, web):
    res = ok(client, url=url(web, "/chunked?n=4&gap=0"))
    assert unb64(res["bodyBase64"]) == b"event 0\nevent 1\nevent 2\nevent 3\n"
    assert {"name": "transfer-encoding", "value": "chunked"} in res["headers"]
    res = ok(client, url=url(web, "/close-delimited"))
    assert res == {"status": 200, "headers": [{"name": "x-a", "value": "1"}],
                   "bodyBase64": b64(b"until the close")}
    # values that are not visible ASCII are left out; the rest trimmed
    res = ok(client, url=url(web, "/odd-values"))
    assert res["headers"] == [{"name": "x-good", "value": "ok"},
                              {"name": "x-pad", "value": "padded"},
                              {"name": "content-length", "value": "2"}]


def test_headers_and_env_vars(client, web):
    e = echo(ok(client, url=url(web, "/echo"), headers=[
        {"name": "X-A", "value": "1"}, {"name": "x-a", "value": "2"},
        {"name": "X-Env", "value": "Bearer ", "valueEnvVar": ENV},
        {"name": "X-Null", "value": "v", "valueEnvVar": None}]))
    # names lower-cased, order and repeats kept, the server's variable appended
    assert e["headers"][:4] == [["x-a", "1"], ["x-a", "2"], ["x-env", "Bearer " + SECRET],
                                ["x-null", "v"]]
    # the client's Host and Accept replace the ones the server adds
    e = echo(ok(client, url=url(web, "/echo"), headers=[{"name": "Host", "value": "h.example"},
                                                        {"name": "Accept", "value": "text/x"}]))
    assert e["headers"] == [["host", "h.example"], ["accept", "text/x"],
                            ["accept-encoding", "zstd,gzip"]]
    # the client's Accept-Encoding replaces the server's (coded answers are decoded anyway)
    e = echo(ok(client, url=url(web, "/echo"), headers=[{"name": "Accept-Encoding",
                                                         "value": "identity"}]))
    assert e["headers"] == [["accept-encoding", "identity"], ["accept", "*/*"],
                            ["host", "127.0.0.1:%d" % web.port]]
    # URL userinfo becomes Basic authorization
    e = echo(ok(client, url="http://us%20er:p%40ss@127.0.0.1:" + str(web.port) + "/echo"))
    assert e["headers"][0] == ["authorization", "Basic " + b64(b"us er:p@ss")]
    # path normalisation as the reference's URL parser does it
    e = echo(ok(client, url="HTTP:127.0.0.1:%d/a/../echo?x=y z#frag" % web.port))
    assert e["line"] == "GET /echo?x=y%20z HTTP/1.1"


DEL = object()
PARAM_ERRORS = [
    ({"method": DEL, "url": DEL, "requestId": DEL}, -32602, "missing field `method`"),
    ({"url": DEL}, -32602, "missing field `url`"),
    ({"requestId": DEL}, -32602, "missing field `requestId`"),
    ({"requestId": None}, -32602, "invalid type: null, expected a string"),
    ({"method": 5}, -32602, "invalid type: number, expected a string"),
    ({"method": ""}, -32602, "http/request method is invalid: invalid HTTP method"),
    ({"method": "G(T"}, -32602, "http/request method is invalid: invalid HTTP method"),
    ({"url": ""}, -32602, "http/request url is invalid: relative URL without a base"),
    ({"url": "not a url"}, -32602, "http/request url is invalid: relative URL without a base"),
    ({"url": "http://"}, -32602, "http/request url is invalid: empty host"),
    ({"url": "http://:80/"}, -32602, "http/request url is invalid: empty host"),
    ({"url": "http://[::1"}, -32602, "http/request url is invalid: invalid IPv6 address"),
    ({"url": "http://127.0.0.1:99999/"}, -32602, "http/request url is invalid: invalid port number"),
    ({"url": "http://a b/"}, -32602,
     "http/request url is invalid: invalid international domain name"),
    ({"url": "file:///etc/hostname"}, -32602,
     "http/request only supports http and https URLs, got file"),
    ({"url": "FTP://x/"}, -32602, "http/request only supports http and https URLs, got ftp"),
    ({"headers": None}, -32602, "invalid type: null, expected a sequence"),
    ({"headers": {}}, -32602, "invalid type: map, expected a sequence"),
    ({"headers": [{"value": "x"}]}, -32602, "missing field `name`"),
    ({"headers": [{"name": "X"}]}, -32602, "missing field `value`"),
    ({"headers": [{"name": "X", "valueEnvVar": ENV}]}, -32602, "missing field `value`"),
    ({"headers": [{"name": "a b", "value": "x"}]}, -32602,
     "http/request header name is invalid: invalid HTTP header name"),
    ({"headers": [{"name": "", "value": "x"}]}, -32602,
     "http/request header name is invalid: invalid HTTP header name"),
    ({"headers": [{"name": "X-A", "value": "a\nb"}]}, -32602,
     "http/request header value is invalid for X-A: failed to parse header value"),
    ({"headers": [{"name": "X", "value": "v", "valueEnvVar": "NO_SUCH_VAR_HR"}]}, -32602,
     "http/request header X requires executor environment variable NO_SUCH_VAR_HR"),
    ({"headers": [{"name": "X", "value": "v", "valueEnvVar": ""}]}, -32602,
     "http/request header X requires executor environment variable "),
    ({"bodyBase64": "!!"}, -32602, "Invalid symbol 33, offset 0."),
    ({"bodyBase64": "a"}, -32602, "Invalid input length: 1"),
    ({"bodyBase64": "aGk"}, -32602, "Invalid padding"),
    ({"timeoutMs": -1}, -32602, "invalid number"),
    ({"timeoutMs": "5"}, -32602, "invalid type: string \"5\", expected u64"),
    ({"timeoutMs": 0}, -32603, "http/request failed: route-aware request timed out"),
    ({"redirectPolicy": "none"}, -32602, "unknown variant `none`, expected `follow` or `stop`"),
    ({"redirectPolicy": None}, -32602, "invalid type: null, expected string or map"),
    ({"streamResponse": None}, -32602, "invalid type: null, expected a boolean"),
    ({"streamResponse": "yes"}, -32602, "invalid type: string \"yes\", expected a boolean"),
]


def test_param_errors(client, web):
    for over, code, msg in PARAM_ERRORS:
        params = {"method": "GET", "url": url(web, "/echo"), "requestId": "r"}
        params.update(over)
        params = {k: v for k, v in params.items() if v is not DEL}
        reply = client.call("http/request", params)
        assert reply.get("error") == {"code": code, "message": msg}, (over, reply)
    # a body with headers that are fine passes through: unknown fields are ignored
    assert ok(client, url=url(web, "/echo"), extra=1,
              headers=[{"name": "X", "value": "v", "other": 1}])["status"] == 200


# ---- redirects ----

def test_redirects(client, web):
    to = urllib.parse.quote
    # followed by default, with the Referer of the URL that answered
    u = url(web, "/redir/302?to=" + to("/echo?from=r") + "#frag")
    e = echo(ok(client, url=u))
    assert e["line"] == "GET /echo?from=r HTTP/1.1"
    assert e["headers"][0] == ["referer", u[:-len("#frag")]]   # no fragment
    # stop: the 3xx is the result
    res = ok(client, url=url(web, "/redir/302?to=/echo"), redirectPolicy="stop")
    assert res["status"] == 302
    assert {"name": "location", "value": "/echo"} in res["headers"]
    # POST after 301/302/303 becomes a bodyless GET; 307/308 keep method and body
    for code, line, body in ((301, "GET", b""), (302, "GET", b""), (303, "GET", b""),
                             (307, "POST", b"hello"), (308, "POST", b"hello")):
        e = echo(ok(client, method="POST", bodyBase64=b64(b"hello"),
                    url=url(web, "/redir/%d?to=/echo" % code),
                    headers=[{"name": "Content-Type", "value": "text/plain"},
                             {"name": "Authorization", "value": "Bearer t"}]))
        assert e["line"] == line + " /echo HTTP/1.1", code
        assert unb64(e["body"]) == body
        names = [h[0] for h in e["headers"]]
        assert ("content-type" in names) == (code in (307, 308))
        assert "authorization" in names          # same origin: kept
    # PUT keeps its body on 301; HEAD stays HEAD on 303
    e = echo(ok(client, method="PUT", bodyBase64=b64(b"p"), url=url(web, "/redir/301?to=/echo")))
    assert e["line"] == "PUT /echo HTTP/1.1" and unb64(e["body"]) == b"p"
    res = ok(client, method="HEAD", url=url(web, "/redir/303?to=/echo"))
    assert res["status"] == 200 and res["bodyBase64"] == ""
    # across origins (another host name): credentials dropped, the Referer is the origin
    e = echo(ok(client, url=url(web, "/redir/302?to=" + to("http://localhost:%d/echo" % web.port)),
                headers=[{"name": "Authorization", "value": "x"}, {"name": "Cookie", "value": "c"},
                         {"name": "Referer", "value": "mine"}, {"name": "X-Keep", "value": "k"}]))
    assert e["headers"][:2] == [["x-keep", "k"], ["referer", "http://127.0.0.1:%d/" % web.port]]
    assert e["headers"][-1] == ["host", "localhost:%d" % web.port]
    # the limit: 10 redirects are followed, the 11th is an error; so is a loop
    assert unb64(ok(client, url=url(web, "/chain/10"))["bodyBase64"]) == b"end of chain"
    assert err(client, url=url(web, "/chain/11")) == (
        -32603, "http/request failed: too many redirects")
    assert err(client, url=url(web, "/loop")) == (-32603, "http/request failed: too many redirects")
    assert err(client, url=url(web, "/loop"), streamResponse=True) == (
        -32603, "http/request failed: too many redirects")
    # a target of another scheme; a Location that is no URL is the answer itself
    assert err(client, url=url(web, "/redir/302?to=" + to("file:///etc/passwd"))) == (
        -32603, "http/request failed: redirect target uses unsupported URL scheme: file")
    res = ok(client, url=url(web, "/redir/302?to=" + to("http://[")))
    assert res["status"] == 302


# ---- timeouts, failures ----

def test_timeouts(client, web):
    t0 = time.monotonic()
    assert err(client, url=url(web, "/hang"), timeoutMs=300) == (
        -32603, "http/request failed: error sending request for url (%s)" % url(web, "/hang"))
    assert time.monotonic() - t0 >= 0.29
    # the deadline covers the body too: buffered, then streamed
    assert err(client, url=url(web, "/hang-body"), timeoutMs=400) == (
        -32603, "failed to read http/request response body: error decoding response body")
    res = ok(client, url=url(web, "/hang-body"), timeoutMs=400, streamResponse=True,
             requestId="t1")
    assert res["status"] == 200
    ds = deltas(client, "t1")
    assert [d["seq"] for d in ds] == list(range(1, len(ds) + 1))
    assert b"".join(unb64(d["deltaBase64"]) for d in ds) == b"first"
    assert ds[-1] == {"requestId": "t1", "seq": len(ds), "deltaBase64": "", "done": True,
                      "error": "error decoding response body"}


def test_connect_failures(client, web):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()     # nothing listens there now
    u = "http://127.0.0.1:%d/" % port
    assert err(client, url=u) == (-32603, "http/request failed: error sending request for url (%s)" % u)
    u = "http://no-such-host.invalid/"
    assert err(client, url=u) == (-32603, "http/request failed: error sending request for url (%s)" % u)
    # the URL shown is the parsed one, without its userinfo
    assert err(client, url="http://us:pw@127.0.0.1:%d/a b#f" % port) == (
        -32603, "http/request failed: error sending request for url "
        "(http://127.0.0.1:%d/a%%20b#f)" % port)
    # TLS to a plain-text server
    u = "https://127.0.0.1:%d/echo" % web.port
    assert err(client, url=u) == (-32603, "http/request failed: error sending request for url (%s)" % u)
    # a malformed head, more headers than the parser takes
    u = url(web, "/many-headers")
    assert err(client, url=u) == (-32603, "http/request failed: error sending request for url (%s)" % u)


def test_server_closes_mid_body(client, web):
    assert err(client, url=url(web, "/abort")) == (
        -32603, "failed to read http/request response body: error decoding response body")
    assert err(client, url=url(web, "/bad-chunk")) == (
        -32603, "failed to read http/request response body: error decoding response body")
    for path, rid, got in (("/abort", "a1", b"partial"), ("/bad-chunk", "a2", b"hello")):
        res = ok(client, url=url(web, path), streamResponse=True, requestId=rid)
        assert res["bodyBase64"] == ""
        ds = deltas(client, rid)
        assert b"".join(unb64(d["deltaBase64"]) for d in ds) == got
        assert ds[-1]["done"] is True and ds[-1]["error"] == "error decoding response body"
        assert ds[-1]["deltaBase64"] == ""
        assert [d["seq"] for d in ds] == list(range(1, len(ds) + 1))


# ---- streamed bodies ----

def test_stream(client, web):
    rid = "s1"
    i = client.request("http/request", {"method": "GET", "url": url(web, "/chunked?n=3&gap=0.05"),
                                        "requestId": rid, "streamResponse": True})
    res = client.wait_reply(i)["result"]
    assert res["status"] == 200 and res["bodyBase64"] == ""
    # the reply comes before any delta
    first = [m for m in client.log if m.get("id") == i or m.get("method") == DELTA]
    assert first[0].get("id") == i
    ds = deltas(client, rid)
    assert [d["seq"] for d in ds] == list(range(1, len(ds) + 1))
    assert b"".join(unb64(d["deltaBase64"]) for d in ds) == b"event 0\nevent 1\nevent 2\n"
    assert all(d["done"] is False and d["error"] is None for d in ds[:-1])
    assert ds[-1] == {"requestId": rid, "seq": len(ds), "deltaBase64": "", "done": True,
                      "error": None}
    assert all(list(d.keys()) == ["requestId", "seq", "deltaBase64", "done", "error"] for d in ds)
    # the requestId may be used again once its stream ended; "" is a requestId too
    for rid2 in (rid, ""):
        ok(client, url=url(web, "/echo"), streamResponse=True, requestId=rid2)
        assert deltas(client, rid2)[-1]["done"] is True
    # bodiless answers: one terminal delta with seq 1
    for path, method, r2 in (("/status?code=204", "GET", "n1"), ("/echo", "HEAD", "n2")):
        ok(client, url=url(web, path), method=method, streamResponse=True, requestId=r2)
        assert deltas(client, r2) == [{"requestId": r2, "seq": 1, "deltaBase64": "", "done": True,
                                       "error": None}]


def test_stream_request_id_in_use(client, web):
    web.state["hang_started"].clear()
    i = client.request("http/request", {"method": "GET", "url": url(web, "/hang-body"),
                                        "requestId": "dup", "streamResponse": True,
                                        "timeoutMs": int(EVENT_TIMEOUT * 1000)})
    assert client.wait_reply(i)["result"]["status"] == 200
    assert err(client, url=url(web, "/echo"), streamResponse=True, requestId="dup") == (
        -32602, "http/request streamResponse requestId `dup` is already active")
    # buffered requests may share a requestId with anything
    assert ok(client, url=url(web, "/echo"), requestId="dup")["status"] == 200


# ---- limits ----

def test_response_limit(server_factory, web):
    srv = server_factory("--http-max-response-bytes", "1048576", env=clean_env())
    c = srv.connect()
    msg = ("failed to read http/request response body: the response body exceeds this "
           "server's limit of 1048576 bytes (--http-max-response-bytes)")
    assert err(c, url=url(web, "/gen?n=2000000")) == (-32603, msg)             # by its length
    assert err(c, url=url(web, "/gen?n=2000000&chunked=1")) == (-32603, msg)   # while read
    assert len(unb64(ok(c, url=url(web, "/gen?n=1000000"))["bodyBase64"])) == 1000000
    # a streamed body has no such limit
    ok(c, url=url(web, "/gen?n=3000000"), streamResponse=True, requestId="big")
    ds = deltas(c, "big")
    assert sum(len(unb64(d["deltaBase64"])) for d in ds) == 3000000 and ds[-1]["error"] is None
    c.ws.close()


def test_request_size_limits(server_factory, web):
    srv = server_factory("--max-message-bytes", "1048576", env=clean_env())
    c = srv.connect()
    big = [{"name": "X-Big", "value": "v" * 65530}]
    assert err(c, url=url(web, "/echo"), headers=big * 1 + [{"name": "X-Huge",
                                                             "value": "v" * 70000}]) == (
        -32602, "http/request header X-Huge is too large (at most 65536 bytes)")
    assert err(c, url=url(web, "/echo"), headers=big * 5) == (
        -32602, "http/request headers are too large (at most 262144 bytes together)")
    assert err(c, url=url(web, "/echo"), headers=[{"name": "X", "value": ""}] * 257) == (
        -32602, "http/request has too many headers (at most 256)")
    # request bodies held in flight: one message's worth per connection
    body = b64(bytes(600000))
    i = c.request("http/request", {"method": "POST", "url": url(web, "/hang"), "requestId": "b1",
                                   "bodyBase64": body, "timeoutMs": int(EVENT_TIMEOUT * 1000)})
    assert err(c, method="POST", url=url(web, "/echo"), bodyBase64=body) == (
        -32603, "http/request failed: request bodies in flight on this connection would exceed "
        "1048576 bytes (--max-message-bytes)")
    assert not c.has_reply(i)
    c.ws.close()


def test_requests_per_connection(client, web):
    ids = [client.request("http/request", {"method": "GET", "url": url(web, "/hang"),
                                           "requestId": "h%d" % k,
                                           "timeoutMs": int(EVENT_TIMEOUT * 1000)})
           for k in range(64)]
    assert err(client, url=url(web, "/echo")) == (
        -32603, "http/request failed: too many requests in flight on this connection (at most 64)")
    assert not any(client.has_reply(i) for i in ids)


# ---- a client that reads slowly, a client that goes away ----

def sanitized(pid):
    """ASan keeps freed memory in quarantine: RSS says nothing under it (the pacing checks
    that do not look at RSS still run)."""
    with open("/proc/%d/maps" % pid) as f:
        return "libasan" in f.read()


def assert_rss_bounded(pid, rss0, bound_kib=128 * 1024):
    if not sanitized(pid):
        rss = vm_rss_kib(pid)
        assert rss - rss0 < bound_kib, (rss0, rss)


def vm_rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_big_stream_paced_by_client(uexec, web):
    """A 1 GiB body made on the fly, streamed to a client that stops reading: uexec stops
    reading the upstream (the generator stalls far below 1 GiB) and its RSS stays bounded;
    the client then reads on (the stream resumes) and finally goes away mid-body (the
    upstream connection is closed)."""
    c = uexec.connect()
    rss0 = vm_rss_kib(uexec.pid)
    web.state["gen_closed"].clear()
    web.state["gen_sent"] = 0
    i = c.request("http/request", {"method": "GET", "url": url(web, "/gen?n=%d" % (1 << 30)),
                                   "requestId": "big", "streamResponse": True})
    assert c.wait_reply(i)["result"]["status"] == 200

    def stalled(window=1.0):
        last = [web.state["gen_sent"], time.monotonic()]

        def pred():
            now = web.state["gen_sent"]
            if now != last[0]:
                last[:] = [now, time.monotonic()]
                return False
            return time.monotonic() - last[1] >= window
        wait_until(pred, what="the generator to stall")
        return web.state["gen_sent"]

    # the client reads nothing: the generator stalls (socket buffers, uexec's bounded queue)
    sent = stalled()
    assert sent < 256 << 20, sent
    assert_rss_bounded(uexec.pid, rss0)
    # reading on resumes the stream, still bounded
    got = 0
    seq = 0
    while got < 64 << 20:
        n = c.next_notification(DELTA)["params"]
        seq += 1
        assert n["seq"] == seq and n["done"] is False
        got += len(unb64(n["deltaBase64"]))
    assert web.state["gen_sent"] > sent
    assert_rss_bounded(uexec.pid, rss0)
    # the client goes away: uexec closes the upstream connection
    c.ws.close()
    assert web.state["gen_closed"].wait(EVENT_TIMEOUT)


def test_client_closes_mid_request(uexec, web):
    c = uexec.connect()
    ok(c, url=url(web, "/echo"))      # warm up: what one request leaves open stays counted
    fds0 = settled_fd_count(uexec.pid)
    web.state["hang_started"].clear()
    web.state["hang_closed"].clear()
    c.request("http/request", {"method": "GET", "url": url(web, "/hang"), "requestId": "x"})
    assert web.state["hang_started"].wait(EVENT_TIMEOUT)
    c.ws.close()
    # the upstream connection ends with the client's, and no fd stays behind
    assert web.state["hang_closed"].wait(EVENT_TIMEOUT)
    wait_until(lambda: settled_fd_count(uexec.pid) <= fds0, what="fds back to %d" % fds0)
    c2 = uexec.connect()
    assert ok(c2, url=url(web, "/echo"))["status"] == 200
    c2.ws.close()


# ---- TLS ----

@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("http-pki"))


def test_https(server_factory, pki, web):
    sni = []
    ctx = tls_ctx(pki, "good")
    ctx.sni_callback = lambda sock, name, c: sni.append(name)
    good = start_http(ctx)
    wrong = start_http(tls_ctx(pki, "wrong"))
    selfsigned = start_http(tls_ctx(pki, "self"))
    try:
        env = clean_env(SSL_CERT_FILE=os.path.join(pki, "ca.pem"), SSL_CERT_DIR="/nonexistent")
        srv = server_factory(env=env)
        c = srv.connect()
        for host in ("127.0.0.1", "localhost"):
            e = echo(ok(c, url="https://%s:%d/echo" % (host, good.port)))
            assert e["headers"][-1] == ["host", "%s:%d" % (host, good.port)]
        # SNI for a name, none for an IP literal
        assert sni == [None, "localhost"], sni
        # no Referer from https to http
        e = echo(ok(c, url="https://127.0.0.1:%d/redir/302?to=%s" % (
            good.port, urllib.parse.quote(url(web, "/echo")))))
        assert [h for h in e["headers"] if h[0] == "referer"] == []
        res = ok(c, url="https://127.0.0.1:%d/chunked?n=2&gap=0" % good.port,
                 streamResponse=True, requestId="tls")
        assert res["status"] == 200
        assert b"".join(unb64(d["deltaBase64"]) for d in deltas(c, "tls")) == b"event 0\nevent 1\n"
        # a certificate for another name, one no trusted CA signed: refused
        for port in (wrong.port, selfsigned.port):
            u = "https://127.0.0.1:%d/echo" % port
            assert err(c, url=u) == (
                -32603, "http/request failed: error sending request for url (%s)" % u)
        c.ws.close()
    finally:
        for s in (good, wrong, selfsigned):
            s.shutdown()


# ---- content codings (the reference asks for zstd and gzip and decodes them) ----

def coded(body, coding, extra=b"", status=b"200 OK"):
    return (b"HTTP/1.1 " + status + b"\r\nContent-Encoding: " + coding + b"\r\nX-A: 1\r\n" + extra
            + b"Content-Length: %d\r\n\r\n" % len(body) + body)


def zstd_compress(data):
    exe = shutil.which("zstd")
    if not exe:
        pytest.skip("needs the zstd program to make a zstd body")
    return subprocess.run([exe, "-q", "-c"], input=data, capture_output=True, check=True,
                          timeout=60).stdout


def test_content_codings(client, web):
    import gzip
    plain = b"coded body " * 1000
    canned = web.state["canned"]
    canned["gz"] = coded(gzip.compress(plain), b"gzip")
    canned["zst"] = coded(zstd_compress(plain), b"zstd")
    canned["GZ"] = coded(gzip.compress(plain), b"GZIP")            # case matters: not decoded
    canned["br"] = coded(b"abc", b"br")                              # not asked for: as is
    canned["bad"] = coded(b"0123456789", b"gzip")
    canned["trail"] = coded(gzip.compress(plain) + b"junk", b"gzip")  # after the member: ignored
    canned["empty"] = coded(b"", b"gzip")
    canned["204"] = b"HTTP/1.1 204 No Content\r\nContent-Encoding: gzip\r\n\r\n"
    canned["chunked"] = (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: "
                         b"chunked\r\n\r\n" + b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in
                                                      [gzip.compress(plain)]) + b"0\r\n\r\n")
    for key in ("gz", "zst", "trail"):
        res = ok(client, url=url(web, "/canned/" + key))
        # decoded: Content-Encoding and Content-Length no longer describe the body
        assert res["headers"] == [{"name": "x-a", "value": "1"}], key
        assert unb64(res["bodyBase64"]) == plain, key
    res = ok(client, url=url(web, "/canned/chunked"))
    assert res["headers"] == [{"name": "transfer-encoding", "value": "chunked"}]
    assert unb64(res["bodyBase64"]) == plain
    res = ok(client, url=url(web, "/canned/GZ"))
    assert {"name": "content-encoding", "value": "GZIP"} in res["headers"]
    assert gzip.decompress(unb64(res["bodyBase64"])) == plain
    res = ok(client, url=url(web, "/canned/br"))
    assert {"name": "content-encoding", "value": "br"} in res["headers"]
    assert unb64(res["bodyBase64"]) == b"abc"
    for key, status in (("empty", 200), ("204", 204)):
        assert ok(client, url=url(web, "/canned/" + key)) == {"status": status, "headers": [
            {"name": "x-a", "value": "1"}] if key == "empty" else [], "bodyBase64": ""}
    assert err(client, url=url(web, "/canned/bad")) == (
        -32603, "failed to read http/request response body: error decoding response body")
    # streamed: decoded deltas; a bad body ends with the error delta
    ok(client, url=url(web, "/canned/zst"), streamResponse=True, requestId="z1")
    ds = deltas(client, "z1")
    assert b"".join(unb64(d["deltaBase64"]) for d in ds) == plain and ds[-1]["error"] is None
    ok(client, url=url(web, "/canned/bad"), streamResponse=True, requestId="z2")
    assert deltas(client, "z2")[-1] == {"requestId": "z2", "seq": 1, "deltaBase64": "",
                                        "done": True, "error": "error decoding response body"}


def test_decompression_bomb(server_factory, web):
    """A gzip body of 256 MiB of zeros (256 KiB on the wire): buffered, the limit stops it;
    streamed to a client that does not read, uexec decodes only what the client's queue
    takes (RSS bounded), then all of it once the client reads."""
    import zlib
    srv = server_factory("--http-max-response-bytes", "4194304", env=clean_env())
    c = srv.connect()
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1 << 20)
    body = b"".join(z.compress(block) for _ in range(256)) + z.flush()
    web.state["canned"]["bomb"] = coded(body, b"gzip")
    assert err(c, url=url(web, "/canned/bomb")) == (
        -32603, "failed to read http/request response body: the response body exceeds this "
        "server's limit of 4194304 bytes (--http-max-response-bytes)")
    rss0 = vm_rss_kib(srv.pid)
    ok(c, url=url(web, "/canned/bomb"), streamResponse=True, requestId="bomb")
    # not reading: uexec's RSS stays bounded while the queue is full
    last = [vm_rss_kib(srv.pid), time.monotonic()]

    def settled():
        now = vm_rss_kib(srv.pid)
        if abs(now - last[0]) > 1024:
            last[:] = [now, time.monotonic()]
            return False
        return time.monotonic() - last[1] >= 1.0
    wait_until(settled, what="uexec's RSS to settle")
    assert_rss_bounded(srv.pid, rss0)
    got = 0
    while True:
        n = c.next_notification(DELTA)["params"]
        if n["done"]:
            assert n["error"] is None
            break
        got += len(unb64(n["deltaBase64"]))
    assert got == 256 << 20
    assert_rss_bounded(srv.pid, rss0)
    c.ws.close()


# ---- the server's HTTP(S)_PROXY, ALL_PROXY and NO_PROXY (the reference's client honours them) ----

class Proxy:
    """An HTTP proxy: absolute-form requests are answered with what the proxy received
    (JSON {"proxied": head}); CONNECT tunnels are piped to their target."""

    def __init__(self):
        self.heads = []
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        accept_forever(self.sock, lambda c: threading.Thread(target=self._one, args=(c,),
                                                             daemon=True).start())

    @staticmethod
    def _pipe(a, b):
        pipe_bytes(a, b, shut_both=True)

    def _one(self, c):
        c.settimeout(EVENT_TIMEOUT)
        data = b""
        while b"\r\n\r\n" not in data:
            d = c.recv(65536)
            if not d:
                return
            data += d
        head = data.split(b"\r\n\r\n")[0].decode("latin1")
        self.heads.append(head)
        line = head.split("\r\n")[0]
        if line.startswith("CONNECT "):
            host, port = line.split()[1].rsplit(":", 1)
            u = socket.create_connection((host.strip("[]"), int(port)), timeout=EVENT_TIMEOUT)
            c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            threading.Thread(target=self._pipe, args=(u, c), daemon=True).start()
            self._pipe(c, u)
            return
        body = json.dumps({"proxied": head}).encode()
        c.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % len(body)
                  + body)
        c.close()

    def close(self):
        self.sock.close()


def test_proxy_from_environment(server_factory, pki):
    proxy = Proxy()
    good = start_http(tls_ctx(pki, "good"))
    try:
        base = clean_env(SSL_CERT_FILE=os.path.join(pki, "ca.pem"), SSL_CERT_DIR="/nonexistent")
        px = "http://pu:pp@127.0.0.1:%d" % proxy.port
        srv = server_factory(env=dict(base, HTTP_PROXY=px, HTTPS_PROXY=px,
                                      NO_PROXY="skip.invalid, 10.0.0.0/8"))
        c = srv.connect()
        # plain http: the absolute form to the proxy, its credential after accept
        res = ok(c, method="POST", url="http://example.invalid:81/echo?x", bodyBase64=b64(b"hi"),
                 headers=[{"name": "X-A", "value": "1"}])
        assert json.loads(unb64(res["bodyBase64"]))["proxied"].split("\r\n") == [
            "POST http://example.invalid:81/echo?x HTTP/1.1", "x-a: 1", "accept: */*",
            "proxy-authorization: Basic " + b64(b"pu:pp"), "accept-encoding: zstd,gzip",
            "host: example.invalid:81", "content-length: 2"]
        # https: a CONNECT tunnel, TLS to the target inside it (verified as without a proxy)
        e = echo(ok(c, url="https://localhost:%d/echo" % good.port))
        assert e["headers"][-1] == ["host", "localhost:%d" % good.port]
        assert proxy.heads[-1].split("\r\n") == [
            "CONNECT localhost:%d HTTP/1.1" % good.port, "Host: localhost:%d" % good.port,
            "Proxy-Authorization: Basic " + b64(b"pu:pp")]
        # NO_PROXY names (and their subdomains) and blocks go direct, whatever they answer
        n = len(proxy.heads)
        for u in ("http://sub.skip.invalid/", "http://skip.invalid/", "http://10.255.255.1:9/"):
            req(c, url=u, timeoutMs=300)
        assert len(proxy.heads) == n
        ok(c, url="http://noskip.invalid/")     # a name that only ends like one: proxied
        assert len(proxy.heads) == n + 1
        c.ws.close()
        # ALL_PROXY serves both schemes when the scheme's own is unset
        srv2 = server_factory(env=dict(base, ALL_PROXY="127.0.0.1:%d" % proxy.port))
        c2 = srv2.connect()
        res = ok(c2, url="http://example.invalid/echo")
        assert json.loads(unb64(res["bodyBase64"]))["proxied"].startswith(
            "GET http://example.invalid/echo HTTP/1.1\r\n")
        c2.ws.close()
    finally:
        proxy.close()
        good.shutdown()
