# SPDX-License-Identifier: MIT
"""Graceful drain (issue 16 item 7): SIGTERM with --drain-timeout-ms stops accepting,
refuses new sessions and processes with a clear error, lets running processes finish
(their exit notifications arrive), then exits 0; the timeout kills what is left (the
whole tree: a process's cgroup, or without cgroups its descendants found in /proc and its
group); a second SIGTERM stops at once. Without the flag SIGTERM still stops at
once (test_sessions.py)."""

import os
import signal
import socket
import time

import pytest

from conftest import EVENT_TIMEOUT, pid_alive, wait_until
from test_process_cgroup import cgroup_why, marked
from wsclient import unb64

pytestmark = pytest.mark.needs_programs("/bin/sh", "/bin/sleep", "/bin/echo")

PATH_ENV = {"PATH": "/usr/bin:/bin"}
DRAINING = -32050
# The drain timeout of tests that must not reach it: an exit well before it (the waits
# give up at half of it) cannot have waited for it, however slow the machine is.
LONG_DRAIN_MS = 120000


def sh(script):
    return ["/bin/sh", "-c", script]


def refused(host, port):
    """True if a connection to host:port is refused now (no listener)."""
    s = socket.socket()
    s.settimeout(EVENT_TIMEOUT)
    try:
        s.connect((host, port))
    except ConnectionRefusedError:
        return True
    finally:
        s.close()
    return False


def test_running_process_finishes_then_exit_zero(server_factory, tmp_path):
    go = tmp_path / "go"
    srv = server_factory("--drain-timeout-ms", str(LONG_DRAIN_MS))
    c = srv.connect()
    idle = srv.connect(initialize=False)   # connected before SIGTERM, no session yet
    c.start("work", sh("echo started; while [ ! -e %s ]; do sleep 0.02; done; echo finished; "
                       "exit 3" % go), env=PATH_ENV)
    run = c.collect_until_output("work", b"started\n")
    srv.proc.send_signal(signal.SIGTERM)
    wait_until(lambda: b"drain.start" in srv.stderr() or b"draining" in srv.stderr(),
               what="the drain to start")
    # Stops accepting: the listener is closed. The server logs the drain, then closes it
    # (and a pending accept may take a connection meanwhile): refused once it is closed.
    wait_until(lambda: refused(srv.host, srv.port), what="the listener to be closed")
    # New work is refused with a clear error, on connections already open.
    err = c.error("process/start", c.start_params("new", argv=["/bin/echo", "x"]))
    assert err["code"] == DRAINING and "shutting down" in err["message"], err
    err = idle.error("initialize", {"clientName": "late"})
    assert err["code"] == DRAINING and "no new sessions" in err["message"], err
    # The running process is still there and still served.
    assert c.read("work")["exited"] is False
    assert srv.proc.poll() is None
    go.touch()
    run = c.collect("work", run=run)
    assert run.exit_code == 3
    assert run.stdout == b"started\nfinished\n"
    run.check_sequencing()
    assert srv.terminate() == 0


def test_second_sigterm_stops_at_once(server_factory):
    srv = server_factory("--drain-timeout-ms", str(LONG_DRAIN_MS))
    c = srv.connect()
    c.start("long", sh("echo $$; exec sleep 1000"), env=PATH_ENV)
    pid = int(c.collect_until_output("long", b"\n").stdout.split()[0])
    srv.proc.send_signal(signal.SIGTERM)
    wait_until(lambda: b"draining" in srv.stderr(), what="the drain to start")
    assert srv.proc.poll() is None and pid_alive(pid)
    srv.proc.send_signal(signal.SIGTERM)
    assert srv.terminate(timeout=LONG_DRAIN_MS / 2000) == 0   # not the drain's end
    wait_until(lambda: not pid_alive(pid), what="the child to die")


@pytest.mark.parametrize("cgroups", ["on", "off"])
def test_drain_timeout_kills_the_tree(server_factory, cgroups):
    """Both ways of killing a tree at the timeout: the process's cgroup, and without
    cgroups the fallback (descendants through /proc parent links, then the group)."""
    if cgroups == "on" and cgroup_why():
        pytest.skip(cgroup_why())
    srv = server_factory("--drain-timeout-ms", "700", "--process-cgroups", cgroups)
    c = srv.connect()
    # a grandchild in the same group, and one that left it (setsid)
    c.start("tree", sh("sleep 1000 & a=$!; setsid sleep 1001 & b=$!; echo $a $b; wait"),
            env=PATH_ENV)
    run = c.collect_until_output("tree", b"\n")
    grandchild, escaped = (int(x) for x in run.stdout.split())
    assert pid_alive(grandchild) and pid_alive(escaped)
    wait_until(lambda: os.getsid(escaped) == escaped, what="setsid")   # it left the group
    t0 = time.monotonic()
    srv.proc.send_signal(signal.SIGTERM)
    run = c.collect("tree", run=run)
    assert run.exit_code == 128 + signal.SIGKILL
    assert time.monotonic() - t0 >= 0.6      # not before the timeout (t0 precedes SIGTERM)
    assert srv.terminate() == 0
    for pid in (grandchild, escaped):
        wait_until(lambda pid=pid: not pid_alive(pid), what="%d to die" % pid)
    err = srv.stderr()
    assert b"killing the 1 processes left" in err, err[-2000:]
    how = b"(1 cgroups killed, 0 trees walked" if cgroups == "on" else \
        b"(0 cgroups killed, 1 trees walked"
    assert how in err, err[-2000:]


def test_drain_timeout_kills_setsid_daemons_by_cgroup(server_factory, uniq):
    """`setsid sh -c 'sleep 1000 &'`: the command exits at once and its daemon is adopted
    outside uexec's tree (no /proc parent link leads to it); the daemon keeps the output
    open, so the drain waits for it. At the timeout the cgroup kill takes it, and the
    daemon of a second command that already closed (its output elsewhere) as well; the
    server exits 0 with nothing left."""
    why = cgroup_why()
    if why:
        pytest.skip(why)
    mark = "UEXEC_DRAIN_MARK=%s-%d" % (uniq("d"), time.monotonic_ns())
    k, v = mark.split("=", 1)
    env = dict(PATH_ENV, **{k: v})
    srv = server_factory("--drain-timeout-ms", "2000")
    try:
        c = srv.connect()
        c.start("holds", sh("setsid sh -c 'sleep 1000 &'"), env=env)
        held = c.collect("holds", until="process/exited")
        assert held.exit_code == 0
        c.start("quiet", sh("setsid sh -c 'sleep 1000 >/dev/null 2>&1 </dev/null &'"), env=env)
        quiet = c.collect("quiet")
        assert quiet.exit_code == 0
        wait_until(lambda: len(marked(mark)) == 2, what="the two daemons")
        for pid in marked(mark):   # orphans: their parent (the setsid shell) has gone
            with open("/proc/%d/stat" % pid) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            assert ppid != srv.pid and not marked(mark).count(ppid)
        t0 = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        wait_until(lambda: b"draining" in srv.stderr(), what="the drain to start")
        # Held until the timeout, not ended when the commands had: the daemon's output
        # closes (the kill) no sooner than the timeout after SIGTERM (t0 precedes it).
        # Checked here only while the timeout cannot have come yet.
        still, seen = srv.proc.poll() is None and len(marked(mark)) == 2, time.monotonic()
        assert still or seen - t0 >= 1.9, "the drain ended before its timeout"
        held = c.collect("holds", run=held)   # its output closed by the kill
        assert time.monotonic() - t0 >= 1.9
        assert srv.terminate() == 0
        assert marked(mark) == []
        err = srv.stderr()
        assert b"killing the 1 processes left (2 cgroups killed, 0 trees walked" in err, \
            err[-2000:]
    finally:
        for pid in marked(mark):
            os.kill(pid, signal.SIGKILL)


def test_drain_without_processes_exits_at_once(server_factory):
    srv = server_factory("--drain-timeout-ms", str(LONG_DRAIN_MS))
    srv.connect()
    assert srv.terminate(timeout=LONG_DRAIN_MS / 2000) == 0   # not the drain's end
    assert b"Drain complete" in srv.stderr()


def test_detached_session_output_can_be_collected_during_drain(server_factory, tmp_path):
    """A client reconnecting during the drain cannot open a session (listener closed),
    but one still connected keeps reading; a process of a detached session holds the
    drain until it ends."""
    go, done = tmp_path / "go", tmp_path / "done"
    srv = server_factory("--drain-timeout-ms", str(LONG_DRAIN_MS))
    c = srv.connect()
    c.start("d", sh("while [ ! -e %s ]; do sleep 0.02; done; echo bye > %s" % (go, done)),
            env=PATH_ENV)
    c.ws.abort()
    c2 = srv.connect()
    srv.proc.send_signal(signal.SIGTERM)
    wait_until(lambda: b"draining" in srv.stderr(), what="the drain to start")
    assert srv.proc.poll() is None   # the detached session's process still runs
    go.touch()
    # (no second SIGTERM, which would stop it at once: the drain ends by itself)
    assert srv.proc.wait(LONG_DRAIN_MS / 2000) == 0
    assert srv.terminate() == 0
    # It ran to its end after `go`: the drain waited for it (a server that had not would
    # have killed it at its exit, before `go` came, and the timeout is far off).
    assert done.read_text() == "bye\n"
    c2.ws.abort()
