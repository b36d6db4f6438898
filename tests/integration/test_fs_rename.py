# SPDX-License-Identifier: MIT
"""fs/rename, a uexec extension (README "Protocol extensions", capability uexecFsRename;
issue 15 item 5): an atomic rename(2)/renameat2(2) run as IORING_OP_RENAMEAT after the
safety checks fs/remove and fs/copy make (fs-rmcp.c), a clear error across filesystems,
`overwrite: false` as RENAME_NOREPLACE, and a `sandbox` served by the sandboxed fs helper
exactly as fs/remove and fs/copy are (so its denials are theirs)."""

import os
import shutil

import pytest

import conftest
from conftest import EVENT_TIMEOUT, HOST
from wsclient import file_uri as U

ENOENT = {"code": -32004, "message": "No such file or directory (os error 2)"}
EEXIST = {"code": -32603, "message": "File exists (os error 17)"}
ENOTEMPTY = {"code": -32603, "message": "Directory not empty (os error 39)"}
EISDIR = {"code": -32603, "message": "Is a directory (os error 21)"}
EROFS = {"code": -32603, "message": "Read-only file system (os error 30)"}
EACCES = {"code": -32600, "message": "Permission denied (os error 13)"}
INTO_ITSELF = {"code": -32600,
               "message": "fs/rename cannot move a directory into itself or one of its descendants"}
SAME_FILE = {"code": -32600, "message": "fs/rename source and destination are the same file"}


def rename(c, src, dst, **kw):
    p = {"sourcePath": U(src), "destinationPath": U(dst)}
    p.update(kw)
    return c.call("fs/rename", p, timeout=60)


def ok(c, src, dst, **kw):
    r = rename(c, src, dst, **kw)
    assert r.get("result") == {}, r
    return r


def err(c, src, dst, **kw):
    r = rename(c, src, dst, **kw)
    assert "error" in r, r
    return r["error"]


def test_advertised(sclient):
    """Issue 15 item 6: advertised under a uexec name, after the reference's flags."""
    caps = sclient.result("environment/info", {})["capabilities"]
    assert caps.get("uexecFsRename") is True
    assert list(caps).index("uexecFsRename") > list(caps).index("fsWatchMissing")


def test_within_a_directory_keeps_the_inode(sclient, tmp_path):
    """Atomic rename in place: same inode, contents and mode, the old name gone."""
    a = tmp_path / "a.txt"
    a.write_bytes(b"hello\n")
    os.chmod(a, 0o640)
    ino = a.stat().st_ino
    ok(sclient, a, tmp_path / "b.txt")
    b = tmp_path / "b.txt"
    assert not a.exists()
    assert b.read_bytes() == b"hello\n"
    assert b.stat().st_ino == ino and (b.stat().st_mode & 0o777) == 0o640


def test_across_directories_file_and_tree(sclient, tmp_path):
    """A file and a whole directory tree move to another directory; native paths work too."""
    (tmp_path / "src" / "sub").mkdir(parents=True)
    (tmp_path / "src" / "sub" / "f").write_text("x")
    (tmp_path / "dst").mkdir()
    (tmp_path / "g").write_text("g")
    r = sclient.call("fs/rename", {"sourcePath": str(tmp_path / "g"),
                                   "destinationPath": str(tmp_path / "dst" / "g")})
    assert r.get("result") == {}, r
    ok(sclient, tmp_path / "src", tmp_path / "dst" / "moved")
    assert not (tmp_path / "src").exists() and not (tmp_path / "g").exists()
    assert (tmp_path / "dst" / "moved" / "sub" / "f").read_text() == "x"
    assert (tmp_path / "dst" / "g").read_text() == "g"


def test_over_an_existing_file_and_overwrite_false(sclient, tmp_path):
    """Default: the destination file is replaced atomically. overwrite:false
    (RENAME_NOREPLACE) refuses with EEXIST and changes nothing."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("new")
    b.write_text("old")
    assert err(sclient, a, b, overwrite=False) == EEXIST
    assert a.read_text() == "new" and b.read_text() == "old"
    ok(sclient, a, b, overwrite=True)
    assert not a.exists() and b.read_text() == "new"
    c = tmp_path / "c"
    c.write_text("c")
    ok(sclient, c, tmp_path / "fresh", overwrite=False)
    assert (tmp_path / "fresh").read_text() == "c"


def test_kernel_errors_keep_their_os_texts(sclient, tmp_path):
    """Errors the kernel reports keep the fs methods' wording and codes (PROTOCOL.md §4)."""
    (tmp_path / "d").mkdir()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    (tmp_path / "f").write_text("f")
    assert err(sclient, tmp_path / "missing", tmp_path / "z") == ENOENT
    assert err(sclient, tmp_path / "f", tmp_path / "no" / "such" / "dir") == ENOENT
    assert err(sclient, tmp_path / "d", tmp_path / "full") == ENOTEMPTY
    assert err(sclient, tmp_path / "f", tmp_path / "d") == EISDIR
    assert (tmp_path / "f").exists() and (tmp_path / "d").is_dir()


def test_directory_into_itself_refused(sclient, tmp_path):
    """fs/copy's rule: a directory never moves into itself or below itself, also
    through a symlinked spelling of the destination."""
    d = tmp_path / "d"
    (d / "sub" / "deeper").mkdir(parents=True)
    os.symlink(d / "sub", tmp_path / "alias")
    assert err(sclient, d, d / "inside") == INTO_ITSELF
    assert err(sclient, d, d / "sub" / "deeper" / "x") == INTO_ITSELF
    assert err(sclient, d, tmp_path / "alias" / "x") == INTO_ITSELF
    assert (d / "sub" / "deeper").is_dir() and not (d / "inside").exists()


def test_same_file_refused(sclient, tmp_path):
    """rename(2) of two names of one file does nothing and succeeds; refused instead, as
    fs/copy refuses a copy onto itself."""
    a = tmp_path / "a"
    a.write_text("x")
    os.link(a, tmp_path / "hard")
    assert err(sclient, a, tmp_path / "hard") == SAME_FILE
    assert err(sclient, a, a) == SAME_FILE
    assert a.read_text() == "x" and (tmp_path / "hard").exists()


def test_symlink_is_moved_not_followed(sclient, tmp_path):
    (tmp_path / "target").write_text("t")
    os.symlink("target", tmp_path / "ln")
    ok(sclient, tmp_path / "ln", tmp_path / "ln2")
    assert os.readlink(tmp_path / "ln2") == "target"
    assert (tmp_path / "target").read_text() == "t"


@pytest.fixture
def cwd_server(server_factory, tmp_path):
    """A server whose working and home directories lie in tmp_path/home/work."""
    work = tmp_path / "home" / "work"
    work.mkdir(parents=True)
    conftest.own(tmp_path / "home")
    env = dict(os.environ, HOME=str(tmp_path / "home"))
    return server_factory(env=env, cwd=str(work))


def test_protected_directories_refused(cwd_server, tmp_path):
    """fs/remove's rule: "/" and the server's cwd and home (and their ancestors) are never
    moved away, nor replaced by a rename."""
    c = cwd_server.connect()
    try:
        home, work = tmp_path / "home", tmp_path / "home" / "work"
        assert err(c, "/", tmp_path / "root") == {
            "code": -32600, "message": "fs/rename refuses to move the root directory"}
        assert err(c, work, tmp_path / "w2") == {
            "code": -32600, "message": "fs/rename refuses to move `%s`: it is or contains the "
            "server's working directory" % work}
        assert err(c, home, tmp_path / "h2")["message"].startswith(
            "fs/rename refuses to move `%s`: it is or contains the server's" % home)
        (tmp_path / "empty").mkdir()
        assert err(c, tmp_path / "empty", work) == {
            "code": -32600, "message": "fs/rename refuses to replace `%s`: it is or contains "
            "the server's working directory" % work}
        assert work.is_dir() and (tmp_path / "empty").is_dir()
        # what is not protected still moves
        (work / "f").write_text("f")
        ok(c, work / "f", home / "f")
        assert (home / "f").read_text() == "f"
    finally:
        c.ws.abort()


def _cross_device_pair(tmp_path):
    """Two directories on different filesystems, or skip with the reason."""
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK) and \
            os.stat(shm).st_dev != os.stat(tmp_path).st_dev:
        other = os.path.join(shm, "uexec-rename-%d-%s" % (os.getpid(), tmp_path.name))
        os.mkdir(other)
        return other
    pytest.skip("needs two filesystems: /dev/shm is missing, not writable or on the same "
                "filesystem as %s" % tmp_path)


def test_cross_device_is_a_clear_error(sclient, tmp_path):
    """EXDEV: a clear message (not a copy behind the client's back); nothing moves."""
    other = _cross_device_pair(tmp_path)
    try:
        f = tmp_path / "f"
        f.write_text("data")
        e = err(sclient, f, os.path.join(other, "f"))
        assert e["code"] == -32603
        assert e["message"].startswith("Cross-device link (os error 18): fs/rename cannot move "
                                       "`%s` to `%s/f`: they are on different filesystems" %
                                       (f, other)), e
        assert "use fs/copy, then fs/remove" in e["message"]
        assert f.read_text() == "data" and os.listdir(other) == []
    finally:
        shutil.rmtree(other, ignore_errors=True)


@pytest.mark.needs("root", "mount-ns")
@pytest.mark.needs_programs("unshare", "mount")
def test_cross_mount_in_a_namespace(tmp_path, monkeypatch, server_factory):
    """EXDEV from a tmpfs mounted in a private mount namespace that the server runs in
    (the host's mount table is untouched); within that tmpfs a rename works."""
    if conftest.run_as():
        pytest.skip("needs the server to run as root here (mounts a tmpfs for it)")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    wrapper = tmp_path / "uexec-in-mount-ns"
    wrapper.write_text("#!/bin/sh\nexec %s --mount --propagation private /bin/sh -c "
                       "'mount -t tmpfs -o size=4m none \"$0\" && exec \"$@\"' %s %s \"$@\"\n"
                       % (HOST.program("unshare"), mnt, conftest.UEXEC_BIN))
    wrapper.chmod(0o755)
    monkeypatch.setattr(conftest, "UEXEC_BIN", str(wrapper))
    srv = server_factory()
    c = srv.connect()
    try:
        f = tmp_path / "f"
        f.write_text("data")
        e = err(c, f, mnt / "f")
        assert e["code"] == -32603 and e["message"].startswith(
            "Cross-device link (os error 18): fs/rename cannot move `%s` to `%s`" % (f, mnt / "f"))
        assert f.read_text() == "data"
        # inside the tmpfs (seen by the server only) a rename works
        assert c.result("fs/writeFile", {"path": U(mnt / "a"), "dataBase64": "eA=="}) == {}
        ok(c, mnt / "a", mnt / "b")
        names = [e["fileName"] for e in c.result("fs/readDirectory", {"path": U(mnt)})["entries"]]
        assert names == ["b"]
        assert os.listdir(mnt) == []   # the host's view: the tmpfs is not mounted here
    finally:
        c.ws.abort()


@pytest.mark.needs("sandbox")  # served by the sandboxed fs helper
def test_sandboxed_rename_allowed_and_denied(sclient, tmp_path):
    """With a `sandbox`, fs/rename runs in the sandboxed fs helper as fs/remove and fs/copy
    do: inside a writable root it moves; with reads only it gets the very error fs/remove
    and fs/copy get there (EROFS), and nothing moves."""
    base = tmp_path / "ws"
    (base / "work").mkdir(parents=True)
    (base / "work" / "a").write_text("a")
    conftest.own(base)
    w = U(base / "work")
    writable = {"permissions": {"type": "managed", "file_system": {"type": "restricted", "entries": [
        {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"},
        {"path": {"type": "special", "value": {"kind": "project_roots"}}, "access": "write"}]},
        "network": "restricted"},
        "cwd": w, "policyContext": {"cwd": w, "workspaceRoots": [w]}, "workspaceRoots": [w],
        "windowsSandboxLevel": "disabled"}
    read_only = {"permissions": {"type": "managed", "file_system": {"type": "restricted",
                 "entries": [{"path": {"type": "special", "value": {"kind": "root"}},
                              "access": "read"}]}, "network": "restricted"},
                 "cwd": w, "windowsSandboxLevel": "disabled"}
    ok(sclient, base / "work" / "a", base / "work" / "b", sandbox=writable)
    assert (base / "work" / "b").read_text() == "a" and not (base / "work" / "a").exists()
    # the read-only sandbox: rename refused like remove and copy
    denied = err(sclient, base / "work" / "b", base / "work" / "c", sandbox=read_only)
    r_remove = sclient.call("fs/remove", {"path": U(base / "work" / "b"), "sandbox": read_only},
                            timeout=60)
    r_copy = sclient.call("fs/copy", {"sourcePath": U(base / "work" / "b"),
                                      "destinationPath": U(base / "work" / "c"),
                                      "recursive": False, "sandbox": read_only}, timeout=60)
    assert denied == EROFS == r_remove.get("error") == r_copy.get("error")
    # out of the writable root into a read-only place: fs/copy gets EROFS there; a rename
    # crosses from the writable root's mount to the read-only view's, which the kernel
    # answers with EXDEV before it looks at write access: the clear cross-device error
    assert sclient.call("fs/copy", {"sourcePath": U(base / "work" / "b"),
                                    "destinationPath": U(base / "b"), "recursive": False,
                                    "sandbox": writable}, timeout=60)["error"] == EROFS
    e = err(sclient, base / "work" / "b", base / "b", sandbox=writable)
    assert e["code"] == -32603 and e["message"].startswith("Cross-device link (os error 18)")
    assert "or a sandbox forbids the move" in e["message"], e
    assert (base / "work" / "b").read_text() == "a" and not (base / "b").exists()
    assert not (base / "work" / "c").exists()
    # a `deny` entry inside the writable root: the rename out of it is refused as
    # fs/remove is refused there (Landlock, EACCES -32600)
    (base / "work" / "secret").mkdir()
    (base / "work" / "secret" / "s").write_text("s")
    conftest.own(base)
    deny = dict(writable, permissions=dict(writable["permissions"], file_system={
        "type": "restricted", "entries": writable["permissions"]["file_system"]["entries"] + [
            {"path": {"type": "path", "path": U(base / "work" / "secret")}, "access": "deny"}]}))
    r_remove = sclient.call("fs/remove", {"path": U(base / "work" / "secret" / "s"),
                                          "sandbox": deny}, timeout=60)
    assert "error" in r_remove, r_remove     # EACCES where Landlock handles the deny
    assert err(sclient, base / "work" / "secret" / "s", base / "work" / "s2",
               sandbox=deny) == r_remove["error"]
    assert (base / "work" / "secret" / "s").read_text() == "s"
    assert not (base / "work" / "s2").exists()
    # a disabled sandbox runs in the server
    ok(sclient, base / "work" / "b", base / "b", sandbox={
        "permissions": {"type": "disabled"}, "windowsSandboxLevel": "disabled", "cwd": w})
    assert (base / "b").read_text() == "a"


def test_bad_params(sclient, tmp_path):
    """Decoding errors in the fs methods' style."""
    assert sclient.error("fs/rename", {"sourcePath": U(tmp_path / "a")}) == {
        "code": -32602, "message": "missing field `destinationPath`"}
    assert sclient.error("fs/rename", {"sourcePath": "rel", "destinationPath": "http://x"}) == {
        "code": -32602, "message": "invalid URI: relative URL without a base"}
    assert sclient.error("fs/rename", {"sourcePath": U(tmp_path / "a"),
                                       "destinationPath": U(tmp_path / "b"),
                                       "overwrite": "no"})["code"] == -32602


_SWAPPER = r"""
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
a, b, stop = sys.argv[1].encode(), sys.argv[2].encode(), sys.argv[3]
print("ready", flush=True)
while not os.path.exists(stop):
    for _ in range(200):
        libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
"""


def test_parent_swapped_for_a_symlink_never_moves_a_protected_directory(cwd_server, tmp_path):
    """TOCTOU: the checks and the rename must look at the same directories. A parent of the
    source that another process keeps swapping between a real directory and a symlink to the
    directory holding the server's home must never let the home move away: what was checked
    (a harmless `d/home`) is what is renamed, never the protected one behind the symlink."""
    import subprocess
    import sys
    import time
    home = tmp_path / "home"
    home_ino = home.stat().st_ino
    real = tmp_path / "d"
    real.mkdir()
    os.symlink(str(tmp_path), str(tmp_path / "alt"))  # alt/home is the server's home
    out = tmp_path / "out"
    out.mkdir()
    real_fd = os.open(str(real), os.O_RDONLY | os.O_DIRECTORY)
    os.mkdir("home", dir_fd=real_fd)
    stop = tmp_path / "stop"
    sw = subprocess.Popen([sys.executable, "-c", _SWAPPER, str(real), str(tmp_path / "alt"),
                           str(stop)], stdout=subprocess.PIPE)
    c = cwd_server.connect()
    moved = refused = 0
    try:
        assert sw.stdout.readline() == b"ready\n"
        # until both branches of the race were taken often (a slow machine takes longer)
        deadline = time.monotonic() + EVENT_TIMEOUT
        i = 0
        while not (moved >= 100 and refused >= 100) and time.monotonic() < deadline:
            i += 1
            r = rename(c, tmp_path / "d" / "home", out / str(i))
            if "result" in r:
                moved += 1
                try:
                    os.mkdir("home", dir_fd=real_fd)
                except FileExistsError:
                    pass
            else:
                refused += 1
            if not home.is_dir() or home.stat().st_ino != home_ino:
                break
    finally:
        stop.write_text("")
        sw.wait(timeout=EVENT_TIMEOUT)
        os.close(real_fd)
        c.ws.abort()
    escaped = [p for p in out.iterdir() if p.stat().st_ino == home_ino]
    assert home.is_dir() and home.stat().st_ino == home_ino and not escaped, \
        "the server's home was moved to %s after %d renames" % (escaped, i)
    assert moved and refused, (moved, refused)  # both branches of the race were taken
