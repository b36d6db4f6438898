# SPDX-License-Identifier: MIT
"""Small synchronous clients for black-box tests of uexec.

* ``WebSocket``   - raw-socket RFC 6455 client that can also send deliberately
                    broken frames (unmasked, RSV bits, bad UTF-8, odd opcodes...).
* ``RpcClient``   - JSON-RPC layer (no "jsonrpc" member, as the exec-server
                    protocol) over any transport with send_text()/recv_text().
* ``StdioTransport`` - newline-delimited JSON over a child's stdin/stdout.
* ``http_exchange`` - one raw HTTP request/response on a fresh TCP connection.

Everything is synchronous and every blocking operation takes a timeout, so a
misbehaving server makes a test fail instead of hang.
"""

import base64
import collections
import hashlib
import json
import os
import select
import socket
import struct
import time
import urllib.parse

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
# How long a blocking operation waits for the server by default: for an event (a reply, a
# notification, a close), never a performance bound. Generous enough for an ASan + UBSan
# uexec (2-5x slower) on a loaded 2-core machine; a wait returns as soon as the event
# comes, so it costs nothing when the test passes. conftest.EVENT_TIMEOUT is the same.
DEFAULT_TIMEOUT = 60.0

OP_CONT = 0x0
OP_TEXT = 0x1
OP_BINARY = 0x2
OP_CLOSE = 0x8
OP_PING = 0x9
OP_PONG = 0xA

_ABSENT = object()


class WSError(Exception):
    pass


class Timeout(WSError):
    pass


class ConnectionClosed(WSError):
    """The peer went away. ``code`` is the close code if a Close frame came,
    None on plain EOF/reset."""

    def __init__(self, how, code=None, reason=b""):
        super().__init__("connection closed (%s, code=%r, reason=%r)" % (how, code, reason))
        self.how = how          # "close" | "eof" | "reset"
        self.code = code
        self.reason = reason


class HandshakeError(WSError):
    def __init__(self, status_line, headers, body):
        super().__init__("upgrade refused: %r" % (status_line,))
        self.status_line = status_line
        self.headers = headers
        self.body = body


def accept_key(key):
    return base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()


def parse_ws_url(url):
    u = urllib.parse.urlsplit(url)
    assert u.scheme == "ws", url
    return u.hostname, u.port


def file_uri(path):
    """Native absolute path -> file: URI (the form results use, spec §5.1)."""
    path = os.fspath(path)
    assert path.startswith("/"), path
    return "file://" + urllib.parse.quote(path, safe="/-._~!$&'()*+,;=:@")


def b64(data):
    if isinstance(data, str):
        data = data.encode()
    return base64.b64encode(data).decode()


def unb64(s):
    return base64.b64decode(s, validate=True)


# --------------------------------------------------------------------------
# raw HTTP


def _read_http_head(sock, deadline, buf=b""):
    while b"\r\n\r\n" not in buf:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise Timeout("timed out reading HTTP response head (got %r)" % buf[:200])
        sock.settimeout(remaining)
        try:
            data = sock.recv(65536)
        except socket.timeout:
            raise Timeout("timed out reading HTTP response head (got %r)" % buf[:200])
        except ConnectionResetError:
            data = b""
        if not data:
            raise ConnectionClosed("eof")
        buf += data
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status_line = lines[0]
    headers = []
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers.append((name, value.strip()))
    return status_line, headers, rest


def headers_dict(headers):
    """Lower-cased name -> value (last wins)."""
    return {n.lower(): v for n, v in headers}


def http_exchange(host, port, request, timeout=DEFAULT_TIMEOUT):
    """Send raw request bytes on a new TCP connection; return
    (status_line, [(name, value)...] as received, body bytes)."""
    deadline = time.monotonic() + timeout
    sock = socket.create_connection((host, port), timeout=timeout)
    try:
        sock.sendall(request)
        status_line, headers, rest = _read_http_head(sock, deadline)
        hd = headers_dict(headers)
        body = rest
        status_code = int(status_line.split()[1]) if len(status_line.split()) > 1 else 0
        if status_code == 101:
            return status_line, headers, b""
        if "content-length" in hd:
            n = int(hd["content-length"])
            while len(body) < n:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise Timeout("timed out reading HTTP body")
                sock.settimeout(remaining)
                data = sock.recv(65536)
                if not data:
                    break
                body += data
            body = body[:n]
        else:
            # read until EOF (connection: close) or timeout
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                sock.settimeout(min(remaining, 2.0))
                try:
                    data = sock.recv(65536)
                except socket.timeout:
                    break
                except ConnectionResetError:
                    break
                if not data:
                    break
                body += data
        return status_line, headers, body
    finally:
        sock.close()


def upgrade_request(host, port, path="/", key=None, extra_headers=(), version="13",
                    http_version="HTTP/1.1", method="GET", omit=()):
    key = key or base64.b64encode(os.urandom(16)).decode()
    hdrs = [("Host", "%s:%d" % (host, port)),
            ("Connection", "Upgrade"),
            ("Upgrade", "websocket"),
            ("Sec-WebSocket-Version", version),
            ("Sec-WebSocket-Key", key)]
    hdrs = [(n, v) for n, v in hdrs if n not in omit]
    hdrs += list(extra_headers)
    req = "%s %s %s\r\n" % (method, path, http_version)
    req += "".join("%s: %s\r\n" % (n, v) for n, v in hdrs) + "\r\n"
    return req.encode(), key


# --------------------------------------------------------------------------
# WebSocket


class Frame:
    __slots__ = ("opcode", "fin", "rsv", "masked", "payload")

    def __init__(self, opcode, fin, rsv, masked, payload):
        self.opcode, self.fin, self.rsv, self.masked, self.payload = opcode, fin, rsv, masked, payload

    def __repr__(self):
        return "Frame(op=%d fin=%s rsv=%d masked=%s len=%d %r)" % (
            self.opcode, self.fin, self.rsv, self.masked, len(self.payload), self.payload[:80])


class WebSocket:
    def __init__(self, sock, leftover=b"", response_headers=None, status_line=None):
        self.sock = sock
        self._buf = bytearray(leftover)
        self.response_headers = response_headers or []
        self.status_line = status_line
        self.auto_pong = False
        self.pings = []          # payloads of pings received from the server
        self.pongs = []          # payloads of pongs received from the server
        self.data_frames = []    # (opcode, fin, masked, rsv, length) of every data frame received
        self.close_frame = None  # (code, reason) when a close frame came
        self.closed = None       # ConnectionClosed once the connection is gone
        self._frag_op = None
        self._frag = bytearray()

    # ---- connection set-up
    @classmethod
    def connect(cls, url, path="/", extra_headers=(), timeout=DEFAULT_TIMEOUT, ssl_context=None):
        """ssl_context: speak TLS (wss://) with this ssl.SSLContext."""
        host, port = parse_ws_url(url)
        sock = socket.create_connection((host, port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if ssl_context is not None:
            sock = ssl_context.wrap_socket(sock, server_hostname=host)
        req, key = upgrade_request(host, port, path=path, extra_headers=extra_headers)
        sock.sendall(req)
        deadline = time.monotonic() + timeout
        status_line, headers, rest = _read_http_head(sock, deadline)
        if not status_line.startswith("HTTP/1.1 101"):
            sock.close()
            raise HandshakeError(status_line, headers, rest)
        hd = headers_dict(headers)
        if hd.get("sec-websocket-accept") != accept_key(key):
            sock.close()
            raise WSError("bad Sec-WebSocket-Accept %r" % hd.get("sec-websocket-accept"))
        return cls(sock, rest, headers, status_line)

    @property
    def local_addr(self):
        h, p = self.sock.getsockname()[:2]
        return "%s:%d" % (h, p)

    # ---- sending
    @staticmethod
    def build_frame(opcode, payload=b"", fin=True, rsv=0, mask=True, mask_key=None,
                    length=None):
        if isinstance(payload, str):
            payload = payload.encode()
        n = len(payload) if length is None else length
        b0 = (0x80 if fin else 0) | ((rsv & 7) << 4) | (opcode & 0xF)
        mbit = 0x80 if mask else 0
        if n < 126:
            head = struct.pack("!BB", b0, mbit | n)
        elif n < 65536:
            head = struct.pack("!BBH", b0, mbit | 126, n)
        else:
            head = struct.pack("!BBQ", b0, mbit | 127, n)
        if mask:
            key = mask_key if mask_key is not None else os.urandom(4)
            head += key
            payload = _mask(payload, key)
        return head + payload

    def send_raw(self, data):
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError) as e:
            raise ConnectionClosed("reset") from e

    def send_frame(self, opcode, payload=b"", **kw):
        self.send_raw(self.build_frame(opcode, payload, **kw))

    def send_text(self, text):
        self.send_frame(OP_TEXT, text.encode() if isinstance(text, str) else text)

    def send_binary(self, data):
        self.send_frame(OP_BINARY, data.encode() if isinstance(data, str) else data)

    def ping(self, payload=b""):
        self.send_frame(OP_PING, payload)

    def pong(self, payload=b""):
        self.send_frame(OP_PONG, payload)

    def send_close(self, code=1000, reason=b""):
        payload = b"" if code is None else struct.pack("!H", code) + reason
        self.send_frame(OP_CLOSE, payload)

    # ---- receiving
    def _fill(self, n, deadline):
        while len(self._buf) < n:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise Timeout("timed out waiting for data")
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(max(65536, n - len(self._buf)))
            except socket.timeout:
                raise Timeout("timed out waiting for data")
            except ConnectionResetError:
                self.closed = ConnectionClosed("reset")
                raise self.closed
            if not data:
                self.closed = ConnectionClosed("eof")
                raise self.closed
            self._buf += data

    def _take(self, n):
        data = bytes(self._buf[:n])
        del self._buf[:n]
        return data

    def recv_frame(self, timeout=DEFAULT_TIMEOUT):
        """Next raw frame (no control-frame handling)."""
        if self.closed is not None:
            raise self.closed
        deadline = None if timeout is None else time.monotonic() + timeout
        self._fill(2, deadline)
        b0, b1 = self._buf[0], self._buf[1]
        n = b1 & 0x7F
        masked = bool(b1 & 0x80)
        hl = 2
        if n == 126:
            self._fill(4, deadline)
            n = struct.unpack("!H", self._buf[2:4])[0]
            hl = 4
        elif n == 127:
            self._fill(10, deadline)
            n = struct.unpack("!Q", self._buf[2:10])[0]
            hl = 10
        if masked:
            hl += 4
        self._fill(hl + n, deadline)
        head = self._take(hl)
        payload = self._take(n)
        if masked:
            payload = _mask(payload, head[-4:])
        return Frame(b0 & 0xF, bool(b0 & 0x80), (b0 >> 4) & 7, masked, payload)

    def recv_message(self, timeout=DEFAULT_TIMEOUT):
        """Next data message as (opcode, payload bytes). Pings/pongs are
        recorded (and answered if auto_pong); a Close frame raises
        ConnectionClosed("close", code)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            f = self.recv_frame(remaining)
            if f.opcode == OP_PING:
                self.pings.append(f.payload)
                if self.auto_pong:
                    self.pong(f.payload)
                continue
            if f.opcode == OP_PONG:
                self.pongs.append(f.payload)
                continue
            if f.opcode == OP_CLOSE:
                code = struct.unpack("!H", f.payload[:2])[0] if len(f.payload) >= 2 else None
                self.close_frame = (code, f.payload[2:])
                self.closed = ConnectionClosed("close", code, f.payload[2:])
                raise self.closed
            self.data_frames.append((f.opcode, f.fin, f.masked, f.rsv, len(f.payload)))
            if f.opcode in (OP_TEXT, OP_BINARY):
                if f.fin:
                    return f.opcode, f.payload
                self._frag_op, self._frag = f.opcode, bytearray(f.payload)
                continue
            if f.opcode == OP_CONT:
                self._frag += f.payload
                if f.fin:
                    op, data = self._frag_op, bytes(self._frag)
                    self._frag_op, self._frag = None, bytearray()
                    return op, data
                continue
            raise WSError("unexpected opcode %d from server" % f.opcode)

    def recv_pong(self, timeout=DEFAULT_TIMEOUT):
        """Wait for the next Pong; data messages arriving meanwhile are returned
        in a list alongside."""
        deadline = time.monotonic() + timeout
        others = []
        while True:
            f = self.recv_frame(max(0.0, deadline - time.monotonic()))
            if f.opcode == OP_PONG:
                self.pongs.append(f.payload)
                return f.payload, others
            others.append(f)

    # transport interface for RpcClient
    def send_text_message(self, text):
        self.send_text(text)

    def recv_text(self, timeout):
        op, payload = self.recv_message(timeout)
        return payload.decode("utf-8")

    def wait_closed(self, timeout=DEFAULT_TIMEOUT):
        """Read and discard until the server closes. Returns
        ("close", code) or ("eof", None) (EOF or reset)."""
        deadline = time.monotonic() + timeout
        try:
            while True:
                self.recv_message(max(0.0, deadline - time.monotonic()))
        except ConnectionClosed as e:
            if e.how == "close":
                # after a close frame the server must close TCP too; drain it
                try:
                    while True:
                        self.recv_frame(max(0.1, deadline - time.monotonic()))
                except ConnectionClosed:
                    pass
                except Timeout:
                    raise Timeout("server sent Close but did not close TCP")
                return ("close", e.code)
            return ("eof", None)

    def close(self, code=1000, reason=b""):
        try:
            self.send_close(code, reason)
        except (ConnectionClosed, OSError):
            pass

    def abort(self):
        """Close the TCP socket without a Close frame."""
        try:
            self.sock.close()
        except OSError:
            pass

    def reset(self):
        """Close with RST (SO_LINGER 0)."""
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.sock.close()
        except OSError:
            pass


def _mask(payload, key):
    if not payload:
        return b""
    n = len(payload)
    k = (key * (n // 4 + 1))[:n]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(k, "big")).to_bytes(n, "big")


# --------------------------------------------------------------------------
# stdio transport


class StdioTransport:
    """Newline-delimited JSON over a subprocess' stdin/stdout."""

    def __init__(self, proc):
        self.proc = proc
        self._buf = b""
        os.set_blocking(proc.stdout.fileno(), False)

    def send_text_message(self, text):
        assert "\n" not in text
        self.proc.stdin.write(text.encode() + b"\n")
        self.proc.stdin.flush()

    def recv_text(self, timeout):
        deadline = None if timeout is None else time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise Timeout("timed out waiting for a stdio line")
            r, _, _ = select.select([fd], [], [], remaining)
            if not r:
                continue
            data = os.read(fd, 65536)
            if not data:
                raise ConnectionClosed("eof")
            self._buf += data
        line, self._buf = self._buf.split(b"\n", 1)
        return line.decode("utf-8")

    def close(self, *a):
        try:
            self.proc.stdin.close()
        except OSError:
            pass


# --------------------------------------------------------------------------
# JSON-RPC


def id_key(i):
    return json.dumps(i)


class RpcError(AssertionError):
    pass


class ProcRun:
    """Everything a client saw for one process."""

    def __init__(self, process_id):
        self.process_id = process_id
        self.events = []     # notification params, in arrival order
        self.methods = []    # matching method names

    def add(self, method, params):
        self.methods.append(method)
        self.events.append(params)

    @property
    def outputs(self):
        return [p for m, p in zip(self.methods, self.events) if m == "process/output"]

    def data(self, stream=None):
        return b"".join(unb64(p["chunk"]) for p in self.outputs
                        if stream is None or p["stream"] == stream)

    @property
    def stdout(self):
        return self.data("stdout")

    @property
    def stderr(self):
        return self.data("stderr")

    @property
    def pty(self):
        return self.data("pty")

    def _one(self, method):
        evs = [p for m, p in zip(self.methods, self.events) if m == method]
        return evs[0] if evs else None

    @property
    def exited(self):
        return self._one("process/exited")

    @property
    def closed(self):
        return self._one("process/closed")

    @property
    def exit_code(self):
        e = self.exited
        return None if e is None else e["exitCode"]

    @property
    def seqs(self):
        return [p["seq"] for p in self.events]

    def check_sequencing(self):
        """§9.1/§9.2: one counter from 1, no gaps, notifications in seq order,
        closed last, exactly one exited and one closed."""
        assert self.seqs == list(range(1, len(self.seqs) + 1)), self.seqs
        assert self.methods.count("process/exited") == 1, self.methods
        assert self.methods.count("process/closed") == 1, self.methods
        assert self.methods[-1] == "process/closed", self.methods
        for p in self.outputs:
            assert p["chunk"] != "", "empty output chunk"


class RpcClient:
    """JSON-RPC client over a transport (WebSocket or StdioTransport)."""

    def __init__(self, transport, keep_log=True):
        self.t = transport
        self.next_id = 1
        self.replies = {}                 # id_key -> deque of reply messages
        self.notifications = collections.deque()
        self.server_requests = collections.deque()  # the server's requests (network/policyRequest)
        self.log = [] if keep_log else None   # every message received, in order
        self.sent = []

    # ---- low level
    def send_obj(self, obj):
        self.send_raw(json.dumps(obj, separators=(",", ":")))

    def send_raw(self, text):
        self.sent.append(text if len(text) < 4096 else text[:4096])
        self.t.send_text_message(text)

    def _dispatch(self, text):
        msg = json.loads(text, object_pairs_hook=collections.OrderedDict)
        if self.log is not None:
            self.log.append(msg)
        if isinstance(msg, dict) and "method" in msg and "id" not in msg:
            self.notifications.append(msg)
        elif isinstance(msg, dict) and "method" in msg:
            self.server_requests.append(msg)
        elif isinstance(msg, dict) and "id" in msg:
            self.replies.setdefault(id_key(msg["id"]), collections.deque()).append(msg)
        else:
            raise AssertionError("unexpected message from server: %r" % (text[:500],))
        return msg

    def pump(self, timeout):
        """Receive and dispatch one message."""
        return self._dispatch(self.t.recv_text(timeout))

    # ---- requests
    def request(self, method, params=_ABSENT, id=_ABSENT):
        """Send a request without waiting; returns its id."""
        if id is _ABSENT:
            id = self.next_id
            self.next_id += 1
        msg = {"id": id, "method": method}
        if params is not _ABSENT:
            msg["params"] = params
        self.send_obj(msg)
        return id

    def has_reply(self, id):
        return bool(self.replies.get(id_key(id)))

    def wait_reply(self, id, timeout=DEFAULT_TIMEOUT):
        k = id_key(id)
        deadline = time.monotonic() + timeout
        while not self.replies.get(k):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Timeout("no reply to request id %r within %.1fs" % (id, timeout))
            self.pump(remaining)
        return self.replies[k].popleft()

    def call(self, method, params=_ABSENT, timeout=DEFAULT_TIMEOUT, id=_ABSENT):
        """Request + wait; returns the whole reply message."""
        return self.wait_reply(self.request(method, params, id=id), timeout)

    def result(self, method, params=_ABSENT, timeout=DEFAULT_TIMEOUT):
        reply = self.call(method, params, timeout)
        if "error" in reply:
            raise RpcError("%s failed: %r" % (method, reply["error"]))
        return reply["result"]

    def error(self, method, params=_ABSENT, timeout=DEFAULT_TIMEOUT):
        reply = self.call(method, params, timeout)
        if "error" not in reply:
            raise RpcError("%s unexpectedly succeeded: %r" % (method, reply.get("result")))
        return reply["error"]

    def notify(self, method, params=_ABSENT):
        msg = {"method": method}
        if params is not _ABSENT:
            msg["params"] = params
        self.send_obj(msg)

    # ---- notifications
    def next_notification(self, method=None, timeout=DEFAULT_TIMEOUT, pred=None):
        """First queued/arriving notification matching method (a name or a
        tuple of names) and pred(params); others stay queued."""
        methods = (method,) if isinstance(method, str) else method

        def matches(m):
            return ((methods is None or m["method"] in methods)
                    and (pred is None or pred(m.get("params"))))

        deadline = time.monotonic() + timeout
        scanned = 0
        while True:
            for i in range(scanned, len(self.notifications)):
                m = self.notifications[i]
                if matches(m):
                    del self.notifications[i]
                    return m
            scanned = len(self.notifications)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Timeout("no %s notification within %.1fs" % (method or "matching", timeout))
            self.pump(remaining)

    def next_server_request(self, timeout=DEFAULT_TIMEOUT):
        """The next request the server sent (id and method), in arrival order."""
        deadline = time.monotonic() + timeout
        while not self.server_requests:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Timeout("no request from the server within %.1fs" % timeout)
            self.pump(remaining)
        return self.server_requests.popleft()

    def drain_notifications(self, timeout=0.0):
        """Pump whatever arrives within timeout; return and clear the queue."""
        deadline = time.monotonic() + timeout
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self.pump(remaining)
        except Timeout:
            pass
        out = list(self.notifications)
        self.notifications.clear()
        return out

    # ---- handshake
    def initialize(self, client_name="uexec-tests", resume=_ABSENT, initialized=True):
        params = {"clientName": client_name}
        if resume is not _ABSENT:
            params["resumeSessionId"] = resume
        res = self.result("initialize", params)
        if initialized:
            self.notify("initialized", {})
        return res

    # ---- process helpers (§6.6-6.10)
    def start(self, process_id, argv, cwd="/tmp", env=None, tty=False, **extra):
        """process/start; cwd may be a native path (converted to a file: URI)
        or already a URI. Returns the result."""
        if isinstance(cwd, str) and cwd.startswith("/"):
            cwd = file_uri(cwd)
        params = {"processId": process_id, "argv": argv, "cwd": cwd,
                  "env": {} if env is None else env, "tty": tty}
        params.update(extra)
        return self.result("process/start", params)

    def start_params(self, process_id="p", argv=("/bin/true",), cwd="/tmp", env=None,
                     tty=False, **extra):
        params = {"processId": process_id, "argv": list(argv), "cwd": file_uri(cwd),
                  "env": {} if env is None else env, "tty": tty}
        params.update(extra)
        return params

    def collect(self, process_id, timeout=DEFAULT_TIMEOUT, until="process/closed", run=None):
        """Gather notifications of one process until `until` arrives."""
        run = run or ProcRun(process_id)
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Timeout("process %r: no %s within %.1fs (saw %r)"
                              % (process_id, until, timeout, run.methods))
            m = self.next_notification(
                ("process/output", "process/exited", "process/closed"), remaining,
                pred=lambda p: p.get("processId") == process_id)
            run.add(m["method"], m["params"])
            if m["method"] == until:
                return run

    def collect_until_output(self, process_id, needle, timeout=DEFAULT_TIMEOUT, run=None):
        """Gather notifications of one process until its output contains needle."""
        run = run or ProcRun(process_id)
        if isinstance(needle, str):
            needle = needle.encode()
        deadline = time.monotonic() + timeout
        while needle not in run.data():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Timeout("process %r: %r not seen within %.1fs (output %r)"
                              % (process_id, needle, timeout, run.data()[-500:]))
            m = self.next_notification(
                ("process/output", "process/exited", "process/closed"), remaining,
                pred=lambda p: p.get("processId") == process_id)
            run.add(m["method"], m["params"])
            if m["method"] == "process/closed" and needle not in run.data():
                raise AssertionError("process %r closed without printing %r (output %r)"
                                     % (process_id, needle, run.data()[-500:]))
        return run

    def run(self, process_id, argv, timeout=DEFAULT_TIMEOUT, **kw):
        self.start(process_id, argv, **kw)
        return self.collect(process_id, timeout)

    def write(self, process_id, data, write_id):
        return self.result("process/write", {"processId": process_id, "chunk": b64(data),
                                             "writeId": write_id})

    def read(self, process_id, timeout=DEFAULT_TIMEOUT, **params):
        p = {"processId": process_id}
        p.update(params)
        return self.result("process/read", p, timeout=timeout)

    def terminate(self, process_id):
        return self.result("process/terminate", {"processId": process_id})

    # ---- fs helpers (for later fs/* tests; §6.11-6.22)
    def fs(self, method, path=None, **params):
        """fs/<method> with path given as a native path or a URI."""
        p = dict(params)
        if path is not None:
            p["path"] = file_uri(path) if str(path).startswith("/") else path
        return self.call("fs/" + method, p)

    def fs_read_file(self, path):
        r = self.fs("readFile", path)
        if "error" in r:
            raise RpcError("fs/readFile %s: %r" % (path, r["error"]))
        return unb64(r["result"]["dataBase64"])

    def fs_write_file(self, path, data):
        return self.fs("writeFile", path, dataBase64=b64(data))

    def fs_get_metadata(self, path):
        return self.fs("getMetadata", path)

    def close(self, code=1000):
        if hasattr(self.t, "close"):
            self.t.close(code) if isinstance(self.t, WebSocket) else self.t.close()


def connect(url, initialize=True, client_name="uexec-tests", keep_log=True, **kw):
    """WebSocket + RpcClient; optionally performs initialize/initialized."""
    ws = WebSocket.connect(url, **kw)
    rpc = RpcClient(ws, keep_log=keep_log)
    rpc.ws = ws
    rpc.url = url          # another connection to the same server (ordering checks)
    if initialize:
        rpc.init_result = rpc.initialize(client_name)
    return rpc
