# SPDX-License-Identifier: MIT
"""Sessions: detach, resume, expiry, server shutdown (PROTOCOL.md §2.2, §8.4)."""

import os

import pytest

from conftest import pid_alive, wait_until
from wsclient import unb64

# the programs this module's processes run (skipped, with the names, where missing)
pytestmark = pytest.mark.needs_programs("/bin/cat", "/bin/echo", "/bin/sh", "/bin/sleep")

PATH_ENV = {"PATH": "/usr/bin:/bin"}


def sh(script):
    return ["/bin/sh", "-c", script]


def disconnect(c, how):
    if how == "close-frame":
        c.ws.close(1000)
        c.ws.wait_closed(20)
    elif how == "tcp-close":
        c.ws.abort()
    else:
        c.ws.reset()


@pytest.mark.parametrize("how", ["close-frame", "tcp-close", "tcp-reset"])
def test_resume_gets_processes_back(server, tmp_path, how):
    """§2.2: after a disconnect the session is detached; resume sees output produced
    while detached via process/read, no notifications are replayed, write works."""
    go, printed = tmp_path / "go", tmp_path / "printed"
    c1 = server.connect()
    sid = c1.init_result["sessionId"]
    c1.start("r1", sh("echo before; while [ ! -e %s ]; do sleep 0.02; done; echo during; "
                      "touch %s; read x; echo after:$x; exit 4" % (go, printed)),
             env=PATH_ENV, pipeStdin=True)
    run1 = c1.collect_until_output("r1", b"before\n")
    assert run1.seqs == [1]
    disconnect(c1, how)

    go.touch()                      # the process now prints while detached
    wait_until(printed.exists, what="the detached process to print")

    c2 = server.connect(initialize=False)
    res = c2.result("initialize", {"clientName": "resumer", "resumeSessionId": sid})
    assert res["sessionId"] == sid
    assert list(res.keys()) == ["sessionId", "environmentInfo"]
    # exec methods still need initialized on the new connection
    assert c2.error("process/read", {"processId": "r1"}) == {
        "code": -32600, "message": "client must send initialized before using exec methods"}
    c2.notify("initialized", {})
    got = c2.read("r1", timeout=20, afterSeq=0, waitMs=0)
    assert b"".join(unb64(ch["chunk"]) for ch in got["chunks"]) == b"before\nduring\n"
    assert got["nextSeq"] == 3 and got["exited"] is False
    assert c2.write("r1", b"hi\n", "w1") == {"status": "accepted"}
    run2 = c2.collect("r1")
    assert [p["seq"] for p in run2.events] == [3, 4, 5], "notifications replayed or missing"
    assert run2.stdout == b"after:hi\n" and run2.exit_code == 4
    # the id is still taken in the resumed session
    assert c2.error("process/start", c2.start_params("r1")) == {
        "code": -32600, "message": "process r1 already exists"}
    c2.ws.abort()


def test_resume_unknown_session(shared_server):
    """§2.2: unknown session -> -32600 'unknown session id <id>'."""
    c = shared_server.connect(initialize=False)
    assert c.error("initialize", {"clientName": "x", "resumeSessionId": "no-such-session"}) == {
        "code": -32600, "message": "unknown session id no-such-session"}
    c.ws.abort()


def test_resume_empty_session_id(shared_server):
    """§2.2: an empty resumeSessionId is unknown too (note the trailing space)."""
    c = shared_server.connect(initialize=False)
    assert c.error("initialize", {"clientName": "x", "resumeSessionId": ""}) == {
        "code": -32600, "message": "unknown session id "}
    c.ws.abort()


def test_resume_session_attached_elsewhere(shared_server):
    """§2.2: resuming a session attached to a live connection -> -32010; the
    connection can then initialize normally."""
    c1 = shared_server.connect()
    sid = c1.init_result["sessionId"]
    c2 = shared_server.connect(initialize=False)
    assert c2.error("initialize", {"clientName": "x", "resumeSessionId": sid}) == {
        "code": -32010, "message": "session %s is already attached to another connection" % sid}
    res = c2.initialize()
    assert res["sessionId"] != sid
    # the first connection is unaffected
    assert c1.result("environment/status", None) == {"status": "ready"}
    c1.ws.abort()
    c2.ws.abort()


def test_processes_survive_disconnect(server):
    """§2.2: closing the connection does not kill the session's processes."""
    c = server.connect()
    c.start("live", sh("echo $$; exec sleep 1000"), env=PATH_ENV)
    pid = int(c.collect_until_output("live", b"\n").stdout.split()[0])
    c.ws.close()
    c.ws.wait_closed(20)
    # still running after the server processed the close (checked from a new connection)
    c2 = server.connect()
    assert c2.result("environment/status", None) == {"status": "ready"}
    assert pid_alive(pid)
    c2.ws.abort()


def test_sessions_are_isolated(shared_server):
    """§2.2: process ids belong to the session; another session cannot see them."""
    a = shared_server.connect()
    b = shared_server.connect()
    a.run("same", ["/bin/echo", "a"])
    run = b.run("same", ["/bin/echo", "b"])
    assert run.stdout == b"b\n"
    b.ws.abort()
    c = shared_server.connect()
    assert c.error("process/read", {"processId": "same"}) == {
        "code": -32600, "message": "unknown process id same"}
    assert c.write("same", b"x", "w") == {"status": "unknownProcess"}
    assert c.terminate("same") == {"running": False}
    a.ws.abort()
    c.ws.abort()


def test_notifications_go_to_new_connection_after_resume(server, tmp_path):
    """§2.2: events after re-attach are notified on the new connection."""
    c1 = server.connect()
    sid = c1.init_result["sessionId"]
    c1.start("later", ["/bin/cat"], pipeStdin=True)
    c1.ws.abort()
    c2 = server.connect(initialize=False)
    c2.initialize(resume=sid)
    c2.write("later", b"ping\n", "1")
    run = c2.collect_until_output("later", b"ping\n")
    assert run.outputs[0]["seq"] == 1
    assert c2.terminate("later") == {"running": True}
    run = c2.collect("later", run=run)
    assert run.exit_code == 137
    c2.ws.abort()


def test_resume_window_expiry_kills_process_group(server_factory):
    """§2.2/§8.4: after --resume-window-ms the detached session's processes (whole group)
    are killed and the session id becomes unknown."""
    srv = server_factory("--resume-window-ms", "1000")
    c = srv.connect()
    sid = c.init_result["sessionId"]
    c.start("t", sh("trap '' HUP; sleep 1000 & echo $$ $!; wait"), env=PATH_ENV)
    pids = [int(x) for x in c.collect_until_output("t", b"\n").stdout.split()[:2]]
    c.start("tp", sh("echo $$; exec sleep 1000"), env=PATH_ENV, tty=True)
    pids.append(int(c.collect_until_output("tp", b"\n").pty.split()[0]))
    assert all(pid_alive(p) for p in pids)
    c.ws.abort()
    for p in pids:
        wait_until(lambda p=p: not pid_alive(p), what="pid %d to be killed" % p)
    c2 = srv.connect(initialize=False)
    wait_until(lambda: c2.call("initialize", {"clientName": "x", "resumeSessionId": sid})
               .get("error") == {"code": -32600, "message": "unknown session id %s" % sid},
               interval=0.2, what="the session to expire")
    c2.ws.abort()


def test_resume_within_window(server_factory):
    """§2.2: resume works while the window has not elapsed (reconnect right away)."""
    srv = server_factory("--resume-window-ms", "60000")
    c = srv.connect()
    sid = c.init_result["sessionId"]
    c.run("done", ["/bin/echo", "kept"])
    c.ws.close()
    c.ws.wait_closed(20)
    c2 = srv.connect(initialize=False)
    assert c2.initialize(resume=sid)["sessionId"] == sid
    res = c2.read("done")
    assert b"".join(unb64(ch["chunk"]) for ch in res["chunks"]) == b"kept\n"
    c2.ws.abort()


def test_sigterm_kills_children_and_exits_zero(server_factory):
    """§1.1/§8.4: SIGTERM ends the server with exit 0; pipe and PTY children die with it."""
    srv = server_factory()
    c = srv.connect()
    c.start("pipe", sh("echo $$; exec sleep 1000"), env=PATH_ENV)
    c.start("pty", sh("echo $$; exec sleep 1000"), env=PATH_ENV, tty=True)
    c.start("grp", sh("sleep 1000 & echo $!; wait"), env=PATH_ENV)
    pids = [int(c.collect_until_output("pipe", b"\n").stdout.split()[0]),
            int(c.collect_until_output("pty", b"\n").pty.split()[0]),
            int(c.collect_until_output("grp", b"\n").stdout.split()[0])]
    assert all(pid_alive(p) for p in pids)
    assert srv.terminate() == 0
    for p in pids:
        wait_until(lambda p=p: not pid_alive(p), what="child %d to die" % p)


def test_sigterm_with_detached_session(server_factory):
    """§2.2/§8.4: children of detached sessions also die when the server exits."""
    srv = server_factory()
    c = srv.connect()
    c.start("d", sh("echo $$; exec sleep 1000"), env=PATH_ENV)
    pid = int(c.collect_until_output("d", b"\n").stdout.split()[0])
    c.ws.abort()
    c2 = srv.connect()  # make sure the disconnect was processed
    c2.ws.abort()
    assert srv.terminate() == 0
    wait_until(lambda: not pid_alive(pid), what="child to die")


def test_server_exit_code_zero_with_open_connections(server_factory):
    """§1.1: SIGTERM -> exit 0 even with connections attached."""
    srv = server_factory()
    conns = [srv.connect() for _ in range(3)]
    assert srv.terminate() == 0
    for c in conns:
        how, _ = c.ws.wait_closed(20)
        assert how in ("close", "eof")


def test_own_pid_visible(server):
    """Sanity: the server process is alive during a test."""
    assert pid_alive(server.pid)
    assert os.path.exists("/proc/%d/fd" % server.pid)


def test_disconnect_during_long_poll_then_resume(server):
    """§2.2 (p04 takeover): dropping a connection with a pending long poll is harmless;
    the session resumes and the process can be terminated."""
    c1 = server.connect()
    sid = c1.init_result["sessionId"]
    c1.start("lp", ["/bin/sleep", "30"])
    c1.request("process/read", {"processId": "lp", "waitMs": 5000})
    c1.ws.abort()
    c2 = server.connect(initialize=False)
    assert c2.initialize(resume=sid)["sessionId"] == sid
    assert c2.terminate("lp") == {"running": True}
    assert c2.collect("lp").exit_code == 137
    c2.ws.abort()


def test_output_drained_while_detached(server):
    """§2.2/§9.3: a detached session keeps draining its processes' output; after resume
    the process has finished and the last <=1 MiB is readable."""
    c1 = server.connect(keep_log=False)
    sid = c1.init_result["sessionId"]
    lines = 8 * 1024 * 1024 // 16
    c1.start("big", sh("seq -f %%015.0f 1 %d" % lines), env=PATH_ENV)
    c1.collect_until_output("big", b"\n")
    c1.ws.abort()                       # disconnect mid-stream
    c2 = server.connect(initialize=False, keep_log=False)
    c2.initialize(resume=sid)
    res = None
    for _ in range(60):
        res = c2.read("big", timeout=30, afterSeq=0, waitMs=0)
        if res["closed"]:
            break
        c2.read("big", timeout=30, afterSeq=res["nextSeq"] - 1, waitMs=1000)
    assert res["closed"] and res["exitCode"] == 0
    data = b"".join(unb64(ch["chunk"]) for ch in res["chunks"])
    assert 0 < len(data) <= 1024 * 1024
    assert data.endswith(b"%015d\n" % lines)
    c2.ws.abort()


def test_many_simultaneous_connections(server):
    """§2.2: 40 simultaneous connections, each with its own session and process."""
    conns = [server.connect() for _ in range(40)]
    for i, c in enumerate(conns):
        c.start("p", ["/bin/echo", str(i)])
    for i, c in enumerate(conns):
        assert c.collect("p").stdout == b"%d\n" % i
    assert len({c.init_result["sessionId"] for c in conns}) == 40
    for c in conns:
        c.ws.abort()
