# SPDX-License-Identifier: MIT
"""The spawner thread and reused cgroup leaves (issue 25 item 2; docs/ARCHITECTURE.md
"The spawner thread", "A cgroup per process").

The spawn runs off the loop, yet the wire is that of a synchronous spawn: a
connection's requests after its process/start are answered after it and see the
new process; other connections are served while it runs. A connection that goes
away before its process/start is answered leaves no process behind. A reused
leaf never carries a kill over to the next process."""

import os
import signal
import time

import pytest


pytestmark = pytest.mark.needs_programs("/bin/sh", "/bin/sleep", "/bin/true", "/bin/echo")

ENV = {"PATH": "/usr/bin:/bin"}


def start_params(c, pid, argv, env=ENV, **extra):
    p = c.start_params(pid, argv, env=env)
    p.update(extra)
    return p


def test_pipelined_requests_see_the_new_process(sclient):
    """process/start, then at once (without waiting) process/read and process/terminate of
    the same id: every reply comes in request order and none says the process is
    unknown."""
    ids = []
    for i in range(3):
        pid = "pl%d" % i
        ids.append((pid, sclient.request("process/start",
                                         start_params(sclient, pid, ["/bin/sleep", "30"]))))
        ids.append((pid, sclient.request("process/read", {"processId": pid, "waitMs": 0})))
        ids.append((pid, sclient.request("process/terminate", {"processId": pid})))
    replies = [sclient.wait_reply(rid) for _, rid in ids]
    for (pid, rid), r in zip(ids, replies):
        assert "error" not in r, (pid, r)
    for i in range(3):
        start, read, term = replies[3 * i:3 * i + 3]
        assert start["result"] == {"processId": "pl%d" % i, "sandboxType": "none"}
        assert read["result"]["exited"] is False
        assert term["result"] == {"running": True}
    # replies in request order: the log holds them as they arrived
    got = [m["id"] for m in sclient.log if isinstance(m, dict) and "id" in m and "method" not in m]
    want = [rid for _, rid in ids]
    assert [i for i in got if i in want] == want
    for i in range(3):
        assert sclient.collect("pl%d" % i).exit_code == 137


def test_failed_spawn_pipelined_read_is_unknown(sclient):
    """A spawn that fails answers as before, and the read sent right after it finds no
    process (it was held, not answered before the start)."""
    a = sclient.request("process/start", start_params(sclient, "nf", ["/nonexistent/prog"]))
    b = sclient.request("process/read", {"processId": "nf", "waitMs": 0})
    ra, rb = sclient.wait_reply(a), sclient.wait_reply(b)
    assert ra["error"]["code"] == -32603
    assert "No such file or directory (os error 2)" in ra["error"]["message"]
    assert rb["error"]["message"] == "unknown process id nf"
    got = [m["id"] for m in sclient.log if isinstance(m, dict) and m.get("id") in (a, b)]
    assert got == [a, b]


def test_other_connection_served_during_spawns(shared_server):
    """While one connection has 40 process/start requests in flight (pipelined), another
    connection's requests are answered, and then every start is answered in order."""
    c1 = shared_server.connect()
    c2 = shared_server.connect()
    c2.start("other", ["/bin/true"], env=ENV)
    c2.collect("other")
    ids = [c1.request("process/start", start_params(c1, "st%d" % i, ["/bin/true"]))
           for i in range(40)]
    for _ in range(20):
        assert c2.result("process/read", {"processId": "other", "waitMs": 0})["exited"] is True
    for i, rid in enumerate(ids):
        assert c1.wait_reply(rid)["result"] == {"processId": "st%d" % i, "sandboxType": "none"}
    for i in range(40):
        assert c1.collect("st%d" % i).exit_code == 0
    c1.ws.abort()
    c2.ws.abort()


def marked(marker):
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % d, "rb") as f:
                if marker.encode() in f.read():
                    out.append(int(d))
        except OSError:
            pass
    return out


def test_connection_gone_during_spawns(shared_server):
    """process/start sent and the connection dropped at once, five times: the server goes
    on serving (a spawn whose connection is gone is killed and reaped, or its process
    belongs to the detached session), and stops cleanly at teardown (no sanitizer
    report, checked by the fixture)."""
    mark = "m%d" % time.monotonic_ns()
    env = dict(ENV, UEXEC_SPAWNER_MARK=mark)
    try:
        for i in range(5):
            c = shared_server.connect()
            c.request("process/start", start_params(c, "gone%d" % i, ["/bin/sleep", "1000"],
                                                    env=env))
            c.ws.abort()
        c = shared_server.connect()
        c.start("after", ["/bin/true"], env=ENV)
        assert c.collect("after").exit_code == 0
        c.ws.abort()
    finally:
        for p in marked("UEXEC_SPAWNER_MARK=" + mark):
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_killed_leaf_not_reused(sclient):
    """A process killed by process/terminate (its cgroup killed too), then short processes:
    each runs to its own exit code (a leaf that was killed is never given to another
    process)."""
    sclient.start("k1", ["/bin/sleep", "30"], env=ENV)
    assert sclient.terminate("k1") == {"running": True}
    assert sclient.collect("k1").exit_code == 137
    for i in range(4):
        sclient.start("k2-%d" % i, ["/bin/sh", "-c", "exit %d" % (i + 3)], env=ENV)
        assert sclient.collect("k2-%d" % i).exit_code == i + 3
