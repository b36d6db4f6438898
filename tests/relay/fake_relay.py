#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A fake environment registry + rendezvous service for remote mode
(/work/shared/spec/RELAY.md §1, §7), standard library only, one process.

    python3 fake_relay.py --port 0 [--host 127.0.0.1] [--state-file F] [--require-auth]
                          [--rendezvous-base ws://IP:PORT]
                          [--tls-cert PEM --tls-key PEM [--url-host NAME]]

prints its base URL `http://127.0.0.1:P` as the first stdout line, then serves:
(with --tls-cert/--tls-key everything, registry and rendezvous, is served over TLS only:
the base URL is https://, the rendezvous URLs wss://; --url-host names the host in the URLs
it hands out, e.g. localhost, default the --host address)

Registry (RELAY.md §7), all POST with a JSON body:
  /cloud/environment/{id}/register   executor: {"security_profile", "executor_public_key"}
        -> {"environment_id", "url", "security_profile", "executor_registration_id",
            "transport_policy"}; url = ws://HOST:P/rendezvous/{registration}/executor
  /cloud/environment/{id}/connect    harness: {"harness_public_key"} -> the connect bundle of
        the environment's newest registration, with a fresh random harness_key_authorization
        bound to that harness key; url = ws://HOST:P/rendezvous/{registration}/harness
  /cloud/environment/{id}/validate   executor: {"executor_registration_id", "harness_public_key",
        "harness_key_authorization"} -> {"valid": true|false}
  Every registry request must carry `Authorization: Bearer <something>` (401 otherwise).

Rendezvous: RFC 6455 server (binary frames, ping/pong, close, fragments; 256 KiB frame and
message limits, §1). The executor dials its registration's .../executor URL (one live
connection per registration: a new one replaces the old); harnesses dial .../harness. Frames
are routed by stream_id only (§1): a harness claims a stream_id with the first frame it sends
on it; harness frames go to the executor connection, executor frames to the harness connection
that owns the stream_id (unowned ones are dropped and logged). When a harness connection ends,
every stream it owned is reset towards the executor (Reset{"harness_disconnected"}; knob
reset_on_harness_close), and when the executor connection ends every harness connection of
that registration is closed.

Test hooks:
  POST /_control  JSON object of knobs (merged; {"reset": true} restores the defaults):
      validate            "ok" | "false" | "401" | "403" | "500" | "garbage"   (default "ok")
      validate_delay_ms   answer /validate this much later                       (0)
      register_conflicts  the next N registers answer 503 registration_conflict  (0)
      register_fail       {"status": 401, "count": N} (count -1: forever)         (none)
      refuse_upgrades     the next N executor upgrades answer 403               (0)
      connect_fail        {"status": 500, "count": N} for /connect             (none)
      drop_executor       "close" (Close 1001) | "abort" (TCP reset): once, now
      reset_on_harness_close  bool                                              (true)
      executor_url_query  appended to the executor rendezvous url ("?x=y")       ("")
      ignore_pings        do not answer the executor's Pings (pong watchdog)      (false)
      validate_drop_kept  the next N validates that arrive on a kept (keep-alive) connection
                          close it unanswered (logged as kind "http_drop")       (0)
  GET /_log       every request and WebSocket event so far, as a JSON list:
      {"n", "t", "kind": "http", "method", "path", "headers": {lowercased: value}, "body": json|text,
       "status", "http_conn" (which TCP connection, from 1), "nth" (its request number on it)} and {"n", "t", "kind": "ws", "event": "open"|"close"|"frame"|"text"|"ping"|"pong"|
       "refused"|"drop"|"route-drop", "role": "executor"|"harness", "conn", "registration",
       "stream_id", "body_kind", "reason", "len", ...}
      GET /_log?since=N returns entries with n >= N only.
  GET /_state     registrations (id, environment, executor key, live executor connection),
      issued authorizations, harness connections and their streams.
  --state-file F  the same /_state JSON rewritten after every change (for shell scripts).
"""
import argparse
import asyncio
import base64
import hashlib
import json
import os
import secrets
import struct
import sys
import time
import urllib.parse

from pbwire import dec_varint, enc_varint

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
MAX_WS = 256 * 1024
SECURITY_PROFILE = "noise_hybrid_ik_v1"
SUITE = "Noise_hybridIK_X25519+MLKEM768_AESGCM_SHA256"
BODY_KINDS = {5: "data", 6: "ack_frame", 7: "resume", 8: "reset", 9: "heartbeat", 10: "handshake"}

DEFAULT_KNOBS = {
    "validate": "ok",
    "validate_delay_ms": 0,
    "register_conflicts": 0,
    "register_fail": None,
    "refuse_upgrades": 0,
    "connect_fail": None,
    "reset_on_harness_close": True,
    "executor_url_query": "",
    "ignore_pings": False,
    # close this many kept connections when a validate arrives as their 2nd+ request,
    # without an answer (a registry dropping an idle keep-alive connection as it is reused)
    "validate_drop_kept": 0,
}


# ---------------------------------------------------------------------------
# just enough protobuf to route (RelayMessageFrame field 2) and to log


def frame_summary(buf):
    """(stream_id, body kind, reset reason) of an encoded RelayMessageFrame; ValueError if malformed."""
    i = 0
    sid = None
    kind = None
    reason = None
    while i < len(buf):
        key, i = dec_varint(buf, i)
        field, wt = key >> 3, key & 7
        if wt == 0:
            _, i = dec_varint(buf, i)
        elif wt == 2:
            n, i = dec_varint(buf, i)
            if i + n > len(buf):
                raise ValueError("truncated field")
            val = buf[i:i + n]
            i += n
            if field == 2:
                sid = val.decode("utf-8")
            elif field in BODY_KINDS:
                kind = BODY_KINDS[field]
                if field == 8:
                    j = 0
                    while j < len(val):
                        k2, j = dec_varint(val, j)
                        if k2 & 7 == 2:
                            m, j = dec_varint(val, j)
                            if k2 >> 3 == 1:
                                reason = val[j:j + m].decode("utf-8", "replace")
                            j += m
                        elif k2 & 7 == 0:
                            _, j = dec_varint(val, j)
                        else:
                            break
        elif wt == 5:
            i += 4
        elif wt == 1:
            i += 8
        else:
            raise ValueError("wire type %d" % wt)
    if sid is None:
        raise ValueError("no stream_id")
    return sid, kind, reason


def reset_frame(stream_id, reason):
    sid = stream_id.encode()
    r = reason.encode()
    body = b"\x0a" + enc_varint(len(r)) + r
    return b"\x08\x01" + b"\x12" + enc_varint(len(sid)) + sid + b"\x42" + enc_varint(len(body)) + body


# ---------------------------------------------------------------------------
# WebSocket server side


class WsClosed(Exception):
    pass


class WsConn:
    """One accepted WebSocket (server side, so frames we send are unmasked)."""

    def __init__(self, relay, reader, writer, role, registration, path, cid):
        self.relay = relay
        self.reader = reader
        self.writer = writer
        self.role = role
        self.registration = registration
        self.path = path
        self.cid = cid
        self.closed = False
        self.streams = set()   # harness: stream_ids claimed through this connection

    def _send(self, opcode, payload=b""):
        if self.closed:
            return
        n = len(payload)
        b0 = 0x80 | opcode
        if n < 126:
            head = struct.pack("!BB", b0, n)
        elif n < 65536:
            head = struct.pack("!BBH", b0, 126, n)
        else:
            head = struct.pack("!BBQ", b0, 127, n)
        try:
            self.writer.write(head + payload)
        except (ConnectionError, RuntimeError):
            self.closed = True

    def send_binary(self, data):
        self._send(0x2, data)

    def send_close(self, code=1000, reason=b""):
        self._send(0x8, struct.pack("!H", code) + reason)

    def abort(self):
        self.closed = True
        try:
            sock = self.writer.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(__import__("socket").SOL_SOCKET, __import__("socket").SO_LINGER,
                                struct.pack("ii", 1, 0))
            self.writer.transport.abort()
        except Exception:
            pass

    async def recv_message(self):
        """(opcode, payload) of the next data message; answers pings; WsClosed at the end."""
        frag_op = None
        frag = bytearray()
        while True:
            try:
                h = await self.reader.readexactly(2)
            except (asyncio.IncompleteReadError, ConnectionError):
                raise WsClosed("eof")
            fin, op, masked, n = h[0] & 0x80, h[0] & 0xF, h[1] & 0x80, h[1] & 0x7F
            if n == 126:
                n = struct.unpack("!H", await self.reader.readexactly(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", await self.reader.readexactly(8))[0]
            if n > MAX_WS:
                self.relay.log_ws(self, "close", reason="frame too big (%d)" % n)
                self.send_close(1009)
                raise WsClosed("too big")
            key = await self.reader.readexactly(4) if masked else b""
            payload = await self.reader.readexactly(n)
            if masked and n:
                k = (key * (n // 4 + 1))[:n]
                payload = (int.from_bytes(payload, "big") ^ int.from_bytes(k, "big")).to_bytes(n, "big")
            if op == 0x9:
                self.relay.log_ws(self, "ping", len=n)
                if not (self.role == "executor" and self.relay.knobs.get("ignore_pings")):
                    self._send(0xA, payload)
                continue
            if op == 0xA:
                self.relay.log_ws(self, "pong", len=n)
                continue
            if op == 0x8:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
                self.relay.log_ws(self, "close", code=code, reason=payload[2:].decode("utf-8", "replace"))
                self.send_close(code or 1000)
                raise WsClosed("close")
            if op in (0x1, 0x2):
                if fin:
                    return op, payload
                frag_op, frag = op, bytearray(payload)
            elif op == 0x0 and frag_op is not None:
                frag += payload
                if len(frag) > MAX_WS:
                    self.send_close(1009)
                    raise WsClosed("too big")
                if fin:
                    return frag_op, bytes(frag)
            else:
                self.send_close(1002)
                raise WsClosed("bad opcode %d" % op)


# ---------------------------------------------------------------------------
# the service


class Registration:
    def __init__(self, rid, env, key, headers):
        self.id = rid
        self.env = env
        self.executor_key = key
        self.headers = headers
        self.executor = None      # the live executor WsConn
        self.created = time.time()


class FakeRelay:
    def __init__(self, host, state_file=None, require_auth=True, rendezvous_base=None, tls=False,
                 url_host=None):
        self.host = host
        self.rendezvous_base = rendezvous_base
        self.tls = tls
        self.url_host = url_host or host
        self.port = None
        self.state_file = state_file
        self.require_auth = require_auth
        self.knobs = dict(DEFAULT_KNOBS)
        self.log = []
        self.regs = {}            # registration id -> Registration
        self.env_latest = {}      # environment id -> registration id
        self.auths = {}           # authorization -> (registration id, harness key json)
        self.owners = {}          # (registration id, stream_id) -> harness WsConn
        self.harness_conns = {}   # cid -> WsConn
        self.next_cid = 1
        self.next_http_conn = 1
        self.nreg = 0

    # -- bookkeeping
    def base(self):
        return "%s://%s:%d" % ("https" if self.tls else "http", self.url_host, self.port)

    def add_log(self, entry):
        entry["n"] = len(self.log)
        entry["t"] = round(time.time(), 4)
        self.log.append(entry)

    def log_ws(self, conn, event, **kw):
        e = {"kind": "ws", "event": event, "role": conn.role, "conn": conn.cid,
             "registration": conn.registration}
        e.update(kw)
        self.add_log(e)

    def state(self):
        return {
            "base_url": self.base(),
            "pid": os.getpid(),
            "registrations": [
                {"id": r.id, "environment_id": r.env, "executor_public_key": r.executor_key,
                 "executor_connected": r.executor is not None and not r.executor.closed,
                 "executor_conn": r.executor.cid if r.executor else None}
                for r in self.regs.values()],
            "environments": self.env_latest,
            "authorizations": [{"registration": v[0], "harness_public_key": v[1], "authorization": k}
                               for k, v in self.auths.items()],
            "harness_conns": [{"conn": c.cid, "registration": c.registration,
                               "streams": sorted(c.streams)} for c in self.harness_conns.values()],
            "knobs": self.knobs,
        }

    def save_state(self):
        if not self.state_file:
            return
        tmp = self.state_file + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.state(), f, indent=1)
        os.replace(tmp, self.state_file)

    # -- HTTP
    async def handle(self, reader, writer):
        http_conn, nth = self.next_http_conn, 0
        self.next_http_conn += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                try:
                    method, target, _ = lines[0].split(" ", 2)
                except ValueError:
                    return
                headers = {}
                for ln in lines[1:]:
                    if ":" in ln:
                        k, v = ln.split(":", 1)
                        headers[k.strip().lower()] = v.strip()
                body = b""
                if "content-length" in headers:
                    body = await reader.readexactly(int(headers["content-length"]))
                elif headers.get("transfer-encoding", "").lower() == "chunked":
                    while True:
                        szl = await reader.readuntil(b"\r\n")
                        sz = int(szl.split(b";")[0], 16)
                        chunk = await reader.readexactly(sz + 2)
                        body += chunk[:-2]
                        if sz == 0:
                            break
                url = urllib.parse.urlsplit(target)
                if headers.get("upgrade", "").lower() == "websocket":
                    await self.upgrade(reader, writer, method, url, headers)
                    return
                nth += 1
                if (nth > 1 and url.path.endswith("/validate") and
                        (self.knobs.get("validate_drop_kept") or 0) > 0):
                    self.knobs["validate_drop_kept"] -= 1
                    self.add_log({"kind": "http_drop", "path": url.path, "http_conn": http_conn,
                                  "nth": nth})
                    return
                status, obj = await self.route(method, url, headers, body,
                                               http_conn=http_conn, nth=nth)
                data = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
                keep = headers.get("connection", "").lower() != "close"
                writer.write(("HTTP/1.1 %d %s\r\ncontent-type: application/json\r\n"
                              "content-length: %d\r\nconnection: %s\r\n\r\n"
                              % (status, "OK" if status < 300 else "Error", len(data),
                                 "keep-alive" if keep else "close")).encode() + data)
                await writer.drain()
                if not keep:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            try:
                writer.close()
            except Exception:
                pass

    def _take(self, knob):
        """A {"status", "count"} knob: the status to answer now, or None."""
        v = self.knobs.get(knob)
        if not v:
            return None
        if v.get("count", 1) == 0:
            return None
        if v.get("count", 1) > 0:
            v["count"] = v.get("count", 1) - 1
        return v.get("status", 500)

    async def route(self, method, url, headers, body, http_conn=None, nth=None):
        path = url.path
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = body.decode("utf-8", "replace")
        entry = {"kind": "http", "method": method, "path": path, "query": url.query,
                 "headers": headers, "body": parsed, "http_conn": http_conn, "nth": nth}
        self.add_log(entry)
        status, obj = await self._route(method, url, headers, parsed, entry)
        entry["status"] = status
        entry["response"] = obj.decode("utf-8", "replace") if isinstance(obj, bytes) else obj
        self.save_state()
        return status, obj

    @staticmethod
    def err(status, code, message):
        return status, {"error": {"code": code, "message": message}}

    def _ws_base(self):
        if self.rendezvous_base:
            return self.rendezvous_base
        return "%s://%s:%d" % ("wss" if self.tls else "ws", self.url_host, self.port)

    async def _route(self, method, url, headers, body, entry):
        path = url.path
        if path == "/_log" and method == "GET":
            since = int(urllib.parse.parse_qs(url.query).get("since", ["0"])[0])
            self.log.pop()         # reading the log is not logged
            return 200, self.log[since:]
        if path == "/_state" and method == "GET":
            self.log.pop()
            return 200, self.state()
        if path == "/_control" and method == "POST":
            if not isinstance(body, dict):
                return self.err(400, "bad_request", "expected a JSON object")
            if body.get("reset"):
                self.knobs = json.loads(json.dumps(DEFAULT_KNOBS))
            for k, v in body.items():
                if k == "drop_executor":
                    for r in self.regs.values():
                        if r.executor and not r.executor.closed:
                            self.log_ws(r.executor, "drop", how=v)
                            if v == "abort":
                                r.executor.abort()
                            else:
                                r.executor.send_close(1001, b"fake relay drop")
                                r.executor.closed = True
                                try:
                                    r.executor.writer.close()
                                except Exception:
                                    pass
                elif k != "reset":
                    self.knobs[k] = v
            return 200, {"knobs": self.knobs}
        parts = path.split("/")
        # /cloud/environment/{id}/{op}
        if len(parts) != 5 or parts[1] != "cloud" or parts[2] != "environment" or method != "POST":
            return self.err(404, "not_found", "no route for %s %s" % (method, path))
        env = urllib.parse.unquote(parts[3])
        op = parts[4]
        auth = headers.get("authorization", "")
        if self.require_auth and not (auth.lower().startswith("bearer ") and auth[7:].strip()):
            return self.err(401, "unauthorized", "missing bearer token")
        if not isinstance(body, dict):
            return self.err(400, "bad_request", "body must be a JSON object")
        if op == "register":
            return self.register(env, body, headers)
        if op == "connect":
            return self.connect(env, body)
        if op == "validate":
            return await self.validate(env, body)
        return self.err(404, "not_found", "unknown operation %r" % op)

    @staticmethod
    def check_key(k):
        if not isinstance(k, dict) or set(k) != {"suite", "x25519_public_key", "mlkem768_public_key"}:
            return "public key must have exactly suite, x25519_public_key, mlkem768_public_key"
        if k["suite"] != SUITE:
            return "unknown suite"
        try:
            if len(base64.b64decode(k["x25519_public_key"], validate=True)) != 32 or \
                    len(base64.b64decode(k["mlkem768_public_key"], validate=True)) != 1184:
                return "bad key length"
        except (ValueError, TypeError):
            return "bad base64"
        return None

    def register(self, env, body, headers):
        st = self._take("register_fail")
        if st:
            return self.err(st, "unauthorized" if st in (401, 403) else "register_failed",
                            "register refused by the fake (knob register_fail)")
        if self.knobs.get("register_conflicts", 0) > 0:
            self.knobs["register_conflicts"] -= 1
            return self.err(503, "registration_conflict", "another executor is registering")
        if body.get("security_profile") != SECURITY_PROFILE:
            return self.err(400, "bad_request", "security_profile must be %s" % SECURITY_PROFILE)
        why = self.check_key(body.get("executor_public_key"))
        if why:
            return self.err(400, "bad_request", "executor_public_key: " + why)
        self.nreg += 1
        rid = "reg-%d-%s" % (self.nreg, secrets.token_hex(4))
        self.regs[rid] = Registration(rid, env, body["executor_public_key"], headers)
        self.env_latest[env] = rid
        q = self.knobs.get("executor_url_query") or ""
        return 200, {
            "environment_id": env,
            "url": "%s/rendezvous/%s/executor%s" % (self._ws_base(), rid, q),
            "security_profile": SECURITY_PROFILE,
            "executor_registration_id": rid,
            "transport_policy": {"version": 1, "assignment_epoch": "fake-epoch",
                                 "outbound_tcp_nodelay": False,
                                 "rendezvous_accepted_tcp_nodelay": False},
        }

    def connect(self, env, body):
        st = self._take("connect_fail")
        if st:
            return self.err(st, "connect_failed", "connect refused by the fake (knob connect_fail)")
        why = self.check_key(body.get("harness_public_key"))
        if why:
            return self.err(400, "bad_request", "harness_public_key: " + why)
        rid = self.env_latest.get(env)
        if rid is None:
            return self.err(404, "environment_not_found", "no executor registered for %r" % env)
        reg = self.regs[rid]
        authz = "hka-" + secrets.token_urlsafe(24)
        self.auths[authz] = (rid, body["harness_public_key"])
        return 200, {
            "environment_id": env,
            "url": "%s/rendezvous/%s/harness" % (self._ws_base(), rid),
            "security_profile": SECURITY_PROFILE,
            "executor_registration_id": rid,
            "executor_public_key": reg.executor_key,
            "harness_key_authorization": authz,
        }

    async def validate(self, env, body):
        delay = self.knobs.get("validate_delay_ms") or 0
        if delay:
            await asyncio.sleep(delay / 1000.0)
        mode = str(self.knobs.get("validate", "ok"))
        if mode in ("401", "403", "500", "502", "503"):
            return self.err(int(mode), "validate_failed", "validate refused by the fake (knob)")
        if mode == "garbage":
            return 200, b"not json"
        bound = self.auths.get(body.get("harness_key_authorization"))
        ok = (bound is not None and bound[0] == body.get("executor_registration_id")
              and bound[1] == body.get("harness_public_key")
              and self.regs.get(bound[0]) is not None and self.regs[bound[0]].env == env)
        if mode == "false":
            ok = False
        return 200, {"valid": bool(ok)}

    # -- WebSocket upgrades and routing
    async def upgrade(self, reader, writer, method, url, headers):
        entry = {"kind": "http", "method": method, "path": url.path, "query": url.query,
                 "headers": headers, "body": None, "upgrade": True}
        self.add_log(entry)
        parts = url.path.split("/")
        ok = (method == "GET" and len(parts) == 4 and parts[1] == "rendezvous"
              and parts[3] in ("executor", "harness") and parts[2] in self.regs
              and "sec-websocket-key" in headers)
        role = parts[3] if len(parts) == 4 else None
        status = 101
        if not ok:
            status = 404
        elif role == "executor" and self.knobs.get("refuse_upgrades", 0) > 0:
            self.knobs["refuse_upgrades"] -= 1
            status = 403
        entry["status"] = status
        if status != 101:
            msg = b'{"error":{"code":"forbidden","message":"upgrade refused by the fake"}}'
            writer.write(b"HTTP/1.1 %d Refused\r\ncontent-type: application/json\r\n"
                         b"content-length: %d\r\nconnection: close\r\n\r\n" % (status, len(msg)) + msg)
            await writer.drain()
            writer.close()
            self.save_state()
            return
        accept = base64.b64encode(hashlib.sha1((headers["sec-websocket-key"] + WS_GUID).encode())
                                  .digest()).decode()
        writer.write(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                      "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n" % accept).encode())
        await writer.drain()
        rid = parts[2]
        reg = self.regs[rid]
        cid = self.next_cid
        self.next_cid += 1
        conn = WsConn(self, reader, writer, role, rid, url.path, cid)
        self.log_ws(conn, "open", headers=headers)
        if role == "executor":
            old = reg.executor
            reg.executor = conn
            if old is not None and not old.closed:
                old.send_close(1001, b"replaced")
                old.closed = True
        else:
            self.harness_conns[cid] = conn
        self.save_state()
        try:
            while True:
                op, data = await conn.recv_message()
                if op == 0x1:
                    self.log_ws(conn, "text", len=len(data))
                    continue
                try:
                    sid, kind, reason = frame_summary(data)
                except (ValueError, UnicodeDecodeError) as e:
                    self.log_ws(conn, "frame", malformed=str(e), len=len(data))
                    continue
                self.log_ws(conn, "frame", stream_id=sid, body_kind=kind, len=len(data),
                            reason=reason)
                if role == "harness":
                    owner = self.owners.get((rid, sid))
                    if owner is None or owner.closed:
                        self.owners[(rid, sid)] = conn
                        conn.streams.add(sid)
                    elif owner is not conn:
                        self.log_ws(conn, "route-drop", stream_id=sid, why="owned by another conn")
                        continue
                    ex = reg.executor
                    if ex is None or ex.closed:
                        self.log_ws(conn, "route-drop", stream_id=sid, why="no executor")
                        continue
                    ex.send_binary(data)
                else:
                    owner = self.owners.get((rid, sid))
                    if owner is None or owner.closed:
                        self.log_ws(conn, "route-drop", stream_id=sid, why="no harness owns it")
                        continue
                    owner.send_binary(data)
                    if kind == "reset":
                        # the executor ended the stream: a new claim may take the id
                        self.owners.pop((rid, sid), None)
                        owner.streams.discard(sid)
                await writer.drain()
        except WsClosed as e:
            self.log_ws(conn, "close", reason=str(e))
        except (ConnectionError, asyncio.IncompleteReadError) as e:
            self.log_ws(conn, "close", reason="error: %s" % e)
        finally:
            conn.closed = True
            try:
                writer.close()
            except Exception:
                pass
            if role == "executor":
                if reg.executor is conn:
                    reg.executor = None
                    for h in list(self.harness_conns.values()):
                        if h.registration == rid and not h.closed:
                            h.send_close(1011, b"executor gone")
                            h.closed = True
                            try:
                                h.writer.close()
                            except Exception:
                                pass
            else:
                self.harness_conns.pop(cid, None)
                for sid in sorted(conn.streams):
                    if self.owners.get((rid, sid)) is conn:
                        del self.owners[(rid, sid)]
                        ex = reg.executor
                        if self.knobs.get("reset_on_harness_close") and ex and not ex.closed:
                            ex.send_binary(reset_frame(sid, "harness_disconnected"))
                            self.log_ws(conn, "reset-sent", stream_id=sid)
            self.save_state()


async def amain(args):
    ctx = None
    if args.tls_cert:
        import ssl
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
    relay = FakeRelay(args.host, args.state_file, not args.no_require_auth, args.rendezvous_base,
                      tls=ctx is not None, url_host=args.url_host)
    server = await asyncio.start_server(relay.handle, args.host, args.port, limit=MAX_WS * 2,
                                        ssl=ctx)
    relay.port = server.sockets[0].getsockname()[1]
    relay.save_state()
    print(relay.base(), flush=True)
    async with server:
        await server.serve_forever()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--state-file", default=None)
    ap.add_argument("--no-require-auth", action="store_true",
                    help="accept registry requests without an Authorization header")
    ap.add_argument("--rendezvous-base", default=None, metavar="ws://IP:PORT",
                    help="hand out rendezvous URLs of another server (bench/rendezvous.c) instead of "
                         "this one's (same paths; that server then does the routing)")
    ap.add_argument("--tls-cert", default=None, help="serve everything over TLS (PEM chain)")
    ap.add_argument("--tls-key", default=None, help="the --tls-cert private key (PEM)")
    ap.add_argument("--url-host", default=None,
                    help="host name in the URLs handed out (default: --host)")
    args = ap.parse_args()
    if bool(args.tls_cert) != bool(args.tls_key):
        ap.error("--tls-cert and --tls-key go together")
    try:
        asyncio.run(amain(args))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
