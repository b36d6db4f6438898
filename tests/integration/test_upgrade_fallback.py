# SPDX-License-Identifier: MIT
"""The live upgrade's fallback (issue 26 item 4, docs/UPGRADE.md "The sequence"): when the
new binary's `--check-upgrade` says it cannot read our state version (exit 1), nothing is
handed over; the server drains as SIGTERM's drain does (the listener closed, new work
refused, running processes finish, or are killed at --drain-timeout-ms and reported), then
execs the new binary fresh in the same pid with the same arguments: a new listener, its
own cgroup bases and supervisor, nothing of the old server's left running. If that execve
fails, the server exits 1 (the service manager restarts it)."""

import os
import re
import shutil
import signal
import socket
import stat
import time

import pytest

from conftest import EVENT_TIMEOUT, UEXEC_BIN, children_of, pid_alive, wait_until
from test_drain import DRAINING, LONG_DRAIN_MS, refused
from test_upgrade import PATH_ENV, Launch, check_counter, counter_script, zombies
from wsclient import http_exchange

pytestmark = pytest.mark.needs_programs("/bin/sh", "/bin/sleep")

CANNOT = "uexec 9.9 cannot take over: state version 1 is not one it reads (2-2)"


def new_binary(tmp_path):
    """A copy of the binary under test: /proc/PID/exe tells it from the old one."""
    new = str(tmp_path / "uexec-new")
    shutil.copyfile(os.path.realpath(UEXEC_BIN), new)
    os.chmod(new, stat.S_IRWXU)
    return new


def refusing_script(new):
    """The 'new binary': says it cannot read state version 1, and is the copy otherwise."""
    return ('if [ "$1" = --check-upgrade ]; then echo "%s"; exit 1; fi\n'
            'exec "%s" "$@"\n' % (CANNOT, new))


def urls(srv):
    with open(srv.stdout_path, "rb") as f:
        return [ln.decode() for ln in f.read().split(b"\n") if ln.strip()]


def wait_fresh(lu, new):
    """The fresh binary is serving: its own URL line (a new ephemeral port), and the
    same pid runs the copy. Points lu.srv at the new URL."""
    lu.wait_log("Upgrade: drained; starting %s fresh in this pid" % lu.path)
    wait_until(lambda: len(urls(lu.srv)) >= 2, what="the fresh binary's URL")
    lu.wait_log("Listening on", count=2)
    url = urls(lu.srv)[1]
    m = re.match(r"ws://([0-9.]+):(\d+)$", url)
    assert m, url
    lu.srv.url, lu.srv.host, lu.srv.port = url, m.group(1), int(m.group(2))
    assert lu.srv.proc.poll() is None
    assert os.path.realpath("/proc/%d/exe" % lu.srv.pid) == os.path.realpath(new)


def supervisors(srv):
    return [int(x) for x in re.findall(rb"No orphans: pid (\d+) \(uexec-reaper\)", srv.stderr())]


def cgroup_dirs(srv):
    """The v2 base and the v1 bases the server logged at its last start (existing ones)."""
    err = srv.stderr()
    found = []
    m = re.findall(rb"v2 leaves under (\S+),", err)
    if m:
        found.append(m[-1].decode())
    return [d for d in found if os.path.isdir(d)]


def leaves(base):
    return sorted(e for e in os.listdir(base) if os.path.isdir(os.path.join(base, e)))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_fallback_drains_then_starts_the_new_binary_fresh(server_factory, tmp_path):
    """On a fixed address: the fresh binary listens on the same one (the old listening
    socket is released before the execve)."""
    go = tmp_path / "go"
    new = new_binary(tmp_path)
    lu = Launch(server_factory, tmp_path, handover=True,
                args=("--drain-timeout-ms", str(LONG_DRAIN_MS),
                      "--listen", "ws://127.0.0.1:%d" % free_port()))
    pid, old_port = lu.srv.pid, lu.srv.port
    sup = supervisors(lu.srv)
    c = lu.srv.connect()
    idle = lu.srv.connect(initialize=False)   # connected before, no session yet
    c.start("count", ["/bin/sh", "-c", counter_script(go)], env=PATH_ENV)
    run = c.collect_until_output("count", b"\n3\n")
    lu.replace(refusing_script(new))
    lu.usr2()
    lu.wait_log("Upgrade: %s cannot take over (%s); falling back to a graceful drain"
                % (lu.path, CANNOT))
    lu.wait_log("Upgrade fallback: draining (1 processes running, up to %d ms)" % LONG_DRAIN_MS)
    # What test_drain.py expects of a drain: the listener closed, new work refused on the
    # connections open, the running process still served.
    wait_until(lambda: refused(lu.srv.host, old_port), what="the listener to be closed")
    err = c.error("process/start", c.start_params("new", argv=["/bin/echo", "x"]))
    assert err["code"] == DRAINING and "shutting down" in err["message"], err
    err = idle.error("initialize", {"clientName": "late"})
    assert err["code"] == DRAINING and "no new sessions" in err["message"], err
    assert c.read("count")["exited"] is False
    # A second SIGUSR2 meanwhile is refused.
    lu.usr2()
    lu.wait_log("Received SIGUSR2: upgrade refused, the server is draining")
    assert lu.srv.proc.poll() is None and urls(lu.srv) == [lu.srv.url]
    # It finishes: every byte, its real exit code, then the new binary starts.
    go.touch()
    check_counter(c.collect("count", run=run))
    wait_fresh(lu, new)
    assert lu.srv.pid == pid and lu.srv.port == old_port, urls(lu.srv)
    lu.wait_log("Upgrade fallback: drain complete; starting the new binary")
    assert b"Address already in use" not in lu.srv.stderr()
    # Nothing of the old server is left: no child, no zombie, its supervisor gone and a new
    # one started by the fresh binary.
    assert zombies(pid) == []
    if sup:
        wait_until(lambda: not pid_alive(sup[0]), what="the old supervisor to end")
        wait_until(lambda: len(supervisors(lu.srv)) == 2, what="the new supervisor")
        assert supervisors(lu.srv)[1] != sup[0] and pid_alive(supervisors(lu.srv)[1])
    for base in cgroup_dirs(lu.srv):
        assert leaves(base) == [], (base, leaves(base))
    assert list(children_of(pid)) == []
    # A new connection works: a session, a process, its exit code.
    c2 = lu.srv.connect()
    c2.start("after", ["/bin/sh", "-c", "echo after; exit 5"], env=PATH_ENV)
    done = c2.collect("after")
    assert done.stdout == b"after\n" and done.exit_code == 5
    assert b"Received SIGTERM" not in lu.srv.stderr()


def test_fallback_drain_timeout_kills_what_is_left(server_factory, tmp_path):
    """A process that does not finish by --drain-timeout-ms is killed with its whole tree
    (a setsid'd descendant too), reported (137), and then the new binary starts; no process
    and no cgroup of the old server survives, and the fresh binary keeps its own (its
    supervisor still kills what it starts when uexec is SIGKILLed)."""
    new = new_binary(tmp_path)
    lu = Launch(server_factory, tmp_path, args=("--drain-timeout-ms", "700"), handover=True)
    pid = lu.srv.pid
    c = lu.srv.connect()
    c.start("tree", ["/bin/sh", "-c", "setsid sleep 1001 & b=$!; echo $b; exec sleep 1000"],
            env=PATH_ENV)
    run = c.collect_until_output("tree", b"\n")
    escaped = int(run.stdout.split()[0])
    assert pid_alive(escaped)
    lu.replace(refusing_script(new))
    t0 = time.monotonic()
    lu.usr2()
    run = c.collect("tree", run=run)
    assert run.exit_code == 128 + signal.SIGKILL
    assert time.monotonic() - t0 >= 0.6
    run.check_sequencing()
    wait_fresh(lu, new)
    assert lu.srv.pid == pid
    wait_until(lambda: not pid_alive(escaped), what="the escaped descendant to die")
    assert b"Drain: 700 ms passed, killing the 1 processes left" in lu.srv.stderr()
    assert list(children_of(pid)) == [] and zombies(pid) == []
    for base in cgroup_dirs(lu.srv):
        assert leaves(base) == [], (base, leaves(base))
    # The fresh binary's own supervisor is in charge: SIGKILL of uexec still purges.
    c2 = lu.srv.connect()
    c2.start("p", ["/bin/sh", "-c", "setsid /bin/sleep 1000 >/dev/null 2>&1 & echo $!"],
             env=PATH_ENV)
    orphan = int(c2.collect("p").stdout)
    assert pid_alive(orphan)
    if len(supervisors(lu.srv)) < 2:
        c2.close()
        os.kill(orphan, signal.SIGKILL)
        return   # no supervisor on this host
    lu.srv.stopped = True
    lu.srv.proc.send_signal(signal.SIGKILL)
    lu.srv.proc.wait()
    wait_until(lambda: not pid_alive(orphan), what="the new supervisor's purge")


def test_fallback_execve_failure_exits_nonzero(server_factory, tmp_path):
    """The new binary is gone when the drain is over: the execve fails, the server logs
    it and exits 1 (the service manager restarts it)."""
    lu = Launch(server_factory, tmp_path, args=("--drain-timeout-ms", str(LONG_DRAIN_MS)),
                handover=True)
    lu.replace('if [ "$1" = --check-upgrade ]; then echo "%s"; rm -f "$0"; exit 1; fi\n'
               'exit 9\n' % CANNOT)
    lu.usr2()
    lu.wait_log("Upgrade: execve %s after the drain failed; exiting" % lu.path)
    assert lu.srv.proc.wait(EVENT_TIMEOUT) == 1
    lu.srv.stopped = True
    assert not lu.srv.sanitizer_problems(), lu.srv.stderr_tail()


def test_dry_run_does_not_fall_back(server_factory, tmp_path):
    """UEXEC_UPGRADE_DRY_RUN: nothing is exec'd, so nothing is drained either."""
    lu = Launch(server_factory, tmp_path)
    c = lu.srv.connect()
    lu.replace('echo "%s"; exit 1\n' % CANNOT)
    lu.usr2()
    lu.wait_log("no fallback drain (UEXEC_UPGRADE_DRY_RUN is set); keeping serving")
    assert b"draining" not in lu.srv.stderr()
    c.start("p", ["/bin/sh", "-c", "echo ok"], env=PATH_ENV)
    assert c.collect("p").stdout == b"ok\n"


def test_idle_fallback_keeps_its_address(server_factory, tmp_path):
    """Nothing to drain: the drain ends in the iteration it starts, with the listener's
    accept still being cancelled; the server waits for it to be reaped before it stops, so
    that the fresh binary can bind the same address (without, EADDRINUSE: the ring closed
    at shutdown held the listening socket)."""
    new = new_binary(tmp_path)
    lu = Launch(server_factory, tmp_path, handover=True,
                args=("--listen", "ws://127.0.0.1:%d" % free_port()))
    port = lu.srv.port
    status, _, _ = http_exchange(lu.srv.host, port, b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == "HTTP/1.1 200 OK"
    lu.replace(refusing_script(new))
    lu.usr2()
    wait_fresh(lu, new)
    assert lu.srv.port == port, urls(lu.srv)
    assert b"Address already in use" not in lu.srv.stderr()
    c = lu.srv.connect()
    c.start("p", ["/bin/sh", "-c", "echo ok"], env=PATH_ENV)
    assert c.collect("p").stdout == b"ok\n"


def test_sigterm_during_the_fallback_drain_stops(server_factory, tmp_path):
    """A SIGTERM while the fallback drains means stop: the server stops at once (exit 0),
    its process killed, and no new binary is started."""
    new = new_binary(tmp_path)
    lu = Launch(server_factory, tmp_path, handover=True,
                args=("--drain-timeout-ms", str(LONG_DRAIN_MS)))
    c = lu.srv.connect()
    c.start("long", ["/bin/sh", "-c", "echo $$; exec sleep 1000"], env=PATH_ENV)
    child = int(c.collect_until_output("long", b"\n").stdout.split()[0])
    lu.replace(refusing_script(new))
    lu.usr2()
    lu.wait_log("Upgrade fallback: draining (1 processes running")
    assert lu.srv.terminate(timeout=LONG_DRAIN_MS / 2000) == 0   # not the drain's end
    wait_until(lambda: not pid_alive(child), what="the process to be killed")
    assert b"Upgrade: drained; starting" not in lu.srv.stderr()
    assert len(urls(lu.srv)) == 1
