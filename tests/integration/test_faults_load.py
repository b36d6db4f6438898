# SPDX-License-Identifier: MIT
"""Faults an operator's fleet produces, under load: clients that drop at awkward moments
(while their output is paused over --max-queued-bytes, mid-frame, mid-request), and what
they must not leave behind: fds in the server, processes, sessions, requests without a
reply, a loop that stops answering others. Every check counts something (fds, processes,
replies); none measures time."""

import errno
import json
import os
import random
import re
import signal
import socket
import sys
import time

import pytest

from conftest import (EVENT_TIMEOUT, HOST, children_of, fd_count, pid_alive, run_as,
                      settled_fd_count, wait_until)
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
    wait_until(lambda: paused_streams(srv) > 0, timeout=EVENT_TIMEOUT,
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
    wait_until(lambda: not pid_alive(pid), timeout=EVENT_TIMEOUT,
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
    base = settled_fd_count(srv.pid, 0.5, EVENT_TIMEOUT)
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
                   timeout=EVENT_TIMEOUT, what="the expired session %d to be freed" % i)
    wait_until(lambda: not children_of(srv.pid), timeout=EVENT_TIMEOUT,
               what="no children of the server (left: %r)" % children_of(srv.pid))
    # back to the baseline: every fd of the flooding processes and sessions released
    wait_until(lambda: fd_count(srv.pid) <= base, timeout=EVENT_TIMEOUT,
               what="the server's fds back to %d (now %d)" % (base, fd_count(srv.pid)))


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
    base = settled_fd_count(srv.pid, 0.5, EVENT_TIMEOUT)
    c = srv.connect()
    c.start("y", ["/usr/bin/yes", "x" * 200], env=PATH_ENV)
    wait_until(lambda: paused_streams(srv) > 0, timeout=EVENT_TIMEOUT,
               what="the queue to pause the output readers")
    if how == "client-close":
        c.ws.send_close(1000)
    else:
        c.ws.send_raw(c.ws.build_frame(0x1, b"{}", mask=False))   # unmasked: Close 1002
    # the session detaches at the Close and expires: its process goes
    wait_until(lambda: sessions(srv, "detached") == 0 and sessions(srv, "attached") == 0,
               timeout=EVENT_TIMEOUT, what="the session to expire")
    wait_until(lambda: not children_of(srv.pid), timeout=EVENT_TIMEOUT,
               what="no children of the server (left: %r)" % children_of(srv.pid))
    # and the connection, which never drains, is ended: its fd and queue go
    wait_until(lambda: fd_count(srv.pid) <= base and queued_bytes(srv) == 0, timeout=EVENT_TIMEOUT,
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
    wait_until(lambda: paused_streams(srv) > 0, timeout=EVENT_TIMEOUT,
               what="the queue to pause the output readers")
    c.ws.send_close(1000)
    frames = []
    while True:
        f = c.ws.recv_frame(timeout=EVENT_TIMEOUT)
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
    base = settled_fd_count(server.pid, 0.5, EVENT_TIMEOUT)
    init = WebSocket.build_frame(OP_TEXT, json.dumps(
        {"id": 1, "method": "initialize", "params": {"clientName": "cut"}}).encode())
    for k in range(len(init)):
        ws = server.ws()
        ws.send_raw(init[:k])
        ws.abort()
    o = server.connect()
    assert o.result("environment/status", None) == {"status": "ready"}
    o.ws.abort()
    wait_until(lambda: fd_count(server.pid) <= base, timeout=EVENT_TIMEOUT,
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
    base = settled_fd_count(srv.pid, 0.5, EVENT_TIMEOUT)
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
               timeout=EVENT_TIMEOUT, what="every session to expire")
    wait_until(lambda: not children_of(srv.pid), timeout=EVENT_TIMEOUT,
               what="no children of the server (left: %r)" % children_of(srv.pid))
    m = metrics(srv)
    assert m["uexec_queued_output_bytes"] == 0 and m["uexec_inflight_bytes"] == 0, m
    # back to the baseline: every fd of the flooding processes and sessions released
    wait_until(lambda: fd_count(srv.pid) <= base, timeout=EVENT_TIMEOUT,
               what="the server's fds back to %d (now %d)" % (base, fd_count(srv.pid)))


# ---- the audit log: a reader or a disk that does not keep up (issue 21 item 2)

AUDIT_QUEUE = 1 << 20             # --audit-log-max-queued-bytes' default
# Two arguments that make each process.start line ~60 KiB (the audit log cuts argv at
# 64 KiB): a default pipe (64 KiB) holds one, the default queue about 17.
BIG_ARGV = ["/bin/true", "x" * 30000, "y" * 30000]

# A launcher that runs the rest of its arguments with stdout on a pipe: a child copies
# the first line (uexec's URL) to the real stdout for the Server class, then holds the
# pipe without reading it, until SIGUSR1 makes it copy everything that comes to the file
# $UEXEC_TEST_PIPE_DUMP. It writes its pid to that path + ".pid" and dies with uexec.
STALLED_STDOUT = r"""
import ctypes, os, signal, sys
dump = os.environ.pop("UEXEC_TEST_PIPE_DUMP")
r, w = os.pipe()
if os.fork() == 0:
    os.close(w)
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)      # PR_SET_PDEATHSIG
    line = b""
    while not line.endswith(b"\n"):
        b = os.read(r, 1)
        if not b:
            os._exit(1)
        line += b
    os.write(1, line)
    with open(dump + ".pid.tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(dump + ".pid.tmp", dump + ".pid")
    signal.sigwait([signal.SIGUSR1])
    with open(dump, "ab", buffering=0) as f:
        while True:
            b = os.read(r, 1 << 16)
            if not b:
                os._exit(0)
            f.write(b)
os.close(r)
os.dup2(w, 1)
os.close(w)
os.execv(sys.argv[1], sys.argv[1:])
"""


def as_uid_prefix():
    """setpriv's arguments when the suite runs uexec as another uid (a launcher replaces
    the Server class's own setpriv), else nothing."""
    ids = run_as()
    if not ids:
        return []
    return [HOST.program("setpriv"), "--reuid=%d" % ids[0], "--regid=%d" % ids[1],
            "--clear-groups"]


def audit_records(data):
    """Every line of an audit log, each of which must be one whole JSON object."""
    assert data.endswith(b"\n"), data[-200:]
    return [json.loads(line) for line in data.split(b"\n")[:-1]]


def run_quiet(c, pid, argv):
    """process/start and its exit: the server answered the whole way."""
    c.start(pid, argv, env=PATH_ENV)
    assert c.collect(pid).exit_code == 0


def test_audit_log_on_a_stdout_nobody_reads_never_stalls_the_loop(server_factory, tmp_path):
    """--audit-log - with a parent that never reads stdout: the pipe (64 KiB) and then
    the queue (1 MiB) fill up, and the server goes on starting processes and answering
    new clients; the lines that did not fit are dropped whole and counted, and the log
    warns about them once per 10 s, not once per line. When the reader comes back, the
    queue drains and every line in the pipe is a whole JSON line: written + dropped is
    every line made. (The blocking write of before stopped the whole server at the
    second line.)"""
    dump = tmp_path / "stdout.dump"
    env = dict(os.environ, UEXEC_TEST_PIPE_DUMP=str(dump))
    srv = server_factory("--audit-log", "-", env=env,
                         launcher=[sys.executable, "-c", STALLED_STDOUT] + as_uid_prefix())
    c = srv.connect()
    n = 40                                   # 40 x 60 KiB: well over 64 KiB + 1 MiB
    began = time.monotonic()
    for i in range(n):
        run_quiet(c, "big%d" % i, BIG_ARGV)
    o = srv.connect()                        # initialize from a new client
    assert o.result("environment/status", None) == {"status": "ready"}
    m = metrics(srv)
    dropped = m["uexec_audit_log_dropped_lines_total"]
    assert dropped > 0, m
    assert 0 < m["uexec_audit_log_queued_bytes"] <= AUDIT_QUEUE, m
    # one warning per 10 s at most (the time only bounds the count the interval allows)
    warnings = srv.stderr().count(b"Audit log: dropped")
    assert 1 <= warnings <= 1 + (time.monotonic() - began) // 10, srv.stderr_tail()
    assert warnings < dropped
    assert b"its queue is full" in srv.stderr()

    # the reader comes back: the queue drains into the pipe, new lines follow at once
    pidfile = tmp_path / "stdout.dump.pid"
    wait_until(pidfile.exists, what="the pipe holder's pid")
    os.kill(int(pidfile.read_text()), signal.SIGUSR1)
    wait_until(lambda: metrics(srv)["uexec_audit_log_queued_bytes"] == 0, timeout=60,
               what="the audit queue to drain into the pipe")
    run_quiet(o, "after", ["/bin/true"])
    wait_until(lambda: dump.exists() and dump.read_bytes().count(b'"after"') == 2, timeout=60,
               what="the lines of a process started after the reader came back")
    recs = audit_records(dump.read_bytes())
    assert [r["process"] for r in recs[-2:]] == ["after", "after"], recs[-2:]
    dropped = metrics(srv)["uexec_audit_log_dropped_lines_total"]
    assert len(recs) + dropped == 2 * n + 2, (len(recs), dropped)
    assert {r["event"] for r in recs} == {"process.start", "process.exit"}
    assert all(len(r["argv"]) == 3 for r in recs if r["event"] == "process.start"
               and r["process"] != "after")


@pytest.mark.needs("root")
@pytest.mark.needs_programs("unshare", "mount")
def test_audit_log_on_a_full_disk_drops_and_recovers(server_factory, tmp_path):
    """--audit-log on a 64 KiB tmpfs mounted in the server's own mount namespace: once a
    filler takes every block, writes fail with ENOSPC; processes keep starting, the lines
    are dropped and counted, the log says why. A line cut short by the full disk is kept
    until the disk has room again, so the file never holds half a line followed by
    another one. Once the filler is deleted, new lines are written again; written +
    dropped is every line made."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    ids = run_as()
    opts = "size=64k,mode=0700" + (",uid=%d,gid=%d" % ids if ids else "")
    launcher = [HOST.program("unshare"), "-m", "--propagation", "private", "/bin/sh", "-c",
                'mount -t tmpfs -o "$1" uexec-audit "$0" && shift && exec "$@"', str(mnt),
                opts] + as_uid_prefix()
    srv = server_factory("--audit-log", str(mnt / "audit.jsonl"), launcher=launcher)
    # the test sees the server's tmpfs through its root (root may follow /proc/PID/root)
    inside = "/proc/%d/root%s" % (srv.pid, mnt)
    audit, filler = inside + "/audit.jsonl", inside + "/filler"
    c = srv.connect()
    run_quiet(c, "a", ["/bin/true"])
    wait_until(lambda: open(audit, "rb").read().count(b"\n") == 2, what="the first lines")

    # every block taken: the audit file's last page has a little room left, no more
    with open(filler, "wb", buffering=0) as f:
        with pytest.raises(OSError) as e:
            while True:
                f.write(b"\0" * 4096)
    assert e.value.errno == errno.ENOSPC
    n = 4
    for i in range(n):
        run_quiet(c, "big%d" % i, BIG_ARGV)
    wait_until(lambda: metrics(srv)["uexec_audit_log_dropped_lines_total"] >= 2 * n - 1,
               timeout=EVENT_TIMEOUT, what="the lines that found the disk full to be dropped")
    o = srv.connect()
    assert o.result("environment/status", None) == {"status": "ready"}
    assert b"Audit log: dropped" in srv.stderr() and b"No space left on device" in srv.stderr()
    assert srv.stderr().count(b"Audit log: dropped") < 2 * n

    # room again: the next lines (and the rest of a line cut short) are written
    os.unlink(filler)
    run_quiet(c, "b", ["/bin/true"])
    wait_until(lambda: open(audit, "rb").read().count(b'"b"') == 2, timeout=EVENT_TIMEOUT,
               what="the lines written once the disk has room")
    recs = audit_records(open(audit, "rb").read())
    dropped = metrics(srv)["uexec_audit_log_dropped_lines_total"]
    assert len(recs) + dropped == 2 * n + 4, (len(recs), dropped)
    assert [r["process"] for r in recs[:2]] == ["a", "a"]
    assert [r["process"] for r in recs[-2:]] == ["b", "b"]


def test_audit_log_reopened_while_its_fifo_is_stalled(server_factory, tmp_path):
    """SIGHUP moves the audit log from a FIFO whose reader stopped reading to a file:
    the new lines go to the file at once, the lines queued before the reload still go to
    the FIFO, whole and in order, once its reader reads again, and the FIFO's fd is
    closed after its last line (none leaked). (Before, the FIFO's non-blocking writes
    lost lines, or wrote part of one, as soon as the pipe was full.)"""
    fifo, new = tmp_path / "audit.fifo", tmp_path / "audit.jsonl"
    os.mkfifo(str(fifo))
    rfd = os.open(str(fifo), os.O_RDONLY | os.O_NONBLOCK)   # a reader that does not read
    try:
        conf = tmp_path / "u.toml"
        conf.write_text('audit-log = "%s"\n' % fifo)
        srv = server_factory("--config", str(conf))
        c = srv.connect()
        n = 3                               # 3 x 60 KiB: more than the pipe holds
        for i in range(n):
            run_quiet(c, "big%d" % i, BIG_ARGV)
        wait_until(lambda: metrics(srv)["uexec_audit_log_queued_bytes"] > 0,
                   what="lines queued for the full FIFO")
        conf.write_text('audit-log = "%s"\n' % new)
        srv.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: b"Configuration reloaded" in srv.stderr(), what="the reload")
        run_quiet(c, "after", ["/bin/true"])
        wait_until(lambda: new.exists() and new.read_bytes().count(b"\n") == 2,
                   what="the new file's lines while the FIFO is stalled")

        def holds_fifo():
            fds = os.listdir("/proc/%d/fd" % srv.pid)
            return any(os.path.realpath("/proc/%d/fd/%s" % (srv.pid, fd)) == str(fifo)
                       for fd in fds)
        assert holds_fifo()
        got = b""
        deadline = time.monotonic() + 60
        while True:                          # until the server closed its end: EOF
            try:
                b = os.read(rfd, 1 << 16)
            except BlockingIOError:
                assert time.monotonic() < deadline, "the FIFO's lines did not all come"
                time.sleep(0.01)
                continue
            if not b:
                break
            got += b
    finally:
        os.close(rfd)
    old = audit_records(got)
    assert [(r["event"], r["process"]) for r in old] == [
        (e, "big%d" % i) for i in range(n) for e in ("process.start", "process.exit")]
    assert [r["process"] for r in audit_records(new.read_bytes())] == ["after", "after"]
    assert metrics(srv)["uexec_audit_log_dropped_lines_total"] == 0
    wait_until(lambda: not holds_fifo(), what="the FIFO's fd to be closed")
