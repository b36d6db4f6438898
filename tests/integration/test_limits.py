# SPDX-License-Identifier: MIT
"""uexec resource limits (--max-processes, --max-sessions) and resource leaks."""

import os
import time

import pytest

from conftest import children_of, fd_count, settled_fd_count, wait_until

# the programs this module's processes run (skipped, with the names, where missing)
pytestmark = pytest.mark.needs_programs("/bin/cat", "/bin/sh", "/bin/sleep", "/bin/true")

PATH_ENV = {"PATH": "/usr/bin:/bin"}


def test_max_processes_per_session(server_factory):
    """uexec --max-processes 2: the third start is refused with -32600 '...limit...'."""
    srv = server_factory("--max-processes", "2")
    c = srv.connect()
    c.start("a", ["/bin/sleep", "30"])
    c.start("b", ["/bin/sleep", "30"])
    err = c.error("process/start", c.start_params("c", ["/bin/sleep", "30"]))
    assert err["code"] == -32600
    assert "limit" in err["message"]
    # the refused id is not taken, and no notification is sent for it
    assert c.error("process/read", {"processId": "c"}) == {
        "code": -32600, "message": "unknown process id c"}
    c.terminate("a")
    c.terminate("b")
    c.ws.abort()


def test_max_processes_is_per_session(server_factory):
    """uexec --max-processes: another session has its own budget."""
    srv = server_factory("--max-processes", "1")
    a = srv.connect()
    b = srv.connect()
    a.start("x", ["/bin/sleep", "30"])
    b.start("x", ["/bin/sleep", "30"])
    assert "limit" in a.error("process/start", a.start_params("y"))["message"]
    a.terminate("x")
    b.terminate("x")
    a.ws.abort()
    b.ws.abort()


def test_max_sessions(server_factory):
    """uexec --max-sessions 1: a second session's initialize -> -32600 '...limit...'."""
    srv = server_factory("--max-sessions", "1")
    a = srv.connect()
    b = srv.connect(initialize=False)
    err = b.error("initialize", {"clientName": "second"})
    assert err["code"] == -32600
    assert "limit" in err["message"]
    # the first session keeps working
    assert a.result("environment/status", None) == {"status": "ready"}
    a.ws.abort()
    b.ws.abort()


def test_max_sessions_resume_allowed(server_factory):
    """uexec --max-sessions 1: resuming the existing session is not a new session."""
    srv = server_factory("--max-sessions", "1")
    a = srv.connect()
    sid = a.init_result["sessionId"]
    a.ws.close()
    a.ws.wait_closed()
    b = srv.connect(initialize=False)
    assert b.initialize(resume=sid)["sessionId"] == sid
    b.ws.abort()


def _session_gone(srv, sid):
    c = srv.connect(initialize=False)
    try:
        err = c.call("initialize", {"clientName": "probe", "resumeSessionId": sid}).get("error")
        return err is not None and err["code"] == -32600
    finally:
        c.ws.close()
        c.ws.wait_closed()


def test_no_fd_or_zombie_leak_after_50_processes(server_factory):
    """Leak check: after 50 processes (pipe, pipeStdin, PTY, killed) and closed
    connections, the server's fd count returns to baseline and no children remain."""
    srv = server_factory("--resume-window-ms", "300")
    # warm-up: first connection/process may allocate lazily
    w = srv.connect()
    sid = w.init_result["sessionId"]
    w.run("warm", ["/bin/true"])
    w.run("warmpty", ["/bin/true"], tty=True)
    w.ws.close()
    w.ws.wait_closed()
    wait_until(lambda: _session_gone(srv, sid), interval=0.6,
               what="the warm-up session to expire")
    base = settled_fd_count(srv.pid, 0.5, 20)

    n = 0
    for conn in range(5):
        c = srv.connect()
        for i in range(10):
            pid = "p%d" % i
            kind = (conn * 10 + i) % 4
            if kind == 0:
                c.run(pid, ["/bin/sh", "-c", "echo out; echo err >&2"], env=PATH_ENV)
            elif kind == 1:
                c.start(pid, ["/bin/cat"], pipeStdin=True)
                c.write(pid, b"x\n", "1")
                c.collect_until_output(pid, b"x\n")
                c.terminate(pid)
                c.collect(pid)
            elif kind == 2:
                c.run(pid, ["/bin/sh", "-c", "echo tty"], env=PATH_ENV, tty=True)
            else:
                c.start(pid, ["/bin/sleep", "30"], tty=(i % 2 == 0))
                c.terminate(pid)
                c.collect(pid)
            n += 1
        if conn % 2:
            c.ws.close()
            c.ws.wait_closed()
        else:
            c.ws.abort()
    assert n == 50

    wait_until(lambda: settled_fd_count(srv.pid, 0.5, 5) <= base,
               what="fd count to return to baseline %d (now %d)" % (base, fd_count(srv.pid)))
    wait_until(lambda: not children_of(srv.pid),
               what="no children of the server (left: %r)" % children_of(srv.pid))


def test_no_zombies_after_kill(server):
    """Leak check: killed children are reaped (no zombies under the server)."""
    c = server.connect()
    for i in range(5):
        c.start("z%d" % i, ["/bin/sleep", "30"])
    for i in range(5):
        c.terminate("z%d" % i)
        c.collect("z%d" % i)
    wait_until(lambda: "Z" not in children_of(server.pid).values() and
               not children_of(server.pid), what="children to be reaped")
    c.ws.abort()


def test_many_connections_do_not_leak_fds(server_factory):
    """Leak check: 300 connect/initialize/close cycles leave the fd count at baseline."""  # noqa
    srv = server_factory("--resume-window-ms", "200", "--max-sessions", "1000")
    c = srv.connect()
    sid = c.init_result["sessionId"]
    c.ws.abort()
    wait_until(lambda: _session_gone(srv, sid), interval=0.5,
               what="the warm-up session to expire")
    base = settled_fd_count(srv.pid, 0.5, 20)
    for i in range(300):
        c = srv.connect()
        if i % 3 == 0:
            c.ws.close()
            c.ws.wait_closed()
        else:
            c.ws.abort()
    wait_until(lambda: settled_fd_count(srv.pid, 0.5, 5) <= base,
               what="fd count back to %d" % base)
    assert os.path.exists("/proc/%d" % srv.pid)
