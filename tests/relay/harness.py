#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The harness (initiator) side of remote mode (/work/shared/spec/RELAY.md §4.1, §4.3-§4.4,
§6, §7.3) for tests, synchronous, standard library + the noise-shim module (ctypes).

    h = Harness(registry_url, "env1")          # POST .../connect happens in open_stream()
    phys = h.physical()                        # one rendezvous WebSocket (many streams may share it)
    s = h.open_stream(phys)                    # Resume{0}, Handshake{msg1}, msg2 (must be empty)
    rpc = s.rpc()                              # a wsclient.RpcClient over the stream
    rpc.initialize(); rpc.run("p1", ["echo", "hi"])

Raw hooks for negative tests: Stream.send_frame(bytes), Stream.encrypt(plaintext) (consumes a
nonce), Stream.send_data(seq, ciphertext), Stream.records(message) (the framed plaintext
records of one message), Stream.next_frame(timeout), open_stream(..., authorization=...,
prologue_registration=..., handshake=False), encode_frame(...) for anything else.

CLI:  python3 harness.py --registry URL --environment-id ID [--token T] [--msg2-order first|last]
reads one JSON-RPC message per stdin line, prints every message received, one per line.

The shim is found through $UEXEC_NOISE_SHIM, else next to $UEXEC_BIN's build directory
(BUILD/tests/relay/libnoise-shim.so for BUILD/src/uexec), else build/tests/relay/ of this
checkout.
"""
import argparse
import base64
import collections
import ctypes
import json
import os
import select
import struct
import sys
import time
import urllib.error
import urllib.request
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import wsclient  # noqa: E402
from pbwire import dec_varint, enc_varint  # noqa: E402

# how long the harness waits for the executor or the fake (an event, never a performance bound)
TIMEOUT = wsclient.DEFAULT_TIMEOUT

RECORD_MAX = 60 * 1024
MESSAGE_MAX = 64 * 1024 * 1024
NOISE_TAG = 16
MSG2_KEM_FIRST = 0
MSG2_KEM_LAST = 1
PROLOGUE_TAG = b"codex-exec-server-relay-noise/v1"
KINDS = {5: "data", 6: "ack_frame", 7: "resume", 8: "reset", 9: "heartbeat", 10: "handshake"}
KIND_TAGS = {v: k for k, v in KINDS.items()}


# ---------------------------------------------------------------------------
# the noise shim


def shim_sanitized(path):
    """True when the shim links a sanitizer runtime (a -Db_sanitize build): ctypes in an
    uninstrumented python aborts on loading it ("ASan runtime does not come first")."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return False
    return any(n in data for n in (b"libasan.so", b"libubsan.so", b"libtsan.so"))


def shim_path():
    """$UEXEC_NOISE_SHIM, else <build>/tests/relay/ beside $UEXEC_BIN, else build/ of this
    checkout: the first that exists and is not a sanitized build (tests/sanitize.sh runs the
    suite from build-asan, whose shim python cannot load), else the first that exists."""
    cands = []
    p = os.environ.get("UEXEC_NOISE_SHIM")
    if p:
        cands.append(p)
    ubin = os.environ.get("UEXEC_BIN")
    if ubin:
        cands.append(os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(ubin))),
                                  "tests", "relay", "libnoise-shim.so"))
    cands.append(os.path.join(ROOT, "build", "tests", "relay", "libnoise-shim.so"))
    existing = [c for c in cands if os.path.exists(c)]
    for c in existing:
        if not shim_sanitized(c):
            return c
    return existing[0] if existing else cands[0]


_lib = None


def lib():
    global _lib
    if _lib is not None:
        return _lib
    L = ctypes.CDLL(shim_path())
    vp, sz, u8p, ssz = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_ssize_t
    sig = {
        "noise_shim_keypair_new": (vp, []),
        "noise_shim_keypair_free": (None, [vp]),
        "noise_shim_keypair_public": (None, [vp, u8p, u8p]),
        "noise_shim_keypair_json": (ssz, [vp, u8p, sz]),
        "noise_shim_handshake_new": (vp, [ctypes.c_int, vp, u8p, u8p, u8p, sz, ctypes.c_int]),
        "noise_shim_handshake_free": (None, [vp]),
        "noise_shim_handshake_write": (ssz, [vp, u8p, sz, u8p, sz]),
        "noise_shim_handshake_read": (ssz, [vp, u8p, sz, u8p, sz]),
        "noise_shim_handshake_done": (ctypes.c_int, [vp]),
        "noise_shim_handshake_remote": (ctypes.c_int, [vp, u8p, u8p]),
        "noise_shim_handshake_split": (vp, [vp]),
        "noise_shim_transport_free": (None, [vp]),
        "noise_shim_encrypt": (ssz, [vp, u8p, sz, u8p, sz]),
        "noise_shim_decrypt": (ssz, [vp, u8p, sz, u8p, sz]),
        "noise_shim_send_counter": (ctypes.c_uint64, [vp]),
        "noise_shim_recv_counter": (ctypes.c_uint64, [vp]),
        "noise_shim_set_send_counter": (None, [vp, ctypes.c_uint64]),
    }
    for name, (res, args) in sig.items():
        f = getattr(L, name)
        f.restype = res
        f.argtypes = args
    _lib = L
    return L


class NoiseError(Exception):
    pass


class Keypair:
    def __init__(self):
        self.p = lib().noise_shim_keypair_new()
        if not self.p:
            raise NoiseError("keypair generation failed")

    def public_json(self):
        buf = ctypes.create_string_buffer(4096)
        n = lib().noise_shim_keypair_json(self.p, buf, 4096)
        if n < 0:
            raise NoiseError("keypair_json: %d" % n)
        return json.loads(buf.raw[:n])

    def __del__(self):
        if getattr(self, "p", None) and _lib is not None:
            _lib.noise_shim_keypair_free(self.p)
            self.p = None


def key_bytes(key_json):
    return (base64.b64decode(key_json["x25519_public_key"]),
            base64.b64decode(key_json["mlkem768_public_key"]))


def prologue(environment_id, registration_id, stream_id, width=8):
    """part(tag) || part(env) || part(registration) || part(stream), part(x) = len(x) || x with a
    big-endian length of `width` bytes. Upstream (noise_channel_prologue, checked against the
    reference executor) uses 8 (u64); RELAY.md §6.4 says u32, which the reference refuses."""
    out = b""
    for x in (PROLOGUE_TAG, environment_id.encode(), registration_id.encode(), stream_id.encode()):
        out += len(x).to_bytes(width, "big") + x
    return out


class Handshake:
    def __init__(self, kp, responder_key_json, prologue_bytes, order=MSG2_KEM_FIRST):
        dh, kem = key_bytes(responder_key_json)
        self.p = lib().noise_shim_handshake_new(1, kp.p, dh, kem, prologue_bytes,
                                                len(prologue_bytes), order)
        if not self.p:
            raise NoiseError("handshake_new failed")

    def write(self, payload):
        out = ctypes.create_string_buffer(65536)
        n = lib().noise_shim_handshake_write(self.p, payload, len(payload), out, 65536)
        if n < 0:
            raise NoiseError("handshake_write: %d" % n)
        return out.raw[:n]

    def read(self, msg):
        out = ctypes.create_string_buffer(65536)
        n = lib().noise_shim_handshake_read(self.p, msg, len(msg), out, 65536)
        if n < 0:
            raise NoiseError("handshake_read: %d (%s)" % (n, os.strerror(-n)))
        return out.raw[:n]

    def split(self):
        t = lib().noise_shim_handshake_split(self.p)
        if not t:
            raise NoiseError("split failed")
        return Transport(t)

    def __del__(self):
        if getattr(self, "p", None) and _lib is not None:
            _lib.noise_shim_handshake_free(self.p)
            self.p = None


class Transport:
    def __init__(self, p):
        self.p = p

    def encrypt(self, pt):
        out = ctypes.create_string_buffer(len(pt) + NOISE_TAG)
        n = lib().noise_shim_encrypt(self.p, pt, len(pt), out, len(pt) + NOISE_TAG)
        if n < 0:
            raise NoiseError("encrypt: %d" % n)
        return out.raw[:n]

    def decrypt(self, ct):
        out = ctypes.create_string_buffer(max(1, len(ct)))
        n = lib().noise_shim_decrypt(self.p, ct, len(ct), out, max(1, len(ct)))
        if n < 0:
            raise NoiseError("decrypt: %d (%s)" % (n, os.strerror(-n)))
        return out.raw[:n]

    @property
    def send_counter(self):
        return lib().noise_shim_send_counter(self.p)

    @send_counter.setter
    def send_counter(self, n):
        lib().noise_shim_set_send_counter(self.p, n)

    def __del__(self):
        if getattr(self, "p", None) and _lib is not None:
            _lib.noise_shim_transport_free(self.p)
            self.p = None


# ---------------------------------------------------------------------------
# RelayMessageFrame, by hand (prost's encoding: tag order, proto3 defaults omitted)


def _field_varint(tag, v):
    return b"" if v == 0 else enc_varint(tag << 3) + enc_varint(v)


def _field_bytes(tag, b, always=False):
    if not b and not always:
        return b""
    return enc_varint((tag << 3) | 2) + enc_varint(len(b)) + b


def encode_frame(stream_id, kind, *, seq=0, payload=b"", next_seq=0, reason="", version=1,
                 ack=0, ack_bits=0, segment_index=0, segment_count=1, traceparent=None,
                 tracestate=None):
    """One RelayMessageFrame; kind is a body name (data, ack_frame, resume, reset, heartbeat,
    handshake) or None (no body)."""
    if isinstance(stream_id, str):
        stream_id = stream_id.encode()
    out = _field_varint(1, version) + _field_bytes(2, stream_id) + _field_varint(3, ack) + \
        _field_varint(4, ack_bits)
    if kind == "data":
        body = _field_varint(1, seq) + _field_varint(2, segment_index) + \
            _field_varint(3, segment_count) + _field_bytes(4, payload)
    elif kind == "resume":
        body = _field_varint(1, next_seq)
    elif kind == "reset":
        body = _field_bytes(1, reason.encode() if isinstance(reason, str) else reason)
    elif kind == "handshake":
        body = _field_bytes(1, payload)
    else:
        body = b""
    if kind is not None:
        out += _field_bytes(KIND_TAGS[kind], body, always=True)
    if traceparent is not None:
        out += _field_bytes(11, traceparent.encode(), always=True)
    if tracestate is not None:
        out += _field_bytes(12, tracestate.encode(), always=True)
    return out


def _parse(buf):
    """{tag: [value...]} of one protobuf message (varints as ints, length-delimited as bytes)."""
    i = 0
    out = collections.defaultdict(list)

    def varint():
        nonlocal i
        v, i = dec_varint(buf, i)
        return v
    while i < len(buf):
        key = varint()
        tag, wt = key >> 3, key & 7
        if wt == 0:
            out[tag].append(varint())
        elif wt == 2:
            n = varint()
            if i + n > len(buf):
                raise ValueError("truncated bytes")
            out[tag].append(bytes(buf[i:i + n]))
            i += n
        elif wt == 1:
            out[tag].append(buf[i:i + 8])
            i += 8
        elif wt == 5:
            out[tag].append(buf[i:i + 4])
            i += 4
        else:
            raise ValueError("wire type %d" % wt)
    return out


Frame = collections.namedtuple("Frame", "version stream_id ack ack_bits kind seq payload "
                               "next_seq reason traceparent tracestate raw")


def decode_frame(buf):
    f = _parse(buf)

    def last(tag, default):
        return f[tag][-1] if f.get(tag) else default
    kind = None
    body = b""
    for tag in sorted(KINDS):
        if f.get(tag):
            kind, body = KINDS[tag], f[tag][-1]
    b = _parse(body) if body else {}

    def blast(tag, default):
        return b[tag][-1] if b.get(tag) else default
    seq = blast(1, 0) if kind == "data" else None
    payload = blast(4, b"") if kind == "data" else blast(1, b"") if kind == "handshake" else None
    tp = last(11, None)
    ts = last(12, None)
    return Frame(last(1, 0), last(2, b"").decode(), last(3, 0), last(4, 0), kind, seq, payload,
                 blast(1, 0) if kind == "resume" else None,
                 blast(1, b"").decode("utf-8", "replace") if kind == "reset" else None,
                 tp.decode() if tp is not None else None, ts.decode() if ts is not None else None,
                 buf)


# ---------------------------------------------------------------------------
# registry


class RegistryError(Exception):
    def __init__(self, status, body):
        super().__init__("registry answered %s: %s" % (status, body[:300]))
        self.status = status
        self.body = body


# The ssl.SSLContext for https:// registries and wss:// rendezvous URLs (a fake relay run with
# --tls-cert: its test CA); None: the system default.
SSL_CONTEXT = None


def urlopen(req, timeout=TIMEOUT):
    url = req if isinstance(req, str) else req.full_url
    if url.startswith("https://") and SSL_CONTEXT is not None:
        return urllib.request.urlopen(req, timeout=timeout, context=SSL_CONTEXT)
    return urllib.request.urlopen(req, timeout=timeout)


def post_json(url, obj, token="test-harness-token", timeout=TIMEOUT):
    req = urllib.request.Request(url, data=json.dumps(obj).encode(), method="POST",
                                 headers={"content-type": "application/json",
                                          "authorization": "Bearer " + token})
    try:
        with urlopen(req, timeout=timeout) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        raise RegistryError(e.code, e.read().decode("utf-8", "replace"))


def get_json(url, timeout=TIMEOUT):
    with urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


# ---------------------------------------------------------------------------
# physical connection and streams


class StreamReset(Exception):
    def __init__(self, stream_id, reason):
        super().__init__("stream %s reset: %r" % (stream_id, reason))
        self.reason = reason


class Physical:
    """One rendezvous WebSocket; frames are sorted into per-stream queues by stream_id."""

    def __init__(self, url):
        self.url = url
        tls = url.startswith("wss://")
        u = url.split("://", 1)[1] if "://" in url else url
        hostport, _, path = u.partition("/")
        ctx = None
        if tls:
            import ssl
            ctx = SSL_CONTEXT or ssl.create_default_context()
        self.ws = wsclient.WebSocket.connect("ws://" + hostport, path="/" + path,
                                             ssl_context=ctx)
        self.ws.auto_pong = True
        self.queues = collections.defaultdict(collections.deque)
        self.other = []        # text messages and malformed frames
        self.closed = None

    def send(self, data):
        self.ws.send_binary(data)

    def pump(self, timeout):
        """Read one message and queue it; raises wsclient.Timeout / ConnectionClosed."""
        op, data = self.ws.recv_message(timeout)
        if op != wsclient.OP_BINARY:
            self.other.append((op, data))
            return
        try:
            f = decode_frame(data)
        except (ValueError, UnicodeDecodeError):
            self.other.append((op, data))
            return
        self.queues[f.stream_id].append(f)

    def next_frame(self, stream_id, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        q = self.queues[stream_id]
        while not q:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise wsclient.Timeout("no frame for stream %s within %.1fs" % (stream_id, timeout))
            self.pump(remaining)
        return q.popleft()

    def wait_closed(self, timeout=TIMEOUT):
        """True once the server ends the connection within timeout (frames are queued)."""
        deadline = time.monotonic() + timeout
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self.pump(remaining)
        except wsclient.Timeout:
            return False
        except (wsclient.ConnectionClosed, OSError):
            return True

    def close(self):
        self.ws.close()
        self.ws.abort()

    def abort(self):
        self.ws.abort()


class Stream:
    """One logical stream: handshake, then length-prefixed JSON-RPC in Noise records."""

    def __init__(self, phys, bundle, kp, environment_id, stream_id=None, order=MSG2_KEM_FIRST):
        self.phys = phys
        self.bundle = bundle
        self.kp = kp
        self.environment_id = environment_id
        self.stream_id = stream_id or str(uuid.uuid4())
        self.order = order
        self.hs = None
        self.t = None
        self.send_seq = 0
        self.recv_next = 0
        self.pending = {}
        self.reasm = bytearray()  # appended in place: bytes += is quadratic for big messages
        self.inbox = collections.deque()
        self.reset_reason = None
        self.msg2_payload = None
        self.seen = []         # every frame received for this stream

    # -- raw
    def send_frame(self, data):
        self.phys.send(data)

    def frame(self, kind, **kw):
        return encode_frame(self.stream_id, kind, **kw)

    def next_frame(self, timeout=TIMEOUT):
        f = self.phys.next_frame(self.stream_id, timeout)
        self.seen.append(f)
        return f

    def wait_reset(self, timeout=TIMEOUT):
        """The reason of the next Reset for this stream (other frames are kept in seen);
        raises Timeout or ConnectionClosed (the physical connection ended instead)."""
        deadline = time.monotonic() + timeout
        while True:
            f = self.next_frame(max(0.0, deadline - time.monotonic()))
            if f.kind == "reset":
                self.reset_reason = f.reason
                return f.reason

    # -- handshake
    def handshake(self, authorization=None, prologue_registration=None, send_resume=True,
                  timeout=TIMEOUT, wait=True, prologue_width=8):
        authz = self.bundle["harness_key_authorization"] if authorization is None else authorization
        if isinstance(authz, str):
            authz = authz.encode()
        reg = self.bundle["executor_registration_id"] if prologue_registration is None \
            else prologue_registration
        pro = prologue(self.environment_id, reg, self.stream_id, prologue_width)
        self.hs = Handshake(self.kp, self.bundle["executor_public_key"], pro, self.order)
        msg1 = self.hs.write(authz)
        if send_resume:
            self.send_frame(self.frame("resume", next_seq=0))
        self.send_frame(self.frame("handshake", payload=msg1))
        if wait:
            self.finish_handshake(timeout)
        return self

    def finish_handshake(self, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        while True:
            f = self.next_frame(max(0.0, deadline - time.monotonic()))
            if f.kind == "reset":
                self.reset_reason = f.reason
                raise StreamReset(self.stream_id, f.reason)
            if f.kind in ("ack_frame", "resume", "heartbeat"):
                continue
            if f.kind == "handshake":
                payload = self.hs.read(f.payload)
                self.msg2_payload = payload
                if payload:
                    # the reference sends b"codex-registry-authentication-rejected/v1" here
                    # when the registry answered its validate with 401
                    raise NoiseError("handshake response payload must be empty")
                self.t = self.hs.split()
                return
            raise NoiseError("unexpected %s frame before handshake completion" % f.kind)

    # -- transport
    @staticmethod
    def records(msg):
        """The plaintext records of one message (4-byte length + message, 60 KiB chunks)."""
        framed = struct.pack("!I", len(msg)) + msg
        return [framed[i:i + RECORD_MAX] for i in range(0, len(framed), RECORD_MAX)]

    def encrypt(self, plaintext):
        return self.t.encrypt(plaintext)

    def send_data(self, seq, ciphertext, **kw):
        self.send_frame(self.frame("data", seq=seq, payload=ciphertext, **kw))

    def send_message(self, msg):
        if isinstance(msg, str):
            msg = msg.encode()
        for rec in self.records(msg):
            self.send_data(self.send_seq, self.encrypt(rec))
            self.send_seq += 1

    def _deliver(self, ct):
        self.reasm += self.t.decrypt(ct)
        while len(self.reasm) >= 4:
            n = struct.unpack("!I", self.reasm[:4])[0]
            if n == 0 or n > MESSAGE_MAX:
                raise NoiseError("bad message length %d" % n)
            if len(self.reasm) < 4 + n:
                break
            self.inbox.append(bytes(self.reasm[4:4 + n]))
            del self.reasm[:4 + n]

    def recv_message(self, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        while not self.inbox:
            f = self.next_frame(max(0.0, deadline - time.monotonic()))
            if f.kind == "reset":
                self.reset_reason = f.reason
                raise StreamReset(self.stream_id, f.reason)
            if f.kind == "handshake":
                raise NoiseError("Noise relay received invalid post-handshake frame")
            if f.kind != "data":
                continue
            if f.seq < self.recv_next or f.seq in self.pending:
                continue
            self.pending[f.seq] = f.payload
            while self.recv_next in self.pending:
                self._deliver(self.pending.pop(self.recv_next))
                self.recv_next += 1
        return self.inbox.popleft()

    # wsclient.RpcClient transport interface
    def send_text_message(self, text):
        self.send_message(text)

    def recv_text(self, timeout):
        return self.recv_message(timeout).decode("utf-8")

    def close(self, *a):
        self.send_frame(self.frame("reset", reason="harness closed"))

    def rpc(self):
        r = wsclient.RpcClient(self)
        r.stream = self
        return r


class Harness:
    """A harness identity against one registry + environment."""

    def __init__(self, registry, environment_id, token="test-harness-token", order=MSG2_KEM_FIRST):
        self.registry = registry.rstrip("/")
        self.environment_id = environment_id
        self.token = token
        self.order = order
        self.kp = Keypair()

    def connect_bundle(self):
        return post_json("%s/cloud/environment/%s/connect" % (self.registry, self.environment_id),
                         {"harness_public_key": self.kp.public_json()}, self.token)

    def physical(self, bundle=None):
        bundle = bundle or self.connect_bundle()
        p = Physical(bundle["url"])
        p.bundle = bundle
        return p

    def open_stream(self, phys=None, bundle=None, handshake=True, stream_id=None, **kw):
        """A stream on phys (a new physical connection if None) with a fresh connect bundle
        (so a fresh authorization) unless one is given."""
        bundle = bundle or self.connect_bundle()
        if phys is None:
            phys = Physical(bundle["url"])
            phys.bundle = bundle
        s = Stream(phys, bundle, self.kp, self.environment_id, stream_id, kw.pop("order", self.order))
        if handshake:
            s.handshake(**kw)
        return s


def main():
    ap = argparse.ArgumentParser(description="JSON-RPC lines in, messages out, over a Noise stream")
    ap.add_argument("--registry", required=True)
    ap.add_argument("--environment-id", required=True)
    ap.add_argument("--token", default=os.environ.get("CODEX_EXEC_SERVER_NOISE_AUTH_TOKEN",
                                                      "test-harness-token"))
    ap.add_argument("--msg2-order", choices=["first", "last"], default="first")
    ap.add_argument("--initialize", action="store_true", help="send initialize/initialized first")
    args = ap.parse_args()
    h = Harness(args.registry, args.environment_id, args.token,
                MSG2_KEM_FIRST if args.msg2_order == "first" else MSG2_KEM_LAST)
    s = h.open_stream()
    print("# stream %s open" % s.stream_id, file=sys.stderr, flush=True)
    if args.initialize:
        s.send_message(json.dumps({"id": 0, "method": "initialize",
                                   "params": {"clientName": "harness.py"}}))
        print(s.recv_message().decode(), flush=True)
        s.send_message(json.dumps({"method": "initialized", "params": {}}))
    stdin_open = True
    while True:
        while s.inbox or s.phys.queues[s.stream_id]:
            print(s.recv_message().decode(), flush=True)
        r, _, _ = select.select([sys.stdin, s.phys.ws.sock] if stdin_open else [s.phys.ws.sock],
                                [], [], 0.5 if stdin_open else 2.0)
        if sys.stdin in r:
            line = sys.stdin.readline()
            if not line:
                stdin_open = False
                continue
            if line.strip():
                s.send_message(line.strip())
        if s.phys.ws.sock in r or s.phys.ws._buf:
            try:
                print(s.recv_message(timeout=5.0).decode(), flush=True)
            except StreamReset as e:
                print("# %s" % e, file=sys.stderr)
                return 1
            except wsclient.Timeout:
                pass
            except wsclient.ConnectionClosed:
                print("# connection closed", file=sys.stderr)
                return 1
        elif not stdin_open and not r:
            return 0


if __name__ == "__main__":
    sys.exit(main())
