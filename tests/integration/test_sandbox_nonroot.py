# SPDX-License-Identifier: MIT
"""A non-root uexec (issue 13 item 2, docs/SECURITY.md "Non-root uexec").

The tests stay root; every uexec here runs as another uid (conftest.NONROOT_UID:
$UEXEC_TEST_AS_UID, else 64123, which needs no passwd entry), started through
`setpriv --reuid --regid --clear-groups` with HOME and TMPDIR of its own, and the
scratch trees of test_sandbox.py are handed to that uid (conftest.own), so that
only the sandbox, never file permissions, keeps outside/ unchanged.

* the escape subset of test_sandbox_levels.py at Landlock levels 0, 4 and 7
  (each sandbox built in a user namespace of its own: the uid and gid mapped to
  themselves, as bubblewrap maps an unprivileged caller);
* what is particular to it: the identity inside, unsandboxed requests run as that
  uid, network access refused without the listener guard (root only), the fs
  helper, and user namespaces blocked (user.max_user_namespaces=0 inside a user
  namespace made for the test, never the host's setting) refused, the log naming
  the setting.

The whole sandbox suite as non-root: UEXEC_TEST_AS_UID=UID[:GID] (README.md).
"""

import base64
import os
import re

import pytest

import conftest
import test_sandbox as ts
from conftest import HOST, Server
# The fixtures (by name) and the escape subset, collected again here with this module's
# level_server: every test_* imported below runs against a non-root uexec.
from test_sandbox import (EROFS, PY, REFUSED, area, listeners, managed, read_only_policy,  # noqa: F401
                          sandbox, sh, special, text, ws_policy)
import test_sandbox_levels
import test_sandbox_rootwrite
from wsclient import file_uri

LEVELS = (0, 4, 7)
UID, GID = conftest.NONROOT_UID

pytestmark = [pytest.mark.needs("x86_64", "seccomp", "root", "unprivileged-server"),
              pytest.mark.needs_programs("/bin/bash", "/bin/sh", PY, "setpriv")]


# Every Server of this module (and own()) uses UID, whatever the suite's setting.
as_nonroot = conftest.kind_fixture("non-root", (UID, GID))


def require_nonroot_sandbox(level=None):
    """Skips where this host cannot give UID a user namespace (the probe says which
    setting), or cannot run level `level`."""
    HOST.require("mount-ns")
    if level is not None:
        conftest.require_level(level)


level_server, lclient, uniq = conftest.level_fixtures(LEVELS, setup="as_nonroot",
                                                      features=("mount-ns",))
level = conftest.level_fixture(LEVELS, setup="as_nonroot", features=("mount-ns",))
# The escape subset (but network access: a non-root uexec has no listener guard, see
# test_network_access_refused_without_the_guard) and each mechanism of
# test_sandbox_levels.py at LEVELS, and write on the root (devices kept, an approved
# command's restrictions kept), as UID.
conftest.collect_again(globals(), test_sandbox_levels,
                       [n for n in test_sandbox_levels.ESCAPE_SUBSET if n != "test_network_enabled"]
                       + list(test_sandbox_levels.MECHANISMS))
conftest.collect_again(globals(), test_sandbox_rootwrite, test_sandbox_rootwrite.ROOT_WRITE_TESTS)


# ==========================================================================
# What is particular to a non-root uexec (at the host's own level)


@pytest.fixture
def nr_server(server_factory):
    require_nonroot_sandbox()
    return server_factory()


def test_server_runs_as_the_uid(nr_server):
    """The server itself is UID (no capability), and says how its sandboxes are built."""
    with open("/proc/%d/status" % nr_server.pid) as f:
        status = f.read()
    assert re.search(r"^Uid:\s+%d\s+%d\s+%d\s+%d$" % ((UID,) * 4), status, re.M), status
    assert re.search(r"^CapEff:\s+0+$", status, re.M), status
    log = nr_server.log()
    assert ("Sandbox ready: Landlock ABI %d, mount namespaces, seccomp, a user namespace per "
            "sandbox (uexec is not root: its uid and gid mapped to themselves"
            % nr_server.landlock_level) in log, log


def test_unsandboxed_requests_run_as_the_uid(nr_server, uniq, area):
    """No sandbox: the process is UID on the host, with UID's own file access."""
    c = nr_server.connect()
    mine = os.path.join(area.out, "mine.txt")
    run = sh(c, uniq, "id -u; id -g; echo w > %s && echo wrote; cat /proc/self/uid_map; "
             "echo x > /etc/uexec-nonroot-probe" % mine, area.ws, None)
    out = text(run)
    assert out.startswith("%d\n%d\nwrote\n" % (UID, GID)), out
    assert re.search(r"^\s*0\s+0\s+4294967295$", out, re.M), out   # the host's user namespace
    assert "Permission denied" in out, out                           # not root
    assert area.read(mine) == "w\n" and os.stat(mine).st_uid == UID
    assert not os.path.exists("/etc/uexec-nonroot-probe")
    c.ws.abort()


def test_identity_inside_the_sandbox(nr_server, uniq, area):
    """Inside: UID and GID mapped to themselves (as bubblewrap without --uid), setgroups
    denied, root's files owned by the overflow uid, no capability in any set; a file the
    command creates belongs to UID on the host."""
    c = nr_server.connect()
    run = sh(c, uniq, "id -u; id -g; cat /proc/self/uid_map /proc/self/gid_map "
             "/proc/self/setgroups; stat -c '%u %g' /etc/passwd; grep ^Cap /proc/self/status; "
             "echo new > created.txt", area.ws, ws_policy(area.ws))
    out = text(run)
    assert run.exit_code == 0, out
    lines = out.splitlines()
    assert lines[:2] == [str(UID), str(GID)], out
    assert lines[2].split() == [str(UID), str(UID), "1"], out
    assert lines[3].split() == [str(GID), str(GID), "1"], out
    assert lines[4] == "deny", out
    assert lines[5] == "%d %d" % (conftest.NOBODY, conftest.NOBODY), out
    caps = dict(l.split(":\t") for l in lines[6:11])
    assert set(caps.values()) == {"0000000000000000"}, caps
    assert os.stat(os.path.join(area.ws, "created.txt")).st_uid == UID
    c.ws.abort()


def test_init_not_readable_by_the_command(server_factory, uniq, area):
    """uexec-init (pid 1, same uid as the command, no capabilities either) is not
    dumpable: its /proc entries stay closed at level 0, where no Landlock domain
    scopes ptrace."""
    require_nonroot_sandbox(0)
    c = server_factory(landlock_abi_max=0).connect()
    run = sh(c, uniq, "cat /proc/1/environ; ls /proc/1/root/; ls /proc/1/fd/; "
             "head -c1 /proc/1/mem", area.ws, ws_policy(area.ws))
    out = text(run)
    assert out.count("Permission denied") == 4, out
    c.ws.abort()


@pytest.mark.parametrize("perm", [
    managed([special("root", "read"), special("project_roots", "write")], "enabled"),
    {"type": "external", "network": "enabled"},
    {"type": "managed", "file_system": {"type": "unrestricted"}, "network": "enabled"},
], ids=["workspace", "external", "managed-unrestricted"])
def test_network_access_refused_without_the_guard(nr_server, uniq, area, perm):
    """The listener guard needs root: without it a sandbox with network access could
    connect to this server's port and start an unsandboxed process, so such sandboxes
    are refused (−32602, the log saying why); restricted ones still run."""
    c = nr_server.connect()
    log = nr_server.log()
    assert ("Listener guard unavailable (it needs root: a cgroup of its own and BPF cgroup "
            "programs; uexec runs as uid %d): sandboxed processes with network access are "
            "refused (they could connect to port %d)" % (UID, nr_server.port)) in log, log
    sb = sandbox(perm, roots=[area.ws], cwd=area.ws)
    assert c.error("process/start", {"processId": uniq("net"), "argv": ["/bin/true"],
                                     "cwd": area.ws, "env": {}, "tty": False,
                                     "sandbox": sb}) == REFUSED
    conftest.wait_until(lambda: "network access needs the listener guard, which needs root"
                        in nr_server.log(), what="the refusal's reason in the log")
    assert sh(c, uniq, "true", area.ws, ws_policy(area.ws)).exit_code == 0
    c.ws.abort()


def test_fs_helper_as_nonroot(nr_server, area):
    """Sandboxed fs requests (uexec --fs-helper re-executed in the sandbox) work for a
    non-root server: inside the workspace read and written, outside refused."""
    c = nr_server.connect()
    sb = ws_policy(area.ws)
    inside = os.path.join(area.ws, "h.txt")
    c.result("fs/writeFile", {"path": file_uri(inside),
                              "dataBase64": base64.b64encode(b"helper\n").decode(), "sandbox": sb})
    assert area.read(inside) == "helper\n" and os.stat(inside).st_uid == UID
    res = c.result("fs/readFile", {"path": file_uri(area.victim), "sandbox": sb})
    assert base64.b64decode(res["dataBase64"]) == b"original\n"
    before = area.snapshot()
    err = c.error("fs/writeFile", {"path": file_uri(area.victim),
                                   "dataBase64": base64.b64encode(b"x").decode(), "sandbox": sb})
    assert err["code"] != 0 and area.snapshot() == before, err
    c.ws.abort()


# A user namespace of the test's own (uid and gid 0..65535 mapped to themselves by the
# parent, which is root) with user.max_user_namespaces=0 inside: the uexec run in it as UID
# cannot make one more, as on a host with that setting; the host's setting is untouched.
BLOCKED_LAUNCHER = r'''
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
uid, gid = int(sys.argv[1]), int(sys.argv[2])
r, w = os.pipe()
helper = os.fork()
if helper == 0:                       # writes the maps of its parent once it has unshared
    os.close(w)
    os.read(r, 1)
    for name in ("uid_map", "gid_map"):
        with open("/proc/%d/%s" % (os.getppid(), name), "w") as f:
            f.write("0 0 65536")
    os._exit(0)
os.close(r)
if libc.unshare(0x10000000) != 0:     # CLONE_NEWUSER
    sys.exit("unshare(CLONE_NEWUSER): %s" % os.strerror(ctypes.get_errno()))
os.write(w, b"x")
os.waitpid(helper, 0)
with open("/proc/sys/user/max_user_namespaces", "w") as f:
    f.write("0")
os.setgroups([])
os.setresgid(gid, gid, gid)
os.setresuid(uid, uid, uid)
os.execv(sys.argv[3], sys.argv[3:])
'''


def test_user_namespaces_blocked_refused(server_factory, uniq, area):
    """user.max_user_namespaces=0: start-up says sandboxes are refused and names the
    setting; each sandboxed request gets the reference's −32602; unsandboxed ones run."""
    require_nonroot_sandbox()
    s = Server((), logdir=os.path.join(area.base, "logs"),
               launcher=[conftest.SYSTEM_PYTHON, "-c", BLOCKED_LAUNCHER, str(UID), str(GID)])
    try:
        log = s.log()
        assert re.search(r"Sandboxed processes will be refused: this host lacks user namespaces "
                         r"\(uexec runs as uid %d, not root\): user.max_user_namespaces is 0 .*"
                         r"sysctl -w user.max_user_namespaces=" % UID, log), log
        c = s.connect()
        assert c.error("process/start", {"processId": uniq("b"), "argv": ["/bin/true"],
                                         "cwd": area.ws, "env": {}, "tty": False,
                                         "sandbox": ws_policy(area.ws)}) == REFUSED
        run = sh(c, uniq, "id -u", area.ws, None)
        assert text(run) == "%d\n" % UID
        c.ws.abort()
    finally:
        s.check_stop()


def test_network_access_over_stdio(area, listeners):
    """Over stdio the server has no port of its own for a sandbox to reach: sandboxes
    with network access run (TCP to a host listener works, as on the reference)."""
    require_nonroot_sandbox()
    with conftest.StdioServer(os.path.join(area.base, "stdio.stderr"), ids=(UID, GID)) as srv:
        c = srv.client()
        c.initialize("nonroot-stdio")
        port = listeners.tcp.getsockname()[1]
        code = "import socket; s = socket.create_connection(('127.0.0.1', %d), 3); print('tcp ok')" % port
        c.start("n", [PY, "-c", code], cwd=area.ws, env={"PATH": "/usr/bin:/bin"},
                sandbox=ws_policy(area.ws, network="enabled"))
        run = c.collect("n")
        assert run.stdout == b"tcp ok\n" and run.exit_code == 0, run.stdout + run.stderr
        assert srv.end_input(20) == 0
    log = srv.stderr().decode("utf-8", "replace")
    assert "Listener guard unavailable" not in log and "refusing" not in log, log
    assert not srv.sanitizer_problems(), log[-2000:]
