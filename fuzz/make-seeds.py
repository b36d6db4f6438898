#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the raw seed inputs of every fuzz target into OUT/<target>/.

Sources: the reference transcripts (realclient/*.jsonl frames and HTTP heads,
probes/*.out frames), the string literals of the unit tests (tests/unit/), and
a few hand-written edge cases. The committed corpora (fuzz/corpus/<target>/)
are these seeds plus what fuzzing found, minimised with libFuzzer's -merge=1;
see fuzz/README.md.

usage: make-seeds.py OUT [SPEC_REFERENCE_DIR]
"""
import glob
import json
import os
import re
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MASK = b"\x37\xfa\x21\x3d"
SEP = b"\n--next-connection--\n"  # fuzz-session.c's SEP
SESSION0 = "00010203-0405-4607-8809-0a0b0c0d0e0f"  # the first session id in fuzz-session


def frame(payload, op=1, fin=True, mask=MASK, rsv=0, force_len=None):
    """A client frame (masked unless mask is None)."""
    if isinstance(payload, str):
        payload = payload.encode()
    n = len(payload)
    b0 = (0x80 if fin else 0) | (rsv << 4) | op
    form = force_len or (1 if n < 126 else 2 if n <= 0xFFFF else 8)
    mbit = 0x80 if mask else 0
    if form == 1:
        h = bytes([b0, mbit | n])
    elif form == 2:
        h = bytes([b0, mbit | 126]) + struct.pack(">H", n)
    else:
        h = bytes([b0, mbit | 127]) + struct.pack(">Q", n)
    if not mask:
        return h + payload
    return h + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(payload))


def http_head(start, headers):
    lines = [start] + ["%s: %s" % kv for kv in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


UPGRADE = http_head("GET / HTTP/1.1", [("Host", "127.0.0.1:7839"), ("Connection", "Upgrade"),
                                       ("Upgrade", "websocket"), ("Sec-WebSocket-Version", "13"),
                                       ("Sec-WebSocket-Key", "TfrBNkI9/7h2EUELdEwrQg==")])


def c_literals(path):
    """The string literals of a C file, adjacent literals joined, escapes decoded."""
    src = open(path, encoding="utf-8", errors="replace").read()
    src = re.sub(r"/\*.*?\*/", "", src, flags=re.S)
    out = []
    for m in re.finditer(r'(?:"(?:[^"\\\n]|\\.)*"\s*)+', src):
        parts = re.findall(r'"((?:[^"\\\n]|\\.)*)"', m.group(0))
        out.append(b"".join(unescape(p) for p in parts))
    return out


def unescape(s):
    b = bytearray()
    i = 0
    raw = s.encode("utf-8")
    simple = {ord("n"): 10, ord("r"): 13, ord("t"): 9, ord("\\"): 92, ord('"'): 34,
              ord("'"): 39, ord("a"): 7, ord("b"): 8, ord("f"): 12, ord("v"): 11, ord("?"): 63}
    while i < len(raw):
        c = raw[i]
        if c != 92 or i + 1 >= len(raw):
            b.append(c)
            i += 1
            continue
        d = raw[i + 1]
        if d in simple:
            b.append(simple[d])
            i += 2
        elif d == ord("x"):
            m = re.match(rb"[0-9a-fA-F]{1,2}", raw[i + 2:])
            b.append(int(m.group(0), 16))
            i += 2 + len(m.group(0))
        elif 48 <= d <= 55:
            m = re.match(rb"[0-7]{1,3}", raw[i + 1:])
            b.append(int(m.group(0), 8) & 0xFF)
            i += 1 + len(m.group(0))
        else:
            b.append(d)
            i += 2
    return bytes(b)


class Seeds:
    def __init__(self, out):
        self.out = out
        self.seen = {}

    def add(self, target, name, data):
        if isinstance(data, str):
            data = data.encode()
        key = (target, data)
        if key in self.seen:
            return
        d = os.path.join(self.out, target)
        os.makedirs(d, exist_ok=True)
        name = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")[:80] or "seed"
        n, k = name, 1
        while os.path.exists(os.path.join(d, n)):
            k += 1
            n = "%s-%d" % (name, k)
        self.seen[key] = n
        with open(os.path.join(d, n), "wb") as f:
            f.write(data)


def transcripts(ref):
    """(name, conn -> list of c2s events, all JSON-RPC frames) from realclient/*.jsonl."""
    for path in sorted(glob.glob(os.path.join(ref, "realclient*", "*.jsonl"))):
        conns = {}
        for line in open(path):
            ev = json.loads(line)
            if ev.get("dir") == "c2s" and ev.get("kind") in ("http", "text"):
                conns.setdefault(ev["conn"], []).append(ev)
        yield os.path.basename(path)[:-6], conns


def probe_frames(ref):
    """(probe, section, [sent frames]) from probes/*.out, and every received frame."""
    sent, received = [], []
    for path in sorted(glob.glob(os.path.join(ref, "probes", "*.out"))):
        probe = os.path.basename(path).split("_")[0]
        section, cur = "start", []
        for line in open(path, encoding="utf-8", errors="replace"):
            m = re.match(r"\s*[\d.]+ (>>|<<) (\{.*\})\s*$", line)
            if line.startswith("=== "):
                if cur:
                    sent.append((probe, section, cur))
                section, cur = line[4:].strip(), []
            elif m and "[truncated" not in line:
                try:
                    msg = json.loads(m.group(2))
                except ValueError:
                    continue
                (cur if m.group(1) == ">>" else received).append(msg)
        if cur:
            sent.append((probe, section, cur))
    return sent, received


def compact(msg):
    return json.dumps(msg, separators=(",", ":"), ensure_ascii=False)


def walk_strings(v):
    if isinstance(v, str):
        yield v
    elif isinstance(v, dict):
        for k, x in v.items():
            yield k
            yield from walk_strings(x)
    elif isinstance(v, list):
        for x in v:
            yield from walk_strings(x)


def sandbox_objects(msgs):
    for m in msgs:
        p = m.get("params") if isinstance(m, dict) else None
        if isinstance(p, dict) and isinstance(p.get("sandbox"), (dict, list, str, int, bool)):
            yield p["sandbox"]


def upgrade_blob(records, version=1):
    """The live upgrade's state blob (src/upgrade/state.h), written independently of state.c.
    records: [(kind, [(tag, type, value bytes)])]."""
    body = b""
    for kind, fields in records:
        fb = b"".join(struct.pack("<HBBI", t, ty, 0, len(v)) + v for t, ty, v in fields)
        body += struct.pack("<HHI", kind, len(fields), len(fb)) + fb
    return b"uexecUPG" + struct.pack("<IIQII", version, 32, len(body), len(records), 0) + body


def upgrade_seeds(s):
    u64 = lambda x: struct.pack("<Q", x)
    u32 = lambda x: struct.pack("<I", x)
    U64, BOOL, BYTES, STR, FD, REF, CHUNKS = range(1, 8)
    server = (1, [(1, STR, b"0.1.0"), (2, U64, u64(1700000000000)), (3, U64, u64(0))])
    session = (5, [(1, STR, b"0a1b2c3d-0000-4000-8000-000000000001"), (2, U64, u64(0))])
    chunks = (struct.pack("<QBI", 1, 0, 6) + b"hello\n" + struct.pack("<QBI", 2, 1, 3) + b"err")
    proc = (6, [(1, REF, u32(1)), (2, BYTES, b"p\x001"), (3, U64, u64(1234)), (7, FD, u32(7)),
                (8, FD, u32(8)), (10, U64, u64(3)), (11, CHUNKS, chunks)])
    exited = (6, [(1, REF, u32(1)), (2, BYTES, b"done"), (3, U64, u64(1235)), (10, U64, u64(3)),
                  (12, BOOL, b"\x01"), (13, BOOL, b"\x01"), (14, U64, u64(137)),
                  (15, U64, u64(9)), (16, U64, u64(1)), (17, BOOL, b"\x01")])
    conn = (7, [(1, U64, u64(0)), (2, FD, u32(9)), (4, REF, u32(1)), (5, BYTES, b"\x81\x85"),
                (7, BOOL, b"\x01"), (8, BOOL, b"\x01"), (10, U64, u64(1))])
    # fs/watch 1 of the connection (record 4), recursive, with its root's dev and ino.
    watch = (8, [(1, REF, u32(4)), (2, U64, u64(1)), (3, BYTES, b"/tmp/x"), (4, BOOL, b"\x01"),
                 (11, U64, u64(2049)), (12, U64, u64(77))])
    handle = (11, [(1, REF, u32(4)), (2, BYTES, b"h1"), (3, FD, u32(12)), (4, BOOL, b"\x00")])
    others = [(2, [(1, STR, b"uexec_processes_started_total"), (2, U64, u64(42))]),
              (3, [(1, U64, u64(1)), (2, FD, u32(10))]),
              (4, [(1, FD, u32(5)), (2, STR, b"ws://127.0.0.1:8822"), (3, BOOL, b"\x00")])]
    cgroups = (9, [(1, BOOL, b"\x00"), (4, U64, u64(0)), (5, U64, u64(0)), (6, U64, u64(0)),
                   (11, U64, u64(7)), (12, U64, u64(4321))])
    full = upgrade_blob([server, session, proc, exited, conn, watch] + others +
                        [cgroups, handle])
    s.add("upgrade-state", "server-only", upgrade_blob([server]))
    s.add("upgrade-state", "session-proc", upgrade_blob([server, session, proc]))
    s.add("upgrade-state", "every-kind", full)
    s.add("upgrade-state", "version-2", upgrade_blob([server], version=2))
    s.add("upgrade-state", "cut", full[:len(full) // 2])
    s.add("upgrade-state", "dup-fd", upgrade_blob([server, session, (6, proc[1][:3] + [
        (7, FD, u32(7)), (8, FD, u32(7)), (10, U64, u64(1))])]))
    # A process with its stdin pipe and queued writes (u8 fast | u32 idLen | id | u32 len |
    # data), the optional flags, and a PTY with its last stdin byte.
    writes = (b"\x00" + u32(1) + b"7" + u32(3) + b"abc" + b"\x01" + u32(0) + u32(1) + b"z")
    piped = (6, [(1, REF, u32(1)), (2, BYTES, b"cat"), (3, U64, u64(1236)), (6, BOOL, b"\x01"),
                 (7, FD, u32(7)), (8, FD, u32(8)), (9, FD, u32(9)), (10, U64, u64(1)),
                 (26, BOOL, b"\x01"), (27, BOOL, b"\x01"), (29, BOOL, b"\x00"),
                 (31, BYTES, writes)])
    pty = (6, [(1, REF, u32(1)), (2, BYTES, b"tty"), (3, U64, u64(1237)), (5, BOOL, b"\x01"),
               (7, FD, u32(11)), (10, U64, u64(1)), (30, U64, u64(ord("x") + 1))])
    s.add("upgrade-state", "stdin-writes-pty", upgrade_blob([server, session, piped, pty]))
    # A connection's fs state: its watch ids (fs/watchMissing's 3, fs/watch's last 2), the
    # fs/watchMissing watch with two other paths ((u32 len, path)*) and a present one, a file
    # watch with an event queued (JSON objects, each and a ',') and an ended one, and a
    # writable fs/open handle.
    fs_conn = (7, [(1, U64, u64(0)), (2, FD, u32(5)), (8, BOOL, b"\x01"), (9, U64, u64(3)),
                   (10, U64, u64(2))])
    missing = (8, [(1, REF, u32(1)), (2, U64, u64(3)), (3, BYTES, b"/a/b"), (5, BOOL, b"\x01"),
                   (6, BYTES, u32(2) + b"/c" + u32(4) + b"/d/e"), (7, BYTES, b"/p")])
    file_watch = (8, [(1, REF, u32(1)), (2, U64, u64(1)), (3, BYTES, b"/d"), (8, BYTES, b"f"),
                      (9, U64, u64(16)), (10, U64, u64(100)), (11, U64, u64(1)),
                      (12, U64, u64(2)), (14, BYTES, b'{"kind":"overflow","reason":"queue"},')])
    ended = (8, [(1, REF, u32(1)), (2, U64, u64(2)), (3, BYTES, b"/"), (13, U64, u64(2))])
    fs_handle = (11, [(1, REF, u32(1)), (2, BYTES, b"w"), (3, FD, u32(6)), (4, BOOL, b"\x01")])
    s.add("upgrade-state", "fs-watches-handles",
          upgrade_blob([server, fs_conn, missing, file_watch, ended, fs_handle]))
    # Sandboxed processes: the synthesized mount points (record 10: path, refs, directory
    # fd) and each plan's (u32 len, path)*, seccomp program id and decisive denials.
    synth = [(10, [(1, STR, b"/w/.git"), (2, U64, u64(2)), (3, FD, u32(12))]),
             (10, [(1, STR, b"/w/.codex"), (2, U64, u64(1)), (3, FD, u32(13))])]
    git, codex = u32(7) + b"/w/.git", u32(9) + b"/w/.codex"
    sandboxed = [(6, [(1, REF, u32(1)), (2, BYTES, b"sb%d" % i), (3, U64, u64(1300 + i)),
                      (7, FD, u32(20 + i)), (10, U64, u64(1)), (23, BOOL, b"\x01"),
                      (32, BYTES, paths), (33, U64, u64(1 + i)), (34, U64, u64(2))])
                 for i, paths in enumerate((git + codex, git))]
    s.add("upgrade-state", "sandbox-synth", upgrade_blob([server, session] + synth + sandboxed))
    # The denial evidence sources handed over (record 13): a tracer on the tracepoint hook,
    # attached with Landlock's hook (its perf id, .bss size, drop counter's offset and last
    # value), the audit socket's counters; their fds as held fds of roles 16-23 (21: an
    # attachment by index, 1 Landlock's link, 2 the perf event); a tree's lost flag,
    # unexplained refusals and kept denials (PROC 35-37: u8 kind | u8 decisive | u32 pid |
    # u32 syscall | u32 errno | u8 len, object | u8 len, access | u8 len, comm).
    evidence = (13, [(1, U64, u64(2)), (2, U64, u64(321)), (3, U64, u64(16)), (4, U64, u64(8)),
                     (5, BOOL, b"\x01"), (6, U64, u64(3)), (7, U64, u64(4)), (8, U64, u64(5)),
                     (9, BOOL, b"\x00")])
    held = [(3, [(1, U64, u64(role)), (2, FD, u32(fd))] + ([(3, U64, u64(ix))] if ix >= 0 else []))
            for role, fd, ix in ((16, 30, -1), (17, 31, -1), (18, 32, -1), (19, 33, -1),
                                 (20, 34, -1), (21, 35, 1), (21, 36, 2), (22, 37, -1),
                                 (23, 38, -1))]
    tree = (6, [(1, REF, u32(1)), (2, BYTES, b"ev"), (3, U64, u64(1400)), (7, FD, u32(20)),
                (10, U64, u64(1)), (23, BOOL, b"\x01"), (34, U64, u64(1)), (35, BOOL, b"\x01"),
                (36, U64, u64(2)),
                (37, BYTES, b"\x03\x01" + u32(1400) + u32(55) + u32(1) + b"\x00\x05errno\x02py")])
    s.add("upgrade-state", "evidence-handover",
          upgrade_blob([server, session, evidence] + held + [tree]))
    # Managed-network processes: the networkProxy value as JSON text (40), the proxy's HTTP,
    # SOCKS5 and UDP sockets (41-43); one with HTTP only (SOCKS5 off).
    config = b'{"proxy":{"enabled":true,"enableSocks5":true,"mode":"full",' \
             b'"domains":{"127.0.0.1":"allow"}},"environmentId":"remote"}'
    proxied = [(6, [(1, REF, u32(1)), (2, BYTES, b"np%d" % i), (3, U64, u64(1400 + i)),
                    (7, FD, u32(30 + 4 * i)), (10, U64, u64(1)), (23, BOOL, b"\x01"),
                    (40, STR, config)] +
                [(41 + k, FD, u32(31 + 4 * i + k)) for k in range(3 - 2 * i)])
               for i in range(2)]
    s.add("upgrade-state", "netproxy", upgrade_blob([server, session] + proxied))


def main():
    out = sys.argv[1]
    ref = sys.argv[2] if len(sys.argv) > 2 else "/work/shared/spec/reference"
    s = Seeds(out)
    unit = os.path.join(ROOT, "tests", "unit")
    sent, received = probe_frames(ref)
    all_sent = [m for _, _, ms in sent for m in ms]
    client_msgs = []

    # ---- session: whole client conversations ----
    for name, conns in transcripts(ref):
        for conn, evs in conns.items():
            head, frames = b"", b""
            for ev in evs:
                if ev["kind"] == "http":
                    head = http_head(ev["start_line"], list(ev["headers"].items()))
                else:
                    client_msgs.append(ev["msg"])
                    frames += frame(compact(ev["msg"]))
            if head:
                # byte 0: read size 4096, the head alone (as a real client sends it)
                s.add("session", "realclient-%s-conn%d" % (name, conn),
                      b"\x05" + head + frames[:60000])
                s.add("http-upgrade", "realclient-%s" % name, head)
    for probe, section, msgs in sent:
        body = b"".join(frame(compact(m)) for m in msgs)
        s.add("session", "probe-%s-%s" % (probe, section), b"\x05" + UPGRADE + body[:60000])
    init = frame(compact({"id": 1, "method": "initialize", "params": {"clientName": "fuzz"}}))
    inited = frame(compact({"method": "initialized", "params": {}}))
    s.add("session", "resume-session", b"\x25" + UPGRADE + init + SEP + UPGRADE + frame(compact(
        {"id": 1, "method": "initialize",
         "params": {"clientName": "fuzz", "resumeSessionId": SESSION0}})) + inited)
    s.add("session", "small-limits-backpressure", b"\x2c" + UPGRADE + init + inited +
          b"".join(frame(compact({"id": i, "method": "environment/info"})) for i in range(2, 8)))
    s.add("session", "enobufs-bytewise", b"\x10" + UPGRADE + init + frame(b"\x03\xe8", op=8))
    s.add("session", "ping-fragmented-close", b"\x03" + UPGRADE + init + inited +
          frame('{"id":2,"met', fin=False) + frame(b"p", op=9) +
          frame('hod":"environment/status"}', op=0) + frame(b"\x03\xe9bye", op=8))
    s.add("session", "pipelined-frames", b"\x47" + UPGRADE + init + inited)
    snap = {"scopeId": "scope", "shell": {"name": "bash", "path": "/bin/bash"}}
    s.add("session", "shell-snapshot", b"\x05" + UPGRADE + init + inited + b"".join(
        frame(compact({"id": i, "method": "process/start", "params": dict(
            {"processId": "s%d" % i, "argv": argv, "cwd": "file:///tmp", "env": {"HOME": "/tmp"},
             "tty": False}, shellSnapshot=sn)}))
        for i, (argv, sn) in enumerate([
            (["/bin/bash", "-lc", "true"], snap),
            (["/bin/bash", "-lc", "true"], snap),
            (["/bin/bash", "-lc", "true"], dict(snap, scopeId="")),
            (["/bin/bash", "-lc", "true"], {"scopeId": "s", "shell": {"name": "fish", "path": "/bin/bash"}}),
            (["/bin/sh", "-lc", "true"], {"scopeId": "s", "shell": {"name": "sh", "path": "/bin/sh"}}),
            (["/bin/bash", "-lc", "true"], {"scopeId": "s", "shell": []}),
            (["/bin/echo"], snap)], start=2)))
    for what, req in (("readyz", http_head("GET /readyz HTTP/1.1", [("Host", "x")])),
                      ("bad-request", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"),
                      ("origin", http_head("GET / HTTP/1.1", [("Origin", "http://evil")]))):
        s.add("session", "http-" + what, b"\x07" + req)

    # ---- http-upgrade ----
    for i, lit in enumerate(c_literals(os.path.join(unit, "test-http.c"))):
        if re.match(rb"^[\r\n]*[A-Z]+ ", lit) or lit.startswith(b"\x16"):
            s.add("http-upgrade", "unit-test-http-%d" % i, lit)
    for path in ("/", "/readyz", "/readyz?x=1", "/some/path?x=1", "/ws"):
        for method in ("GET", "HEAD", "POST"):
            s.add("http-upgrade", "%s-%s" % (method, path),
                  UPGRADE.replace(b"GET / ", ("%s %s " % (method, path)).encode()))
    s.add("http-upgrade", "http10", UPGRADE.replace(b"HTTP/1.1", b"HTTP/1.0"))
    s.add("http-upgrade", "lf-only", UPGRADE.replace(b"\r\n", b"\n"))
    s.add("http-upgrade", "long-key", http_head("GET / HTTP/1.1", [
        ("Connection", "keep-alive, Upgrade"), ("Upgrade", "WebSocket"),
        ("Sec-WebSocket-Version", "13"), ("Sec-WebSocket-Key", "k" * 300)]))

    # ---- ws-frame: byte 0 = limits (bits 0-1) | chunk size (bits 2-4) ----
    msgs = [compact(m) for m in (client_msgs + all_sent)[:400]]
    for i, m in enumerate(msgs[:120]):
        s.add("ws-frame", "msg-%d" % i, bytes([0x02 | (i % 8) << 2]) + frame(m))
    s.add("ws-frame", "fragmented-with-ping", b"\x1e" + frame("ab", fin=False) +
          frame(b"x", op=9) + frame("cd", op=0, fin=False) + frame("ef", op=0) + frame(b"", op=10))
    s.add("ws-frame", "len16", b"\x01" + frame("a" * 300))
    s.add("ws-frame", "len64-nonminimal", b"\x02" + frame("a" * 10, force_len=8))
    s.add("ws-frame", "len64", b"\x06" + frame("b" * 70000))
    s.add("ws-frame", "unmasked", b"\x02" + frame("x", mask=None))
    s.add("ws-frame", "server-frame", b"\x02" + frame("x" * 200, mask=None))
    s.add("ws-frame", "rsv1", b"\x02" + frame("x", rsv=4))
    s.add("ws-frame", "bad-utf8", b"\x02" + frame(b"\xc3\x28"))
    s.add("ws-frame", "split-utf8", b"\x02" + frame(b"\xe2\x82", fin=False) + frame(b"\xac", op=0))
    s.add("ws-frame", "close-reason", b"\x02" + frame(b"\x03\xe8bye", op=8))
    s.add("ws-frame", "close-bad-code", b"\x02" + frame(b"\x03\xed", op=8))
    s.add("ws-frame", "close-1byte", b"\x02" + frame(b"\x03", op=8))
    s.add("ws-frame", "ping-126", b"\x02" + frame(b"p" * 126, op=9))
    s.add("ws-frame", "too-big-for-small-limits", b"\x00" + frame("z" * 200))
    s.add("ws-frame", "message-over-limit", b"\x03" + frame("a" * 200, fin=False) +
          frame("b" * 200, op=0))
    s.add("ws-frame", "binary", b"\x02" + frame(b"\x00\xff", op=2))
    s.add("ws-frame", "cont-without-start", b"\x02" + frame("x", op=0))
    s.add("ws-frame", "reserved-opcode", b"\x02" + frame("x", op=3))
    for i, lit in enumerate(c_literals(os.path.join(unit, "test-ws.c"))):
        s.add("ws-frame", "unit-test-ws-%d" % i, b"\x02" + frame(lit))

    # ---- jsonrpc ----
    for i, m in enumerate(client_msgs + all_sent + received[:300]):
        s.add("jsonrpc", "transcript-%d" % i, compact(m))
    for i, lit in enumerate(c_literals(os.path.join(unit, "test-json-check.c"))):
        s.add("jsonrpc", "unit-test-json-check-%d" % i, lit)
    for name, text in (("big-int", '{"id":123456789012345678901234567890,"method":"x"}'),
                       ("real-id", '{"id":1.0,"method":"x"}'),
                       ("nul-string", '{"id":"a\\u0000b","method":"x"}'),
                       ("surrogates", '{"id":1,"method":"\\ud83d\\ude00"}'),
                       ("lone-surrogate", '{"id":1,"method":"\\ud83d"}'),
                       ("dup-keys", '{"id":1,"id":"2","method":"a","method":"b"}'),
                       ("response", '{"id":1,"result":null}'),
                       ("deep", "[" * 130 + "]" * 130), ("exp", '{"id":1e400}'),
                       ("batch", '[{"id":1,"method":"initialize"}]')):
        s.add("jsonrpc", name, text)

    # ---- file-uri: byte 0 bit 0 = allow_native ----
    strings = set()
    for m in client_msgs + all_sent + received:
        for v in walk_strings(m):
            if v.startswith(("file:", "FILE:", "/")) and len(v) < 300:
                strings.add(v)
    for lit in c_literals(os.path.join(unit, "test-file-uri.c")):
        strings.add(lit.decode("utf-8", "surrogateescape"))
    for i, v in enumerate(sorted(strings)):
        b = v.encode("utf-8", "surrogateescape")
        s.add("file-uri", "uri-%d" % i, (b"\x01" if v.startswith("/") else b"\x00") + b)
    # WHATWG's drive-letter rule: "/c|" does not round-trip (fuzz-file-uri.c)
    s.add("file-uri", "drive-letter-quirk-native", b"\x01/t|")
    s.add("file-uri", "drive-letter-quirk-uri", b"\x00file:///C|/x")

    # ---- base64 ----
    b64 = set()
    for m in client_msgs + all_sent + received[:200]:
        for v in walk_strings(m):
            if re.fullmatch(r"[A-Za-z0-9+/]{4,}={0,2}", v) and len(v) % 4 == 0 and len(v) < 2000:
                b64.add(v)
    for lit in c_literals(os.path.join(unit, "test-base64.c")):
        b64.add(lit.decode("latin-1"))
    for i, v in enumerate(sorted(b64)):
        s.add("base64", "b64-%d" % i, v.encode("latin-1"))

    # ---- sandbox-policy: the process/start sandbox objects ----
    objs = list(sandbox_objects(client_msgs + all_sent))
    for i, o in enumerate(objs):
        s.add("sandbox-policy", "transcript-%d" % i, compact(o))
    policy_test = os.path.join(ROOT, "tests", "unit", "test-policy.c")
    if os.path.exists(policy_test):
        for i, lit in enumerate(c_literals(policy_test)):
            if lit.lstrip().startswith(b"{"):
                s.add("sandbox-policy", "unit-test-policy-%d" % i, lit)

    # ---- upgrade-state: blobs of every record kind, and refusals ----
    upgrade_seeds(s)


if __name__ == "__main__":
    main()
