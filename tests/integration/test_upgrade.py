# SPDX-License-Identifier: MIT
"""Live upgrade (issue 26, docs/UPGRADE.md), as far as it is built: `uexec
--check-upgrade VERSION` answers whether a binary can read a state version;
SIGUSR2 runs it on the binary at the path uexec was started from and logs the
answer; a failing, refusing, missing or hanging new binary is logged and the
server keeps serving; a SIGUSR2 while a check runs is refused with a log line.
An idle server (no session or connection) is handed over in place: execve of
the new binary in the same pid, which adopts the listener, the cgroups and the
counters. A busy server is not handed over yet: after a successful check it
says so and keeps serving, its processes untouched (their output continuous,
seqs unbroken, exit codes reported)."""

import json
import os
import re
import signal
import socket
import stat
import subprocess

import pytest

from conftest import (EVENT_TIMEOUT, SANITIZER_MARKERS, UEXEC_BIN, children_of, pid_alive,
                      settled_fd_count, wait_until)
from wsclient import RpcClient, StdioTransport, b64, http_exchange

pytestmark = pytest.mark.needs_programs("/bin/sh", "/bin/sleep")

PATH_ENV = {"PATH": "/usr/bin:/bin"}
STATE_VERSION = 1
# The server's own deadline for a check (upgrade.c's CHECK_TIMEOUT_MS).
CHECK_TIMEOUT_S = 10


def check_upgrade(*args):
    return subprocess.run([UEXEC_BIN, "--check-upgrade", *args], capture_output=True,
                          text=True, timeout=EVENT_TIMEOUT)


def test_check_upgrade_answers_by_version():
    p = check_upgrade(str(STATE_VERSION))
    assert p.returncode == 0, p
    assert "can take over state version %d" % STATE_VERSION in p.stdout, p
    p = check_upgrade(str(STATE_VERSION + 1))
    assert p.returncode == 1, p
    assert ("cannot take over: state version %d is not one it reads" % (STATE_VERSION + 1)
            in p.stdout), p
    for bad in (["x"], [""], ["99999999999999999999"], ["-1"], [], ["1", "2"]):
        p = check_upgrade(*bad)
        assert p.returncode == 2, (bad, p)
        assert "usage: uexec --check-upgrade VERSION" in p.stderr, (bad, p)
        assert p.stdout == "", (bad, p)


class Launch:
    """A server started from a path the test controls (a symlink to the binary under
    test), so that the 'new binary' at that path can be swapped."""

    def __init__(self, server_factory, tmp_path, env=None, args=(), handover=False):
        # Without handover: UEXEC_UPGRADE_DRY_RUN, everything but the execve (the tests of
        # the check, QUIESCE and RESUME, and those whose fake binary passes the check).
        if not handover:
            env = dict(os.environ if env is None else env, UEXEC_UPGRADE_DRY_RUN="1")
        self.dir = tmp_path / "bin"
        self.dir.mkdir()
        self.path = str(self.dir / "uexec")
        os.symlink(os.path.realpath(UEXEC_BIN), self.path)
        # sh -c 'shift; exec PATH "$@"' sh UEXEC_BIN args...: argv[0] becomes PATH
        launcher = ["/bin/sh", "-c", 'shift; exec "%s" "$@"' % self.path, "sh"]
        self.srv = server_factory(*args, env=env, launcher=launcher)

    def replace(self, script, interpreter="/bin/sh"):
        """The file at the start path becomes a script (the 'new binary')."""
        tmp = self.path + ".new"
        with open(tmp, "w") as f:
            f.write("#!%s\n" % interpreter + script)
        os.chmod(tmp, stat.S_IRWXU)
        os.replace(tmp, self.path)

    def hold_new_binary(self, marker, fifo):
        """The 'new binary' at the start path: once exec'd with the state
        (UEXEC_UPGRADE_STATE_FD) it makes marker and waits until fifo is written, then
        execs the binary under test. Python, not sh: a shell waiting in `read` would
        reap a child that exits meanwhile, stealing the zombie the upgrade hands over."""
        self.replace("import os, sys\n"
                     "if 'UEXEC_UPGRADE_STATE_FD' in os.environ:\n"
                     "    open(%r, 'w').close()\n"
                     "    open(%r).read()\n"
                     "os.execv(%r, [sys.argv[0]] + sys.argv[1:])\n"
                     % (str(marker), str(fifo), os.path.realpath(UEXEC_BIN)),
                     interpreter="/usr/bin/python3")

    def usr2(self):
        self.srv.proc.send_signal(signal.SIGUSR2)

    def wait_log(self, needle, count=1, what=None):
        needle = needle.encode()
        wait_until(lambda: self.srv.stderr().count(needle) >= count,
                   what=what or "%r in the log" % needle)


STATE_RE = re.compile(
    rb"the state would be (\d+) records \((\d+) sessions, (\d+) processes with (\d+) bytes of "
    rb"output, (\d+) connections with (\d+) bytes queued, (\d+) to close and resume\), (\d+) "
    rb"fds, (\d+) bytes; built, sealed and checked in")


def state_line(srv, index=-1):
    """The numbers of the last (or index-th) 'upgrade.state' log line."""
    m = STATE_RE.findall(srv.stderr())
    assert m, srv.stderr_tail()
    keys = ("records", "sessions", "processes", "retained", "connections", "queued", "closed",
            "fds", "bytes")
    return dict(zip(keys, map(int, m[index])))


def zombies(ppid):
    """Children of ppid that died and were not reaped."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(st[1]) == ppid and st[0] == "Z":
            found.append(int(d))
    return found


def counter_script(go):
    return ("i=0; while [ ! -e %s ]; do echo $i; i=$((i+1)); sleep 0.01; done; "
            "echo end; exit 7" % go)


def check_numbered(data, what="output"):
    """data is 0, 1, 2, ... one per line, then 'end' (a PTY's CRLF taken as LF)."""
    lines = data.replace(b"\r\n", b"\n").split(b"\n")
    assert lines[-2:] == [b"end", b""], (what, lines[-3:])
    assert lines[:-2] == [str(i).encode() for i in range(len(lines) - 2)], \
        "%s lost or out of order" % what


def start_stdio_server(tmp_path):
    """uexec --listen stdio started through a symlink in tmp_path (the start path an
    upgrade execs again), its stderr in tmp_path/stderr: (the process, that path)."""
    link = tmp_path / "uexec"
    os.symlink(os.path.realpath(UEXEC_BIN), link)
    err_path = tmp_path / "stderr"
    with open(err_path, "wb") as err:
        proc = subprocess.Popen([str(link), "--listen", "stdio", "--denial-evidence", "none"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
    return proc, err_path


def finish_counters(c, go, run):
    """After an upgrade, on the same client: a new process starts and exits 2; then the
    'out' (pipe) and 'tty' (PTY) counters of counter_script(go) end whole, once, in
    order, with their exit code 7 and gapless seqs."""
    c.start("new", ["/bin/sh", "-c", "echo new; exit 2"], env=PATH_ENV)
    new = c.collect("new")
    assert new.stdout == b"new\n" and new.exit_code == 2
    go.touch()
    check_counter(c.collect("out", run=run))
    tty = c.collect("tty")
    check_numbered(tty.data(), "the PTY's output")
    assert tty.exit_code == 7
    tty.check_sequencing()


def check_counter(run):
    lines = run.stdout.split(b"\n")
    assert lines[-1] == b"" and lines[-2] == b"end", lines[-3:]
    assert lines[:-2] == [str(i).encode() for i in range(len(lines) - 2)], \
        "output lost or out of order"
    assert run.exit_code == 7
    run.check_sequencing()


def test_sigusr2_check_passes_server_keeps_serving(server_factory, tmp_path):
    go = tmp_path / "go"
    lu = Launch(server_factory, tmp_path)
    c = lu.srv.connect()
    c.start("count", ["/bin/sh", "-c", counter_script(go)], env=PATH_ENV)
    run = c.collect_until_output("count", b"\n3\n")
    lu.usr2()
    lu.wait_log("Received SIGUSR2: checking whether %s can take over (state version %d)"
                % (lu.path, STATE_VERSION))
    lu.wait_log("Upgrade: %s can take over" % lu.path)
    lu.wait_log("Upgrade: no hand-over (")
    # QUIESCE: the accept, the connection's read, the process's two pipe reads and its exit
    # wait were cancelled and their completions reaped; resumed after (the output below
    # goes on without a gap).
    q = re.findall(rb"quiesced in \d+ us \((\d+) ops cancelled", lu.srv.stderr())
    assert q and int(q[-1]) >= 5, lu.srv.stderr_tail()
    # The state a hand-over would carry was built from the live objects and validated.
    st = state_line(lu.srv)
    assert (st["sessions"], st["processes"], st["connections"], st["closed"]) == (1, 1, 1, 0), st
    assert st["retained"] >= len(run.stdout) and st["fds"] >= 4, st   # listener, conn, 2 pipes
    # Still the same server, still serving: the running process, a new one, a new client.
    assert lu.srv.proc.poll() is None
    run = c.collect_until_output("count", b"\n%d\n" % (int(run.stdout.split()[-1]) + 20),
                                 run=run)
    c2 = lu.srv.connect()
    c2.start("after", ["/bin/sh", "-c", "echo after"], env=PATH_ENV)
    done = c2.collect("after")
    assert done.stdout == b"after\n" and done.exit_code == 0
    go.touch()
    check_counter(c.collect("count", run=run))
    # A second upgrade after the first finished is not refused.
    lu.usr2()
    lu.wait_log("Upgrade: no hand-over (", count=2)
    assert b"upgrade refused" not in lu.srv.stderr()


@pytest.mark.parametrize("script,expect", [
    ("echo broken >&2\nexit 3\n", "checking {path} failed (exit status 3: broken)"),
    ("echo 'uexec 9.9 cannot take over: state version 1 is not one it reads (2-2)'\nexit 1\n",
     "Upgrade refused: {path} cannot take over (uexec 9.9 cannot take over"),
    ("kill -TERM $$\n", "checking {path} failed (killed by TERM)"),
])
def test_failing_check_keeps_serving(server_factory, tmp_path, script, expect):
    go = tmp_path / "go"
    lu = Launch(server_factory, tmp_path)
    c = lu.srv.connect()
    c.start("count", ["/bin/sh", "-c", counter_script(go)], env=PATH_ENV)
    run = c.collect_until_output("count", b"\n2\n")
    lu.replace(script)
    lu.usr2()
    lu.wait_log(expect.format(path=lu.path))
    lu.wait_log("keeping serving")
    assert b"Upgrade: no hand-over (" not in lu.srv.stderr()
    assert lu.srv.proc.poll() is None
    go.touch()
    check_counter(c.collect("count", run=run))


def test_missing_binary_keeps_serving(server_factory, tmp_path):
    lu = Launch(server_factory, tmp_path)
    os.unlink(lu.path)
    lu.usr2()
    lu.wait_log("Upgrade refused: cannot run %s --check-upgrade; keeping serving" % lu.path)
    c = lu.srv.connect()
    c.start("p", ["/bin/sh", "-c", "echo ok"], env=PATH_ENV)
    run = c.collect("p")
    assert run.stdout == b"ok\n" and run.exit_code == 0


def test_second_sigusr2_during_check_is_refused(server_factory, tmp_path):
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    lu = Launch(server_factory, tmp_path)
    c = lu.srv.connect()   # not idle: the fake check's success must not exec the script
    # The 'new binary' answers once the test writes to the FIFO: the check is in progress
    # until then.
    lu.replace('read x < "%s"\necho "fake can take over"\nexit 0\n' % fifo)
    lu.usr2()
    lu.wait_log("Received SIGUSR2: checking whether")
    lu.usr2()
    lu.wait_log("Received SIGUSR2: upgrade refused, an upgrade is already in progress")
    assert b"can take over (fake" not in lu.srv.stderr()
    with open(fifo, "w") as f:
        f.write("go\n")
    lu.wait_log("Upgrade: %s can take over (fake can take over)" % lu.path)
    lu.wait_log("Upgrade: no hand-over (")
    assert lu.srv.stderr().count(b"already in progress") == 1


def test_hanging_check_is_killed_at_its_deadline(server_factory, tmp_path):
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    lu = Launch(server_factory, tmp_path)
    lu.replace('read x < "%s"\n' % fifo)   # never written: it waits for ever
    lu.usr2()
    lu.wait_log("Received SIGUSR2: checking whether")
    wait_until(lambda: b"no answer within" in lu.srv.stderr(), timeout=CHECK_TIMEOUT_S + EVENT_TIMEOUT,
               what="the check's deadline")
    lu.wait_log("checking %s failed (no answer within %d ms); keeping serving"
                % (lu.path, CHECK_TIMEOUT_S * 1000))
    # The killed check was reaped: no zombie child is left behind.
    assert zombies(lu.srv.pid) == []
    c = lu.srv.connect()
    c.start("p", ["/bin/sh", "-c", "echo ok"], env=PATH_ENV)
    run = c.collect("p")
    assert run.stdout == b"ok\n" and run.exit_code == 0


def test_state_counts_detached_sessions_ptys_and_exits(server_factory, tmp_path):
    """The blob a hand-over would carry covers a detached session with a PTY process, an
    exited and closed process, a running pipe process and its attached connection."""
    lu = Launch(server_factory, tmp_path)
    gone = lu.srv.connect()
    gone.start("tty", ["/bin/sh", "-c", "echo ready; exec cat"], env=PATH_ENV, tty=True)
    gone.collect_until_output("tty", b"ready")
    gone.close()                          # its session is detached, the process runs on
    c = lu.srv.connect()
    c.start("done", ["/bin/sh", "-c", "echo bye; exit 4"], env=PATH_ENV)
    assert c.collect("done").exit_code == 4
    # timeoutMs (an extension): its deadline travels as an absolute CLOCK_MONOTONIC time
    c.start("run", ["/bin/sh", "-c", "echo up; exec sleep 1000"], env=PATH_ENV, timeoutMs=600000)
    c.collect_until_output("run", b"up\n")
    lu.wait_log("detached from", what="the first session's detach")
    lu.usr2()
    lu.wait_log("Upgrade: no hand-over (")
    st = state_line(lu.srv)
    assert (st["sessions"], st["processes"], st["connections"]) == (2, 3, 1), st
    # retained: "ready" (PTY, maybe with CR LF), "bye\n", "up\n"
    assert st["retained"] >= len(b"ready") + len(b"bye\n") + len(b"up\n"), st
    # listener + conn + PTY master + the running pipes (stdout, stderr); the closed one has none
    assert st["fds"] >= 6, st
    c.terminate("run")


def test_stdio_transport_protocol_untouched(tmp_path):
    """--listen stdio: stdout is the protocol, so the check's own output must never reach it;
    the stdio connection (fds 0 and 1) is handed over like a WebSocket: the client goes on
    reading its process's output whole, with continuous seqs, and is answered after."""
    go = tmp_path / "go"
    proc, err_path = start_stdio_server(tmp_path)
    try:
        t = StdioTransport(proc)
        c = RpcClient(t)
        c.initialize("upgrade-stdio")
        c.start("count", ["/bin/sh", "-c", counter_script(go)], env=PATH_ENV)
        run = c.collect_until_output("count", b"\n2\n")
        proc.send_signal(signal.SIGUSR2)
        wait_until(lambda: b"Upgrade: took over from uexec " in err_path.read_bytes(),
                   what="the hand-over")
        m = STATE_RE.findall(err_path.read_bytes())
        assert m and tuple(map(int, m[-1][1:3])) == (1, 1) and int(m[-1][4]) == 1, m
        assert b"(1 sessions, 1 processes, 1 connections)" in err_path.read_bytes()
        assert proc.poll() is None
        run = c.collect_until_output("count", b"\n%d\n" % (int(run.stdout.split()[-1]) + 10),
                                     run=run)
        go.touch()
        check_counter(c.collect("count", run=run))
        assert c.result("environment/status", None) == {"status": "ready"}
        proc.stdin.close()
        assert proc.wait(EVENT_TIMEOUT) == 0
        rest = t._buf + proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # Every stdout line was a message of the protocol (RpcClient parsed each one); nothing
    # is left over, in particular not the check's "can take over" line.
    assert rest.strip() == b"", rest[:200]
    assert all("jsonrpc" in m or "id" in m or "method" in m for m in c.log)
    stderr = err_path.read_bytes()
    assert b"can take over" in stderr
    assert not any(mk in stderr for mk in SANITIZER_MARKERS), stderr[-2000:]


def test_json_log_events(server_factory, tmp_path):
    """--log-format json: the upgrade's lines are events with typed fields (what an operator
    alerts on): upgrade.start, upgrade.check, upgrade.state, upgrade.unsupported, and
    upgrade.refused with its reason."""
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    lu = Launch(server_factory, tmp_path, args=("--log-format", "json"))
    c = lu.srv.connect()   # not idle: the fake check's success must not exec the script
    lu.usr2()
    lu.wait_log('"event":"upgrade.unsupported"')
    lu.replace('read x < "%s"\necho slow\nexit 0\n' % fifo)
    lu.usr2()
    lu.wait_log('"event":"upgrade.start"', count=2)
    lu.usr2()
    lu.wait_log('"event":"upgrade.refused"')
    with open(fifo, "w") as f:
        f.write("go\n")
    lu.wait_log('"event":"upgrade.unsupported"', count=2)
    events = [json.loads(line) for line in lu.srv.stderr().splitlines()
              if line.startswith(b"{") and b'"event":"upgrade.' in line]
    names = [e["event"] for e in events]
    assert names == ["upgrade.start", "upgrade.check", "upgrade.quiesce", "upgrade.state",
                     "upgrade.unsupported", "upgrade.start", "upgrade.refused", "upgrade.check",
                     "upgrade.quiesce", "upgrade.state", "upgrade.unsupported"], names
    start, check, quiesce, state, _, _, refused, check2 = events[:8]
    # the listener's accept and the connection's read
    assert quiesce["level"] == "info" and quiesce["fields"]["opsCancelled"] == 2, quiesce
    assert quiesce["fields"]["us"] < 2000000, quiesce
    assert start["fields"] == {"binary": lu.path, "stateVersion": STATE_VERSION}
    assert check["fields"]["status"] == 0 and check["fields"]["binary"] == lu.path
    assert "can take over state version %d" % STATE_VERSION in check["fields"]["answer"]
    assert check2["fields"]["answer"] == "slow"
    assert refused["level"] == "warning"
    assert refused["fields"] == {"reason": "an upgrade is already in progress"}
    f = state["fields"]
    assert f["sessions"] == 1 and f["processes"] == 0 and f["connections"] == 1, f
    assert f["fds"] >= 1 and f["bytes"] > 32 and f["records"] >= 2, f


def test_state_validates_without_process_cgroups(server_factory, tmp_path):
    """--process-cgroups off: no base, no leaves; the layout record and the held fds agree."""
    lu = Launch(server_factory, tmp_path, args=("--process-cgroups", "off"))
    c = lu.srv.connect()
    c.start("p", ["/bin/sh", "-c", "echo up; exec sleep 1000"], env=PATH_ENV)
    c.collect_until_output("p", b"up\n")
    lu.usr2()
    lu.wait_log("Upgrade: no hand-over (")
    assert b"does not validate" not in lu.srv.stderr()
    st = state_line(lu.srv)
    assert (st["sessions"], st["processes"], st["connections"]) == (1, 1, 1), st
    c.terminate("p")


def test_stop_during_check_kills_and_reaps_it(server_factory, tmp_path):
    """SIGTERM while the new binary is being checked: the check is killed and reaped, the
    server exits 0 at once (it does not wait for the check's deadline)."""
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    lu = Launch(server_factory, tmp_path)
    lu.replace('read x < "%s"\n' % fifo)
    lu.usr2()
    lu.wait_log("Received SIGUSR2: checking whether")
    kids = wait_until(lambda: list(children_of(lu.srv.pid)), what="the check's process")
    assert len(kids) == 1, kids
    assert lu.srv.terminate(timeout=EVENT_TIMEOUT) == 0
    wait_until(lambda: not pid_alive(kids[0]), what="the check to be gone")
    assert b"no answer within" not in lu.srv.stderr()


def test_state_carries_stdin_pipes_and_write_ids(server_factory, tmp_path):
    """A pipeStdin process fed with process/write (writeIds remembered for de-duplication)
    and a PTY written to: the state validates (a stdin fd only with pipeStdin, the PTY's
    master named once, the writeIds well framed and distinct)."""
    lu = Launch(server_factory, tmp_path)
    c = lu.srv.connect()
    c.start("in", ["/bin/cat"], env=PATH_ENV, pipeStdin=True)
    c.start("tty", ["/bin/cat"], env=PATH_ENV, tty=True)
    for i in range(3):
        c.write("in", b"line%d\n" % i, "w%d" % i)
    c.write("tty", b"typed\n", "t0")
    c.collect_until_output("in", b"line2\n")
    c.collect_until_output("tty", b"typed")
    lu.usr2()
    lu.wait_log("Upgrade: no hand-over (")
    assert b"does not validate" not in lu.srv.stderr(), lu.srv.stderr_tail()
    st = state_line(lu.srv)
    assert (st["sessions"], st["processes"]) == (1, 2), st
    # listener, conn, cat's stdin, stdout and stderr pipes, the PTY master (once)
    assert st["fds"] >= 6, st
    c.terminate("in")
    c.terminate("tty")


def test_quiesce_loses_no_byte_under_load(server_factory, tmp_path):
    """Processes printing as fast as they can (stdout and stderr of pipes, and a PTY) while
    SIGUSR2 quiesces and resumes every read five times: each stream arrives whole, in order,
    once, with one gapless seq counter per process."""
    go = tmp_path / "go"
    lu = Launch(server_factory, tmp_path)
    c = lu.srv.connect()
    loop = 'i=0; while [ ! -e %s ]; do echo $i; %s i=$((i+1)); done; echo end' % (go, "%s")
    c.start("pipes", ["/bin/sh", "-c", loop % "echo e$i >&2;"], env=PATH_ENV)
    c.start("tty", ["/bin/sh", "-c", loop % ""], env=PATH_ENV, tty=True)
    runs = {"pipes": c.collect_until_output("pipes", b"\n100\n"),
            "tty": c.collect_until_output("tty", b"\n100\r\n")}
    for i in range(1, 6):
        lu.usr2()
        lu.wait_log("Upgrade: no hand-over (", count=i)
        for pid in runs:   # read some between upgrades, so that the queues move
            runs[pid] = c.collect_until_output(
                pid, b"%d" % (int(runs[pid].data().split()[-1].strip(b"e")) + 50), run=runs[pid])
    assert lu.srv.stderr().count(b"quiesced in") == 5
    go.touch()
    for pid in runs:
        runs[pid] = c.collect(pid, run=runs[pid])
        runs[pid].check_sequencing()
        assert runs[pid].exit_code == 0
    out = runs["pipes"].stdout.split(b"\n")
    assert out[-2:] == [b"end", b""] and out[:-2] == [b"%d" % i for i in range(len(out) - 2)]
    err = runs["pipes"].stderr.split(b"\n")
    assert err[-1] == b"" and err[:-1] == [b"e%d" % i for i in range(len(err) - 1)]
    assert len(err) - 1 in (len(out) - 2, len(out) - 3)   # the last stderr line, or not yet
    tty = runs["tty"].pty.split(b"\r\n")
    assert tty[-2:] == [b"end", b""] and tty[:-2] == [b"%d" % i for i in range(len(tty) - 2)]


def test_quiesce_keeps_exit_waits(server_factory, tmp_path):
    """QUIESCE cancels the exit waits of running processes too: they are paused, not taken
    for failures (a cancelled wait used to report the process killed, exit code 137), and
    re-armed at resume, so that exits after the upgrade are reported with their status."""
    go = tmp_path / "go"
    lu = Launch(server_factory, tmp_path)
    c = lu.srv.connect()
    ids = ["w%d" % i for i in range(8)]
    for pid in ids:
        c.start(pid, ["/bin/sh", "-c", "echo up; while [ ! -e %s ]; do sleep 0.05; done; exit 5"
                      % go], env=PATH_ENV)
    runs = {pid: c.collect_until_output(pid, b"up\n") for pid in ids}
    lu.usr2()
    lu.wait_log("Upgrade: no hand-over (")
    q = re.findall(rb"quiesced in \d+ us \((\d+) ops cancelled", lu.srv.stderr())
    # the accept, the connection's read, and per process two pipe reads and its exit wait
    assert q and int(q[-1]) >= 2 + 3 * len(ids), q
    go.touch()
    for pid in ids:
        run = c.collect(pid, run=runs[pid])
        assert run.exit_code == 5, (pid, run.exited)
        run.check_sequencing()


def test_quiesce_keeps_stdin_writes(server_factory, tmp_path):
    """A process/write larger than the pipe, to a process that does not read yet, is in
    flight when QUIESCE cancels it: it stays queued (a cancelled write used to be taken for
    a closed pipe, its data dropped), resumes, and every byte reaches the process."""
    go = tmp_path / "go"
    lu = Launch(server_factory, tmp_path)
    c = lu.srv.connect()
    c.start("cat", ["/bin/sh", "-c", "echo up; while [ ! -e %s ]; do sleep 0.05; done; exec cat"
                    % go], env=PATH_ENV, pipeStdin=True)
    run = c.collect_until_output("cat", b"up\n")
    data = bytes(range(256)) * 1024   # 256 KiB: more than a pipe holds
    wid = c.request("process/write", {"processId": "cat", "chunk": b64(data), "writeId": "big"})
    c.result("process/list", {})   # answered after the write was taken (in order)
    lu.usr2()
    lu.wait_log("Upgrade: no hand-over (")
    q = re.findall(rb"quiesced in \d+ us \((\d+) ops cancelled", lu.srv.stderr())
    # the accept, the connection's read, two pipe reads, the exit wait and the stdin write
    assert q and int(q[-1]) >= 6, q
    go.touch()
    reply = c.wait_reply(wid)
    assert reply.get("result", {}).get("status") == "accepted", reply
    c.result("process/closeStdin", {"processId": "cat"})
    run = c.collect("cat", run=run)
    assert run.stdout == b"up\n" + data
    assert run.exit_code == 0
    run.check_sequencing()


def metric(srv, name):
    """One counter's value from GET /metrics."""
    status, _, body = http_exchange(srv.host, srv.port,
                                    b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == "HTTP/1.1 200 OK", (status, body)
    m = re.search(rb"^%s (\d+)$" % name.encode(), body, re.M)
    assert m, (name, body[:2000])
    return int(m.group(1))


def socket_inodes(pid):
    """The inodes of every socket pid holds."""
    found = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if link.startswith("socket:["):
            found.add(link[8:-1])
    return found


def listener_inode(pid):
    """The inode of the socket pid listens on (tcp/tcp6 state 0A), or None."""
    inodes = socket_inodes(pid)
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = [line.split() for line in f.readlines()[1:]]
        except OSError:
            continue
        for r in rows:
            if r[3] == "0A" and r[9] in inodes:
                return r[9]
    return None


def test_idle_server_hands_over_in_place(server_factory, tmp_path):
    """An idle server (no session, no connection) execs the new binary in its own pid on
    SIGUSR2: the same listening socket (a client that connects while the new binary is
    starting waits in its backlog and is served), the same fds open (none leaked, none
    lost), the metric counters carried, and it serves a client and a process after."""
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    marker = tmp_path / "in-exec"
    lu = Launch(server_factory, tmp_path, handover=True)
    pid = lu.srv.pid
    # Idle: no session (a closed client's would stay for its resume window), so the
    # counter to carry is the scrapes' own.
    accepted = metric(lu.srv, "uexec_connections_accepted_total")
    assert accepted >= 1
    listener = listener_inode(pid)
    assert listener, "no listening socket found for %d" % pid
    fds = settled_fd_count(pid)
    sockets = socket_inodes(pid)
    # The 'new binary': the real one, held back once exec'd with the state until the test
    # has connected (the check runs it too, as itself).
    lu.replace('if [ -n "$UEXEC_UPGRADE_STATE_FD" ]; then : > "%s"; read x < "%s"; fi\n'
               'exec "%s" "$@"\n' % (marker, fifo, os.path.realpath(UEXEC_BIN)))
    lu.usr2()
    lu.wait_log(" fds over to ")
    wait_until(marker.exists, what="the new binary started")
    # Between the execve and the new loop: the kernel queues the connection.
    early = socket.create_connection((lu.srv.host, lu.srv.port), timeout=EVENT_TIMEOUT)
    early.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    with open(fifo, "w") as f:
        f.write("go\n")
    lu.wait_log("Upgrade: took over from uexec ")
    reply = b""
    while True:
        chunk = early.recv(4096)
        if not chunk:
            break
        reply += chunk
    early.close()
    assert reply.startswith(b"HTTP/1.1 200"), reply
    assert lu.srv.proc.poll() is None and lu.srv.pid == pid
    assert os.path.realpath("/proc/%d/exe" % pid) == os.path.realpath(UEXEC_BIN)
    assert listener_inode(pid) == listener, "the listening socket was not the one handed over"
    assert b"Listening on" in lu.srv.stderr() and lu.srv.stderr().count(b"Listening on") == 1
    assert b"Upgrade: no hand-over (" not in lu.srv.stderr()
    c = lu.srv.connect()
    c.start("q", ["/bin/sh", "-c", "echo two; exit 3"], env=PATH_ENV)
    run = c.collect("q")
    assert run.stdout == b"two\n" and run.exit_code == 3
    c.close()
    assert settled_fd_count(pid) == fds
    # The same sockets: the listener and, with the listener guard, the sockets holding its
    # port at the wildcard addresses (handed over, not bound again).
    assert socket_inodes(pid) == sockets
    if b"Listener guard: sandboxed processes cannot connect" in lu.srv.stderr():
        assert re.search(rb"and [12] port sockets, handed over", lu.srv.stderr()), \
            lu.srv.stderr_tail()
    # Counters went on from the old binary's: the early client, the session, this scrape.
    assert metric(lu.srv, "uexec_connections_accepted_total") == accepted + 3


def test_idle_handover_keeps_the_supervisor(server_factory, tmp_path):
    """After two hand-overs the cgroup supervisor still watches the pipe the binary
    holds: SIGKILL of uexec still kills a process that left its process group."""
    lu = Launch(server_factory, tmp_path, handover=True)
    if b"No orphans: pid" not in lu.srv.stderr():
        pytest.skip("no cgroup supervisor on this host")
    pid = lu.srv.pid
    # Twice: the restored server hands over again what it adopted.
    for n in (1, 2):
        lu.usr2()
        lu.wait_log("(upgrade %d), restored in" % n)
    assert lu.srv.pid == pid and lu.srv.proc.poll() is None
    assert lu.srv.stderr().count(b"No orphans: pid") == 1   # the first binary's, kept
    # The pause runs from QUIESCE in the old binary and covers the new one's restore.
    times = re.findall(rb"restored in (\d+) us, paused (\d+) us since QUIESCE", lu.srv.stderr())
    assert len(times) == 2, lu.srv.stderr_tail()
    for restore, pause in times:
        assert 0 < int(restore) <= int(pause) < 60 * 10**6, times
    c = lu.srv.connect()
    c.start("p", ["/bin/sh", "-c", "setsid /bin/sleep 1000 >/dev/null 2>&1 & echo $!"],
            env=PATH_ENV)
    run = c.collect("p")
    orphan = int(run.stdout)
    assert pid_alive(orphan)
    lu.srv.stopped = True
    lu.srv.proc.send_signal(signal.SIGKILL)
    lu.srv.proc.wait()
    wait_until(lambda: not pid_alive(orphan), what="the supervisor's purge")


def test_busy_server_is_not_handed_over(server_factory, tmp_path):
    """A server with something that is not handed over and does not end by itself while
    the loop is quiesced (here a TCP connection still in its HTTP exchange) keeps serving
    (the dry run), with the reason logged: nothing is exec'd."""
    lu = Launch(server_factory, tmp_path, handover=True)
    c = lu.srv.connect()
    half = socket.create_connection((lu.srv.host, lu.srv.port), timeout=EVENT_TIMEOUT)
    half.sendall(b"GET / HTTP/1.1\r\n")   # a head cut short: still in CONN_HTTP
    c.result("process/list", {})
    lu.usr2()
    lu.wait_log("Upgrade: no hand-over (a connection in its HTTP exchange or closing)")
    assert b" fds over to " not in lu.srv.stderr()
    c.start("p", ["/bin/sh", "-c", "echo ok"], env=PATH_ENV)
    assert c.collect("p").stdout == b"ok\n"
    half.close()


def test_queued_stdin_write_is_handed_over(server_factory, tmp_path):
    """A process/write larger than the pipe, to a process that does not read yet, is in
    flight at SIGUSR2: what is left of it travels in the state with the reply it owes, the
    new binary writes it, and the client gets "accepted" on the same connection; every byte
    reaches the process once, in order."""
    go = tmp_path / "go"
    lu = Launch(server_factory, tmp_path, handover=True)
    c = lu.srv.connect()
    c.start("cat", ["/bin/sh", "-c", "echo up; while [ ! -e %s ]; do sleep 0.05; done; exec cat"
                    % go], env=PATH_ENV, pipeStdin=True)
    run = c.collect_until_output("cat", b"up\n")
    data = bytes(range(256)) * 1024   # 256 KiB: more than a pipe holds
    wid = c.request("process/write", {"processId": "cat", "chunk": b64(data), "writeId": "big"})
    wid2 = c.request("process/write", {"processId": "cat", "chunk": b64(b"tail\n"),
                                       "writeId": "small"})
    c.result("process/list", {})   # answered after the writes were taken (in order)
    lu.usr2()
    lu.wait_log("Upgrade: took over from uexec ")
    assert b"Upgrade: no hand-over (" not in lu.srv.stderr()
    go.touch()
    assert c.wait_reply(wid)["result"] == {"status": "accepted"}
    assert c.wait_reply(wid2)["result"] == {"status": "accepted"}
    # Remembered: a retry is acknowledged, not written again.
    assert c.write("cat", b"again\n", "big") == {"status": "accepted"}
    c.result("process/closeStdin", {"processId": "cat"})
    run = c.collect("cat", run=run)
    assert run.stdout == b"up\n" + data + b"tail\n"
    assert run.exit_code == 0
    run.check_sequencing()


def test_failed_execve_keeps_serving(server_factory, tmp_path):
    """The new binary passes its check, then is gone when the hand-over execs it: execve
    fails, the fds handed over get FD_CLOEXEC back, and the same binary keeps serving."""
    lu = Launch(server_factory, tmp_path, handover=True)
    pid = lu.srv.pid
    fds = settled_fd_count(pid)
    lu.replace('rm -f "$0"\nexec "%s" "$@"\n' % os.path.realpath(UEXEC_BIN))
    lu.usr2()
    lu.wait_log("Upgrade: execve %s failed; keeping serving" % lu.path)
    lu.wait_log("Upgrade: no hand-over (")
    assert lu.srv.proc.poll() is None
    assert settled_fd_count(pid) == fds
    cloexec = []
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                flags = int(re.search(r"^flags:\s+(\d+)", f.read(), re.M).group(1), 8)
        except OSError:
            continue
        if int(fd) > 2 and not flags & 0o2000000:   # O_CLOEXEC
            cloexec.append(fd)
    assert cloexec == [], "fds left without FD_CLOEXEC: %r" % cloexec
    c = lu.srv.connect()
    c.start("p", ["/bin/sh", "-c", "echo ok"], env=PATH_ENV)
    run = c.collect("p")
    assert run.stdout == b"ok\n" and run.exit_code == 0


def sessions_gauge(srv):
    """The uexec_sessions gauge: {state: count}."""
    _, _, body = http_exchange(srv.host, srv.port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    return {m.group(1).decode(): int(m.group(2))
            for m in re.finditer(rb'^uexec_sessions\{state="(\w+)"\} (\d+)$', body, re.M)}


def read_fifo_until(fd, done, what):
    """Reads the non-blocking fd until done(bytes read so far) holds."""
    import select
    got = b""

    def more():
        nonlocal got
        select.select([fd], [], [], 0.05)
        try:
            got += os.read(fd, 65536)
        except BlockingIOError:
            pass
        return done(got)
    wait_until(more, what=what)
    return got


def test_audit_queue_written_before_execve(server_factory, tmp_path):
    """Audit lines queued behind a slow reader when SIGUSR2 comes are written out before
    the execve (QUIESCE waits for the audit log's queue): the reader gets every line, and
    the new binary writes to the same log after."""
    import fcntl
    fifo = str(tmp_path / "audit")
    os.mkfifo(fifo)
    rd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        fcntl.fcntl(rd, 1031, 4096)   # F_SETPIPE_SZ: a page, so that lines wait in the queue
        lu = Launch(server_factory, tmp_path,
                    args=("--audit-log", fifo, "--resume-window-ms", "0"), handover=True)
        n = 40
        c = lu.srv.connect()
        for i in range(n):
            c.start("a%d" % i, ["/bin/true"], env=PATH_ENV)
            assert c.collect("a%d" % i).exit_code == 0
        c.close()
        # Idle (the hand-over execs idle servers only) with lines still queued.
        wait_until(lambda: sum(sessions_gauge(lu.srv).values()) == 0, what="no session")
        assert metric(lu.srv, "uexec_audit_log_queued_bytes") > 0, "nothing queued"
        lu.usr2()
        # From here QUIESCE waits for the queue: read only now.
        lu.wait_log("Upgrade: %s can take over" % lu.path)
        got = read_fifo_until(rd, lambda b: b.count(b'"event":"process.exit"') >= n,
                              "every process.exit line")
        lu.wait_log("Upgrade: took over from uexec ")
        assert got.count(b'"event":"process.start"') == n, got[-300:]
        assert all(line.startswith(b"{") and line.endswith(b"}")
                   for line in got.split(b"\n")[:-1]), "a line cut or glued"
        assert b" fds over to " in lu.srv.stderr()
        # The new binary reopened the log by path: its lines come after.
        c = lu.srv.connect()
        c.start("after", ["/bin/true"], env=PATH_ENV)
        assert c.collect("after").exit_code == 0
        got += read_fifo_until(rd, lambda b: b'"process":"after"' in b, "the new binary's line")
    finally:
        os.close(rd)


@pytest.mark.parametrize("how,reason", [
    ("args", "its arguments were refused"),
    ("blob", "its start-up failed"),
])
def test_rollback_to_the_old_binary(server_factory, tmp_path, how, reason):
    """A new binary that passes its check but then cannot take over (it refuses its
    arguments; the state it is given is refused) hands the state back: the old binary
    is exec'd again through the fd it kept, restores the same state, and the server
    goes on in the same pid with the same listener and fds."""
    if how == "blob" and not os.path.exists("/bin/bash"):
        pytest.skip("needs /bin/bash (an fd above 9 in a script)")
    lu = Launch(server_factory, tmp_path, args=("--resume-window-ms", "0"), handover=True)
    pid = lu.srv.pid
    listener = listener_inode(pid)
    fds = settled_fd_count(pid)
    # A copy: /proc/PID/exe tells the new binary from the old one.
    new = str(tmp_path / "uexec-new")
    with open(os.path.realpath(UEXEC_BIN), "rb") as src, open(new, "wb") as dst:
        dst.write(src.read())
    os.chmod(new, stat.S_IRWXU)
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"uexecUPG" + b"\x07" * 100)
    if how == "args":
        lu.replace('[ -n "$UEXEC_UPGRADE_STATE_FD" ] && set -- "$@" --no-such-option\n'
                   'exec "%s" "$@"\n' % new)
    else:
        # bash: an fd above the ones handed over; the state fd pointed at garbage.
        lu.replace('if [ -n "$UEXEC_UPGRADE_STATE_FD" ]; then exec {g}<"%s"; '
                   'export UEXEC_UPGRADE_STATE_FD=$g; fi\nexec "%s" "$@"\n' % (garbage, new))
        with open(lu.path) as f:
            script = f.read().replace("#!/bin/sh", "#!/bin/bash", 1)
        with open(lu.path, "w") as f:
            f.write(script)
    lu.usr2()
    lu.wait_log("Upgrade: this binary cannot take over (%s); handing the state back" % reason)
    lu.wait_log("(rolled back: the new binary could not take over)")
    if how == "blob":
        assert b"cannot restore the state handed over" in lu.srv.stderr()
    assert lu.srv.proc.poll() is None and lu.srv.pid == pid
    assert os.path.realpath("/proc/%d/exe" % pid) == os.path.realpath(UEXEC_BIN)
    assert listener_inode(pid) == listener
    assert lu.srv.stderr().count(b"Listening on") == 1
    c = lu.srv.connect()
    c.start("p", ["/bin/sh", "-c", "echo back; exit 4"], env=PATH_ENV)
    run = c.collect("p")
    assert run.stdout == b"back\n" and run.exit_code == 4
    c.close()
    wait_until(lambda: sum(sessions_gauge(lu.srv).values()) == 0, what="no session")
    assert settled_fd_count(pid) == fds
    # The rolled-back server upgrades again to a binary that works.
    lu.replace('exec "%s" "$@"\n' % new)
    lu.usr2()
    lu.wait_log("Upgrade: took over from uexec ", count=2)
    assert os.path.realpath("/proc/%d/exe" % pid) == os.path.realpath(new)
    assert listener_inode(pid) == listener


def read_all(c, process_id, until_closed=True):
    """process/read from seq 0, again until the process is closed: (chunks, last result)."""
    def done():
        res = c.read(process_id)
        return res if res["closed"] or not until_closed else None
    res = wait_until(done, what="%s closed" % process_id)
    return res["chunks"], res


def chunk_bytes(chunks, stream=None):
    import base64
    return b"".join(base64.b64decode(ch["chunk"]) for ch in chunks
                    if stream is None or ch["stream"] == stream)


def proc_state(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def test_detached_session_with_pipes_and_pty_is_handed_over(server_factory, tmp_path):
    """A detached session's processes (pipes, a stdin pipe, a PTY; one exited before, one
    exiting while the new binary starts) are handed to the new binary in the same pid: the
    client that resumes the session after reads every byte once, with gapless seqs, and
    the real exit codes; nothing leaks."""
    go, late, fifo, marker = (tmp_path / "go", tmp_path / "late", str(tmp_path / "fifo"),
                              tmp_path / "in-exec")
    os.mkfifo(fifo)
    lu = Launch(server_factory, tmp_path, handover=True)
    pid = lu.srv.pid
    fds = settled_fd_count(pid)
    c = lu.srv.connect()
    sid = c.init_result["sessionId"]
    c.start("done", ["/bin/sh", "-c", "echo before; exit 3"], env=PATH_ENV)
    assert c.collect("done").exit_code == 3
    c.start("out", ["/bin/sh", "-c", counter_script(go)], env=PATH_ENV)
    c.start("err", ["/bin/sh", "-c", "i=0; while [ ! -e %s ]; do echo e$i >&2; i=$((i+1)); "
                    "sleep 0.01; done; exit 9" % go], env=PATH_ENV)
    c.start("late", ["/bin/sh", "-c", "while [ ! -e %s ]; do sleep 0.01; done; echo bye; "
                     "exit 5" % late], env=PATH_ENV)
    c.start("cat", ["/bin/cat"], env=PATH_ENV, pipeStdin=True)
    c.start("tty", ["/bin/sh", "-c", counter_script(go)], env=PATH_ENV, tty=True)
    # Its timeoutMs deadline travels as an absolute time: it fires in the new binary.
    c.start("slow", ["/bin/sleep", "1000"], env=PATH_ENV, timeoutMs=4000)
    pids = {p["processId"]: p["pid"] for p in c.result("process/list", {})["processes"]}
    c.collect_until_output("out", b"\n3\n")
    assert c.write("cat", b"one\n", "w1") == {"status": "accepted"}
    c.collect_until_output("cat", b"one\n")
    c.ws.abort()
    lu.wait_log("detached from")
    # The new binary is held back once exec'd, while "late" exits: a zombie to hand over.
    # (Python, not sh: a shell would reap that child itself while it waits.)
    lu.hold_new_binary(marker, fifo)
    lu.usr2()
    lu.wait_log(" fds over to ")
    wait_until(marker.exists, what="the new binary started")
    late.touch()
    wait_until(lambda: proc_state(pids["late"]) == "Z", what="'late' exited, not reaped")
    with open(fifo, "w") as f:
        f.write("go\n")
    lu.wait_log("Upgrade: took over from uexec ")
    assert lu.srv.proc.poll() is None and lu.srv.pid == pid
    assert b"Upgrade: no hand-over (" not in lu.srv.stderr()
    c2 = lu.srv.connect(initialize=False)
    assert c2.initialize(resume=sid)["sessionId"] == sid
    # The stdin pipe: written after the hand-over, echoed back, and remembered writeIds.
    assert c2.write("cat", b"two\n", "w2") == {"status": "accepted"}
    # A retried writeId remembered from before: acknowledged, not written again.
    assert c2.write("cat", b"dup\n", "w1") == {"status": "accepted"}
    wait_until(lambda: chunk_bytes(c2.read("cat")["chunks"]) == b"one\ntwo\n",
               what="cat echoes after the hand-over")
    c2.result("process/closeStdin", {"processId": "cat"})
    go.touch()
    for name, code in (("done", 3), ("late", 5), ("out", 7), ("err", 9), ("cat", 0),
                       ("tty", 7), ("slow", 143)):
        chunks, res = read_all(c2, name)
        seqs = [ch["seq"] for ch in chunks]
        assert res["exited"] and res["exitCode"] == code, (name, res)
        # One counter: every seq below nextSeq is a chunk but two (exited, and closed
        # last), each once, in order: none lost or repeated across the hand-over.
        assert seqs == sorted(set(seqs)) and all(0 < q < res["nextSeq"] - 1 for q in seqs), \
            (name, seqs, res["nextSeq"])
        assert res["nextSeq"] == len(seqs) + 3, (name, res["nextSeq"], len(seqs))
        data = chunk_bytes(chunks)
        if name == "done":
            assert data == b"before\n"
        elif name == "late":
            assert data == b"bye\n"
        elif name == "cat":
            assert data == b"one\ntwo\n"
        elif name == "slow":
            assert data == b""
        elif name == "err":
            lines = data.split(b"\n")
            assert lines[-1] == b"" and lines[:-1] == [b"e%d" % i for i in range(len(lines) - 1)]
            assert {ch["stream"] for ch in chunks} == {"stderr"}
        else:
            lines = data.replace(b"\r\n", b"\n").split(b"\n")
            assert lines[-2:] == [b"end", b""], (name, lines[-3:])
            assert lines[:-2] == [str(i).encode() for i in range(len(lines) - 2)], \
                "%s: output lost or out of order" % name
            assert len(lines) > 5
    listed = {p["processId"]: p for p in c2.result("process/list", {})["processes"]}
    assert listed["slow"]["timedOut"] is True and listed["out"].get("timedOut") is None, listed
    assert zombies(pid) == []
    c2.ws.abort()
    wait_until(lambda: settled_fd_count(pid) == fds, what="the fds of before")


def test_attached_websocket_is_handed_over(server_factory, tmp_path):
    """A client attached during the upgrade keeps its WebSocket: the new binary (another
    file: a rebuilt one) adopts the socket with its session, and the client reads every
    byte of its processes' output once and in order, with continuous seqs and the real
    exit codes, and its requests are answered on the same connection after."""
    go = tmp_path / "go"
    lu = Launch(server_factory, tmp_path, handover=True)
    pid = lu.srv.pid
    # The start path re-pointed at a copy, as a package upgrade replaces the file.
    new_bin = str(tmp_path / "uexec-rebuilt")
    with open(os.path.realpath(UEXEC_BIN), "rb") as src, open(new_bin, "wb") as dst:
        dst.write(src.read())
    os.chmod(new_bin, stat.S_IRWXU)
    os.symlink(new_bin, lu.path + ".new")
    os.replace(lu.path + ".new", lu.path)
    c = lu.srv.connect()
    c.start("out", ["/bin/sh", "-c", counter_script(go)], env=PATH_ENV)
    c.start("tty", ["/bin/sh", "-c", counter_script(go)], env=PATH_ENV, tty=True)
    c.start("cat", ["/bin/cat"], env=PATH_ENV, pipeStdin=True)
    run = c.collect_until_output("out", b"\n3\n")
    # A long poll on a silent process: answered at QUIESCE with what there is (as at its
    # deadline), its reply carried in the connection's queued output.
    rid = c.request("process/read", {"processId": "cat", "afterSeq": 0, "waitMs": 60000})
    c.result("process/list", {})   # answered after the read was taken (in order)
    lu.usr2()
    lu.wait_log("Upgrade: took over from uexec ")
    assert re.search(rb"\(1 sessions, 3 processes, 1 connections\)", lu.srv.stderr()), \
        lu.srv.stderr_tail()
    polled = c.wait_reply(rid)["result"]
    assert polled["chunks"] == [] and polled["exited"] is False, polled
    assert lu.srv.pid == pid and b"Upgrade: no hand-over (" not in lu.srv.stderr()
    assert os.path.realpath("/proc/%d/exe" % pid) == os.path.realpath(new_bin)
    # The limits derived from the fd budget: the adopted processes' and connection's fds
    # (7 here) are not counted as the server's own, which are no more than at the start.
    used = [int(n) for n in re.findall(rb"(\d+) fds open at start", lu.srv.stderr())]
    assert len(used) == 2 and used[1] <= used[0], used
    # The same connection: output goes on, requests are answered.
    run = c.collect_until_output("out", b"\n%d\n" % (int(run.stdout.split()[-1]) + 20),
                                 run=run)
    assert c.write("cat", b"after\n", "w1") == {"status": "accepted"}
    cat = c.collect_until_output("cat", b"after\n")
    finish_counters(c, go, run)
    c.result("process/closeStdin", {"processId": "cat"})
    cat = c.collect("cat", run=cat)
    assert cat.stdout == b"after\n" and cat.exit_code == 0
    cat.check_sequencing()


def test_tls_connection_closes_and_its_session_resumes(server_factory, tmp_path):
    """wss://: OpenSSL's state cannot be handed over, so the TLS connection closes at the
    execve and its session stays resumable for a whole window: the client reconnects,
    resumes, and reads every byte of its process's output once, with continuous seqs."""
    import ssl
    from conftest import HOST
    import wsclient
    if not HOST.program("openssl"):
        pytest.skip("needs openssl (the program) to make a test certificate")
    cert, key = str(tmp_path / "cert.pem"), str(tmp_path / "key.pem")
    subprocess.run([HOST.program("openssl"), "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj",
                    "/CN=uexec-test", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", key, "-out", cert], check=True, capture_output=True, timeout=60)
    ctx = ssl.create_default_context(cafile=cert)
    go = tmp_path / "go"
    srv = server_factory("--tls-cert", cert, "--tls-key", key, listen="wss://127.0.0.1:0",
                         kinds=False)
    pid = srv.pid
    url = "ws://127.0.0.1:%d" % srv.port
    c = wsclient.connect(url, ssl_context=ctx)
    sid = c.init_result["sessionId"]
    c.start("out", ["/bin/sh", "-c", counter_script(go)], env=PATH_ENV)
    c.collect_until_output("out", b"\n3\n")
    srv.proc.send_signal(signal.SIGUSR2)
    wait_until(lambda: b"Upgrade: took over from uexec " in srv.stderr(), what="the hand-over")
    assert srv.pid == pid and srv.proc.poll() is None
    assert re.search(rb"0 connections with \d+ bytes queued, 1 to close and resume",
                     srv.stderr()), srv.stderr_tail()
    assert b"(1 sessions, 1 processes, 0 connections)" in srv.stderr()
    c2 = wsclient.connect(url, ssl_context=ctx, initialize=False)
    assert c2.initialize(resume=sid)["sessionId"] == sid
    go.touch()
    chunks, res = read_all(c2, "out")
    seqs = [ch["seq"] for ch in chunks]
    assert res["exitCode"] == 7 and res["nextSeq"] == len(seqs) + 3, (res, len(seqs))
    assert seqs == sorted(set(seqs)) and seqs[-1] < res["nextSeq"] - 1
    lines = chunk_bytes(chunks).split(b"\n")
    assert lines[-2:] == [b"end", b""]
    assert lines[:-2] == [str(i).encode() for i in range(len(lines) - 2)], "output lost"
    c2.close()


@pytest.mark.needs_programs("/bin/bash")
def test_waits_for_a_start_behind_a_shell_snapshot(server_factory, tmp_path):
    """A process/start waiting for its shell snapshot's capture when SIGUSR2 comes is
    something the quiesced loop finishes by itself: QUIESCE waits for it (the process it
    then starts has its exit wait cancelled too), and the hand-over goes on; the client
    gets its reply on the same connection after, and the process runs."""
    home = tmp_path / "home"
    home.mkdir()
    fifo = home / "fifo"
    os.mkfifo(str(fifo))
    (home / ".bash_profile").write_text(
        ': > "$HOME/capturing"\nread x < "$HOME/fifo"\nexport SNAPVAR=from-profile\n')
    lu = Launch(server_factory, tmp_path, handover=True)
    c = lu.srv.connect()
    if not c.result("environment/info", {})["capabilities"].get("shellSnapshotV2"):
        pytest.skip("no shell snapshots here")
    rid = c.request("process/start", {
        "processId": "snap", "argv": ["/bin/bash", "-lc", "echo $SNAPVAR; exec sleep 1000"],
        "cwd": "file://" + str(home), "tty": False,
        "env": {"PATH": "/usr/bin:/bin", "HOME": str(home)},
        "shellSnapshot": {"scopeId": "s1", "shell": {"name": "bash", "path": "/bin/bash"}}})
    wait_until((home / "capturing").exists, what="the capture running")
    lu.usr2()
    lu.wait_log("Upgrade: %s can take over" % lu.path)
    with open(str(fifo), "w") as f:
        f.write("go\n")
    lu.wait_log("Upgrade: took over from uexec ")
    assert b"Upgrade: no hand-over (" not in lu.srv.stderr()
    assert "result" in c.wait_reply(rid)
    # Started during QUIESCE, running across the hand-over: adopted like the others.
    assert b"(1 sessions, 1 processes, 1 connections)" in lu.srv.stderr()
    run = c.collect_until_output("snap", b"from-profile\n")
    assert c.terminate("snap") == {"running": True}
    run = c.collect("snap", run=run)
    assert run.stdout == b"from-profile\n" and run.exit_code == 137
    run.check_sequencing()


def test_rollback_keeps_sessions_and_connections(server_factory, tmp_path):
    """A rollback with a client attached and a process printing: the old binary takes
    the whole state back, and the client, on the same connection, reads every byte once
    with continuous seqs and the real exit code."""
    go = tmp_path / "go"
    lu = Launch(server_factory, tmp_path, handover=True)
    pid = lu.srv.pid
    c = lu.srv.connect()
    c.start("count", ["/bin/sh", "-c", counter_script(go)], env=PATH_ENV)
    run = c.collect_until_output("count", b"\n3\n")
    lu.replace('[ -n "$UEXEC_UPGRADE_STATE_FD" ] && set -- "$@" --no-such-option\n'
               'exec "%s" "$@"\n' % os.path.realpath(UEXEC_BIN))
    lu.usr2()
    lu.wait_log("(rolled back: the new binary could not take over)")
    assert re.search(rb"\(1 sessions, 1 processes, 1 connections\)", lu.srv.stderr())
    assert lu.srv.pid == pid and lu.srv.proc.poll() is None
    run = c.collect_until_output("count", b"\n%d\n" % (int(run.stdout.split()[-1]) + 10),
                                 run=run)
    go.touch()
    check_counter(c.collect("count", run=run))


def test_processes_of_two_generations_survive_two_upgrades(server_factory, tmp_path):
    """Every child has one parent thread across upgrades: a process started before the
    first upgrade and one started between the first and the second both live through the
    second (PR_SET_PDEATHSIG fires when a child's parent *thread* ends; an execve keeps
    only the thread that makes it), and both end with their own exit codes."""
    go = tmp_path / "go"
    lu = Launch(server_factory, tmp_path, handover=True)
    pid = lu.srv.pid
    c = lu.srv.connect()
    sid = c.init_result["sessionId"]
    c.start("first", ["/bin/sh", "-c", counter_script(go)], env=PATH_ENV)
    c.collect_until_output("first", b"\n2\n")
    c.ws.abort()
    lu.wait_log("detached from")
    lu.usr2()
    lu.wait_log("Upgrade: took over from uexec ")
    c2 = lu.srv.connect(initialize=False)
    assert c2.initialize(resume=sid)["sessionId"] == sid
    c2.start("second", ["/bin/sh", "-c", counter_script(go).replace("exit 7", "exit 8")],
             env=PATH_ENV)
    c2.collect_until_output("second", b"\n2\n")
    pids = {p["processId"]: p["pid"] for p in c2.result("process/list", {})["processes"]}
    c2.ws.abort()
    lu.wait_log("detached from", count=2)
    lu.usr2()
    lu.wait_log("Upgrade: took over from uexec ", count=2)
    assert lu.srv.proc.poll() is None and lu.srv.pid == pid
    assert b"Upgrade: no hand-over (" not in lu.srv.stderr()
    for name in ("first", "second"):
        assert proc_state(pids[name]) not in (None, "Z"), (name, proc_state(pids[name]))
    c3 = lu.srv.connect(initialize=False)
    assert c3.initialize(resume=sid)["sessionId"] == sid
    go.touch()
    for name, code in (("first", 7), ("second", 8)):
        chunks, res = read_all(c3, name)
        assert res["exited"] and res["exitCode"] == code, (name, res)
        lines = chunk_bytes(chunks).split(b"\n")
        assert lines[-2:] == [b"end", b""], (name, lines[-3:])
        assert lines[:-2] == [str(i).encode() for i in range(len(lines) - 2)], name
    assert zombies(pid) == []
