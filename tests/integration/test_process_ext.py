# SPDX-License-Identifier: MIT
"""uexec's process extensions (README.md "Protocol extensions", issue 15 item 4):
process/start `size` and `timeoutMs`, process/resize, process/closeStdin,
process/list, and their uexec* capabilities. Without them the reference's
behaviour must be unchanged (no new members in its frames)."""

import os
import time

import pytest

from conftest import REFERENCE_CAPABILITIES, pid_alive, wait_until
from wsclient import b64, unb64

pytestmark = pytest.mark.needs_programs("/bin/sh", "/bin/cat", "/bin/sleep", "/bin/true", "stty")

PATH_ENV = {"PATH": "/usr/bin:/bin"}
EXT_CAPS = ["uexecPtyResize", "uexecCloseStdin", "uexecProcessTimeout", "uexecProcessList",
            "uexecFsRename", "uexecFsWatch"]
# host-dependent booleans of the per-process cgroups (test_process_cgroup.py checks their values)
CGROUP_CAPS = ["uexecProcessCgroup", "uexecProcessLimitPids", "uexecProcessLimitMemory",
               "uexecProcessLimitCpu"]
# after them: uexecDenialEvidence, true only while a denial evidence source is in use
# (test_denial_evidence.py; the suite's servers run with --denial-evidence none)
EVIDENCE_CAP = "uexecDenialEvidence"


def sh(script):
    return ["/bin/sh", "-c", script]


def resize(c, pid, rows, cols):
    return c.call("process/resize", {"processId": pid, "rows": rows, "cols": cols})


def close_stdin(c, pid):
    return c.result("process/closeStdin", {"processId": pid})


def list_procs(c, params={}):
    return {p["processId"]: p for p in c.result("process/list", params)["processes"]}


# ---- capabilities (item 6)


def test_capabilities_advertised(sclient):
    """The uexec* flags are true, after the reference's flags, which keep their values;
    the cgroup flags follow, booleans too, then the evidence flag."""
    caps = sclient.init_result["environmentInfo"]["capabilities"]
    assert list(caps)[:len(REFERENCE_CAPABILITIES)] == REFERENCE_CAPABILITIES
    assert list(caps)[len(REFERENCE_CAPABILITIES):] == EXT_CAPS + CGROUP_CAPS + [EVIDENCE_CAP]
    assert all(caps[k] is True for k in EXT_CAPS)
    assert all(caps[k] in (True, False) for k in CGROUP_CAPS)
    assert caps[EVIDENCE_CAP] is False
    assert caps["fsWatchMissing"] is True and caps["windowsMxc"] is False
    # transparent TCP is not built: never advertised
    assert caps["networkProxyTransparentTcp"] is False
    assert sclient.result("environment/info")["capabilities"] == caps


@pytest.mark.parametrize("method", ["process/kill", "process/resizeWindow", "process/List",
                                    "uexec/process/list", "process/closestdin"])
def test_other_unknown_methods_unchanged(sclient, method):
    """Names near the extensions still get the reference's -32601."""
    assert sclient.error(method, {"processId": "x"}) == {
        "code": -32601, "message": "exec-server stub does not implement `%s` yet" % method}


def test_extensions_gated_by_handshake(server):
    """The new methods are exec-family methods: initialize comes first."""
    c = server.connect(initialize=False)
    for m in ("process/resize", "process/closeStdin", "process/list"):
        assert c.error(m, {}) == {"code": -32600, "message":
                                  "client must call initialize before using exec methods"}


# ---- PTY size


def test_initial_size(sclient, uniq):
    pid = uniq("sz")
    run = sclient.run(pid, sh("stty size"), env=PATH_ENV, tty=True,
                      size={"rows": 40, "cols": 132})
    assert run.pty.strip() == b"40 132"


def test_no_size_is_24x80(sclient, uniq):
    run = sclient.run(uniq("sz"), sh("stty size"), env=PATH_ENV, tty=True)
    assert run.pty.strip() == b"24 80"


def test_resize_seen_by_stty(sclient, uniq):
    pid = uniq("rs")
    sclient.start(pid, sh("stty -echo; echo ready; read a; stty size; read b; stty size"),
                  env=PATH_ENV, tty=True)
    run = sclient.collect_until_output(pid, "ready")
    assert resize(sclient, pid, 33, 77) == {"id": sclient.next_id - 1, "result": {}}
    sclient.write(pid, b"\n", "w1")
    run = sclient.collect_until_output(pid, "33 77", run=run)
    assert resize(sclient, pid, 1000, 1000)["result"] == {}
    sclient.write(pid, b"\n", "w2")
    run = sclient.collect(pid, run=run)
    lines = run.pty.replace(b"\r", b"").split(b"\n")
    assert lines[1:3] == [b"33 77", b"1000 1000"], run.pty
    assert run.exit_code == 0


def test_resize_sends_sigwinch(sclient, uniq):
    pid = uniq("wi")
    sclient.start(pid, sh("trap 'echo winch' WINCH; echo ready; "
                          "while :; do sleep 0.05; done"), env=PATH_ENV, tty=True)
    run = sclient.collect_until_output(pid, "ready")
    assert resize(sclient, pid, 30, 100)["result"] == {}
    run = sclient.collect_until_output(pid, "winch", run=run)
    sclient.terminate(pid)
    sclient.collect(pid, run=run)


def test_same_size_sends_no_sigwinch(sclient, uniq):
    """The kernel signals only a change: resizing to the current size is silent
    (the counterpart of the test above, so that one cannot pass by accident). Ordered,
    not timed: the kernel sends SIGWINCH in the resize itself, before its reply; the
    shell runs a pending trap before the command after `read` (dash: `read` fails when
    the signal interrupts it, hence the `&&`), so a line written after the reply is
    answered only after the trap's output had there been one."""
    pid = uniq("wn")
    sclient.start(pid, sh("trap 'echo winch' WINCH; stty -echo; echo ready; "
                          "while :; do read x && echo got-$x; done"), env=PATH_ENV, tty=True,
                  size={"rows": 30, "cols": 100})
    run = sclient.collect_until_output(pid, "ready")
    assert resize(sclient, pid, 30, 100)["result"] == {}
    sclient.write(pid, b"1\n", "w1")
    run = sclient.collect_until_output(pid, "got-1", run=run)
    assert b"winch" not in run.pty
    # the same order shows a real change's trap: it comes before the next line's answer
    assert resize(sclient, pid, 31, 100)["result"] == {}
    sclient.write(pid, b"2\n", "w2")
    run = sclient.collect_until_output(pid, "got-2", run=run)
    assert run.pty.index(b"winch") < run.pty.index(b"got-2"), run.pty
    sclient.terminate(pid)
    run = sclient.collect(pid, run=run)


def test_resize_errors(sclient, uniq):
    assert resize(sclient, "nope", 10, 10)["error"] == {
        "code": -32600, "message": "unknown process id nope"}
    pipe = uniq("pp")
    sclient.start(pipe, ["/bin/sleep", "100"])
    assert resize(sclient, pipe, 10, 10)["error"] == {
        "code": -32600, "message": "process %s has no PTY (started without tty: true)" % pipe}
    sclient.terminate(pipe)
    sclient.collect(pipe)
    done = uniq("dn")
    sclient.run(done, ["/bin/true"], tty=True)
    assert resize(sclient, done, 10, 10)["error"] == {
        "code": -32600, "message": "process %s has exited" % done}


@pytest.mark.parametrize("params,message", [
    ({"processId": "x", "rows": 0, "cols": 80},
     "invalid value: integer `0`, expected rows between 1 and 1000"),
    ({"processId": "x", "rows": 24, "cols": 1001},
     "invalid value: integer `1001`, expected cols between 1 and 1000"),
    ({"processId": "x", "rows": 65560, "cols": 80},
     "invalid value: integer `65560`, expected rows between 1 and 1000"),
    ({"processId": "x", "rows": -1, "cols": 80}, "invalid number"),
    ({"processId": "x", "rows": "24", "cols": 80},
     'invalid type: string "24", expected u64'),
    ({"processId": "x", "rows": 24}, "missing field `cols`"),
    ({"rows": 24, "cols": 80}, "missing field `processId`"),
])
def test_resize_bad_params(sclient, params, message):
    assert sclient.error("process/resize", params) == {"code": -32602, "message": message}


@pytest.mark.parametrize("size,tty,message", [
    ({"rows": 24, "cols": 80}, False, "size is only valid with tty: true"),
    ({"rows": 0, "cols": 80}, True, "invalid value: integer `0`, expected rows between 1 and 1000"),
    ({"rows": 5, "cols": 5000}, True,
     "invalid value: integer `5000`, expected cols between 1 and 1000"),
    ({"rows": 5}, True, "missing field `cols`"),
    ("24x80", True, 'invalid type: string "24x80", expected struct PtySize'),
])
def test_start_bad_size(sclient, uniq, size, tty, message):
    pid = uniq("bs")
    err = sclient.error("process/start", sclient.start_params(pid, ["/bin/true"], tty=tty,
                                                              size=size))
    assert err == {"code": -32602, "message": message}
    assert pid not in list_procs(sclient)


# ---- stdin EOF


def test_close_stdin_pipe(sclient, uniq):
    pid = uniq("cp")
    sclient.start(pid, ["/bin/cat"], pipeStdin=True)
    sclient.write(pid, b"hello\n", "w1")
    assert close_stdin(sclient, pid) == {"status": "closed"}
    run = sclient.collect(pid)
    assert run.stdout == b"hello\n" and run.exit_code == 0
    # idempotent, and writes are refused afterwards
    assert close_stdin(sclient, pid) == {"status": "closed"}
    assert sclient.write(pid, b"late", "w2") == {"status": "stdinClosed"}
    # a retried writeId that was accepted before stays accepted (§6.8)
    assert sclient.write(pid, b"hello\n", "w1") == {"status": "accepted"}


def test_close_stdin_after_queued_writes(sclient, uniq):
    """EOF comes after every write accepted before it, however large."""
    pid = uniq("cq")
    sclient.start(pid, sh("wc -c"), env=PATH_ENV, pipeStdin=True)
    big = b"x" * (1 << 20)
    wid = sclient.request("process/write", {"processId": pid, "chunk": b64(big), "writeId": "b"})
    assert close_stdin(sclient, pid) == {"status": "closed"}
    assert sclient.wait_reply(wid)["result"] == {"status": "accepted"}
    run = sclient.collect(pid)
    assert run.stdout.strip() == str(len(big)).encode()


def test_close_stdin_write_while_running(sclient, uniq):
    """After closeStdin a running process's stdin refuses writes (the process keeps running)."""
    pid = uniq("cr")
    sclient.start(pid, sh("exec 0<&-; sleep 100"), env=PATH_ENV, pipeStdin=True)
    assert close_stdin(sclient, pid) == {"status": "closed"}
    assert sclient.write(pid, b"x", "w1") == {"status": "stdinClosed"}
    assert list_procs(sclient)[pid]["state"] == "running"
    sclient.terminate(pid)
    sclient.collect(pid)


def test_close_stdin_pty(sclient, uniq):
    pid = uniq("ct")
    sclient.start(pid, ["/bin/cat"], tty=True)
    sclient.write(pid, b"line\n", "w1")
    assert close_stdin(sclient, pid) == {"status": "closed"}
    run = sclient.collect(pid)
    assert run.exit_code == 0
    assert run.pty.count(b"line") == 2  # echo + cat
    assert sclient.write(pid, b"x", "w2") == {"status": "stdinClosed"}
    assert close_stdin(sclient, pid) == {"status": "closed"}


def test_close_stdin_pty_mid_line(sclient, uniq):
    """A partial line pending in canonical mode: the first VEOF only hands it over."""
    pid = uniq("cm")
    sclient.start(pid, sh("stty -echo; echo ready; cat; echo; echo cat-done"), env=PATH_ENV,
                  tty=True)
    run = sclient.collect_until_output(pid, "ready")   # no echo of the input from here on
    sclient.write(pid, b"partial", "w1")
    assert close_stdin(sclient, pid) == {"status": "closed"}
    run = sclient.collect(pid, run=run)
    assert b"partial" in run.pty and b"cat-done" in run.pty
    assert run.exit_code == 0


def test_close_stdin_without_pipe_stdin(sclient, uniq):
    """stdin is /dev/null already: closed, and writes say stdinClosed as before."""
    pid = uniq("cn")
    sclient.start(pid, ["/bin/cat"])
    assert close_stdin(sclient, pid) == {"status": "closed"}
    run = sclient.collect(pid)
    assert run.exit_code == 0
    assert sclient.write(pid, b"x", "w") == {"status": "stdinClosed"}


def test_close_stdin_unknown_and_bad_params(sclient):
    assert close_stdin(sclient, "nope") == {"status": "unknownProcess"}
    assert sclient.error("process/closeStdin", {}) == {
        "code": -32602, "message": "missing field `processId`"}
    assert sclient.error("process/closeStdin", {"processId": 5}) == {
        "code": -32602, "message": "invalid type: number, expected a string"}


# ---- timeoutMs


def test_timeout_kills_group(sclient, uniq):
    """The group is killed at the timeout: it would sleep 1000 s otherwise, far past the
    wait for its end (no bound on how soon: the event is what counts)."""
    pid = uniq("to")
    sclient.start(pid, sh("sleep 1000 & echo $!; wait"), env=PATH_ENV, timeoutMs=300)
    run = sclient.collect_until_output(pid, "\n")
    child = int(run.stdout.split()[0])
    assert pid_alive(child)
    run = sclient.collect(pid, run=run)
    assert run.exited["timedOut"] is True
    assert run.exit_code == 128 + 15  # SIGTERM
    wait_until(lambda: not pid_alive(child), what="the group's sleep to die")
    res = sclient.read(pid)
    assert res["timedOut"] is True and res["exitCode"] == 143
    entry = list_procs(sclient)[pid]
    assert entry["timedOut"] is True and entry["signal"] == 15


def test_timeout_sigkill_after_grace(sclient, uniq):
    """A group that ignores SIGTERM is SIGKILLed a second later (not sooner: t0 precedes
    the start; the sleep of 1000 s bounds it from above, far past the wait)."""
    pid = uniq("tk")
    t0 = time.monotonic()
    sclient.start(pid, sh("trap '' TERM; sleep 1000"), env=PATH_ENV, timeoutMs=200)
    run = sclient.collect(pid)
    elapsed = time.monotonic() - t0
    assert run.exited["timedOut"] is True
    assert run.exit_code == 128 + 9
    assert elapsed > 1.1, elapsed


def test_timeout_pty(sclient, uniq):
    pid = uniq("tp")
    run = sclient.run(pid, ["/bin/sleep", "1000"], tty=True, timeoutMs=200)
    assert run.exited["timedOut"] is True and run.exit_code == 143


def test_no_timeout_when_in_time(sclient, uniq):
    pid = uniq("ti")
    # 0.2 s of work well within the timeout, even when the machine is slow to start it
    run = sclient.run(pid, sh("sleep 0.2"), env=PATH_ENV, timeoutMs=60000)
    assert run.exited["timedOut"] is False and run.exit_code == 0
    assert sclient.read(pid)["timedOut"] is False
    assert list_procs(sclient)[pid]["timedOut"] is False


def test_without_timeout_frames_unchanged(sclient, uniq):
    """No timeoutMs: process/exited and process/read have exactly the reference's members."""
    pid = uniq("tu")
    run = sclient.run(pid, ["/bin/true"])
    assert list(run.exited) == ["processId", "seq", "exitCode", "sandboxDenied"]
    assert list(sclient.read(pid)) == ["chunks", "nextSeq", "exited", "exitCode", "closed",
                                       "failure", "sandboxDenied"]
    assert "timedOut" not in list_procs(sclient)[pid]


@pytest.mark.parametrize("value,message", [
    (0, "invalid value: integer `0`, expected timeoutMs between 1 and 86400000"),
    (86400001, "invalid value: integer `86400001`, expected timeoutMs between 1 and 86400000"),
    (-5, "invalid number"),
    ("1000", 'invalid type: string "1000", expected u64'),
])
def test_timeout_bad_values(sclient, uniq, value, message):
    pid = uniq("tb")
    err = sclient.error("process/start", sclient.start_params(pid, ["/bin/true"],
                                                              timeoutMs=value))
    assert err == {"code": -32602, "message": message}


def test_timeout_null_is_absent(sclient, uniq):
    pid = uniq("tn")
    run = sclient.run(pid, ["/bin/true"], timeoutMs=None, size=None)
    assert "timedOut" not in run.exited


# ---- process/list


def test_list(client, uniq, tmp_path):
    c = client
    go = tmp_path / "go"
    assert c.result("process/list") == {"processes": []}
    t0 = int(time.time() * 1000)
    c.start("run", ["/bin/sleep", "100"])
    c.run("done", sh("exit 3"), env=PATH_ENV)
    c.start("tty", ["/bin/sleep", "100"], tty=True)
    # its output held open by a child until `go` exists (not for a while: a slow machine
    # would see it closed by the time of the list)
    c.start("held", sh("(while [ ! -e %s ]; do sleep 0.02; done; echo late) & exit 0" % go),
            env=PATH_ENV)
    run = c.collect("held", until="process/exited")
    c.start("killed", ["/bin/sleep", "100"])
    c.terminate("killed")
    c.collect("killed")
    t1 = int(time.time() * 1000)

    procs = c.result("process/list")["processes"]
    assert [p["processId"] for p in procs] == ["run", "done", "tty", "held", "killed"]
    by = {p["processId"]: p for p in procs}
    for p in procs:
        assert list(p) == ["processId", "state", "pid", "startedAtMs", "tty", "exitCode", "signal"]
        assert t0 - 1000 <= p["startedAtMs"] <= t1 + 1000
    assert by["run"]["state"] == "running" and by["run"]["exitCode"] is None
    assert by["run"]["signal"] is None and by["run"]["tty"] is False
    assert pid_alive(by["run"]["pid"])
    with open("/proc/%d/cmdline" % by["run"]["pid"], "rb") as f:
        assert f.read().split(b"\0")[:2] == [b"/bin/sleep", b"100"]
    assert by["tty"]["state"] == "running" and by["tty"]["tty"] is True
    assert by["done"]["state"] == "closed" and by["done"]["exitCode"] == 3
    assert by["done"]["signal"] is None
    assert by["held"]["state"] == "exited" and by["held"]["exitCode"] == 0
    assert by["killed"]["state"] == "closed" and by["killed"]["exitCode"] == 137
    assert by["killed"]["signal"] == 9
    assert by["run"]["startedAtMs"] <= by["done"]["startedAtMs"] <= by["killed"]["startedAtMs"]

    go.touch()
    c.collect("held", run=run)
    assert list_procs(c)["held"]["state"] == "closed"
    c.terminate("run")
    c.collect("run")
    assert list_procs(c)["run"]["state"] == "closed"
    assert list_procs(c)["run"]["signal"] == 9


def test_list_only_own_session(server):
    a, b = server.connect(), server.connect()
    a.start("mine", ["/bin/sleep", "100"])
    assert list(list_procs(a)) == ["mine"]
    assert list_procs(b) == {}
    a.terminate("mine")
    a.collect("mine")


@pytest.mark.parametrize("params", [{}, None, {"other": 1}, []])
def test_list_params_accepted(sclient, params):
    assert "processes" in sclient.result("process/list", params)


@pytest.mark.parametrize("params,message", [
    ("x", 'invalid type: string "x", expected struct ListParams'),
    (5, "invalid type: number, expected struct ListParams"),
])
def test_list_bad_params(sclient, params, message):
    assert sclient.error("process/list", params) == {"code": -32602, "message": message}
