# SPDX-License-Identifier: MIT
"""uexec: in-flight memory budgets (issue 11, "Bounded under abuse: Memory").

--max-inflight-bytes-per-conn (B) and --max-inflight-bytes (G) bound the bytes held
for replies: files being read with their reply frames, tree replies, sandboxed fs
helper output, queued output. A connection over B stops having its requests parsed
until it drains below B/2 (nothing dropped or reordered); a reply larger than B runs
alone on its connection within G/2, so one connection that never reads holds at
most max(B, G/2) and the others are still served. See docs/ARCHITECTURE.md (Limits).
"""

import os
import re
import shutil
import struct
import tempfile
import time

import pytest

from conftest import EVENT_TIMEOUT, run_once, wait_until
from wsclient import file_uri, unb64

MiB = 1 << 20


def _status(pid):
    """VmRSS and VmHWM of pid in bytes."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                k, v = line.split(":", 1)
                out[k] = int(v.split()[0]) * 1024
    return out["VmRSS"], out["VmHWM"]


def _sanitized(pid):
    """ASan (tests/sanitize.sh) keeps freed memory in quarantine: RSS says nothing there."""
    with open("/proc/%d/maps" % pid) as f:
        return "libasan" in f.read()


def _assert_grown(srv, base, bound, what):
    """VmHWM of srv grew by at most bound since base (unless sanitized)."""
    hwm = _status(srv.pid)[1]
    if not _sanitized(srv.pid):
        assert hwm - base <= bound, ("RSS grew by %d MiB %s (VmHWM %d MiB, idle %d MiB), "
                                     "bound %d MiB" % ((hwm - base) >> 20, what, hwm >> 20,
                                                       base >> 20, bound >> 20))


def _requests_held(srv):
    """True once the server's debug log says a request of a connection is held back for
    budget: it waits for budget (conn-mem.c "a request waits for"), or its connection,
    over its budget, stopped parsing requests ("requests wait"), whichever came first."""
    err = srv.stderr()
    return b"a request waits for" in err or b"bytes in flight (server: " in err and \
        b"requests wait" in err


def _write_file(path, size):
    """size bytes: a random 1 MiB block repeated, the last one cut."""
    block = os.urandom(MiB)
    with open(path, "wb") as f:
        left = size
        while left:
            f.write(block[:min(left, MiB)])
            left -= min(left, MiB)


def _skim_text_frames(ws, count, timeout):
    """Reads count text frames straight off ws's socket without keeping their payloads
    (each is hundreds of MB): returns [(length, first 100 bytes, last 3 bytes)]."""
    sock, buf = ws.sock, bytearray(8 * MiB)
    stream = bytes(ws._buf)
    del ws._buf[:]
    frames, hdr, left, op, head, tail, length = [], bytearray(), None, 0, b"", b"", 0
    deadline = time.monotonic() + timeout
    while len(frames) < count:
        if not stream:
            remaining = deadline - time.monotonic()
            assert remaining > 0, "only %d of %d replies within %.0f s" % (len(frames), count,
                                                                          timeout)
            sock.settimeout(remaining)
            n = sock.recv_into(buf)
            assert n, "connection closed after %d of %d replies" % (len(frames), count)
            stream = memoryview(buf)[:n]
        i = 0
        while i < len(stream) and len(frames) < count:
            if left is None:
                hdr.append(stream[i])
                i += 1
                need = 2
                if len(hdr) >= 2:
                    code = hdr[1] & 0x7F
                    need = 2 + (2 if code == 126 else 8 if code == 127 else 0)
                if len(hdr) == need:
                    code = hdr[1] & 0x7F
                    length = (struct.unpack("!H", hdr[2:4])[0] if code == 126 else
                              struct.unpack("!Q", hdr[2:10])[0] if code == 127 else code)
                    op, left, head, tail = hdr[0] & 0x0F, length, b"", b""
                    hdr = bytearray()
            else:
                k = min(left, len(stream) - i)
                part = bytes(stream[i:i + min(k, 100)]) if len(head) < 100 else b""
                head = (head + part)[:100]
                tail = (tail + bytes(stream[i + max(0, k - 3):i + k]))[-3:]
                left -= k
                i += k
            if left == 0:
                if op == 1:
                    frames.append((length, head, tail))
                left = None
        stream = stream[i:]
    return frames


def _b64len(n):
    return (n + 2) // 3 * 4


def test_pipelined_huge_reads_from_a_client_that_never_reads(server_factory, tmp_path):
    """issue 11: six pipelined fs/readFile of a 200 MiB file from a client that never reads
    its socket. Each reply is a 267 MiB frame, more than B = 16 MiB: it runs alone on its
    connection and within G/2 = 320 MiB, so the server holds one reply (plus one 3 MiB read
    slice) at a time: its RSS grows by at most G/2 + 48 MiB (allocator and buffers). The old
    code read all six at once and queued 1.6 GB. Meanwhile a second client connects,
    initializes and is served at once; when the first client reads, all six replies arrive
    complete, none dropped."""
    size = 200 * MiB
    budget_conn, budget = 16 * MiB, 640 * MiB
    bound = budget // 2 + 48 * MiB
    big = tmp_path / "big.bin"
    _write_file(big, size)
    small = tmp_path / "small.txt"
    small.write_bytes(b"small and quick\n")
    srv = server_factory("--max-inflight-bytes-per-conn", str(budget_conn),
                         "--max-inflight-bytes", str(budget), "--log-level", "debug")
    base = _status(srv.pid)[0]
    abuser = srv.connect()
    ids = [abuser.request("fs/readFile", {"path": file_uri(big)}) for _ in range(6)]
    # The first reply runs alone on the connection: the others are held back for budget
    # (the server's debug log says so); VmHWM, read at each check, has the peak so far.
    wait_until(lambda: _requests_held(srv), what="the other reads to be held back")
    # Another client is served while the six replies wait for the first client to read
    # (it has read nothing yet: a server serving the replies first would never answer).
    other = srv.connect()
    assert other.result("environment/status", None) == {"status": "ready"}
    res = other.result("fs/readFile", {"path": file_uri(small)})
    assert unb64(res["dataBase64"]) == b"small and quick\n"
    _assert_grown(srv, base, bound, "with six huge reads pipelined")

    # Now the first client reads: every reply arrives, complete and in order.
    frames = _skim_text_frames(abuser.ws, 6, timeout=4 * EVENT_TIMEOUT)
    for i, (length, head, tail) in zip(ids, frames):
        prefix = b'{"id":%d,"result":{"dataBase64":"' % i
        assert head.startswith(prefix), head
        assert tail == b'"}}'
        assert length == len(prefix) + _b64len(size) + 3
    _assert_grown(srv, base, bound, "while the replies were read")
    assert other.result("environment/status", None) == {"status": "ready"}
    other.ws.abort()
    abuser.ws.abort()


def test_global_budget_makes_a_second_huge_read_wait(server_factory, tmp_path):
    """issue 11: two clients that do not read each ask for a 100 MiB file (a 134 MiB reply,
    over B = 8 MiB): with G = 320 MiB only one such reply fits G/2, so the second waits
    for budget (the server says so in its debug log, and nothing of it reaches its
    client), while a third client's small requests go through. Once the first client
    reads its reply, the second is admitted and served."""
    import select
    size = 100 * MiB
    budget = 320 * MiB
    big = tmp_path / "big.bin"
    _write_file(big, size)
    srv = server_factory("--max-inflight-bytes-per-conn", str(8 * MiB),
                         "--max-inflight-bytes", str(budget), "--log-level", "debug")
    base = _status(srv.pid)[0]
    a, b = srv.connect(), srv.connect()
    ia = a.request("fs/readFile", {"path": file_uri(big)})
    wait_until(lambda: _status(srv.pid)[0] - base >= 120 * MiB,   # a's reply is being built
               what="the first reply to be built")
    ib = b.request("fs/readFile", {"path": file_uri(big)})
    wait_until(lambda: b"a request waits for" in srv.stderr(),
               what="the second read to wait for budget")
    other = srv.connect()
    assert other.result("fs/readFile", {"path": file_uri(__file__)})["dataBase64"]
    # still waiting: a has read nothing, so none of b's reply may have been sent
    assert select.select([b.ws.sock], [], [], 0)[0] == [], "b's reply came before a read"
    _assert_grown(srv, base, budget // 2 + 48 * MiB, "with the second read waiting")
    prefix = b'{"id":%d,"result":{"dataBase64":"'
    (la, ha, _), = _skim_text_frames(a.ws, 1, timeout=2 * EVENT_TIMEOUT)
    assert ha.startswith(prefix % ia) and la == len(prefix % ia) + _b64len(size) + 3
    (lb, hb, _), = _skim_text_frames(b.ws, 1, timeout=2 * EVENT_TIMEOUT)
    assert hb.startswith(prefix % ib) and lb == len(prefix % ib) + _b64len(size) + 3
    _assert_grown(srv, base, budget // 2 + 48 * MiB, "once both were served")
    for c in (a, b, other):
        c.ws.abort()


@pytest.mark.parametrize("size", [0, 1, 2, 3, 65535, 65536, 65537, 3 * MiB - 1, 3 * MiB,
                                  3 * MiB + 1, 7 * MiB + 2])
def test_read_file_slices_round_trip(sclient, tmp_path, size):
    """issue 11: fs/readFile reads in 3 MiB slices encoded straight into the reply; every
    size around the slice and buffer boundaries round-trips exactly."""
    p = tmp_path / ("f%d" % size)
    data = os.urandom(size)
    p.write_bytes(data)
    assert unb64(sclient.result("fs/readFile", {"path": file_uri(p)})["dataBase64"]) == data


def test_read_file_of_proc_files_grows_the_reply(sclient):
    """§6.12: /proc files say 0 bytes and are read fully (the reply frame grows)."""
    data = unb64(sclient.result("fs/readFile", {"path": "file:///proc/self/status"})
                 ["dataBase64"])
    assert b"Name:\tuexec" in data and data.endswith(b"\n")
    if os.access("/proc/kallsyms", os.R_OK):
        data = unb64(sclient.result("fs/readFile", {"path": "file:///proc/kallsyms"},
                                    timeout=60)["dataBase64"])
        assert len(data) > 256 * 1024 and data.endswith(b"\n")


def test_pipelined_reads_pause_and_resume_in_order(server_factory, tmp_path):
    """issue 11: with B = 1 MiB, 40 pipelined 300 KiB reads (12 MB of replies) sent by a
    client that reads nothing until the server stopped parsing its requests (it says so
    in its debug log) all complete, in order and intact, once it reads; meanwhile the
    connection held at most a few replies, and its requests resumed."""
    srv = server_factory("--max-inflight-bytes-per-conn", str(MiB),
                         "--max-inflight-bytes", str(64 * MiB), "--log-level", "debug")
    files = []
    for k in range(4):
        p = tmp_path / ("f%d" % k)
        p.write_bytes(os.urandom(300 * 1024))
        files.append(p)
    c = srv.connect()
    base = _status(srv.pid)[0]
    ids = [c.request("fs/readFile", {"path": file_uri(files[i % 4])}) for i in range(40)]
    wait_until(lambda: _requests_held(srv), what="the connection's requests to be held back")
    grown = _status(srv.pid)[0] - base
    assert grown < 8 * MiB or _sanitized(srv.pid), grown >> 20
    for n, i in enumerate(ids):
        res = c.wait_reply(i)
        assert unb64(res["result"]["dataBase64"]) == files[n % 4].read_bytes()
    order = [m["id"] for m in c.log if isinstance(m, dict) and m.get("id") in ids]
    assert order == ids
    assert b"requests wait" not in srv.stderr() or b"requests resume" in srv.stderr()
    c.ws.abort()


def test_read_file_limit_follows_the_budget(server_factory, tmp_path):
    """issue 11: a file whose reply could never fit half the global budget is refused at
    once with the reference's error and the effective limit (512 MiB by default)."""
    srv = server_factory("--max-inflight-bytes-per-conn", str(8 * MiB),
                         "--max-inflight-bytes", str(64 * MiB))
    c = srv.connect()
    p = tmp_path / "sparse"
    with open(p, "wb") as f:
        f.truncate(30 * MiB)
    err = c.error("fs/readFile", {"path": file_uri(p)})
    m = re.fullmatch(r"file is too large to read: limit is (\d+) bytes", err["message"])
    assert err["code"] == -32600 and m, err
    limit = int(m.group(1))
    assert 20 * MiB < limit < 24 * MiB, limit
    q = tmp_path / "fits"
    data = os.urandom(12 * MiB)
    q.write_bytes(data)
    assert unb64(c.result("fs/readFile", {"path": file_uri(q)}, timeout=60)["dataBase64"]) == data
    c.ws.abort()


def test_budget_flags_are_checked():
    """CLI: the budgets take byte counts of at least 1 MiB."""
    for flag in ("--max-inflight-bytes-per-conn", "--max-inflight-bytes"):
        r = run_once(flag, "1000")
        assert r.returncode == 2 and flag.encode() in r.stderr, r.stderr
    r = run_once("--help")
    assert b"--max-inflight-bytes-per-conn" in r.stdout and b"RSS" in r.stdout


def _ws_sandbox(root):
    """The fs form of the real client's workspace-write sandbox (§5.4), rooted at root."""
    w = file_uri(root)
    return {"permissions": {"type": "managed", "file_system": {"type": "restricted", "entries": [
        {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"},
        {"path": {"type": "special", "value": {"kind": "project_roots"}}, "access": "write"}]},
        "network": "restricted"},
        "cwd": w, "policyContext": {"cwd": w, "workspaceRoots": [w]}, "workspaceRoots": [w],
        "userHomeDir": "file:///root", "windowsSandboxLevel": "disabled"}


@pytest.mark.needs("sandbox")  # served by the sandboxed fs helper
def test_sandboxed_large_read_is_relayed_intact(server_factory):
    """issue 11: a sandboxed fs/readFile of 40 MiB (the helper's output collected under the
    budget, relayed as text in 16 MiB slices) arrives intact."""
    base = tempfile.mkdtemp(dir="/var/tmp", prefix="uexec-mem-sbx-")
    try:
        work = os.path.join(base, "work")
        os.makedirs(work)
        p = os.path.join(work, "big.bin")
        data = os.urandom(40 * MiB + 1)
        with open(p, "wb") as f:
            f.write(data)
        srv = server_factory()
        c = srv.connect()
        res = c.result("fs/readFile", {"path": file_uri(p), "sandbox": _ws_sandbox(work)},
                       timeout=120)
        assert unb64(res["dataBase64"]) == data
        c.ws.abort()
    finally:
        shutil.rmtree(base, ignore_errors=True)
