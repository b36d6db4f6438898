# SPDX-License-Identifier: MIT
"""The sandbox at every Landlock level (issue 13 item 1, docs/SECURITY.md "Landlock levels").

uexec builds the strongest Landlock ruleset the kernel offers (ABI 0 to 7) and
replaces what an older ABI lacks with another mechanism. Each server here runs
with the testing flag --landlock-abi-max N, so one host plays every kernel:

* the escape tests of test_sandbox.py and a few policy tests, rerun at each level
  of LEVELS (their assertions are the same at every level unless they say so);
* one test per replacement mechanism, at every level where Landlock lacks the
  feature, and above it as a control:
    signal scoping (ABI 6)         -> the PID namespace        test_signal_host_process
    abstract-socket scoping (6)    -> a network namespace      test_abstract_socket_of_host
    TCP bind/connect (ABI 4)       -> seccomp + network ns     test_tcp_to_host_listener
    truncate (ABI 3)               -> read-only mounts         test_truncate_read_only_file
    device ioctl (ABI 5)           -> nodev mounts             test_device_node_outside_dev
  and the decisions: restricted reads refused at level 0, and below ABI 6 without
  uexec-init (no PID namespace) every sandbox refused, each naming the mechanism.

The whole of test_sandbox.py at one level: UEXEC_TEST_LANDLOCK_ABI_MAX=N (README.md).
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

import conftest
import test_sandbox as ts
from conftest import HOST, Server
from test_sandbox import (EACCES, ENV, EROFS, PY, REFUSED, area, listeners, managed,  # noqa: F401
                          path_entry, py, read_only_policy, realclient_sandbox, results, sandbox,
                          sh, special, text, ws_policy)
from wsclient import file_uri

ALL_LEVELS = tuple(range(0, 8))
LEVELS = ALL_LEVELS   # the escape subset: ~6 s a level on 2 cores

pytestmark = [pytest.mark.needs("x86_64", "seccomp", "mount-ns"),
              pytest.mark.needs_programs("/bin/bash", "/bin/sh", PY)]

FULL_WRITE = {"type": "external", "network": "restricted"}


# What test_sandbox_uid.py and test_sandbox_nonroot.py collect again with servers of their
# kind (servers.collect_again): the escape subset (section 1) and each mechanism that
# replaces a missing ABI (section 2, with the fixture host_endpoints).
ESCAPE_SUBSET = (
    "test_capabilities_zero_and_fds", "test_deny_entries_hide",
    "test_full_write_network_restricted", "test_hard_link_and_rename_across_roots",
    "test_network_enabled", "test_network_restricted", "test_own_pid_namespace",
    "test_proc_root_escapes", "test_proc_root_of_sibling_sandbox",
    "test_proc_sys_and_sys_writes", "test_protected_existing_dirs",
    "test_protected_missing_dirs", "test_raw_devices", "test_read_only_policy",
    "test_realclient_workspace_write_outcomes", "test_rename_across_directories",
    "test_restricted_reads", "test_seccomp_denied_syscalls",
    "test_setuid_root_file_cannot_be_planted", "test_start_up_announces_level",
    "test_symlink_to_outside_file", "test_sysv_ipc_isolated", "test_write_outside_and_dotdot")
MECHANISMS = (
    "host_endpoints", "test_abstract_socket_of_host", "test_device_node_outside_dev",
    "test_host_mount_made_later", "test_signal_host_process", "test_tcp_to_host_listener",
    "test_truncate_read_only_file")

require_level = conftest.require_level
level_server, lclient, uniq = conftest.level_fixtures(LEVELS)


def level_factory(server_factory, level):
    return lambda *a, **kw: server_factory(*a, landlock_abi_max=level, **kw)


# ==========================================================================
# 1. Escape tests and policy tests of test_sandbox.py, at each level


def test_start_up_announces_level(level_server):
    """Start-up says, once, at which level and by which mechanism each part holds."""
    log = level_server.log()
    lvl = level_server.landlock_level
    assert log.count("Sandbox ready: Landlock ABI %d, mount namespaces, seccomp" % lvl) == 1, log
    m = re.findall(r"Sandbox mechanisms at Landlock ABI %d: (.*)$" % lvl, log, re.M)
    assert len(m) == 1, log
    line = m[0]
    assert ("signals: Landlock scoping + PID namespace" if lvl >= 6
            else "signals: PID namespace") in line, line
    assert ("Landlock abstract-socket scoping" if lvl >= 6 else "a network namespace") in line
    assert ("restricted reads: Landlock" if lvl >= 1
            else "restricted reads: refused (no Landlock)") in line, line


def test_write_outside_and_dotdot(lclient, uniq, area):
    ts.test_write_outside_and_dotdot(lclient, uniq, area)


def test_symlink_to_outside_file(lclient, uniq, area):
    ts.test_symlink_to_outside_file(lclient, uniq, area)


def test_hard_link_and_rename_across_roots(lclient, uniq, area):
    ts.test_hard_link_and_rename_across_roots(lclient, uniq, area)


def test_protected_existing_dirs(lclient, uniq, area):
    ts.test_protected_existing_dirs(lclient, uniq, area)


def test_protected_missing_dirs(lclient, uniq, area):
    ts.test_protected_missing_dirs(lclient, uniq, area)


def test_deny_entries_hide(lclient, uniq, area):
    ts.test_deny_entries_hide(lclient, uniq, area)


def test_realclient_workspace_write_outcomes(lclient, uniq, area):
    ts.test_realclient_workspace_write_outcomes(lclient, uniq, area)


def test_read_only_policy(lclient, uniq, area):
    ts.test_read_only_policy(lclient, uniq, area)


@pytest.mark.parametrize("perm", [
    {"type": "managed", "file_system": {"type": "unrestricted"}, "network": "restricted"},
    FULL_WRITE], ids=["managed-unrestricted", "external"])
def test_full_write_network_restricted(lclient, uniq, area, perm):
    ts.test_full_write_network_restricted(lclient, uniq, area, perm)


def test_proc_root_escapes(lclient, level_server, uniq, area):
    ts.test_proc_root_escapes(lclient, level_server, uniq, area)


@pytest.mark.needs_programs("ps")
def test_own_pid_namespace(lclient, level_server, uniq, area):
    ts.test_own_pid_namespace(lclient, level_server, uniq, area)


def test_proc_root_of_sibling_sandbox(lclient, uniq, area):
    ts.test_proc_root_of_sibling_sandbox(lclient, uniq, area)


def test_proc_sys_and_sys_writes(lclient, uniq, area):
    ts.test_proc_sys_and_sys_writes(lclient, uniq, area)


def test_raw_devices(lclient, uniq, area):
    ts.test_raw_devices(lclient, uniq, area)


def test_seccomp_denied_syscalls(lclient, level_server, uniq, area):
    ts.test_seccomp_denied_syscalls(lclient, level_server, uniq, area)


def test_capabilities_zero_and_fds(lclient, uniq, area):
    ts.test_capabilities_zero_and_fds(lclient, uniq, area, False)


def test_setuid_root_file_cannot_be_planted(lclient, uniq, area):
    ts.test_setuid_root_file_cannot_be_planted(lclient, uniq, area)


def test_sysv_ipc_isolated(lclient, uniq, area):
    ts.test_sysv_ipc_isolated(lclient, uniq, area)


def test_network_restricted(lclient, uniq, area, listeners):
    ts.test_network_restricted(lclient, uniq, area, listeners)


@pytest.mark.needs("network-sandbox")
def test_network_enabled(lclient, uniq, area, listeners):
    ts.test_network_enabled(lclient, uniq, area, listeners)


def test_restricted_reads(lclient, level_server, uniq, area):
    """`minimal` and explicit read entries: enforced by Landlock from ABI 1; at level 0
    refused (fail closed) with the missing mechanism in the log."""
    if level_server.landlock_level >= 1:
        ts.test_minimal_read(lclient, uniq, area)
        ts.test_explicit_path_entries(lclient, uniq, area)
        return
    marker = os.path.join(area.ws, "ran")
    sb = sandbox(managed([special("minimal", "read"), special("project_roots", "write")]),
                 roots=[area.ws], cwd=area.ws)
    err = lclient.error("process/start", {
        "processId": uniq("min"), "argv": ["/bin/sh", "-c", "touch %s" % marker],
        "cwd": file_uri(area.ws), "env": ENV, "tty": False, "sandbox": sb})
    assert err == REFUSED
    assert lclient.error("fs/readFile", {"path": file_uri(area.victim), "sandbox": sb}) == REFUSED
    assert not os.path.exists(marker)
    conftest.wait_until(lambda: "restricted read access (minimal or explicit read entries "
                        "without root) needs Landlock filesystem rules: this kernel offers "
                        "none (Landlock ABI 0)" in level_server.log(), what="the refusal logged")


def test_rename_across_directories(lclient, level_server, uniq, area):
    """Renames and links between directories of a workspace work at every level for
    root-read policies (at ABI 1 no Landlock filesystem domain is built for them: one
    would refuse every reparenting); with restricted reads at ABI 1 they fail with
    EXDEV, the documented cost of Landlock ABI 1 (no REFER right)."""
    code = r'''
os.makedirs("a"); os.makedirs("b"); open("a/f", "w").write("x")
t("rename", lambda: os.rename("a/f", "b/f"))
t("link", lambda: os.link("a/f" if os.path.exists("a/f") else "b/f", "b/g" if os.path.exists("a/f") else "a/g"))
'''
    run = py(lclient, uniq, code, area.ws, ws_policy(area.ws))
    assert results(run) == {"rename": "ok", "link": "ok"}, text(run)
    if level_server.landlock_level == 0:
        return   # restricted reads refused (test_restricted_reads)
    ws2 = os.path.join(area.base, "ws2")
    os.makedirs(ws2)
    conftest.own(ws2)
    sb = sandbox(managed([special("minimal", "read"), special("project_roots", "write")]),
                 roots=[ws2])
    run = py(lclient, uniq, code, ws2, sb)
    want = "EXDEV" if level_server.landlock_level == 1 else "ok"
    assert results(run) == {"rename": want, "link": want}, text(run)


# ==========================================================================
# 2. Each mechanism that replaces a missing ABI, at every level


level = conftest.level_fixture(ALL_LEVELS)


def test_signal_host_process(server_factory, uniq, area, level):
    """Signal scoping (ABI 6) -> the PID namespace: a sandboxed process (workspace or
    full-disk write) cannot signal a host process of the same uid, nor the server, by
    pid, pidfd or kill(-1). Full-disk write has a PID namespace only below ABI 6
    (above it, Landlock refuses with EPERM)."""
    srv = level_factory(server_factory, level)()
    c = srv.connect()
    ids = conftest.sandboxed_ids()   # not root (non-root server, --sandbox-uid): the victim is of that uid
    victim = subprocess.Popen(["sleep", "1000"], start_new_session=True,
                              **(dict(user=ids[0], group=ids[1], extra_groups=[]) if ids else {}))
    try:
        for name, sb in (("workspace", ws_policy(area.ws)), ("full-write", sandbox(FULL_WRITE))):
            code = r'''
import signal
def pidfd_signal(tgt, sig):
    fd = libc.syscall(ctypes.c_long(434), ctypes.c_long(tgt), ctypes.c_long(0))
    if fd < 0:
        raise OSError(ctypes.get_errno(), "pidfd_open")
    return sc(424, fd, sig, 0, 0)
for tgt in (%d, %d):
    t("kill0_%%d" %% tgt, lambda: os.kill(tgt, 0))
    t("term_%%d" %% tgt, lambda: os.kill(tgt, signal.SIGTERM))
    t("pidfd_%%d" %% tgt, lambda: pidfd_signal(tgt, signal.SIGTERM))
''' % (victim.pid, srv.pid)
            run = py(c, uniq, code, area.ws, sb)
            r = results(run)
            # not in the sandbox's PID namespace (ESRCH), or refused by Landlock (EPERM)
            outside = "EPERM" if name == "full-write" and level >= 6 else "ESRCH"
            for tgt in (victim.pid, srv.pid):
                for k in ("kill0", "term", "pidfd"):
                    assert r.get("%s_%d" % (k, tgt)) == outside, (name, k, text(run))
            assert conftest.pid_alive(victim.pid) and conftest.pid_alive(srv.pid), name
    finally:
        victim.kill()
        victim.wait()
        c.ws.abort()
    assert ts.server_answers(srv.connect())


NETNS_CODE = r'''
TAG, PORT = %r, %d
host_ns = %r
t("same_netns", lambda: "SAME" if os.readlink("/proc/self/ns/net") == host_ns else "OTHER")
def abstract_dgram():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.sendmsg([b"x"], [], 0, "\0" + TAG)
def abstract_stream():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect("\0" + TAG + "-s")
def tcp():
    s = socket.socket(); s.settimeout(3); s.connect(("127.0.0.1", PORT))
def tcp_bind():
    s = socket.socket(); s.bind(("127.0.0.1", 0))
t("abstract_dgram", abstract_dgram)
t("abstract_stream", abstract_stream)
t("tcp_connect", tcp)
t("tcp_bind", tcp_bind)
lines = open("/proc/net/tcp").read().splitlines()[1:]
t("listener_visible", lambda: "SEEN" if any(":%%04X " %% PORT in l for l in lines) else "UNSEEN")
'''


@pytest.fixture
def host_endpoints():
    """An abstract datagram and stream socket and a TCP listener of the host."""
    tag = "uexec-lvl-%d-%d" % (os.getpid(), time.monotonic_ns())
    d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    d.bind("\0" + tag)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind("\0" + tag + "-s")
    s.listen(4)
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(4)
    for x in (d, s, tcp):
        x.settimeout(0.3)
    yield tag, d, s, tcp
    for x in (d, s, tcp):
        x.close()


def _net_run(server_factory, uniq, area, level, host_endpoints):
    tag, d, s, tcp = host_endpoints
    srv = level_factory(server_factory, level)()
    c = srv.connect()
    out = {}
    for name, sb in (("workspace", ws_policy(area.ws)), ("full-write", sandbox(FULL_WRITE))):
        code = NETNS_CODE % (tag, tcp.getsockname()[1], os.readlink("/proc/self/ns/net"))
        run = py(c, uniq, code, area.ws, sb)
        out[name] = results(run), text(run)
        assert ts.got_nothing(d, True) and ts.got_nothing(s) and ts.got_nothing(tcp), name
    c.ws.abort()
    return out


def test_abstract_socket_of_host(server_factory, uniq, area, level, host_endpoints):
    """Abstract-socket scoping (ABI 6) -> a network namespace of the sandbox's own when the
    network is restricted: the host's abstract sockets do not exist there (datagram
    sendmsg, which seccomp allows: ECONNREFUSED; from ABI 6 Landlock: EPERM). connect is
    refused by seccomp at every level. The host receives nothing."""
    for name, (r, out) in _net_run(server_factory, uniq, area, level, host_endpoints).items():
        assert r.get("same_netns") == ("SAME" if level >= 6 else "OTHER"), (name, out)
        assert r.get("abstract_dgram") == ("EPERM" if level >= 6 else "ECONNREFUSED"), (name, out)
        assert r.get("abstract_stream") == "EPERM", (name, out)


def test_tcp_to_host_listener(server_factory, uniq, area, level, host_endpoints):
    """TCP rules (ABI 4) -> seccomp (no AF_INET socket, no connect/bind) and, below ABI 6,
    the network namespace: the host's listener is not even listed in /proc/net/tcp."""
    for name, (r, out) in _net_run(server_factory, uniq, area, level, host_endpoints).items():
        assert r.get("tcp_connect") == "EPERM" and r.get("tcp_bind") == "EPERM", (name, out)
        if level < 6:
            assert r.get("listener_visible") == "UNSEEN", (name, out)


def test_truncate_read_only_file(server_factory, uniq, area, level):
    """Truncate (ABI 3) -> the read-only mounts: truncate(2) of a file outside the
    writable roots and of a protected file inside one fails with EROFS at every level
    (below ABI 3 Landlock does not check truncate at all)."""
    os.makedirs(os.path.join(area.ws, ".git"))
    cfg = os.path.join(area.ws, ".git", "config")
    with open(cfg, "w") as f:
        f.write("[core]\n")
    conftest.own(os.path.join(area.ws, ".git"))
    srv = level_factory(server_factory, level)()
    c = srv.connect()
    code = r'''
t("outside", lambda: os.truncate(%r, 0))
t("protected", lambda: os.truncate(".git/config", 0))
t("etc", lambda: os.truncate("/etc/hostname", 0))
fd = os.open(%r, os.O_RDONLY)
t("ftruncate_rdonly", lambda: os.ftruncate(fd, 0))
open("mine", "w").write("12345")
t("inside", lambda: os.truncate("mine", 1))
''' % (area.victim, area.victim)
    with open("/etc/hostname") as f:
        hostname = f.read()
    run = py(c, uniq, code, area.ws, ws_policy(area.ws))
    r = results(run)
    # sandboxed commands not root on the host (a non-root server, --sandbox-uid): root's
    # /etc/hostname is closed by its mode first
    assert {k: r.get(k) for k in ("outside", "protected", "etc")} == \
        {"outside": "EROFS", "protected": "EROFS",
         "etc": "EACCES" if conftest.sandboxed_ids() else "EROFS"}, text(run)
    assert r.get("ftruncate_rdonly") == "EINVAL" and r.get("inside") == "ok", text(run)
    assert area.read(area.victim) == "original\n" and area.read(cfg) == "[core]\n"
    with open("/etc/hostname") as f:
        assert f.read() == hostname
    assert area.read(os.path.join(area.ws, "mine")) == "1"
    c.ws.abort()


DEVICE_CODE = r'''
import fcntl, termios
def ioctl(path):
    fd = os.open(path, os.O_RDONLY)
    fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4)
for p in %r:
    t("rd_" + os.path.basename(p), lambda: os.close(os.open(p, os.O_RDONLY)))
    t("wr_" + os.path.basename(p), lambda: os.close(os.open(p, os.O_WRONLY)))
    t("ioctl_" + os.path.basename(p), lambda: ioctl(p))
t("ioctl_devnull", lambda: ioctl("/dev/null"))
'''


def test_device_node_outside_dev(server_factory, uniq, area, level):
    """Device ioctl (ABI 5) -> nodev mounts: a device node outside the private /dev
    (here copies of /dev/null, outside the writable roots and inside one) cannot even
    be opened (EACCES), so no ioctl reaches its driver at any level; a read-only mount
    alone would not stop it (writes to devices ignore it). /dev/null itself works
    (its ioctl reaches the driver: ENOTTY)."""
    outside = os.path.join(area.out, "nulldev")
    inside = os.path.join(area.ws, "nulldev")
    for p in (outside, inside):
        os.mknod(p, 0o666 | 0o020000, os.makedev(1, 3))
    srv = level_factory(server_factory, level)()
    c = srv.connect()
    run = py(c, uniq, DEVICE_CODE % ([outside, inside],), area.ws, ws_policy(area.ws))
    r = results(run)
    want = {"%s_nulldev" % k: "EACCES" for k in ("rd", "wr", "ioctl")}
    want["ioctl_devnull"] = "ENOTTY"
    assert r == want, text(run)
    c.ws.abort()


# ==========================================================================
# 3. Without uexec-init (no PID namespace)


@pytest.fixture
def copy_without_init(monkeypatch):
    """uexec alone in a fresh directory: no uexec-init beside it."""
    base = tempfile.mkdtemp(prefix="uexec-noinit-", dir="/var/tmp")
    shutil.copy2(os.path.realpath(conftest.UEXEC_BIN), os.path.join(base, "uexec"))
    monkeypatch.setattr(conftest, "UEXEC_BIN", os.path.join(base, "uexec"))
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("lvl", [0, 4, 5, 6], ids=lambda l: "abi%d" % l)
def test_no_pid_namespace_below_abi6_refused(server_factory, uniq, area, copy_without_init, lvl):
    """Below ABI 6 nothing but a PID namespace keeps a sandboxed uid 0 from signalling
    every root process: without uexec-init, sandboxed requests are refused, the log
    naming the missing mechanism; from ABI 6 Landlock scoping suffices and they run."""
    if HOST.landlock_abi()[0] < lvl:
        pytest.skip("needs Landlock ABI %d on the kernel" % lvl)
    srv = server_factory(landlock_abi_max=lvl)
    log = srv.log()
    if "Cannot open" not in log:
        pytest.skip("uexec-init is installed in uexec's libexecdir: cannot run without it")
    assert "Sandbox mechanisms at Landlock ABI %d: " % lvl in log
    c = srv.connect()
    marker = os.path.join(area.ws, "ran")
    for sb in (ws_policy(area.ws), sandbox(FULL_WRITE), realclient_sandbox(area.ws)[1]):
        reply = c.call("process/start", {
            "processId": uniq("noinit"), "argv": ["/bin/sh", "-c", "echo x >> %s" % marker],
            "cwd": file_uri(area.ws), "env": ENV, "tty": False, "sandbox": sb})
        if lvl >= 6:
            assert "error" not in reply, reply
            c.collect(reply["result"]["processId"])
        else:
            assert reply.get("error") == REFUSED, reply
    assert (area.read(marker) == "x\n" * 3) if lvl >= 6 else not os.path.exists(marker)
    if lvl < 6:
        assert "signals: refused (below ABI 6 without uexec-init)" in log, log
        conftest.wait_until(lambda: "signal scoping needs Landlock ABI 6 or a PID namespace: "
                            "this kernel offers Landlock ABI %d and uexec-init was not found"
                            % lvl in srv.log(), what="the refusal logged")
    c.ws.abort()


def test_host_mount_made_later(server_factory, uniq, area, level):
    """A mount the host makes while a sandbox runs (an automount its own access
    triggers, a USB stick) must not appear writable in the sandbox: the mount
    namespace receives host mounts (slave) only where Landlock's filesystem rules
    stop writes anyway; without them (level 0, level 1 for root-read policies) it is
    private, and the new mount is not seen."""
    parent = os.path.join(area.out, "shared")
    os.makedirs(parent)
    # a shared mount, as / is on systemd hosts (propagation reaches slaves only from one)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "uexec-parent", parent], check=True)
    subprocess.run(["mount", "--make-shared", parent], check=True)
    mnt = os.path.join(parent, "later")
    os.makedirs(mnt)
    gate = os.path.join(area.base, "gate")
    try:
        _mount_later(server_factory, uniq, area, level, mnt, gate)
    finally:
        subprocess.run(["umount", "-R", parent], check=False)


def _mount_later(server_factory, uniq, area, level, mnt, gate):
    srv = level_factory(server_factory, level)()
    c = srv.connect()
    pid, _ = ts.start(c, uniq, ["/bin/bash", "-c",
                                "echo ready; while [ ! -e %s ]; do sleep 0.05; done; "
                                "echo x > %s/planted; echo rc=$?; mknod %s/n c 1 3; "
                                "ls -A %s" % (gate, mnt, mnt, mnt)],
                      area.ws, ws_policy(area.ws))
    run = c.collect_until_output(pid, "ready")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "uexec-later", mnt], check=True)
    try:
        open(gate, "w").close()
        run = c.collect(pid, run=run)
        assert not os.path.exists(os.path.join(mnt, "planted")), text(run)
        assert "rc=1" in text(run), text(run)
    finally:
        subprocess.run(["umount", mnt], check=False)
    c.ws.abort()
