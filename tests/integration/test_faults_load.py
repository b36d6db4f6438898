# SPDX-License-Identifier: MIT
"""Faults an operator's fleet produces, under load: clients that drop at awkward moments
(while their output is paused over --max-queued-bytes, mid-frame, mid-request), and what
they must not leave behind: fds in the server, processes, sessions, requests without a
reply, a loop that stops answering others. Every check counts something (fds, processes,
replies); none measures time."""

import json
import os
import random
import re
import socket
import time

import pytest

from conftest import children_of, fd_count, pid_alive, settled_fd_count, wait_until
from wsclient import OP_TEXT, WebSocket, file_uri, http_exchange, unb64, upgrade_request

pytestmark = pytest.mark.needs_programs("/bin/sh", "/bin/sleep", "/bin/true", "/usr/bin/head",
                                        "/usr/bin/yes")

PATH_ENV = {"PATH": "/usr/bin:/bin"}
SMALL_QUEUE = 256 * 1024          # --max-queued-bytes for the flooding tests


def metrics(srv):
    """GET /metrics as {sample line's name+labels: value}."""
    status, _, body = http_exchange(srv.host, srv.port,
                                    b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == "HTTP/1.1 200 OK", status
    out = {}
    for line in body.decode().splitlines():
        m = re.match(r"^([a-z_]+(?:\{[^}]*\})?) (\S+)$", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def queued_bytes(srv):
    return metrics(srv)["uexec_queued_output_bytes"]


def paused_streams(srv):
    """Output streams the server stopped reading because a queue passed --max-queued-bytes.
    (The queue itself is no signal to wait for: once the readers paused, the socket may
    still take a little, and the queue goes back under the mark while the readers stay
    paused until it is under half of it.)"""
    return metrics(srv)["uexec_paused_output_streams"]


def sessions(srv, state):
    return metrics(srv)['uexec_sessions{state="%s"}' % state]


def warm_up(srv):
    """One process and one connection, so lazily made fds exist before a baseline."""
    c = srv.connect()
    c.run("warm", ["/bin/true"])
    c.ws.close()
    c.ws.wait_closed(20)
    wait_until(lambda: sessions(srv, "detached") == 0 and sessions(srv, "attached") == 0,
               what="the warm-up session to go")


def flood_until_paused(srv, c, argv):
    """Starts argv (which floods stdout) on c, never reads c, and waits until the
    server holds more than --max-queued-bytes for it: its output readers are paused.
    Returns the process's pid (from process/list, asked before the flood fills c)."""
    c.start("flood", ["/bin/sh", "-c", "read go; exec \"$@\"", "sh"] + argv,
            env=PATH_ENV, pipeStdin=True)
    procs = c.result("process/list", {})["processes"]
    pid = procs[0]["pid"]
    c.write("flood", b"go\n", "w1")
    wait_until(lambda: paused_streams(srv) > 0, timeout=30,
               what="the never-reading client's queue to pause the output readers")
    return pid


def test_detached_session_output_paused_over_queue_keeps_flowing(server_factory):
    """A client that stopped reading (its output paused over --max-queued-bytes) and then
    dropped: the detached session's process must go on writing into retention, not stay
    blocked on a full pipe until the resume window kills it. Resumed, its exit is there."""
    srv = server_factory("--max-queued-bytes", str(SMALL_QUEUE), "--resume-window-ms", "60000")
    c = srv.connect()
    sid = c.init_result["sessionId"]
    pid = flood_until_paused(srv, c, ["/usr/bin/head", "-c", str(32 << 20), "/dev/zero"])
    c.ws.abort()
    # the process finishes on its own while nobody is attached (it was blocked on a full
    # stdout pipe for the whole resume window before the fix)
    wait_until(lambda: not pid_alive(pid), timeout=30,
               what="the detached flooding process to finish writing")
    r = srv.connect(initialize=False)
    assert r.result("initialize", {"clientName": "resumer", "resumeSessionId": sid})[
        "sessionId"] == sid
    r.notify("initialized", {})
    got = r.read("flood", afterSeq=0, waitMs=0)
    while not got["exited"]:
        got = r.read("flood", afterSeq=got["nextSeq"] - 1, waitMs=2000)
    assert got["exitCode"] == 0
    tail = b"".join(unb64(ch["chunk"]) for ch in got["chunks"])
    assert tail and set(tail) == {0}
    r.ws.abort()


@pytest.mark.parametrize("tty", [False, True], ids=["pipes", "pty"])
def test_expired_session_of_paused_flood_leaves_no_fd(server_factory, tty):
    """`yes` floods a client that never reads, the client drops, the resume window ends:
    the process is killed and reaped, and the server's fd count returns to what it was
    (before the fix the paused stdout pipe, or the PTY master, stayed open forever and the
    session was never freed)."""
    srv = server_factory("--max-queued-bytes", str(SMALL_QUEUE), "--resume-window-ms", "300")
    warm_up(srv)
    base = settled_fd_count(srv.pid, 0.5, 20)
    for i in range(3):
        c = srv.connect()
        # a small receive window: the queue builds at once instead of after the
        # socket buffers absorbed megabytes (slow under ASan with a PTY's small reads)
        c.ws.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        c.start("y", ["/usr/bin/yes", "x" * 200], env=PATH_ENV, tty=tty)
        wait_until(lambda: paused_streams(srv) > 0, timeout=60,
                   what="the queue to pause the output readers")
        c.ws.abort()
        wait_until(lambda: sessions(srv, "detached") == 0 and sessions(srv, "attached") == 0,
                   timeout=30, what="the expired session %d to be freed" % i)
    wait_until(lambda: not children_of(srv.pid), timeout=20,
               what="no children of the server (left: %r)" % children_of(srv.pid))
    assert settled_fd_count(srv.pid, 0.5, 20) == base


def read_until_closed(sock, limit=64 << 20):
    """Reads sock until the server's EOF or reset; False if it stays open (10 s of silence)
    or sends more than limit bytes."""
    sock.settimeout(10)
    got = 0
    try:
        while got < limit:
            data = sock.recv(1 << 20)
            if not data:
                return True
            got += len(data)
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False
    return False


@pytest.mark.parametrize("how", ["client-close", "protocol-error"])
def test_closing_connection_that_stopped_reading_is_ended(server_factory, how):
    """A WebSocket that is closing (the client's Close, or ours after its protocol error)
    is no longer read, pinged or evicted, only flushed. A client that stopped reading with
    output queued held it for ever: its fd, its queue and its connection slot. It is now
    ended after ping intervals without progress (here 200 ms each)."""
    srv = server_factory("--max-queued-bytes", str(SMALL_QUEUE), "--ping-interval-ms", "200",
                         "--resume-window-ms", "300")
    warm_up(srv)
    base = settled_fd_count(srv.pid, 0.5, 20)
    c = srv.connect()
    c.start("y", ["/usr/bin/yes", "x" * 200], env=PATH_ENV)
    wait_until(lambda: paused_streams(srv) > 0, timeout=30,
               what="the queue to pause the output readers")
    if how == "client-close":
        c.ws.send_close(1000)
    else:
        c.ws.send_raw(c.ws.build_frame(0x1, b"{}", mask=False))   # unmasked: Close 1002
    # the session detaches at the Close and expires: its process goes
    wait_until(lambda: sessions(srv, "detached") == 0 and sessions(srv, "attached") == 0,
               timeout=30, what="the session to expire")
    wait_until(lambda: not children_of(srv.pid), timeout=20,
               what="no children of the server (left: %r)" % children_of(srv.pid))
    # and the connection, which never drains, is ended: its fd and queue go
    wait_until(lambda: fd_count(srv.pid) <= base and queued_bytes(srv) == 0, timeout=20,
               what="the stalled closing connection to be ended (fds %d, base %d)"
               % (fd_count(srv.pid), base))
    # others are served as before
    o = srv.connect()
    assert o.result("environment/status", None) == {"status": "ready"}
    o.ws.abort()


def test_slow_reader_keeps_closing_connection_until_flushed(server_factory):
    """The other side of the rule above: a client that still reads, slowly, while its
    connection is closing gets every queued byte and the Close echo."""
    srv = server_factory("--max-queued-bytes", str(SMALL_QUEUE), "--ping-interval-ms", "100")
    c = srv.connect()
    c.start("y", ["/usr/bin/head", "-c", str(4 << 20), "/dev/zero"], env=PATH_ENV)
    wait_until(lambda: paused_streams(srv) > 0, timeout=30,
               what="the queue to pause the output readers")
    c.ws.send_close(1000)
    frames = []
    while True:
        f = c.ws.recv_frame(timeout=20)
        frames.append(f.opcode)
        if f.opcode == 0x8:
            break
        time.sleep(0.01)           # slower than the ping interval over the whole queue
    assert frames[-1] == 0x8 and frames.count(0x1) >= 2, frames[-5:]
    assert read_until_closed(c.ws.sock)


def test_drain_with_a_client_that_stopped_reading(server_factory):
    """SIGTERM with --drain-timeout-ms while a client that stopped reading holds a flood:
    the timeout kills it, uexec exits 0 after the grace with nothing left behind, and its
    last line says what held it (the client's unread output, not an unreaped process: the
    line used to claim 'processes still not reaped')."""
    srv = server_factory("--max-queued-bytes", str(SMALL_QUEUE), "--drain-timeout-ms", "300")
    c = srv.connect()
    pid = flood_until_paused(srv, c, ["/usr/bin/yes", "x" * 200])
    srv.proc.send_signal(15)
    assert srv.proc.wait(30) == 0
    srv.stopped = True
    assert not pid_alive(pid)
    err = srv.stderr().decode()
    assert "Drain: 300 ms passed, killing the 1 processes left" in err, err[-2000:]
    assert ("with 0 processes not reaped, 1 not closed (output not read) and 1 connections "
            "with output unsent") in err, err[-2000:]
    assert not srv.sanitizer_problems()


# ---------------------------------------------------------------------------
# fault paths without a defect found, kept as cheap regression nets


def test_request_split_at_every_byte_offset(server):
    """A request frame arriving in two TCP segments, cut at every byte offset (header,
    mask key, payload), is answered once each; one cut and then dropped at every offset
    leaves no fd behind and the loop answering."""
    c = server.connect()
    c.ws.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    frame = WebSocket.build_frame(OP_TEXT, json.dumps(
        {"id": 7, "method": "environment/status", "params": None}).encode())
    for k in range(1, len(frame)):
        c.ws.send_raw(frame[:k])
        time.sleep(0.003)               # two reads on the server's side, mostly
        c.ws.send_raw(frame[k:])
        assert c.wait_reply(7) == {"id": 7, "result": {"status": "ready"}}, k
    c.ws.abort()
    base = settled_fd_count(server.pid, 0.5, 20)
    init = WebSocket.build_frame(OP_TEXT, json.dumps(
        {"id": 1, "method": "initialize", "params": {"clientName": "cut"}}).encode())
    for k in range(len(init)):
        ws = server.ws()
        ws.send_raw(init[:k])
        ws.abort()
    o = server.connect()
    assert o.result("environment/status", None) == {"status": "ready"}
    o.ws.abort()
    wait_until(lambda: fd_count(server.pid) <= base, timeout=20,
               what="fds back to %d (now %d)" % (base, fd_count(server.pid)))


def test_three_clients_resume_one_session_at_once(server):
    """Three initialize{resumeSessionId} of one detached session sent together: exactly one
    attaches it (and reads its process's output), the others get -32010 and no session."""
    c = server.connect()
    sid = c.init_result["sessionId"]
    c.start("p", ["/bin/sh", "-c", "echo hello; sleep 30"], env=PATH_ENV)
    c.collect_until_output("p", b"hello\n")
    c.ws.reset()
    wait_until(lambda: sessions(server, "detached") == 1, what="the session to detach")
    cs = [server.connect(initialize=False) for _ in range(3)]
    ids = [x.request("initialize", {"clientName": "r%d" % i, "resumeSessionId": sid})
           for i, x in enumerate(cs)]
    replies = [x.wait_reply(i) for x, i in zip(cs, ids)]
    won = [x for x, r in zip(cs, replies) if "result" in r]
    lost = [r["error"] for r in replies if "error" in r]
    assert len(won) == 1 and len(lost) == 2, replies
    assert all(e["code"] == -32010 for e in lost), lost
    w = won[0]
    w.notify("initialized", {})
    got = w.read("p", afterSeq=0, waitMs=0)
    assert b"".join(unb64(ch["chunk"]) for ch in got["chunks"]) == b"hello\n"
    assert sessions(server, "attached") == 1 and sessions(server, "detached") == 0
    w.terminate("p")
    for x in cs:
        x.ws.abort()


def test_clients_dropping_at_every_stage_leave_nothing(server_factory, tmp_path):
    """A fleet's worth of clients dropping mid-handshake, mid-frame, mid-initialize, with
    processes starting or running (pipes and PTYs, with background children), with a
    long poll pending, a large fs/readFile in flight or a watch active: afterwards the
    server's fds, children, sessions, queued and in-flight bytes are back to nothing, and
    it answered another client all along."""
    rnd = random.Random(20261126)
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(16 << 20))
    wdir = tmp_path / "watched"
    wdir.mkdir()
    srv = server_factory("--resume-window-ms", "200", "--handshake-timeout-ms", "2000")
    warm_up(srv)
    c = srv.connect()
    c.fs_read_file(str(big))
    c.result("fs/watch", {"path": file_uri(str(wdir))})
    c.ws.abort()
    wait_until(lambda: sessions(srv, "detached") == 0, what="the warm-up session to go")
    base = settled_fd_count(srv.pid, 0.5, 20)
    init = WebSocket.build_frame(OP_TEXT, json.dumps(
        {"id": 1, "method": "initialize", "params": {"clientName": "x"}}).encode())
    head = upgrade_request(srv.host, srv.port)[0]
    stages = ["tcp", "mid-http", "mid-frame", "mid-initialize", "starting", "running",
              "long-poll", "read-file", "watch"]
    for i in range(len(stages) * 6):
        stage = stages[i % len(stages)]
        if stage == "tcp":
            socket.create_connection((srv.host, srv.port)).close()
            continue
        if stage == "mid-http":
            s = socket.create_connection((srv.host, srv.port))
            s.sendall(head[:rnd.randrange(1, len(head))])
            s.close()
            continue
        if stage == "mid-frame":
            ws = srv.ws()
            ws.send_raw(init[:rnd.randrange(1, len(init))])
            ws.abort()
            continue
        if stage == "mid-initialize":
            x = srv.connect(initialize=False)
            x.request("initialize", {"clientName": "x"})
            x.ws.abort()
            continue
        x = srv.connect()
        if stage in ("starting", "running", "long-poll"):
            rid = x.request("process/start", x.start_params(
                "p", ["/bin/sh", "-c", "sleep 30 & sleep 30"], env=PATH_ENV, tty=bool(i % 2)))
            if stage != "starting":
                assert "result" in x.wait_reply(rid)
            if stage == "long-poll":
                x.request("process/read", {"processId": "p", "afterSeq": 5, "waitMs": 20000})
        elif stage == "read-file":
            x.request("fs/readFile", {"path": file_uri(str(big))})
        else:
            x.result("fs/watch", {"path": file_uri(str(wdir)), "recursive": True})
            (wdir / ("f%d" % (i % 3))).write_text("x" * i)
        x.ws.reset() if i % 2 else x.ws.abort()
        if i % 9 == 0:
            o = srv.connect()
            assert o.result("environment/status", None) == {"status": "ready"}
            o.ws.abort()
    wait_until(lambda: sessions(srv, "detached") == 0 and sessions(srv, "attached") == 0,
               timeout=30, what="every session to expire")
    wait_until(lambda: not children_of(srv.pid), timeout=20,
               what="no children of the server (left: %r)" % children_of(srv.pid))
    m = metrics(srv)
    assert m["uexec_queued_output_bytes"] == 0 and m["uexec_inflight_bytes"] == 0, m
    assert settled_fd_count(srv.pid, 0.5, 20) == base
