"""A local HTTP server for the http/request scripts (steps.py "http_request"): both
executors reach it at $HTTPURL. Answers carry no Date or Server header, so that the two
results compare byte for byte.

  /echo                 200, JSON {"line", "headers" (as received, in order), "body" (b64)},
                        plus X-Multi twice
  /redir/CODE?to=LOC    CODE with Location LOC
  /chain/N              N redirects, then 200 "end of chain"
  /loop                 302 to itself
  /status?code=C&body=B C with body B
  /chunked?n=N          N chunks "event i\\n", then trailers
  /gzip?as=C&bad=1      a gzip body (or 10 bytes that are none) with Content-Encoding C
  /close-delimited      a body ended by the close
  /abort                Content-Length 1000, 7 bytes, then the close
  /bad-chunk            a chunk, then a malformed chunk-size line
  /hang                 no answer until the client goes away (timeouts)
  /hang-body            a head (Content-Length 100) and 5 bytes, then nothing
"""
import base64
import http.server
import json
import socket
import socketserver
import threading
import urllib.parse


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _send(self, code, body=b"", hdrs=()):
        self.send_response_only(code)
        for k, v in hdrs:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _raw(self, data):
        self.wfile.write(data)
        self.wfile.flush()
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        path, _, query = self.path.partition("?")
        q = dict(urllib.parse.parse_qsl(query))
        if path == "/echo":
            return self._send(200, json.dumps({
                "line": self.raw_requestline.decode("latin1").rstrip("\r\n"),
                "headers": [[k, v] for k, v in self.headers.raw_items()],
                "body": base64.b64encode(body).decode()}).encode(),
                [("Content-Type", "application/json"), ("X-Multi", "a"), ("X-Multi", "b")])
        if path.startswith("/redir/"):
            return self._send(int(path.split("/")[2]), b"", [("Location", q.get("to", ""))])
        if path.startswith("/chain/"):
            k = int(path.split("/")[2])
            if k <= 0:
                return self._send(200, b"end of chain")
            return self._send(302, b"", [("Location", "/chain/%d" % (k - 1))])
        if path == "/loop":
            return self._send(302, b"", [("Location", "/loop")])
        if path == "/status":
            return self._send(int(q.get("code", 200)), q.get("body", "").encode())
        if path == "/chunked":
            self.send_response_only(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(int(q.get("n", 3))):
                d = b"event %d\n" % i
                self.wfile.write(b"%x\r\n%s\r\n" % (len(d), d))
                self.wfile.flush()
            self.wfile.write(b"0\r\nX-Trailer: t\r\n\r\n")
            return
        if path == "/gzip":
            import gzip
            body = b"coded body\n" * 500
            return self._send(200, gzip.compress(body, mtime=0) if q.get("bad") is None else b"0123456789",
                              [("Content-Encoding", q.get("as", "gzip")), ("X-A", "1")])
        if path == "/close-delimited":
            return self._raw(b"HTTP/1.1 200 OK\r\nX-A: 1\r\n\r\nuntil the close")
        if path == "/abort":
            return self._raw(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npartial")
        if path == "/bad-chunk":
            return self._raw(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                             b"5\r\nhello\r\nZZ\r\n")
        if path in ("/hang", "/hang-body"):
            if path == "/hang-body":
                self.send_response_only(200)
                self.send_header("Content-Length", "100")
                self.end_headers()
                self.wfile.write(b"first")
                self.wfile.flush()
            self.connection.settimeout(30)
            try:
                while self.connection.recv(65536):
                    pass
            except OSError:
                pass
            self.close_connection = True
            return
        return self._send(404, b"nope", [("Content-Type", "text/plain")])

    def __getattr__(self, name):
        if name.startswith("do_"):
            return self.handle_any
        raise AttributeError(name)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def start():
    """Starts the server in a daemon thread; returns its base URL."""
    srv = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return "http://127.0.0.1:%d" % srv.server_address[1]
