# SPDX-License-Identifier: MIT
"""Write on the root (issue 23 item 4; docs/SECURITY.md "Write on the root").

The two capabilities the reference advertises and uexec now does too:

* linuxRootWritePreservesDevices: with `{"kind":"root"}` writable the command still
  has the standard devices (/dev/null written, /dev/zero and /dev/urandom read,
  /dev/tty, /dev/pts, /dev/shm), and makes no device node (no CAP_MKNOD);
* linuxApprovedRootWritePreservesRestrictions: an approved command's policy (root
  write plus the denials it keeps, read-only carve-outs and the root's metadata names
  granted) keeps every restriction: denied paths and glob matches stay unreadable and
  unwritable, also through symlinks whose targets are denied, read entries stay
  read-only, the root's metadata names not granted stay read-only, /proc and /sys
  stay read-only, and the rest of the disk is writable.

Each test runs at Landlock levels 0, 4 and 7 (level_server; all eight pass), as a
non-root uexec (test_sandbox_nonroot.py) and with --sandbox-uid (test_sandbox_uid.py),
which import them. The capability flags: true here, false with --no-sandbox.
"""

import base64
import os

import pytest

import conftest
import test_sandbox as ts
from test_sandbox import (PY, area, path_entry, py, results, sandbox, special,  # noqa: F401
                          text)
from wsclient import file_uri

LEVELS = (0, 4, 7)

pytestmark = [pytest.mark.needs("x86_64", "seccomp", "mount-ns"),
              pytest.mark.needs_programs("/bin/bash", "/bin/sh", PY)]

level_server, lclient, uniq = conftest.level_fixtures(LEVELS)
# Write on the root (devices kept, an approved command's restrictions kept), which
# test_sandbox_uid.py and test_sandbox_nonroot.py collect again (servers.collect_again).
ROOT_WRITE_TESTS = (
    "test_approved_root_write_keeps_restrictions", "test_fs_requests_under_approved_root_write",
    "test_root_write_and_root_deny",
    "test_writable_root_inside_a_denied_directory_under_root_write",
    "test_root_write_keeps_devices", "test_root_write_keeps_root_metadata_read_only",
    "test_write_entry_through_symlink_to_denied_target")


def managed(entries):
    return sandbox({"type": "managed", "file_system": {"type": "restricted",
                                                       "entries": list(entries)},
                    "network": "restricted"})


def glob(pattern):
    return {"path": {"type": "glob_pattern", "pattern": pattern}, "access": "deny"}


# Probes of the devices: opened, read and written inside the sandbox.
DEVICES = r'''
import stat
for d in ("null", "zero", "full", "random", "urandom", "tty", "ptmx"):
    p = "/dev/" + d
    print("chr:" + d, "ok" if os.path.exists(p) and stat.S_ISCHR(os.stat(p).st_mode) else "ENOENT")
def wr(p, data):
    fd = os.open(p, os.O_WRONLY)
    try:
        return "ok" if os.write(fd, data) == len(data) else "EIO"
    finally:
        os.close(fd)
def rd(p, n):
    fd = os.open(p, os.O_RDONLY)
    try:
        b = os.read(fd, n)
        return "ok" if len(b) == n and (p != "/dev/zero" or b == bytes(n)) else "EIO"
    finally:
        os.close(fd)
t("w:null", lambda: wr("/dev/null", b"x" * 100))
t("r:zero", lambda: rd("/dev/zero", 16))
t("r:urandom", lambda: rd("/dev/urandom", 16))
t("pts", lambda: "ok" if os.path.isdir("/dev/pts") else "ENOENT")
t("openpty", lambda: [os.close(x) for x in os.openpty()] and "ok")
t("shm", lambda: (open("/dev/shm/uexec-rw-%d" % os.getpid(), "w").write("s"),
                  os.unlink("/dev/shm/uexec-rw-%d" % os.getpid())) and "ok")
t("mknod_chr", lambda: os.mknod("nod", stat.S_IFCHR | 0o666, os.makedev(1, 3)))
t("mknod_blk", lambda: os.mknod("blk", stat.S_IFBLK | 0o666, os.makedev(7, 0)))
t("mkfifo", lambda: os.mkfifo("fifo"))
'''
DEVICES_OK = {"chr:null": "ok", "chr:zero": "ok", "chr:full": "ok", "chr:random": "ok",
              "chr:urandom": "ok", "chr:tty": "ok", "chr:ptmx": "ok", "w:null": "ok",
              "r:zero": "ok", "r:urandom": "ok", "pts": "ok", "openpty": "ok", "shm": "ok",
              "mknod_chr": "EPERM", "mknod_blk": "EPERM", "mkfifo": "ok"}


def approved_tree(area):
    """ws/ with a denied directory, a read-only one, .env files a glob denies, and
    symlinks (one of them .git) whose targets are denied."""
    ws = area.ws
    for d in ("private", "ro", "sub"):
        os.makedirs(os.path.join(ws, d))
    for name, data in (("private/secret.txt", "S\n"), ("ro/r.txt", "R\n"), ("a.env", "E\n"),
                       ("sub/b.env", "E\n"), ("ok.txt", "O\n")):
        with open(os.path.join(ws, name), "w") as f:
            f.write(data)
    for name, target in (("link", "private"), ("flink", "private/secret.txt"), (".git", "private")):
        os.symlink(target, os.path.join(ws, name))
    conftest.own(area.base)


def approved_policy(ws):
    """What an approved command is given (codex for_approved_command): root write, the
    denials kept, a read carve-out, the root's metadata names granted."""
    return managed([special("root", "write"), path_entry(os.path.join(ws, "private"), "deny"),
                    path_entry(os.path.join(ws, "ro"), "read"), glob(ws + "/**/*.env"),
                    path_entry("/.git", "write"), path_entry("/.agents", "write"),
                    path_entry("/.codex", "write")])


def test_root_write_keeps_devices(lclient, uniq, area):
    """A bare root write: the standard devices work, no device node can be made, and the
    write reaches the disk outside the workspace."""
    code = DEVICES + "t('victim', lambda: open(%r, 'w').write('changed\\n'))\n" % area.victim
    run = py(lclient, uniq, code, area.ws, managed([special("root", "write")]))
    assert run.start_result["sandboxType"] == "linuxSeccomp"
    assert results(run) == dict(DEVICES_OK, victim="ok"), text(run)
    assert area.read(area.victim) == "changed\n"
    assert not os.path.lexists(os.path.join(area.ws, "nod"))


def test_approved_root_write_keeps_restrictions(lclient, uniq, area):
    """Root write with carve-outs: every carve-out holds (symlinks into denied places
    included), the rest of the disk is writable, the devices work."""
    approved_tree(area)
    ws = area.ws
    code = r'''
def cat(p):
    with open(p) as f:
        return "ok" if f.read() else "EIO"
def put(p):
    with open(p, "w") as f:
        f.write("x")
for p in ("private/secret.txt", "link/secret.txt", "flink", ".git/secret.txt", "a.env",
          "sub/b.env", "ro/r.txt", "ok.txt"):
    t("r:" + p, lambda: cat(p))
for p in ("private/new", "link/new", ".git/new", "ro/r.txt", "ro/new", "a.env", "new.txt",
          %r):
    t("w:" + p, lambda: put(p))
t("ls:private", lambda: os.listdir("private"))
t("symlink-new", lambda: (os.symlink("private/secret.txt", "l2"), cat("l2"))[1])
t("mv:private", lambda: os.rename("private", "gone"))
t("rm:ro", lambda: os.unlink("ro/r.txt"))
t("root-name", lambda: os.stat("/.codex"))
t("core_pattern", lambda: os.close(os.open("/proc/sys/kernel/core_pattern", os.O_WRONLY)))
t("sys", lambda: os.close(os.open("/sys/kernel/uevent_helper", os.O_WRONLY))
  if os.path.exists("/sys/kernel/uevent_helper") else "EROFS")
''' % area.victim + DEVICES
    before = os.path.exists("/.codex")
    run = py(lclient, uniq, code, ws, approved_policy(ws))
    r = results(run)
    want = dict(DEVICES_OK)
    want.update({"r:private/secret.txt": "EACCES", "r:link/secret.txt": "EACCES",
                 "r:flink": "EACCES", "r:.git/secret.txt": "EACCES", "r:a.env": "EACCES",
                 "r:sub/b.env": "EACCES", "r:ro/r.txt": "ok", "r:ok.txt": "ok",
                 "w:private/new": "EACCES", "w:link/new": "EACCES", "w:.git/new": "EACCES",
                 "w:ro/r.txt": "EROFS", "w:ro/new": "EROFS", "w:a.env": "EROFS",
                 "w:new.txt": "ok", "w:" + area.victim: "ok", "ls:private": "EACCES",
                 "symlink-new": "EACCES", "mv:private": "EBUSY", "rm:ro": "EROFS",
                 # granted with the root, not a synthetic read-only directory
                 "root-name": "ok" if before else "ENOENT",
                 "core_pattern": "EROFS", "sys": "EROFS"})
    assert r == want, text(run)
    assert area.read(area.victim) == "x"
    assert sorted(os.listdir(os.path.join(ws, "private"))) == ["secret.txt"]
    assert area.read(os.path.join(ws, "private/secret.txt")) == "S\n"
    assert area.read(os.path.join(ws, "ro/r.txt")) == "R\n"
    assert area.read(os.path.join(ws, "a.env")) == "E\n"
    assert area.read(os.path.join(ws, "new.txt")) == "x"
    assert os.path.exists("/.codex") == before


def test_root_write_keeps_root_metadata_read_only(lclient, uniq, area):
    """Root write with a denied path, the root's metadata names not granted: /.git and
    the others stay read-only (a synthetic empty directory where missing, gone after the
    run); a non-root server, which cannot create them, leaves them to file permissions."""
    os.makedirs(os.path.join(area.ws, "private"))
    conftest.own(area.base)
    before = {n: os.path.lexists("/" + n) for n in ts.PROTECTED}
    code = "".join("t(%r, lambda: os.mkdir('/%s/x'))\n" % (n, n) for n in ts.PROTECTED)
    code += "t('ws-git', lambda: os.mkdir('.git'))\n"
    run = py(lclient, uniq, code, area.ws,
             managed([special("root", "write"), path_entry(area.ws + "/private", "deny")]))
    r = results(run)
    nonroot = conftest.run_as() is not None
    for n in ts.PROTECTED:
        # EACCES: a non-root server's uid may not write / at all
        assert r[n] in (("EACCES", "ENOENT") if nonroot else ("EROFS",)), text(run)
        assert os.path.lexists("/" + n) == before[n], n
    assert r["ws-git"] == "ok", text(run)   # only the root's own names: ws is no root


def test_write_entry_through_symlink_to_denied_target(lclient, uniq, area):
    """A write entry named through a symlink whose target is denied does not re-open the
    target (uexec is stricter than the reference here: SECURITY.md); a deny entry named
    through a symlink hides its target."""
    secret = os.path.join(area.base, "secret")
    os.makedirs(secret)
    with open(os.path.join(secret, "s.txt"), "w") as f:
        f.write("S\n")
    os.symlink("../secret", os.path.join(area.ws, ".git"))
    os.symlink("../secret", os.path.join(area.ws, "dlink"))
    conftest.own(area.base)
    code = r'''
t("r:.git", lambda: open(".git/s.txt").read())
t("w:.git", lambda: open(".git/n", "w").write("x"))
t("r:secret", lambda: open("../secret/s.txt").read())
'''
    for name, entries in (
            ("write-link", [special("root", "write"), path_entry(secret, "deny"),
                            path_entry(area.ws + "/.git", "write")]),
            ("deny-link", [special("root", "write"), path_entry(area.ws + "/dlink", "deny")])):
        run = py(lclient, uniq, code, area.ws, managed(entries))
        assert results(run) == {"r:.git": "EACCES", "w:.git": "EACCES",
                                "r:secret": "EACCES"}, (name, text(run))
    assert os.listdir(secret) == ["s.txt"]


def test_root_write_and_root_deny(lclient, level_server, uniq, area):
    """A deny entry on the root beside its write and read (ties: deny wins): only the
    narrower entries grant anything (here `minimal`, so that the interpreter loads, and
    the workspace); below Landlock (level 0) such restricted reads are refused, never
    run with the root's grant."""
    sb = managed([special("root", "write"), special("root", "deny"), special("root", "read"),
                  special("minimal", "read"), path_entry(area.ws, "write")])
    if level_server.landlock_level == 0:
        err = lclient.error("process/start", {"processId": uniq("rd"), "argv": ["/bin/true"],
                                              "cwd": file_uri(area.ws), "env": {}, "tty": False,
                                              "sandbox": sb})
        assert err == ts.REFUSED
        return
    code = ('t("r:victim", lambda: open(%r).read())\n'
            't("w:victim", lambda: open(%r, "w").write("x"))\n'
            't("w:ws", lambda: open("in.txt", "w").write("x"))\n' % (area.victim, area.victim))
    run = py(lclient, uniq, code, area.ws, sb)
    r = results(run)
    assert r.get("r:victim") == "EACCES" and r.get("w:ws") == "ok", text(run)
    assert r.get("w:victim") in ("EACCES", "EROFS"), text(run)
    assert area.read(area.victim) == "original\n"
    assert area.read(os.path.join(area.ws, "in.txt")) == "x"


def test_writable_root_inside_a_denied_directory_under_root_write(lclient, uniq, area):
    """The SANDBOX.md §3.3 precedence under a root write (as the reference:
    sandbox_views.py root_write_reopen): ws/a denied, ws/a/b writable again, ws/a/b/ro
    read-only again, ws/a/b's own metadata names read-only."""
    a = os.path.join(area.ws, "a")
    b = os.path.join(a, "b")
    os.makedirs(os.path.join(b, "ro"))
    for p, data in ((os.path.join(a, "hidden.txt"), "H\n"), (os.path.join(b, "ro", "r.txt"), "R\n")):
        with open(p, "w") as f:
            f.write(data)
    conftest.own(area.base)
    code = r'''
t("w:b", lambda: open("a/b/w.txt", "w").write("w"))
t("r:hidden", lambda: open("a/hidden.txt").read())
t("ls:a", lambda: os.listdir("a"))
t("w:ro", lambda: open("a/b/ro/r.txt", "w").write("x"))
t("mkdir:b/.git/x", lambda: os.mkdir("a/b/.git/x"))
t("w:ws", lambda: open("new.txt", "w").write("x"))
t("mv:b", lambda: os.rename("a/b", "a/c"))
'''
    run = py(lclient, uniq, code, area.ws, managed([
        special("root", "write"), path_entry(a, "deny"), path_entry(b, "write"),
        path_entry(os.path.join(b, "ro"), "read")]))
    r = results(run)
    # a/hidden.txt: the re-opened tmpfs over a holds only b's mount point (ENOENT, as the
    # reference); a itself is 0111: not listable
    assert r == {"w:b": "ok", "r:hidden": "ENOENT", "ls:a": "EACCES", "w:ro": "EROFS",
                 "mkdir:b/.git/x": "EROFS", "w:ws": "ok", "mv:b": "EROFS"}, text(run)
    assert area.read(os.path.join(b, "w.txt")) == "w"
    assert area.read(os.path.join(b, "ro", "r.txt")) == "R\n"
    assert sorted(os.listdir(a)) == ["b", "hidden.txt"]
    assert not os.path.lexists(os.path.join(b, ".git"))


def test_fs_requests_under_approved_root_write(lclient, uniq, area):
    """fs/* with the approved policy: a denied path and a glob match are refused, the
    workspace and the disk outside it are written."""
    approved_tree(area)
    sb = approved_policy(area.ws)
    sb["cwd"] = file_uri(area.ws)
    for p in ("private/secret.txt", "a.env", "link/secret.txt"):
        err = lclient.call("fs/readFile", {"path": file_uri(os.path.join(area.ws, p)),
                                           "sandbox": sb})["error"]
        assert err["message"] == "Permission denied (os error 13)", (p, err)
    data = base64.b64encode(b"w\n").decode()
    for p in (os.path.join(area.ws, "w.txt"), area.victim):
        assert "error" not in lclient.call("fs/writeFile", {"path": file_uri(p),
                                                            "dataBase64": data, "sandbox": sb})
        assert area.read(p) == "w\n"


ROOT_WRITE_CAPS = ("linuxRootWritePreservesDevices", "linuxApprovedRootWritePreservesRestrictions")


def test_capabilities_advertised(lclient):
    """Both flags are true where the sandbox (at every level here) enforces the above."""
    caps = lclient.init_result["environmentInfo"]["capabilities"]
    assert [caps[k] for k in ROOT_WRITE_CAPS] == [True, True], caps


def test_capabilities_false_without_a_sandbox(server_factory, uniq, area):
    """--no-sandbox: false (no root-write policy is enforced: refused, nothing runs)."""
    srv = server_factory("--no-sandbox")
    c = srv.connect()
    caps = c.init_result["environmentInfo"]["capabilities"]
    assert [caps[k] for k in ROOT_WRITE_CAPS] == [False, False], caps
    err = c.error("process/start", {"processId": uniq("ns"), "argv": ["/bin/true"],
                                    "cwd": file_uri(area.ws), "env": {}, "tty": False,
                                    "sandbox": approved_policy(area.ws)})
    assert err == ts.REFUSED
    c.ws.abort()
