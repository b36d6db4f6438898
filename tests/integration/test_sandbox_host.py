# SPDX-License-Identifier: MIT
"""What a sandbox can do to the host beyond its files (issue 11, docs/SECURITY.md).

* The uexec binary: the sandboxed fs helper is uexec itself, executed through
  a descriptor opened at start, so a sandbox that can write the binary's
  directory and replaces the file never gets its code run as the helper; the
  server warns at start and per request that the binary is exposed.
* PTYs: each sandbox's private devpts holds at most `--sandbox-max-ptys`
  terminals (default 64), so one sandbox cannot drain the host's PTY pool.

x86_64 and root only, like test_sandbox.py.
"""

import os
import shutil
import subprocess
import tempfile

import pytest

import conftest
from test_sandbox import ENV, PY, managed, sandbox, special, ws_policy
from wsclient import b64, file_uri, unb64

# Each test names the host features it needs (conftest.py probes them and skips with the reason).
SANDBOX = pytest.mark.needs("x86_64", "sandbox")


def _writable_policy(root):
    """root read, `root` writable (also as the fs helper's cwd), network restricted."""
    return sandbox(managed([special("root", "read"), special("project_roots", "write")]),
                   roots=[root], cwd=root)


@pytest.fixture
def exposed_copy(monkeypatch):
    """uexec and uexec-init copied into a fresh directory under /tmp (writable to the
    default workspace-write policy); conftest.Server starts the copy."""
    base = tempfile.mkdtemp(prefix="uexec-self-", dir="/tmp")
    src = os.path.dirname(os.path.realpath(conftest.UEXEC_BIN))
    for name in ("uexec", "uexec-init"):
        shutil.copy2(os.path.join(src, name), os.path.join(base, name))
    conftest.own(base)  # a non-root uexec (UEXEC_TEST_AS_UID) must reach its own binary
    monkeypatch.setattr(conftest, "UEXEC_BIN", os.path.join(base, "uexec"))
    yield base
    shutil.rmtree(base, ignore_errors=True)


@SANDBOX
@pytest.mark.needs("uexec-init")
def test_replaced_binary_never_runs_as_fs_helper(server_factory, uniq, exposed_copy):
    """A sandbox whose writable root holds the uexec binary renames a script over it;
    the next sandboxed fs/readFile is still served by the original helper (the script,
    which would leave a marker and forge the reply, never runs). The server warns at
    start and when the request's policy can write the binary."""
    base = exposed_copy
    exe = os.path.join(base, "uexec")
    marker = os.path.join(base, "replacement-ran")
    data = os.path.join(base, "data.txt")
    with open(data, "wb") as f:
        f.write(b"genuine contents\n")
    srv = server_factory()
    c = srv.connect()

    # The replacement: prints a forged answer for the helper's request id 2.
    script = ("#!/bin/sh\ntouch %s\n"
              "echo '{\"id\":2,\"result\":{\"dataBase64\":\"%s\"}}'\ncat >/dev/null\n"
              % (marker, b64(b"forged\n")))
    sb = _writable_policy(base)
    pid = uniq("replace")
    c.start(pid, [PY, "-c",
                  "import os, sys\n"
                  "p = sys.argv[1]\n"
                  "with open(p + '.new', 'w') as f: f.write(sys.argv[2])\n"
                  "os.chmod(p + '.new', 0o755)\n"
                  "os.rename(p + '.new', p)\n"
                  "print('replaced')\n", exe, script],
            cwd=base, env=ENV, sandbox=sb)
    run = c.collect(pid)
    assert run.exit_code == 0 and b"replaced" in run.stdout, (run.stdout, run.stderr)
    with open(exe, "rb") as f:
        assert f.read().startswith(b"#!/bin/sh"), "the sandbox did not replace the file"

    for _ in range(2):
        res = c.result("fs/readFile", {"path": file_uri(data), "sandbox": sb})
        assert unb64(res["dataBase64"]) == b"genuine contents\n"
    assert not os.path.exists(marker), "the replaced binary ran as the fs helper"
    # A sandboxed write is served by the real helper too.
    out = os.path.join(base, "written.txt")
    assert c.result("fs/writeFile", {"path": file_uri(out), "dataBase64": b64(b"w"),
                                     "sandbox": sb}) == {}
    with open(out, "rb") as f:
        assert f.read() == b"w"
    assert not os.path.exists(marker)

    err = srv.stderr().decode()
    assert "uexec binary %s lies under /tmp" % exe in err, err           # at start
    assert "can write the uexec binary %s" % exe in err, err              # per request
    assert err.count("can write the uexec binary") == 1, err              # once
    c.ws.abort()
    assert srv.terminate() == 0


@SANDBOX
@pytest.mark.needs("uexec-init", "landlock")   # `minimal`: refused at level 0
def test_binary_upgraded_outside_the_sandbox(server_factory, monkeypatch):
    """The binary replaced from the host (a package upgrade) while the server runs, and a
    policy that does not read its directory (`minimal`): the helper is granted by the
    descriptor it is executed through (Landlock), so it still starts and answers."""
    base = tempfile.mkdtemp(prefix="uexec-self-", dir="/var/tmp")
    work = tempfile.mkdtemp(prefix="uexec-self-ws-", dir="/var/tmp")
    try:
        src = os.path.dirname(os.path.realpath(conftest.UEXEC_BIN))
        for name in ("uexec", "uexec-init"):
            shutil.copy2(os.path.join(src, name), os.path.join(base, name))
        monkeypatch.setattr(conftest, "UEXEC_BIN", os.path.join(base, "uexec"))
        with open(os.path.join(work, "f"), "wb") as f:
            f.write(b"hello\n")
        conftest.own(base, work)
        sb = sandbox(managed([special("minimal", "read"), special("project_roots", "write")]),
                     roots=[work], cwd=work)
        srv = server_factory()
        c = srv.connect()
        params = {"path": file_uri(os.path.join(work, "f")), "sandbox": sb}
        assert unb64(c.result("fs/readFile", params)["dataBase64"]) == b"hello\n"
        shutil.copy2("/bin/true", os.path.join(base, "uexec.new"))
        os.rename(os.path.join(base, "uexec.new"), os.path.join(base, "uexec"))
        assert unb64(c.result("fs/readFile", params)["dataBase64"]) == b"hello\n"
        assert "uexec binary" not in srv.stderr().decode()
        c.ws.abort()
        assert srv.terminate() == 0
    finally:
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


@SANDBOX
def test_no_exposure_warning_when_binary_is_out_of_reach(server_factory, uniq, tmp_path):
    """The default build location is not under a writable root of the policy: no warning."""
    work = tempfile.mkdtemp(prefix="uexec-self-ws-", dir="/var/tmp")
    conftest.own(work)
    try:
        srv = server_factory()
        c = srv.connect()
        res = c.result("fs/readFile", {"path": "file:///etc/hostname",
                                       "sandbox": _writable_policy(work)})
        with open("/etc/hostname", "rb") as f:
            assert unb64(res["dataBase64"]) == f.read()
        err = srv.stderr().decode()
        if not os.path.realpath(conftest.UEXEC_BIN).startswith(("/tmp/", work)):
            assert "uexec binary" not in err, err
        c.ws.abort()
    finally:
        shutil.rmtree(work, ignore_errors=True)


# --------------------------------------------------------------------------
# PTYs

OPEN_PTYS = r'''
import errno, os, sys
n, fds = 0, []
try:
    while n < int(sys.argv[1]):
        fds.append(os.openpty())
        n += 1
    print("opened", n, "none")
except OSError as e:
    print("opened", n, errno.errorcode.get(e.errno, e.errno))
'''


def _open_ptys(client, uniq, cap, cwd, sb):
    pid = uniq("ptys")
    extra = {"sandbox": sb} if sb is not None else {}
    client.start(pid, [PY, "-c", OPEN_PTYS, str(cap)], cwd=cwd, env=ENV, **extra)
    run = client.collect(pid, 60)
    words = run.stdout.decode().split()
    assert run.exit_code == 0 and words[:1] == ["opened"], (run.stdout, run.stderr)
    return int(words[1]), words[2]


@SANDBOX
@pytest.mark.parametrize("flag,limit", [(("--sandbox-max-ptys", "8"), 8), ((), 64)])
def test_sandbox_pty_limit(server_factory, uniq, flag, limit):
    """Each sandbox's devpts has `max=` (--sandbox-max-ptys, default 64): a sandboxed
    process opens that many PTYs, then gets ENOSPC; unsandboxed processes use the host's."""
    work = tempfile.mkdtemp(prefix="uexec-ptys-", dir="/var/tmp")
    conftest.own(work)
    try:
        srv = server_factory(*flag)
        c = srv.connect()
        assert _open_ptys(c, uniq, limit + 20, work, ws_policy(work)) == (limit, "ENOSPC")
        # Each sandbox has its own instance: a second one gets the same budget.
        assert _open_ptys(c, uniq, limit + 20, work, ws_policy(work)) == (limit, "ENOSPC")
        assert _open_ptys(c, uniq, limit + 8, work, None) == (limit + 8, "none")
        c.ws.abort()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_sandbox_max_ptys_flag_validated():
    """--sandbox-max-ptys 0 would mean no limit to the kernel: refused."""
    r = subprocess.run([conftest.UEXEC_BIN, "--sandbox-max-ptys", "0"], capture_output=True,
                       timeout=60)
    assert r.returncode == 2
    assert b"--sandbox-max-ptys" in r.stderr
