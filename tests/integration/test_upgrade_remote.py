# SPDX-License-Identifier: MIT
"""Remote mode across a live upgrade (issue 26, docs/UPGRADE.md "The relay link"): the
relay link and its Noise streams are not handed over. At SIGUSR2 the executor stops
reading the link, leaves the carried connections out of the state (their sessions
detached with a whole resume window), and the link closes at the execve; the new binary,
in the same pid, registers again with the same environment id and dials the rendezvous.
A harness reconnects (the registry's /connect names the newest registration), resumes its
session with resumeSessionId, and reads what its process printed meanwhile: every byte
once, in order, with continuous seqs and the real exit code. Driven with the fake
registry + rendezvous (tests/relay/fake_relay.py) and the Noise harness
(tests/relay/harness.py), as test_relay.py does."""

import base64
import os
import signal
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "relay"))

import harness as H  # noqa: E402
import wsclient  # noqa: E402
from conftest import HOST, UEXEC_BIN, uexec_has_remote  # noqa: E402
from relay_cases import SHELL_PATH, TIMEOUT, relay, run_echo  # noqa: E402,F401
from relay_cases import TOKEN as RC_TOKEN  # noqa: E402
from test_upgrade import check_counter, counter_script  # noqa: E402,F401

pytestmark = [
    pytest.mark.skipif(not uexec_has_remote(), reason="uexec --help does not mention --remote"),
    pytest.mark.needs_programs("/bin/sh", "/bin/sleep"),
]


@pytest.fixture
def executor_cmd():
    HOST.require("io_uring")
    return lambda base, env_id: [UEXEC_BIN, "--remote", base, "--environment-id", env_id]


def wait_log(relay, needle, count=1, timeout=TIMEOUT):
    deadline = time.monotonic() + timeout
    while relay.stderr_text().count(needle) < count:
        assert relay.exe.poll() is None, "the executor exited: %s" % relay.stderr_text()[-3000:]
        assert time.monotonic() < deadline, "%r not in the executor's log: %s" % (
            needle, relay.stderr_text()[-3000:])
        time.sleep(0.02)


def resume(relay, h, sid):
    """What a harness does when its link drops (codex-rs exec-server client_recovery.rs):
    /connect again (the newest registration), a new stream, initialize with resumeSessionId,
    retried while the executor is not back yet or the session is still attached."""
    deadline = time.monotonic() + TIMEOUT
    last = None
    while time.monotonic() < deadline:
        try:
            s = h.open_stream()
            rpc = s.rpc()
            reply = rpc.call("initialize", {"clientName": "upgrade-remote",
                                            "resumeSessionId": sid}, timeout=TIMEOUT)
            if "result" in reply:
                rpc.notify("initialized", {})
                return s, rpc, reply["result"]
            last = reply
            assert reply["error"]["code"] == -32010, reply   # attached still: retry
            s.phys.close()
        except (H.StreamReset, H.RegistryError, wsclient.ConnectionClosed, wsclient.Timeout,
                OSError) as e:
            last = e
        time.sleep(0.1)
    pytest.fail("the session could not be resumed: %r" % (last,))


def read_after(rpc, process_id, after):
    """process/read from after until the process is closed: (chunks, last result)."""
    chunks = []
    deadline = time.monotonic() + TIMEOUT
    while True:
        res = rpc.read(process_id, afterSeq=after, waitMs=1000)
        chunks += res["chunks"]
        if res["chunks"]:
            after = res["chunks"][-1]["seq"]
        if res["closed"]:
            return chunks, res
        assert time.monotonic() < deadline, "process %s not closed" % process_id


def test_harness_resumes_its_session_after_the_upgrade(relay, tmp_path):
    go = tmp_path / "go"
    pid = relay.exe.pid
    exe = os.path.realpath("/proc/%d/exe" % pid)
    h = relay.harness()
    s = h.open_stream()
    rpc = s.rpc()
    sid = rpc.initialize()["sessionId"]
    rpc.start("count", ["/bin/sh", "-c", counter_script(go)], cwd=relay.work,
              env={"PATH": SHELL_PATH})
    run = rpc.collect_until_output("count", b"\n5\n", timeout=TIMEOUT)
    assert len(relay.requests("register")) == 1
    os.kill(pid, signal.SIGUSR2)
    wait_log(relay, "Upgrade: took over from uexec ")
    err = relay.stderr_text()
    # The link closed at QUIESCE, its stream and carried connection with it; the session
    # (detached) and its process were handed over.
    assert "Relay: closing the link for a live upgrade" in err, err[-3000:]
    assert "(1 sessions, 1 processes, 0 connections)" in err, err[-3000:]
    assert "again after a live upgrade: harnesses resume their sessions" in err
    # Same pid, same binary; registered again with the same environment id, and the
    # link back up (the fake's second executor connection, on the new registration).
    assert relay.exe.poll() is None and os.path.realpath("/proc/%d/exe" % pid) == exe
    relay.wait_connected(n=2)
    regs = relay.requests("register")
    assert len(regs) == 2 and all(r["status"] == 200 for r in regs), regs
    # The same identity: harnesses pin the executor's key across a reconnection.
    assert regs[0]["body"]["executor_public_key"] == regs[1]["body"]["executor_public_key"]
    # The old stream went with the old link: the fake closed the harness's connection.
    assert s.phys.wait_closed(TIMEOUT)
    # What the harness saw before: gapless notifications from seq 1.
    before = run.outputs
    assert [p["seq"] for p in run.events] == list(range(1, len(run.events) + 1))
    s2, rpc2, result = resume(relay, h, sid)
    assert result["sessionId"] == sid
    go.touch()
    after, res = read_after(rpc2, "count", before[-1]["seq"])
    assert res["exited"] and res["exitCode"] == 7, res
    seqs = [p["seq"] for p in before] + [c["seq"] for c in after]
    # Output chunks 1..n, then the exit and the close: nextSeq n + 3.
    assert seqs == list(range(1, len(seqs) + 1)), seqs
    assert res["nextSeq"] == len(seqs) + 3, (res["nextSeq"], len(seqs))
    data = run.data() + b"".join(base64.b64decode(c["chunk"]) for c in after)
    lines = data.split(b"\n")
    assert lines[-2:] == [b"end", b""], lines[-3:]
    assert lines[:-2] == [str(i).encode() for i in range(len(lines) - 2)], "output lost"
    # The session goes on: a new process on the resumed stream.
    run_echo(relay, rpc2, "after", "after-upgrade")
    s2.phys.close()


def test_link_comes_back_when_the_upgrade_does_not_go_on(executor_cmd, tmp_path):
    """UEXEC_UPGRADE_DRY_RUN: QUIESCE closed the link, the upgrade stops short of the
    execve, and RESUME dials the rendezvous again with the same registration (no new
    register); the harness resumes its session as after any link drop."""
    from relay_cases import Relay, shim_missing
    why = shim_missing()
    if why:
        pytest.skip(why)
    go = tmp_path / "go"
    r = Relay(executor_cmd, str(tmp_path), env_extra={"UEXEC_UPGRADE_DRY_RUN": "1"})
    try:
        h = r.harness()
        s = h.open_stream()
        rpc = s.rpc()
        sid = rpc.initialize()["sessionId"]
        rpc.start("count", ["/bin/sh", "-c", counter_script(go)], cwd=r.work,
                  env={"PATH": SHELL_PATH})
        run = rpc.collect_until_output("count", b"\n3\n", timeout=TIMEOUT)
        os.kill(r.exe.pid, signal.SIGUSR2)
        wait_log(r, "Upgrade: no hand-over (UEXEC_UPGRADE_DRY_RUN is set)")
        r.wait_connected(n=2)
        assert len(r.requests("register")) == 1
        assert s.phys.wait_closed(TIMEOUT)
        s2, rpc2, result = resume(r, h, sid)
        assert result["sessionId"] == sid
        go.touch()
        after, res = read_after(rpc2, "count", run.outputs[-1]["seq"])
        assert res["exitCode"] == 7, res
        seqs = [p["seq"] for p in run.outputs] + [c["seq"] for c in after]
        assert seqs == list(range(1, len(seqs) + 1)) and res["nextSeq"] == len(seqs) + 3
        data = run.data() + b"".join(base64.b64decode(c["chunk"]) for c in after)
        lines = data.split(b"\n")
        assert lines[:-2] == [str(i).encode() for i in range(len(lines) - 2)]
        assert r.exe.poll() is None
        s2.phys.close()
    finally:
        alive = r.exe.poll() is None
        r.stop()
        assert alive, r.stderr_text()[-3000:]
        assert not r.sanitizer_reports(), r.stderr_text()[-6000:]


class LinkedExecutor:
    """The executor started from a symlink the test controls (the 'new binary' at that
    path can be swapped for a script), as test_upgrade.py's Launch does."""

    def __init__(self, tmp_path):
        self.path = str(tmp_path / "uexec")
        os.symlink(os.path.realpath(UEXEC_BIN), self.path)

    def cmd(self, base, env_id):
        HOST.require("io_uring")
        return [self.path, "--remote", base, "--environment-id", env_id]

    def replace(self, script):
        tmp = self.path + ".new"
        with open(tmp, "w") as f:
            f.write("#!/bin/sh\n" + script)
        os.chmod(tmp, 0o700)
        os.replace(tmp, self.path)


@pytest.mark.parametrize("how", ["rollback", "fallback"])
def test_credential_reaches_the_next_binary(tmp_path, how):
    """The registry credential, taken out of the environment at start, reaches the binary
    an upgrade execs: the one rolled back to when the new binary refuses its arguments
    (the harness then resumes its session), and the one the fallback starts fresh after
    its drain (a new session works). Without it either would refuse to start."""
    from relay_cases import Relay, shim_missing
    why = shim_missing()
    if why:
        pytest.skip(why)
    (tmp_path / "r").mkdir()
    ex = LinkedExecutor(tmp_path)
    r = Relay(ex.cmd, str(tmp_path / "r"))
    try:
        pid = r.exe.pid
        h = r.harness()
        s = h.open_stream()
        rpc = s.rpc()
        sid = rpc.initialize()["sessionId"]
        real = os.path.realpath(UEXEC_BIN)
        if how == "rollback":
            ex.replace('[ -n "$UEXEC_UPGRADE_STATE_FD" ] && set -- "$@" --no-such-option\n'
                       'exec "%s" "$@"\n' % real)
        else:
            ex.replace('if [ "$1" = --check-upgrade ]; then echo "uexec 9.9 cannot take over";'
                       ' exit 1; fi\nexec "%s" "$@"\n' % real)
        os.kill(pid, signal.SIGUSR2)
        if how == "rollback":
            wait_log(r, "(rolled back: the new binary could not take over)")
        else:
            wait_log(r, "Upgrade: drained; starting %s fresh in this pid" % ex.path)
        r.wait_connected(n=2)
        assert r.exe.poll() is None and r.exe.pid == pid
        regs = r.requests("register")
        assert len(regs) == 2 and all(x["status"] == 200 for x in regs), regs
        assert all(x["headers"].get("authorization") == "Bearer " + RC_TOKEN for x in regs)
        assert "requires API key authentication" not in r.stderr_text()
        if how == "rollback":
            s2, rpc2, result = resume(r, h, sid)
            assert result["sessionId"] == sid
        else:
            s2 = h.open_stream()
            rpc2 = s2.rpc()
            assert rpc2.initialize()["sessionId"] != sid
        run_echo(r, rpc2, "p", "after-" + how)
        s2.phys.close()
    finally:
        alive = r.exe.poll() is None
        r.stop()
        assert alive, r.stderr_text()[-3000:]
        assert not r.sanitizer_reports(), r.stderr_text()[-6000:]
