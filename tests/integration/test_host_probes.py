# SPDX-License-Identifier: MIT
"""uexec's view of the host against conftest.HostProbes (issue 11).

The probes decide which tests run; these tests make sure they decide as uexec
does: a host the probes call sandbox-capable gets a working sandbox (and the
sandbox tests run), a host they call incapable gets a server that refuses every
sandboxed request (fail closed), so neither a probe bug nor a uexec
misdetection turns failures into skips. Each test asserts on every host; where
a branch cannot be checked here the test says which one ran.
"""

import gzip
import os
import platform
import re
import tempfile

import pytest

from conftest import HOST
from wsclient import b64, file_uri

REFUSED = {"code": -32602, "message": "sandbox intent cannot be enforced on this executor"}
ENV = {"PATH": "/usr/bin:/bin"}

pytestmark = pytest.mark.needs_programs("/bin/sh")


def _policy(ws, entries=None, network="restricted"):
    entries = entries or [{"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"},
                          {"path": {"type": "special", "value": {"kind": "project_roots"}},
                           "access": "write"}]
    return {"permissions": {"type": "managed",
                            "file_system": {"type": "restricted", "entries": entries},
                            "network": network},
            "cwd": file_uri(ws), "workspaceRoots": [file_uri(ws)],
            "windowsSandboxLevel": "disabled"}


@pytest.fixture
def work():
    """A workspace and an outside file, under /var/tmp (the real policy makes /tmp writable)."""
    base = tempfile.mkdtemp(prefix="uexec-probe-", dir="/var/tmp")
    ws = os.path.join(base, "ws")
    os.mkdir(ws)
    victim = os.path.join(base, "victim.txt")
    with open(victim, "w") as f:
        f.write("original\n")
    yield ws, victim
    for d, dirs, files in os.walk(base, topdown=False):
        for n in files:
            os.unlink(os.path.join(d, n))
        for n in dirs:
            os.rmdir(os.path.join(d, n))
    os.rmdir(base)


def test_sandbox_support_as_probed(server, work):
    """Sandbox-capable host (probe): uexec announces the probed Landlock ABI and runs a
    sandboxed process that cannot write outside. Otherwise: uexec says what the host
    lacks and refuses every restricting request, process and filesystem alike, with
    -32602 and without running anything (fail closed); `disabled` still runs."""
    ws, victim = work
    missing = HOST.missing("sandbox")
    c = server.connect()
    log = server.log()
    if missing is None:
        level = server.landlock_level    # the kernel's ABI, or the suite's level below it
        assert "Sandbox ready: Landlock ABI %d, mount namespaces, seccomp" % level in log, log
        assert "Sandbox mechanisms at Landlock ABI %d: " % level in log, log
        assert "Sandboxed processes will be refused" not in log, log
        res = c.start("sbx", ["/bin/sh", "-c", "echo x > %s; echo in > inside" % victim],
                      cwd=ws, env=ENV, sandbox=_policy(ws))
        assert res["sandboxType"] == "linuxSeccomp"
        run = c.collect("sbx")
        assert b"Read-only file system" in run.stderr and run.exit_code == 0, run.data()
        with open(os.path.join(ws, "inside")) as f:
            assert f.read() == "in\n"
    else:
        assert "Sandboxed processes will be refused: this host lacks " in log, log
        assert "Sandbox ready" not in log, log
        marker = os.path.join(ws, "ran")
        for i, sb in enumerate([
                _policy(ws),
                _policy(ws, [{"path": {"type": "special", "value": {"kind": "root"}},
                              "access": "read"}]),
                _policy(ws, network="enabled"),
                {"permissions": {"type": "external", "network": "restricted"},
                 "windowsSandboxLevel": "disabled"},
                {"permissions": {"type": "managed", "file_system": {"type": "unrestricted"},
                                 "network": "enabled"}, "windowsSandboxLevel": "disabled"}]):
            for tty in (False, True):
                err = c.error("process/start", {
                    "processId": "r%d-%s" % (i, tty), "argv": ["/bin/sh", "-c",
                                                              "echo x > %s; touch %s" % (victim, marker)],
                    "cwd": file_uri(ws), "env": ENV, "tty": tty, "sandbox": sb})
                assert err == REFUSED, sb
        sb = _policy(ws)
        assert c.error("fs/writeFile", {"path": file_uri(marker), "dataBase64": b64(b"x"),
                                        "sandbox": sb}) == REFUSED
        assert c.error("fs/readFile", {"path": file_uri(victim), "sandbox": sb}) == REFUSED
        assert c.error("fs/readDirectory", {"path": file_uri(ws), "sandbox": sb}) == REFUSED
        assert c.error("fs/remove", {"path": file_uri(victim), "sandbox": sb}) == REFUSED
        with open(victim) as f:
            assert f.read() == "original\n"
        assert os.listdir(ws) == []
        res = c.start("dis", ["/bin/sh", "-c", "echo ok"], env=ENV,
                      sandbox={"permissions": {"type": "disabled"}, "windowsSandboxLevel": "disabled"})
        assert res["sandboxType"] == "linuxSeccomp" and c.collect("dis").stdout == b"ok\n"
    c.ws.abort()


@pytest.mark.needs("sandbox")
def test_pid_namespace_as_probed(server, work):
    """uexec-init found (probe) <=> a sandboxed command is pid 2 of its own namespace;
    uexec warns exactly when it did not find it."""
    ws, _ = work
    c = server.connect()
    run = c.run("pid", ["/bin/sh", "-c", "echo $$"], cwd=ws, env=ENV, sandbox=_policy(ws))
    log = server.log()
    if HOST.missing("uexec-init") is None:
        assert run.stdout == b"2\n", run.data()
        assert "sandboxed processes will share the host's PID namespace" not in log, log
    else:
        assert run.stdout != b"2\n", run.data()
        assert "sandboxed processes will share the host's PID namespace" in log, log
    c.ws.abort()


@pytest.mark.needs("listener-guard")
def test_listener_guard_where_probed(server):
    """Where the probes see cgroup v2, BPF and /run, uexec sets the guard up in a
    child of its own cgroup v2 directory (wherever the host mounts cgroup2)."""
    log = server.log()
    own, _ = HOST.own_cgroup2_dir()
    m = re.search(r"Listener guard: sandboxed processes cannot connect to port %d \(cgroup (.+)\)$"
                  % server.port, log, re.M)
    assert m, log
    assert m.group(1) == os.path.join(own, "uexec-%d.sandbox" % server.pid), (m.group(1), own)
    assert os.path.isdir(m.group(1))
    assert "only this server's port is guarded" not in log, log


def _kernel_config():
    for path in ("/proc/config.gz", "/boot/config-" + platform.release()):
        try:
            opener = gzip.open if path.endswith(".gz") else open
            with opener(path, "rt") as f:
                return path, f.read()
        except OSError:
            continue
    return None, None


@pytest.mark.needs("x86_64")
def test_foreign_abi_probes_agree_with_kernel_config():
    """The i386/x32 probes classify the host (never "probe failed"), and agree with the
    kernel configuration where it is readable: an ABI compiled out is absent; x32
    compiled in is present (i386 may still be off: ia32_emulation=0, a hypervisor)."""
    i386, x32 = HOST.i386_abi(), HOST.x32_abi()
    assert i386.present is not None, i386.detail
    assert x32.present is not None, x32.detail
    path, config = _kernel_config()
    if config is None:
        pytest.skip("needs the kernel configuration (/proc/config.gz or /boot/config-%s) to "
                    "compare with: i386 %s; x32 %s" % (platform.release(), i386.detail, x32.detail))
    ia32_on = re.search(r"^CONFIG_IA32_EMULATION=y", config, re.M)
    x32_on = re.search(r"^CONFIG_X86_X32_ABI=y", config, re.M)
    if not ia32_on:
        assert not i386.present, (path, i386.detail)
    assert bool(x32.present) == bool(x32_on), (path, x32.detail)
