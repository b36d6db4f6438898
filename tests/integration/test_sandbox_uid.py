# SPDX-License-Identifier: MIT
"""--sandbox-uid UID under a root uexec (issue 13 item 3, docs/SECURITY.md "--sandbox-uid").

Sandboxed processes run as uid 0 of a user namespace that is UID on the host
(conftest.SANDBOX_UID: $UEXEC_TEST_SANDBOX_UID, else 64321, which needs no passwd
entry, so its gid is the same number); each writable root is idmapped to its owner.

* start-up: bad values (0, out of range, not a number) and a non-root uexec refused;
* the identity: `id` inside says 0, the host's /proc says UID (no supplementary
  group, no capability), the server stays root;
* ownership: what the command (and the fs helper) creates in a writable root is
  the root's owner's on disk; the owner's files are the command's, everyone else's
  (root's) stay foreign: not readable or writable by their modes, inside or outside
  the writable roots; a sticky world-writable root (/tmp-like) is not idmapped;
* fail closed: a writable root whose filesystem cannot be idmapped is refused, naming it;
* the escape subset of test_sandbox_levels.py at Landlock levels 0, 4 and 7, and each
  mechanism that replaces a missing ABI (as test_sandbox_nonroot.py does for a
  non-root uexec), the scratch trees handed to UID (conftest.own).

The whole sandbox suite with --sandbox-uid: UEXEC_TEST_SANDBOX_UID=UID[:GID] (README.md).
"""

import base64
import os
import re
import subprocess
import tempfile
import time

import pytest

import conftest
import test_sandbox as ts
from conftest import HOST
from test_sandbox import (EACCES, EROFS, PY, REFUSED, area, listeners, managed,  # noqa: F401
                          path_entry, read_only_policy, sandbox, sh, special, text, ws_policy)
import test_sandbox_levels
import test_sandbox_rootwrite
from wsclient import file_uri

LEVELS = (0, 4, 7)
UID, GID = conftest.SANDBOX_UID or (64321, 64321)
OWNER = (4242, 4343)   # a workspace owner that is neither root nor UID

pytestmark = [pytest.mark.needs("x86_64", "seccomp", "root", "mount-ns"),
              pytest.mark.needs_programs("/bin/bash", "/bin/sh", PY)]


# Every root Server of this module gets --sandbox-uid UID (and own() hands trees to it).
with_sandbox_uid = conftest.kind_fixture("sandbox-uid", (UID, GID))
level_server, lclient, uniq = conftest.level_fixtures(LEVELS, setup="with_sandbox_uid")
level = conftest.level_fixture(LEVELS, setup="with_sandbox_uid")
# The escape subset and each mechanism of test_sandbox_levels.py at LEVELS, and write on
# the root (devices kept, an approved command's restrictions kept), with --sandbox-uid.
conftest.collect_again(globals(), test_sandbox_levels,
                       test_sandbox_levels.ESCAPE_SUBSET + test_sandbox_levels.MECHANISMS)
conftest.collect_again(globals(), test_sandbox_rootwrite, test_sandbox_rootwrite.ROOT_WRITE_TESTS)


@pytest.fixture
def uid_server(server_factory):
    HOST.require("sandbox")
    return server_factory()


@pytest.fixture
def uclient(uid_server):
    yield from conftest.connected(uid_server)


def status_ids(pid):
    with open("/proc/%d/status" % pid) as f:
        st = f.read()
    get = lambda k: re.search(r"^%s:[ \t]*(.*)$" % k, st, re.M).group(1).split()  # noqa: E731
    return {"uid": get("Uid"), "gid": get("Gid"), "groups": get("Groups"),
            "capeff": get("CapEff")[0], "capprm": get("CapPrm")[0]}


def host_pid_with_cwd(path, timeout=conftest.EVENT_TIMEOUT):
    """The host pid of the (only) process whose cwd is path."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    if os.readlink("/proc/%s/cwd" % d) == path:
                        with open("/proc/%s/comm" % d) as f:
                            if f.read().strip() == "sleep":
                                return int(d)
                except OSError:
                    pass
        time.sleep(0.05)
    raise AssertionError("no sandboxed process with cwd %s" % path)


# ==========================================================================
# Start-up


@pytest.mark.parametrize("value,message", [
    ("0", "--sandbox-uid 0 is host root: give an unprivileged uid"),
    ("000", "--sandbox-uid 0 is host root: give an unprivileged uid"),
    ("-5", "invalid value '-5' for --sandbox-uid (expected 1..4294967294)"),
    ("4294967295", "invalid value '4294967295' for --sandbox-uid (expected 1..4294967294)"),
    ("99999999999", "invalid value '99999999999' for --sandbox-uid (expected 1..4294967294)"),
    ("nobody", "invalid value 'nobody' for --sandbox-uid (expected 1..4294967294)"),
    ("", "invalid value '' for --sandbox-uid (expected 1..4294967294)"),
])
def test_bad_values_refused_at_start(value, message):
    """A bad UID never starts a server: exit 2 and a message naming the value."""
    p = conftest.run_once("--listen", "ws://127.0.0.1:0", "--sandbox-uid", value)
    assert p.returncode == 2, p
    assert message in p.stderr.decode(), p.stderr
    assert p.stdout == b""


def test_non_root_uexec_refused(tmp_path):
    """--sandbox-uid under a non-root uexec: it does not start, and says why."""
    HOST.require("unprivileged-server", "mount-ns")
    conftest.set_sandbox_uid(None)
    try:
        ids = conftest.NONROOT_UID
        home = conftest.run_as_home(ids)
        p = subprocess.run([HOST.program("setpriv"), "--reuid=%d" % ids[0], "--regid=%d" % ids[1],
                            "--clear-groups", conftest.UEXEC_BIN, "--listen", "ws://127.0.0.1:0",
                            "--sandbox-uid", str(UID)],
                           capture_output=True, timeout=60, stdin=subprocess.DEVNULL, cwd=home,
                           env={"PATH": "/usr/bin:/bin", "HOME": home, "TMPDIR": home})
    finally:
        conftest.set_sandbox_uid((UID, GID))
    assert p.returncode == 1, p
    assert ("--sandbox-uid needs uexec to run as root (uexec runs as uid %d" % ids[0]
            in p.stderr.decode()), p.stderr
    assert p.stdout == b""


def test_start_up_says_so(uid_server):
    """The server stays root; its log says sandboxed processes run as UID."""
    st = status_ids(uid_server.pid)
    assert st["uid"] == ["0"] * 4, st
    log = uid_server.log()
    assert log.count("sandboxed processes as an unprivileged uid (--sandbox-uid)") == 1, log
    assert ("identity (--sandbox-uid): uid 0 in a user namespace, uid %d gid %d on the host; "
            "writable roots idmapped to their owners" % (UID, GID)) in log, log


# ==========================================================================
# Identity


@pytest.mark.parametrize("policy", ["workspace", "full-write"])
def test_uid_zero_inside_uid_on_host(uid_server, uclient, uniq, area, policy):
    """`id` inside: 0; the host's /proc: UID and GID (real, effective, saved, fs), no
    supplementary group, no capability."""
    sb = ws_policy(area.ws) if policy == "workspace" else sandbox(
        {"type": "external", "network": "restricted"})
    # (full-write: the host's /dev/shm, shared with whatever runs beside: a name of its own)
    shm = "/dev/shm/%s" % uniq("uexec-uid-shm")
    pid, _ = ts.start(uclient, uniq, ["/bin/bash", "-c",
                                      "touch %s && echo shm-ok; "
                                      "echo ids=$(id -u):$(id -g):$(id -G); exec sleep 1000"
                                      % shm],
                      area.ws, sb)
    run = uclient.collect_until_output(pid, "ids=")
    assert "ids=0:0:0\n" in text(run), text(run)
    if policy == "workspace":   # its private /dev/shm is the command's (POSIX semaphores)
        assert "shm-ok\n" in text(run), text(run)
    hp = host_pid_with_cwd(area.ws)
    st = status_ids(hp)
    assert st["uid"] == [str(UID)] * 4, st
    assert st["gid"] == [str(GID)] * 4, st
    assert st["groups"] == [], st
    assert int(st["capeff"], 16) == 0 and int(st["capprm"], 16) == 0, st
    with open("/proc/%d/uid_map" % hp) as f:
        assert f.read().split() == ["0", str(UID), "1"]
    uclient.result("process/terminate", {"processId": pid})
    uclient.collect(pid)
    if policy == "full-write" and os.path.exists(shm):
        os.unlink(shm)
    assert status_ids(uid_server.pid)["uid"] == ["0"] * 4   # the server itself stays root


# ==========================================================================
# Ownership


@pytest.mark.parametrize("owner", [OWNER, (0, 0)], ids=["owner4242", "root-owned"])
def test_created_files_belong_to_workspace_owner(uclient, uniq, area, owner):
    """Files, directories and links the command creates in a writable root are the
    root's owner's on disk (inside: uid 0's); the owner's files are the command's
    (chmod works); a file of another uid there stays foreign."""
    os.chown(area.ws, *owner)
    mine = os.path.join(area.ws, "mine.txt")
    with open(mine, "w") as f:
        f.write("m\n")
    os.chown(mine, *owner)
    os.chmod(mine, 0o600)
    other = (5151, 5151) if owner != (0, 0) else OWNER
    foreign = os.path.join(area.ws, "foreign.txt")
    with open(foreign, "w") as f:
        f.write("f\n")
    os.chown(foreign, *other)
    os.chmod(foreign, 0o600)
    script = ("echo n > new.txt; mkdir -p d/e; echo x > d/e/f; ln -s new.txt link; "
              "stat -c '%u:%g %n' new.txt d mine.txt; stat -c '%U %n' foreign.txt; "
              "cat mine.txt && chmod 640 mine.txt && echo chmod-ok; "
              "cat foreign.txt; echo y >> foreign.txt; chmod 666 foreign.txt; echo done")
    run = sh(uclient, uniq, script, area.ws, ws_policy(area.ws))
    out = text(run)
    assert "0:0 new.txt\n0:0 d\n0:0 mine.txt\n" in out, out
    assert "nobody foreign.txt\n" in out, out          # unmapped: the overflow uid
    assert "m\nchmod-ok\n" in out, out
    assert "foreign.txt: " + EACCES in out and "done" in out, out
    # refused: EPERM (not its owner), or EOVERFLOW (its owner has no id on the idmapped mount)
    assert re.search(r"chmod: changing permissions of 'foreign.txt': (Operation not permitted|"
                     r"Value too large for defined data type)", out), out
    for p in ("new.txt", "d", "d/e", "d/e/f", "link"):
        st = os.lstat(os.path.join(area.ws, p))
        assert (st.st_uid, st.st_gid) == owner, (p, st)
    assert os.stat(mine).st_mode & 0o777 == 0o640
    assert os.stat(foreign).st_mode & 0o777 == 0o600 and area.read(foreign) == "f\n"


def test_fs_helper_writes_belong_to_workspace_owner(uclient, area):
    """The sandboxed fs helper runs as UID too: fs/writeFile and fs/open (replace)
    create files of the workspace's owner; root's 0600 file outside is not readable."""
    os.chown(area.ws, *OWNER)
    secret = os.path.join(area.out, "secret")
    with open(secret, "w") as f:
        f.write("s\n")
    os.chown(secret, 0, 0)
    os.chmod(secret, 0o600)
    sb = ws_policy(area.ws)
    uclient.result("fs/writeFile", {"path": file_uri(os.path.join(area.ws, "w.txt")),
                                    "dataBase64": base64.b64encode(b"w").decode(), "sandbox": sb})
    uclient.result("fs/open", {"handleId": "h", "path": file_uri(os.path.join(area.ws, "o.txt")),
                               "mode": "replace", "sandbox": sb})
    uclient.result("fs/close", {"handleId": "h"})
    for p in ("w.txt", "o.txt"):
        st = os.stat(os.path.join(area.ws, p))
        assert (st.st_uid, st.st_gid) == OWNER, (p, st)
    err = uclient.call("fs/readFile", {"path": file_uri(secret), "sandbox": sb})["error"]
    assert err["message"] == "Permission denied (os error 13)", err


def test_root_files_outside_writable_roots(uclient, uniq, area):
    """Host root's files outside the writable roots: a 0600 one is not readable (uid 0
    with its capabilities dropped could read it as its owner), a 0666 one not writable
    (read-only mount), a 0644 one readable."""
    paths = {}
    for name, mode in (("private", 0o600), ("open", 0o666), ("public", 0o644)):
        p = paths[name] = os.path.join(area.out, name)
        with open(p, "w") as f:
            f.write(name + "\n")
        os.chown(p, 0, 0)
        os.chmod(p, mode)
    os.chown(area.out, 0, 0)
    for p in paths.values():
        os.chown(p, 0, 0)
    script = "cat {private}; echo x >> {open}; cat {public}; echo end".format(**paths)
    run = sh(uclient, uniq, script, area.ws, ws_policy(area.ws))
    out = text(run)
    assert paths["private"] + ": " + EACCES in out, out
    assert paths["open"] + ": " + EROFS in out, out
    assert "public\nend" in out, out
    assert area.read(paths["open"]) == "open\n"


def test_sticky_world_writable_root_not_idmapped(uclient, uniq, area):
    """A sticky world-writable writable root (as /tmp): files created there are UID's on
    disk, and root's files in it stay foreign (not idmapped to root)."""
    tmp = os.path.join(area.base, "tmp")
    os.makedirs(tmp)
    os.chmod(tmp, 0o1777)
    rootfile = os.path.join(tmp, "rootfile")
    with open(rootfile, "w") as f:
        f.write("r\n")
    os.chmod(rootfile, 0o644)
    sb = ws_policy(area.ws, extra=[path_entry(tmp, "write")])
    run = sh(uclient, uniq, "echo t > %s/t.txt; echo x >> %s; rm -f %s; echo end"
             % (tmp, rootfile, rootfile), area.ws, sb)
    out = text(run)
    assert rootfile + ": " + EACCES in out and "end" in out, out
    st = os.stat(os.path.join(tmp, "t.txt"))
    assert (st.st_uid, st.st_gid) == (UID, GID), st
    assert area.read(rootfile) == "r\n"


@pytest.fixture
def closed():
    """A 0700 root-owned directory (a home of another user) under /var/tmp."""
    base = tempfile.mkdtemp(prefix="uexec-sbxuid-", dir="/var/tmp")   # 0700, root's
    yield base
    subprocess.run(["umount", "-R", "-l", base], capture_output=True)
    subprocess.run(["rm", "-rf", base], check=False)


def test_workspace_below_a_closed_directory(uid_server, uclient, uniq, closed):
    """A workspace (and a read-only policy's cwd) below a directory UID cannot search
    (0700, root's): the sandbox sees that directory as searchable but not listable, each
    entry re-bound read-only with its own owner and mode: the command runs there, root's
    0600 file stays closed, a world-readable one opens; nothing changes on the host."""
    ws = os.path.join(closed, "ws")
    ro = os.path.join(closed, "ro")
    sub = os.path.join(closed, "sub")
    for d in (ws, ro, sub):
        os.makedirs(d)
    os.chmod(sub, 0o700)
    os.chown(ws, *OWNER)
    for name, mode in (("private", 0o600), ("public", 0o644)):
        with open(os.path.join(closed, name), "w") as f:
            f.write(name + "\n")
        os.chmod(os.path.join(closed, name), mode)
    os.symlink("public", os.path.join(closed, "link"))
    before = sorted(os.listdir(closed))
    script = ("pwd; echo n > new.txt && echo write-ok; cat {c}/private; cat {c}/public {c}/link; "
              "ls {c}; ls {c}/sub; echo x > {c}/planted; echo end").format(c=closed)
    run = sh(uclient, uniq, script, ws, ws_policy(ws))
    out = text(run)
    assert out.startswith(ws + "\n") and "write-ok" in out and "end" in out, out
    assert "%s/private: %s" % (closed, EACCES) in out, out
    assert "public\npublic\n" in out, out
    assert "ls: cannot open directory '%s': %s" % (closed, EACCES) in out, out
    assert "ls: cannot open directory '%s/sub': %s" % (closed, EACCES) in out, out
    assert "%s/planted: %s" % (closed, EROFS) in out, out
    st = os.stat(os.path.join(ws, "new.txt"))
    assert (st.st_uid, st.st_gid) == OWNER, st
    # a read-only policy whose cwd lies there
    run = sh(uclient, uniq, "pwd; ls; echo end", ro, read_only_policy())
    assert text(run) == ro + "\nend\n", text(run)
    assert sorted(os.listdir(closed)) == before    # no mount point left behind
    assert not os.path.exists(os.path.join(closed, "planted"))


def test_unreachable_cwd_names_the_cause(uclient, uniq, closed):
    """A cwd that is itself closed to UID (0700, root's, not a writable root): the spawn
    fails, naming the --sandbox-uid uid, never runs as root."""
    reply = uclient.call("process/start", {
        "processId": uniq("cwd"), "argv": ["/bin/true"], "cwd": file_uri(closed),
        "env": ts.ENV, "tty": False, "sandbox": read_only_policy()})
    assert reply["error"]["code"] == -32603, reply
    assert ("sandbox setup failed at chdir to the cwd as the --sandbox-uid uid (each parent "
            "directory must be searchable by that uid): Permission denied (os error 13)"
            == reply["error"]["message"]), reply


def test_closed_directory_with_too_many_entries_refused(uid_server, uclient, uniq, closed):
    """A closed directory above the workspace with more entries than are re-bound (256):
    refused, the log saying what to change."""
    ws = os.path.join(closed, "ws")
    os.makedirs(ws)
    subprocess.run("seq -f 'f%.0f' 1 300 | xargs touch", shell=True, cwd=closed, check=True)
    reply = uclient.call("process/start", {
        "processId": uniq("many"), "argv": ["/bin/true"], "cwd": file_uri(ws),
        "env": ts.ENV, "tty": False, "sandbox": ws_policy(ws)})
    assert reply.get("error") == REFUSED, reply
    assert ("--sandbox-uid: %s is closed to uid %d and holds more than 256 entries to re-bind: "
            "make it searchable by that uid (chmod o+x)" % (closed, UID)) in uid_server.log()


def test_writable_root_without_idmap_support_refused(uid_server, uclient, uniq, area):
    """Fail closed: a writable root on a filesystem without idmapped mounts (here a
    ramfs) refuses the process, and the log names the root and the cause."""
    mnt = os.path.join(area.base, "ramfs")
    os.makedirs(mnt)
    if subprocess.run(["mount", "-t", "ramfs", "ramfs", mnt], capture_output=True).returncode:
        pytest.skip("cannot mount a ramfs here")
    try:
        reply = uclient.call("process/start", {
            "processId": uniq("ramfs"), "argv": ["/bin/true"], "cwd": file_uri(area.ws),
            "env": ts.ENV, "tty": False,
            "sandbox": ws_policy(area.ws, extra=[path_entry(mnt, "write")])})
        assert reply.get("error") == REFUSED, reply
        log = uid_server.log()
        assert ("--sandbox-uid: the writable root %s cannot be idmapped to its owner "
                "(mount_setattr MOUNT_ATTR_IDMAP: " % mnt) in log, log
    finally:
        subprocess.run(["umount", mnt], check=False)
