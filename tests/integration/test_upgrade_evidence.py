# SPDX-License-Identifier: MIT
"""Live upgrade of the denial evidence sources (issue 26, docs/UPGRADE.md "Denial
evidence"): the BPF tracer is handed to the new binary, attached, instead of loaded
again: the new binary says it adopted it and did not load the module; a sandboxed
process denied a syscall while the new binary is held back (between the old binary's
QUIESCE and the new one's RESTORE) gets that denial reported from evidence after the
upgrade, which no reader would have seen with the tracer loaded afresh; no fd is left
once the processes are gone, and two upgrades in a row hand it over twice."""

import errno
import os
import re

import pytest

from conftest import EVENT_TIMEOUT, UEXEC_BIN, children_of, settled_fd_count, wait_until
from test_sandbox import ENV, ws_policy
from test_upgrade import Launch, zombies
from test_upgrade_sandbox import SYS_GETSOCKOPT, evidence_source, mount_points, upgraded

pytestmark = [pytest.mark.needs("x86_64"), pytest.mark.needs("sandbox"),
              pytest.mark.needs_programs("/bin/bash", "/usr/bin/python3")]

ADOPTED = b"Denial evidence: adopted the BPF tracer handed over ("
NOT_LOADED = b"; uexec-bpf.so not loaded"
REFUSED = b"Denial evidence: the BPF tracer handed over cannot be adopted"

# A getsockopt the restricted network's seccomp program refuses (EPERM): decisive
# evidence only through the process's own program (test_upgrade_sandbox.py).
GETSOCKOPT = ("/usr/bin/python3 -c 'import socket; socket.socket(socket.AF_UNIX).getsockopt("
              "socket.SOL_SOCKET, socket.SO_TYPE)' 2>/dev/null || echo sockopt-refused >&2; ")


def bpf_launch(server_factory, tmp_path):
    """A server whose only denial evidence is the BPF tracer, or a skip with its reason."""
    lu = Launch(server_factory, tmp_path, handover=True, args=("--denial-evidence", "bpf"))
    if evidence_source(lu.srv) != "bpf":
        pytest.skip("the BPF denial tracer does not load here: %s" % [
            l for l in lu.srv.stderr().decode(errors="replace").splitlines()
            if "Denial evidence" in l])
    return lu


def test_idle_upgrade_adopts_the_tracer_twice(server_factory, tmp_path):
    """An idle server's upgrade (twice in a row) hands the tracer over: each new binary
    adopts it and loads nothing (the load was most of an idle server's pause); the fd
    count is the same after."""
    lu = bpf_launch(server_factory, tmp_path)
    pid = lu.srv.pid
    fds = settled_fd_count(pid)
    for n in (1, 2):
        lu.usr2()
        lu.wait_log("Upgrade: took over from uexec ", count=n)
        err = lu.srv.stderr()
        assert err.count(ADOPTED) == n and err.count(NOT_LOADED) == n, lu.srv.stderr_tail()
        assert REFUSED not in err and b"Upgrade: no hand-over (" not in err
        assert evidence_source(lu.srv) == "bpf"
        m = re.findall(rb"restored in (\d+) us, paused (\d+) us", err)
        assert len(m) == n, lu.srv.stderr_tail()
    assert lu.srv.pid == pid
    wait_until(lambda: settled_fd_count(pid) == fds, what="the fds of before")


def test_denials_during_the_handovers_are_evidence(server_factory, tmp_path):
    """A sandboxed process across two upgrades in a row, refused a getsockopt (seccomp,
    EPERM) while the first new binary is held back and a write outside its writable root
    (a read-only mount, EROFS) while the second one is: the tracer stayed attached and the
    records waited in the ring, so process/exited lists both refusals from evidence, the
    first one carried from the binary that read it (without the hand-over neither reaches
    a reader: no `denials`, sandboxDenied from the heuristic); after its close no fd, child
    or zombie is left."""
    ws, fifo, marker = tmp_path / "ws", str(tmp_path / "fifo"), tmp_path / "in-exec"
    go, outside = tmp_path / "go", tmp_path / "outside"
    deny = [tmp_path / "deny1", tmp_path / "deny2"]
    denied = [tmp_path / "ws" / "denied1", tmp_path / "ws" / "denied2"]
    ws.mkdir()
    os.mkfifo(fifo)
    lu = bpf_launch(server_factory, tmp_path)
    pid = lu.srv.pid
    c = lu.srv.connect()
    fds = settled_fd_count(pid)
    wait = "while [ ! -e %s ]; do sleep 0.01; done; "
    script = ("echo started; " + wait % deny[0] + GETSOCKOPT + "touch %s; " % denied[0] +
              wait % deny[1] + "(echo x > %s) 2>/dev/null || echo outside-refused >&2; " % outside +
              "touch %s; " % denied[1] + wait % go + "echo end; exit 5")
    c.start("a", ["/bin/bash", "-c", script], cwd=str(ws), env=ENV, sandbox=ws_policy(str(ws)))
    run = c.collect_until_output("a", b"started\n")
    lu.hold_new_binary(marker, fifo)
    for n in (1, 2):
        marker.unlink(missing_ok=True)
        lu.usr2()
        lu.wait_log(" fds over to ", count=n)
        wait_until(marker.exists, what="new binary %d started" % n)
        # The old binary is gone, the new one not reading yet: the refusal happens now.
        deny[n - 1].touch()
        wait_until(denied[n - 1].exists, what="refusal %d made" % n)
        with open(fifo, "w") as f:
            f.write("go\n")
        lu.wait_log("Upgrade: took over from uexec ", count=n)
        err = lu.srv.stderr()
        assert err.count(ADOPTED) == n and err.count(NOT_LOADED) == n, lu.srv.stderr_tail()
        assert len(re.findall(rb"adopted the BPF tracer handed over \([^)]*, attached, "
                              rb"1 cgroups", err)) == n, lu.srv.stderr_tail()
        assert REFUSED not in err and b"Upgrade: no hand-over (" not in err
        assert re.search(rb"\(1 sessions, 1 processes, 1 connections\)", err)
    go.touch()
    run = c.collect("a", run=run, timeout=EVENT_TIMEOUT)
    assert run.exit_code == 5 and run.stdout == b"started\nend\n", run.exited
    assert run.stderr == b"sockopt-refused\noutside-refused\n", run.stderr
    assert not outside.exists()
    run.check_sequencing()
    exited = run.exited
    assert exited["sandboxDenied"] is True, exited
    denials = exited.get("denials") or []
    seccomp = [d for d in denials if d["kind"] == "seccomp" and d.get("syscall") == SYS_GETSOCKOPT]
    mount = [d for d in denials if d["kind"] == "mount" and d.get("errno") == errno.EROFS]
    # The first read by the first new binary (carried), the second by the second.
    assert len(seccomp) == 1 and len(mount) == 1, exited
    wait_until(lambda: mount_points(ws) == [], what="the mount points removed")
    assert zombies(pid) == [] and children_of(pid) == {}
    wait_until(lambda: settled_fd_count(pid) == fds, what="the fds of before")


def test_tracer_that_cannot_be_adopted_is_loaded_again(server_factory, tmp_path):
    """A new binary handed a tracer it refuses (here its ring's fd replaced by /dev/null
    on the way) does not fail the upgrade: it logs why, loads a tracer as at start and
    tracks the running sandboxed process with it (a refusal after the upgrade is evidence);
    the fds handed over and not adopted are closed, so none is left after the close."""
    ws, go, done = tmp_path / "ws", tmp_path / "go", tmp_path / "ws" / "done"
    ws.mkdir()
    lu = bpf_launch(server_factory, tmp_path)
    pid = lu.srv.pid
    c = lu.srv.connect()
    fds = settled_fd_count(pid)
    c.start("a", ["/bin/bash", "-c", "echo started; while [ ! -e %s ]; do sleep 0.01; done; %s"
                  "touch %s; echo end; exit 6" % (go, GETSOCKOPT, done)],
            cwd=str(ws), env=ENV, sandbox=ws_policy(str(ws)))
    run = c.collect_until_output("a", b"started\n")
    # BPF_MAP_TYPE_RINGBUF (27): the ring buffer map's fd becomes /dev/null.
    lu.replace("import os, sys\n"
               "if 'UEXEC_UPGRADE_STATE_FD' in os.environ:\n"
               "    for fd in os.listdir('/proc/self/fdinfo'):\n"
               "        try:\n"
               "            info = open('/proc/self/fdinfo/' + fd).read()\n"
               "        except OSError:\n"
               "            continue\n"
               "        if 'map_type:\\t27\\n' in info:\n"
               "            null = os.open('/dev/null', os.O_RDONLY)\n"
               "            os.dup2(null, int(fd))\n"
               "            os.close(null)\n"
               "os.execv(%r, [sys.argv[0]] + sys.argv[1:])\n"
               % os.path.realpath(UEXEC_BIN), interpreter="/usr/bin/python3")
    err = upgraded(lu)
    assert REFUSED + b" (the ring is not a BPF map); loading another" in err, lu.srv.stderr_tail()
    assert ADOPTED not in err
    assert re.search(rb"\(1 sessions, 1 processes, 1 connections\)", err), lu.srv.stderr_tail()
    assert evidence_source(lu.srv) == "bpf"
    go.touch()
    run = c.collect("a", run=run, timeout=EVENT_TIMEOUT)
    assert run.exit_code == 6 and run.stdout == b"started\nend\n", run.exited
    exited = run.exited
    seccomp = [d for d in exited.get("denials") or []
               if d["kind"] == "seccomp" and d.get("syscall") == SYS_GETSOCKOPT]
    assert exited["sandboxDenied"] is True and len(seccomp) == 1, exited
    wait_until(lambda: mount_points(ws) == [], what="the mount points removed")
    assert zombies(pid) == [] and children_of(pid) == {}
    wait_until(lambda: settled_fd_count(pid) == fds, what="the fds of before")
