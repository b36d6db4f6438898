# SPDX-License-Identifier: MIT
"""Live upgrade of sandboxed processes (issue 26, docs/UPGRADE.md "Sandboxed
processes"): a sandboxed process keeps running across SIGUSR2 with its output
whole, once and in order, its seqs continuous and its real exit code; its
sandbox is still enforced after; the mount points synthesized for its missing
protected names (.git, .agents, .codex, .aws) stay on the host, locked, while
it or another process of the same workspace runs, and the new binary removes
them when the last one closes; with a denial evidence source on the host, what
it is denied after the upgrade is reported from evidence (the `denials`
member), the seccomp program it runs under having travelled too. (Processes with a
managed network: test_upgrade_netproxy.py.)"""

import errno
import fcntl
import os
import re

import pytest

from conftest import EVENT_TIMEOUT, children_of, settled_fd_count, wait_until
from test_sandbox import ENV, PROTECTED, ws_policy
from test_upgrade import Launch, check_counter, proc_state, zombies

pytestmark = [pytest.mark.needs("x86_64"), pytest.mark.needs("sandbox"),
              pytest.mark.needs_programs("/bin/bash", "/bin/sh", "/usr/bin/python3")]


def counter(go, then="", code=7):
    """Counts until `go` exists, runs `then` (its refusals said on stderr), ends with
    "end" and exit code `code` (test_upgrade.check_counter's shape)."""
    return ("i=0; while [ ! -e %s ]; do echo $i; i=$((i+1)); sleep 0.01; done; %s"
            "echo end; exit %d" % (go, then, code))


# getsockopt(2) on x86_64: the restricted network's seccomp program refuses it (EPERM)
# whatever the socket, and nothing else in the sandbox does (it is not one of the calls
# only a sandbox refuses, so the tracer's EPERM is evidence only through the program).
SYS_GETSOCKOPT = 55


def refusals(outside):
    """Four things the sandbox refuses: a write outside the writable root (a read-only
    mount: EROFS), a write into a synthesized .git (read-only), an AF_INET socket and a
    getsockopt on a unix socket (seccomp, network restricted)."""
    return ("echo x > %s || echo outside-refused >&2; "
            "touch .git/x || echo git-refused >&2; "
            "/usr/bin/python3 -c 'import socket; socket.socket()' 2>/dev/null || "
            "echo inet-refused >&2; "
            "/usr/bin/python3 -c 'import socket; socket.socket(socket.AF_UNIX).getsockopt("
            "socket.SOL_SOCKET, socket.SO_TYPE)' 2>/dev/null || echo sockopt-refused >&2; "
            % outside)


def mount_points(ws):
    return sorted(n for n in PROTECTED if os.path.lexists(os.path.join(ws, n)))


def locked(path):
    """True if another holder keeps a flock on the directory (uexec's shared one)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except OSError as e:
        assert e.errno == errno.EWOULDBLOCK, e
        return True
    finally:
        os.close(fd)


def evidence_source(srv):
    """The server's denial evidence source, from its start-up line ("none" if none)."""
    m = re.findall(rb"Denial evidence: (audit \+ bpf|audit|bpf|none)", srv.stderr())
    return m[0].decode() if m else "none"


def upgraded(lu, signal=True):
    """SIGUSR2 (unless sent already), then the new binary's take-over: its log."""
    if signal:
        lu.usr2()
    lu.wait_log("Upgrade: took over from uexec ")
    err = lu.srv.stderr()
    assert b"Upgrade: no hand-over (" not in err, lu.srv.stderr_tail()
    return err


@pytest.fixture
def ws(tmp_path):
    d = tmp_path / "ws"
    d.mkdir()
    return d


def test_sandboxed_processes_are_handed_over(server_factory, tmp_path, ws):
    """Two sandboxed processes of one workspace (its four mount points synthesized,
    each used by both) across an upgrade: the new binary adopts them with the registry
    (the mount points stay, still locked), the first to close after leaves the mount
    points to the other, the last one's close removes them; both outputs are whole with
    continuous seqs and real exit codes, the sandbox refuses after the upgrade what it
    refused before, and no fd, process or zombie is left."""
    go, go_b, outside = tmp_path / "go", tmp_path / "go-b", tmp_path / "outside"
    lu = Launch(server_factory, tmp_path, handover=True)
    pid = lu.srv.pid
    c = lu.srv.connect()
    fds = settled_fd_count(pid)
    sb = ws_policy(str(ws))
    c.start("a", ["/bin/bash", "-c", counter(go, refusals(outside))], cwd=str(ws), env=ENV,
            sandbox=sb)
    c.start("b", ["/bin/bash", "-c", counter(go_b, code=3)], cwd=str(ws), env=ENV, sandbox=sb)
    run = c.collect_until_output("a", b"\n3\n")
    run_b = c.collect_until_output("b", b"\n3\n")
    assert mount_points(ws) == sorted(PROTECTED)
    assert all(locked(str(ws / n)) for n in PROTECTED)
    err = upgraded(lu)
    assert re.search(rb"\(1 sessions, 2 processes, 1 connections\)", err), lu.srv.stderr_tail()
    assert lu.srv.pid == pid
    # The mount points' flocks never left: the fds holding them were handed over.
    assert mount_points(ws) == sorted(PROTECTED)
    assert all(locked(str(ws / n)) for n in PROTECTED)
    # The same connection, the output goes on.
    run = c.collect_until_output("a", b"\n%d\n" % (int(run.stdout.split()[-1]) + 20), run=run)
    # b closes first: its plan puts its references back, a still uses every mount point.
    go_b.touch()
    run_b = c.collect("b", run=run_b)
    assert run_b.exit_code == 3 and run_b.stdout.split(b"\n")[-2] == b"end"
    run_b.check_sequencing()
    assert mount_points(ws) == sorted(PROTECTED), "b's close removed a's mount points"
    assert all(locked(str(ws / n)) for n in PROTECTED)
    go.touch()
    run = c.collect("a", run=run)
    check_counter(run)
    # Still enforced after the upgrade.
    said = run.stderr.decode(errors="replace")
    for refused in ("outside-refused", "git-refused", "inet-refused", "sockopt-refused"):
        assert refused in said, said
    assert not outside.exists() and not (ws / ".git" / "x").exists()
    assert run.exited["sandboxDenied"] is True, run.exited
    # The last user closed: the new binary removed every mount point.
    wait_until(lambda: mount_points(ws) == [], what="the mount points removed")
    assert os.listdir(ws) == []
    assert zombies(pid) == [] and children_of(pid) == {}
    wait_until(lambda: settled_fd_count(pid) == fds, what="the fds of before")


def test_denials_after_the_upgrade_are_evidence(server_factory, tmp_path, ws):
    """With a denial evidence source on the host (audit records, the BPF tracer), the
    process's tree is tracked again by the new binary: what it is refused after the
    upgrade comes back as evidence in process/exited's `denials`, its refused getsockopt
    among them (the tracer's EPERM is judged with the process's own seccomp program,
    which travelled by its id: without it, that EPERM is of unknown cause)."""
    go, outside = tmp_path / "go", tmp_path / "outside"
    # auto: audit where the host has it on (auditing is not turned on for the test), the
    # tracer where it loads
    lu = Launch(server_factory, tmp_path, handover=True, args=("--denial-evidence", "auto"))
    source = evidence_source(lu.srv)
    if source == "none":
        pytest.skip("no denial evidence source on this host: %s" % [
            l for l in lu.srv.stderr().decode(errors="replace").splitlines()
            if "Denial evidence" in l])
    c = lu.srv.connect()
    c.start("a", ["/bin/bash", "-c", counter(go, refusals(outside))], cwd=str(ws), env=ENV,
            sandbox=ws_policy(str(ws)))
    run = c.collect_until_output("a", b"\n3\n")
    upgraded(lu)
    assert evidence_source(lu.srv) == source
    go.touch()
    run = c.collect("a", run=run, timeout=EVENT_TIMEOUT)
    check_counter(run)
    exited = run.exited
    assert exited["sandboxDenied"] is True, exited
    seccomp = {d.get("syscall") for d in exited.get("denials") or [] if d["kind"] == "seccomp"}
    assert SYS_GETSOCKOPT in seccomp, (source, exited)
    wait_until(lambda: mount_points(ws) == [], what="the mount points removed")


def test_sandboxed_process_exiting_during_the_handover(server_factory, tmp_path, ws):
    """A sandboxed process that is refused a write and exits while the new binary is held
    back (a zombie when the state is read): the new binary tracks its tree, reaps it with
    its real status, reports it (sandboxDenied from what can still decide: its evidence
    missed the gap) on the same connection, and its close removes the mount points."""
    late, fifo, marker, outside = (tmp_path / "late", str(tmp_path / "fifo"),
                                   tmp_path / "in-exec", tmp_path / "outside")
    os.mkfifo(fifo)
    lu = Launch(server_factory, tmp_path, handover=True, args=("--denial-evidence", "auto"))
    pid = lu.srv.pid
    c = lu.srv.connect()
    fds = settled_fd_count(pid)
    c.start("late", ["/bin/bash", "-c", "echo started; while [ ! -e %s ]; do sleep 0.01; done; "
                     "echo x > %s; exit 4" % (late, outside)],
            cwd=str(ws), env=ENV, sandbox=ws_policy(str(ws)))
    run = c.collect_until_output("late", b"started\n")
    child = [p["pid"] for p in c.result("process/list", {})["processes"]][0]
    assert mount_points(ws) == sorted(PROTECTED)
    # The new binary is held back once exec'd (Python: a shell would reap the zombie).
    lu.hold_new_binary(marker, fifo)
    lu.usr2()
    lu.wait_log(" fds over to ")
    wait_until(marker.exists, what="the new binary started")
    late.touch()
    wait_until(lambda: proc_state(child) == "Z", what="the sandboxed process exited, not reaped")
    assert mount_points(ws) == sorted(PROTECTED)
    with open(fifo, "w") as f:
        f.write("go\n")
    err = upgraded(lu, signal=False)
    assert re.search(rb"\(1 sessions, 1 processes, 1 connections\)", err), lu.srv.stderr_tail()
    run = c.collect("late", run=run)
    assert run.exit_code == 4 and run.stdout == b"started\n", run.exited
    assert b"Read-only file system" in run.stderr, run.stderr
    assert run.exited["sandboxDenied"] is True, run.exited
    run.check_sequencing()
    assert not outside.exists()
    wait_until(lambda: mount_points(ws) == [], what="the mount points removed")
    assert zombies(pid) == [] and children_of(pid) == {}
    wait_until(lambda: settled_fd_count(pid) == fds, what="the fds of before")


def test_credential_masking_ca_leaves_no_files(server_factory, tmp_path):
    """Credential masking's CA keeps its key in memory and its certificate and bundle in a
    private directory that goes with the server: an upgrade, which ends the old binary's
    memory without its teardown, removes that directory (no process trusting it can be
    running: one with a proxy keeps the dry run), and the new binary makes another CA
    for the next process that needs one."""
    srvtmp = tmp_path / "srvtmp"
    srvtmp.mkdir()
    lu = Launch(server_factory, tmp_path, handover=True, env=dict(os.environ, TMPDIR=str(srvtmp)))
    c = lu.srv.connect()
    np = {"proxy": {"enabled": True, "enableSocks5": False, "enableSocks5Udp": False,
                    "allowUpstreamProxy": False, "dangerouslyAllowAllUnixSockets": False,
                    "mode": "full", "domains": {"127.0.0.1": "allow"},
                    "allowLocalBinding": False, "credentialMasking": True}}

    def bundle(pid):
        c.start(pid, ["/bin/sh", "-c", "echo $SSL_CERT_FILE"], env=ENV, networkProxy=np)
        run = c.collect(pid)
        assert run.exit_code == 0, run.stderr
        path = run.stdout.decode().strip()
        assert path.startswith(str(srvtmp) + "/") and os.path.exists(path), path
        return os.path.dirname(path)

    old = bundle("before")
    upgraded(lu)
    assert not os.path.exists(old)
    new = bundle("after")
    assert new != old and sorted(os.listdir(new)) == ["ca-bundle.pem", "ca.pem"]
    assert os.listdir(srvtmp) == [os.path.basename(new)]
