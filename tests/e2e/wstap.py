#!/usr/bin/python3
"""Transparent WebSocket tap: a TCP proxy that forwards bytes unchanged and logs
every HTTP head and WebSocket frame it sees, one JSON object per line, in the
same shape as /work/shared/spec/reference/realclient/*.jsonl:

  {"conn": 2, "kind": "accept", "peer": "127.0.0.1:40000", "t": 0.19}
  {"conn": 2, "dir": "c2s", "kind": "http", "start_line": "GET / HTTP/1.1", "headers": {...}, "t": ...}
  {"conn": 2, "dir": "c2s", "masked": true, "kind": "text", "msg": {...JSON-RPC...}, "t": ...}
  {"conn": 2, "dir": "s2c", "kind": "ping"|"pong"|"close"|"binary", ..., "t": ...}
  {"conn": 2, "dir": "c2s", "kind": "eof", "t": ...}

Because bytes are relayed verbatim, the tap does not change protocol behaviour
(close echo, pings, fragmentation all pass through as the endpoints produce them).

Usage:
  wstap.py --upstream 127.0.0.1:PORT --log tap.jsonl [--listen 127.0.0.1:0]
Prints its own URL (ws://127.0.0.1:N) as the first stdout line, like exec-server.
"""
import argparse
import asyncio
import json
import sys
import time


class Log:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1)
        self.t0 = time.monotonic()

    def write(self, rec):
        rec["t"] = round(time.monotonic() - self.t0, 6)
        self.f.write(json.dumps(rec, ensure_ascii=False) + "\n")


class DirParser:
    """Incremental parser for one direction of one connection."""

    def __init__(self, log, conn, direction):
        self.log, self.conn, self.dir = log, conn, direction
        self.buf = bytearray()
        self.in_http = True
        self.frag_op = None
        self.frag = bytearray()
        self.frag_masked = False
        self.peer_parser = None  # s2c parser stops parsing if upgrade failed
        self.raw = False

    def feed(self, data):
        if self.raw:
            return
        self.buf += data
        while True:
            if self.in_http:
                i = self.buf.find(b"\r\n\r\n")
                if i < 0:
                    if len(self.buf) > 65536:
                        self.raw = True
                    return
                head = bytes(self.buf[:i]).decode("latin-1")
                del self.buf[: i + 4]
                lines = head.split("\r\n")
                headers = {}
                for ln in lines[1:]:
                    if ":" in ln:
                        k, v = ln.split(":", 1)
                        headers[k.strip()] = v.strip()
                self.log.write({"conn": self.conn, "dir": self.dir, "kind": "http",
                                "start_line": lines[0], "headers": headers})
                self.in_http = False
                if self.dir == "s2c" and " 101 " not in lines[0] + " ":
                    # not upgraded: log the rest as raw body bytes
                    if self.buf:
                        self.log.write({"conn": self.conn, "dir": self.dir, "kind": "body",
                                        "data": bytes(self.buf).decode("utf-8", "replace")})
                    self.raw = True
                    return
                continue
            if not self._frame():
                return

    def _frame(self):
        b = self.buf
        if len(b) < 2:
            return False
        fin = bool(b[0] & 0x80)
        rsv = b[0] & 0x70
        op = b[0] & 0x0F
        masked = bool(b[1] & 0x80)
        ln = b[1] & 0x7F
        pos = 2
        if ln == 126:
            if len(b) < 4:
                return False
            ln = int.from_bytes(b[2:4], "big")
            pos = 4
        elif ln == 127:
            if len(b) < 10:
                return False
            ln = int.from_bytes(b[2:10], "big")
            pos = 10
        key = None
        if masked:
            if len(b) < pos + 4:
                return False
            key = bytes(b[pos:pos + 4])
            pos += 4
        if len(b) < pos + ln:
            return False
        payload = bytes(b[pos:pos + ln])
        del b[: pos + ln]
        if masked:
            payload = bytes(c ^ key[i & 3] for i, c in enumerate(payload)) if ln < 65536 else \
                _unmask_big(payload, key)
        self._on_frame(fin, rsv, op, masked, payload)
        return True

    def _on_frame(self, fin, rsv, op, masked, payload):
        base = {"conn": self.conn, "dir": self.dir, "masked": masked}
        if rsv:
            base["rsv"] = rsv
        if op in (0x1, 0x2):
            if fin:
                self._message(base, op, payload)
            else:
                self.frag_op, self.frag, self.frag_masked = op, bytearray(payload), masked
        elif op == 0x0:
            self.frag += payload
            if fin and self.frag_op is not None:
                base["fragmented"] = True
                self._message(base, self.frag_op, bytes(self.frag))
                self.frag_op, self.frag = None, bytearray()
        elif op == 0x8:
            rec = dict(base, kind="close")
            if len(payload) >= 2:
                rec["code"] = int.from_bytes(payload[:2], "big")
                rec["reason"] = payload[2:].decode("utf-8", "replace")
            self.log.write(rec)
        elif op == 0x9:
            self.log.write(dict(base, kind="ping", data=payload.decode("utf-8", "replace")))
        elif op == 0xA:
            self.log.write(dict(base, kind="pong", data=payload.decode("utf-8", "replace")))
        else:
            self.log.write(dict(base, kind="opcode%d" % op, len=len(payload)))

    def _message(self, base, op, payload):
        kind = "text" if op == 1 else "binary"
        rec = dict(base, kind=kind)
        try:
            rec["msg"] = json.loads(payload)
        except Exception:
            rec["raw"] = payload[:4096].decode("utf-8", "replace")
            rec["len"] = len(payload)
        self.log.write(rec)


def _unmask_big(payload, key):
    n = len(payload)
    k = (key * (n // 4 + 1))[:n]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(k, "big")).to_bytes(n, "big")


class Tap:
    def __init__(self, upstream, log):
        self.uhost, self.uport = upstream.rsplit(":", 1)
        self.log = log
        self.nconn = 0

    async def handle(self, cr, cw):
        self.nconn += 1
        conn = self.nconn
        peer = cw.get_extra_info("peername")
        self.log.write({"conn": conn, "kind": "accept", "peer": "%s:%s" % peer[:2]})
        try:
            ur, uw = await asyncio.open_connection(self.uhost, int(self.uport))
        except OSError as e:
            self.log.write({"conn": conn, "kind": "upstream-error", "error": str(e)})
            cw.close()
            return

        async def pump(r, w, parser):
            try:
                while True:
                    data = await r.read(65536)
                    if not data:
                        break
                    try:
                        parser.feed(data)
                    except Exception as e:  # never let logging break the relay
                        self.log.write({"conn": conn, "dir": parser.dir, "kind": "tap-error",
                                        "error": repr(e)})
                        parser.raw = True
                    w.write(data)
                    await w.drain()
            except (ConnectionError, OSError) as e:
                self.log.write({"conn": conn, "dir": parser.dir, "kind": "reset", "error": str(e)})
            finally:
                self.log.write({"conn": conn, "dir": parser.dir, "kind": "eof"})
                try:
                    if w.can_write_eof():
                        w.write_eof()
                except (OSError, RuntimeError):
                    pass

        await asyncio.gather(pump(cr, uw, DirParser(self.log, conn, "c2s")),
                             pump(ur, cw, DirParser(self.log, conn, "s2c")))
        for w in (cw, uw):
            try:
                w.close()
            except Exception:
                pass


async def amain(args):
    tap = Tap(args.upstream, Log(args.log))
    host, port = args.listen.rsplit(":", 1)
    srv = await asyncio.start_server(tap.handle, host, int(port))
    sport = srv.sockets[0].getsockname()[1]
    print("ws://%s:%d" % (host, sport), flush=True)
    async with srv:
        await srv.serve_forever()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", default="127.0.0.1:0")
    ap.add_argument("--upstream", required=True, help="HOST:PORT of the exec-server")
    ap.add_argument("--log", required=True)
    args = ap.parse_args()
    try:
        asyncio.run(amain(args))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
