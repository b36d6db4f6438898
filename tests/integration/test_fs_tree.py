# SPDX-License-Identifier: MIT
"""fs/readDirectory, fs/walk, fs/remove, fs/copy, fs/canonicalize.

PROTOCOL.md §6.11, §6.16-§6.19, §6.21, §4 (error codes), §5.1 (paths), §13;
evidence p07_fs.out, p08_fs_permissions.out, p05/p06 (decoding texts). Texts
marked "ref" below were confirmed against codex exec-server 0.169.0.

uexec-specific rules tested here (deliberate differences, see fs-walk.c and fs-rmcp.c):
* native absolute paths are accepted like file: URIs;
* fs/copy of a file onto itself (same device + inode) is refused;
* fs/remove refuses "/", the server's cwd and home and their ancestors, and
  never follows a symlink while removing a tree;
* fs/remove followSymlinks:false works (a symlink in the path is refused);
* fs/walk lists names that are not UTF-8 (bytes percent-encoded);
* set-ID bits are dropped from a copy that changes owner;
* more than 256 queued filesystem jobs -> -32603 "server busy: ...".
A request with a restricting sandbox runs in the sandboxed fs helper (fs-sandbox.c),
which serves it with this same code.
"""

import os
import shutil
import socket
import stat
import subprocess
import tempfile
import threading

import pytest

import conftest
import wsclient
from wsclient import file_uri as U

# the programs this module's processes run (skipped, with the names, where missing)
pytestmark = pytest.mark.needs_programs("/bin/sh")

NOBODY = conftest.NOBODY
ENOENT_ERR = {"code": -32004, "message": "No such file or directory (os error 2)"}
EACCES_ERR = {"code": -32600, "message": "Permission denied (os error 13)"}
ENOTDIR_ERR = {"code": -32603, "message": "Not a directory (os error 20)"}
ELOOP_ERR = {"code": -32603, "message": "Symbolic link loop (os error 40)"}
EEXIST_ERR = {"code": -32603, "message": "File exists (os error 17)"}
LIMITS_TEXT = "filesystem walk limits exceed maximums: depth=64, directories=10000, entries=50000"
SAME_FILE = {"code": -32600, "message": "fs/copy source and destination are the same file"}
INTO_ITSELF = {"code": -32600,
               "message": "fs/copy cannot copy a directory to itself or one of its descendants"}
ONLY_SUPPORTS = {"code": -32600,
                 "message": "fs/copy only supports regular files, directories, and symlinks"}
NEEDS_RECURSIVE = {"code": -32600,
                   "message": "fs/copy requires recursive: true when sourcePath is a directory"}
# a sandbox that grants reads everywhere and writes nowhere (§5.4)
SANDBOX_WW = {
    "permissions": {"type": "managed", "file_system": {"type": "restricted", "entries": [
        {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"}]},
        "network": "restricted"},
    "cwd": "file:///tmp", "windowsSandboxLevel": "disabled"}


# --------------------------------------------------------------------------
# helpers


def ok(c, method, params, timeout=60):
    r = c.call(method, params, timeout=timeout)
    assert "result" in r, "%s %r -> %r" % (method, params, r)
    return r["result"]


def err(c, method, params, timeout=60):
    r = c.call(method, params, timeout=timeout)
    assert "error" in r, "%s %r unexpectedly succeeded: %r" % (method, params, r)
    return r["error"]


def opts(**kw):
    o = {"maxDepth": 10, "maxDirectories": 100, "maxEntries": 1000,
         "followDirectorySymlinks": False}
    o.update(kw)
    return o


def walk(c, path, **kw):
    return ok(c, "fs/walk", {"path": U(path), "options": opts(**kw)})


def rel(res, root):
    """fs/walk entries as [relative path, kind] (root given natively)."""
    base = U(root).rstrip("/") + "/"
    out = []
    for e in res["entries"]:
        assert e["path"].startswith(base), e
        out.append([e["path"][len(base):], e["kind"]])
    return out


def copy(c, src, dst, recursive=False, **kw):
    p = {"sourcePath": U(src), "destinationPath": U(dst), "recursive": recursive}
    p.update(kw)
    return c.call("fs/copy", p)


def write(path, data=b"x", mode=None):
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    if mode is not None:
        os.chmod(path, mode)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def make_socket(path):
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(path))
    s.close()


def touch_many(d, names):
    """Empty files, one syscall each (mknod): big trees are built faster than with open."""
    os.makedirs(d, exist_ok=True)
    for n in names:
        os.mknod(os.path.join(d, n), 0o644 | stat.S_IFREG)


def entry_names(res):
    return [e["fileName"] for e in res["entries"]]


@pytest.fixture
def nobody_server(server_factory, monkeypatch):
    """A uexec running as nobody (for EACCES), with a scratch dir nobody can reach.
    tmp_path lives under a 0700 directory, so the scratch dir is a separate one."""
    conftest.HOST.require("unprivileged-server")
    scratch = tempfile.mkdtemp(prefix="uexec-fs-tree-")
    os.chmod(scratch, 0o755)
    wrapper = os.path.join(scratch, "uexec-as-nobody")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\nexec %s --reuid=%d --regid=%d --clear-groups %s \"$@\"\n"
                % (conftest.HOST.program("setpriv"), NOBODY, NOBODY,
                   os.path.abspath(conftest.UEXEC_BIN)))
    os.chmod(wrapper, 0o755)
    monkeypatch.setattr(conftest, "UEXEC_BIN", wrapper)
    work = os.path.join(scratch, "work")
    os.mkdir(work)
    os.chown(work, NOBODY, NOBODY)
    srv = server_factory(cwd=work)
    yield srv, scratch
    if conftest.HOST.program("chattr"):
        subprocess.run(["chattr", "-R", "-i", scratch], stderr=subprocess.DEVNULL)
    shutil.rmtree(scratch, ignore_errors=True)


# --------------------------------------------------------------------------
# decoding (p05/p06 texts, struct names confirmed against the reference)


@pytest.mark.parametrize("method,struct,n", [
    ("fs/readDirectory", "WireFsReadDirectoryParams", 2),
    ("fs/canonicalize", "WireFsCanonicalizeParams", 2),
    ("fs/remove", "WireFsRemoveParams", 5),
    ("fs/copy", "WireFsCopyParams", 4),
    ("fs/walk", "WireFsWalkParams", 3),
])
def test_params_struct_names(sclient, method, struct, n):
    """§3: null params and an empty positional array name the reference's struct."""
    assert err(sclient, method, None) == {
        "code": -32602, "message": "invalid type: null, expected struct %s" % struct}
    assert err(sclient, method, [])["message"] == \
        "invalid length 0, expected struct %s with %d elements" % (struct, n)


@pytest.mark.parametrize("method,params,message", [
    ("fs/readDirectory", {}, "missing field `path`"),
    ("fs/readDirectory", {"path": True}, "invalid type: boolean `true`, expected a string"),
    ("fs/readDirectory", {"path": "file:///", "sandbox": True},
     "invalid type: boolean `true`, expected struct WireFileSystemSandboxContext"),
    ("fs/canonicalize", {"path": 1}, "invalid type: number, expected a string"),
    ("fs/remove", {"path": "file:///nonexistent-x", "recursive": "x"},
     'invalid type: string "x", expected a boolean'),
    ("fs/remove", {"path": "file:///nonexistent-x", "force": -1},
     "invalid type: number, expected a boolean"),
    ("fs/remove", {"path": "file:///nonexistent-x", "followSymlinks": "not-a-bool"},
     'invalid type: string "not-a-bool", expected a boolean'),
    ("fs/copy", {}, "missing field `sourcePath`"),
    ("fs/copy", {"sourcePath": "file:///a", "destinationPath": "file:///b"},
     "missing field `recursive`"),
    ("fs/copy", {"sourcePath": "file:///a", "destinationPath": "file:///b", "recursive": None},
     "invalid type: null, expected a boolean"),
    ("fs/copy", {"sourcePath": "file:///a", "destinationPath": True, "recursive": False},
     "invalid type: boolean `true`, expected a string"),
    ("fs/walk", {"path": "file:///"}, "missing field `options`"),
    ("fs/walk", {"path": "file:///", "options": False},
     "invalid type: boolean `false`, expected struct WalkOptions"),
    ("fs/walk", {"path": "file:///", "options": None}, "invalid type: null, expected struct WalkOptions"),
    ("fs/walk", {"path": "file:///", "options": {}}, "missing field `maxDepth`"),
    ("fs/walk", {"path": "file:///", "options": {"maxDepth": 1, "maxDirectories": 1, "maxEntries": 1}},
     "missing field `followDirectorySymlinks`"),
    ("fs/walk", {"path": "file:///", "options": opts(maxDepth=True)},
     "invalid type: boolean `true`, expected usize"),
    ("fs/walk", {"path": "file:///", "options": opts(maxEntries="x")},
     'invalid type: string "x", expected usize'),
    ("fs/walk", {"path": "file:///", "options": opts(maxDepth=-1)}, "invalid number"),
    ("fs/walk", {"path": "file:///", "options": opts(maxDepth=1.5)}, "invalid number"),
    ("fs/walk", {"path": "file:///", "options": opts(followDirectorySymlinks=None)},
     "invalid type: null, expected a boolean"),
    ("fs/walk", {"path": "file:///", "options": opts(followDirectorySymlinks=1)},
     "invalid type: number, expected a boolean"),
    # pruneHiddenDirectories may be absent but not null (serde(default) bool)
    ("fs/walk", {"path": "file:///", "options": opts(pruneHiddenDirectories=None)},
     "invalid type: null, expected a boolean"),
    ("fs/walk", {"path": "file:///", "options": [1, 1, 1]},
     "invalid length 3, expected struct WalkOptions with 5 elements"),
    # serde decodes options where it meets the key: its error wins over a later bad path
    ("fs/walk", {"options": {}, "path": 1}, "missing field `maxDepth`"),
    ("fs/walk", {"path": 1, "options": {}}, "invalid type: number, expected a string"),
])
def test_params_decoding(sclient, method, params, message):
    """p05/p06: serde-exact decoding errors (-32602), confirmed against the reference."""
    assert err(sclient, method, params) == {"code": -32602, "message": message}


@pytest.mark.parametrize("method", ["fs/readDirectory", "fs/canonicalize", "fs/remove", "fs/walk"])
def test_uri_errors(sclient, method, tmp_path):
    """§5.1: URI syntax errors -32602, remote host -32600 (before any limit check)."""
    extra = {"options": opts()} if method == "fs/walk" else {}
    for path, code, message in [
            ("a.txt", -32602, "invalid URI: relative URL without a base"),
            ("http://h/x", -32602, "unsupported path URI scheme `http`"),
            ("file:///x?q=1", -32602, "query parameters are not allowed in path URIs"),
            ("file:///x#f", -32602, "fragments are not allowed in path URIs"),
            ("file://otherhost/x", -32600, "'file://otherhost/x' is invalid on 'linux'")]:
        p = dict(extra, path=path)
        assert err(sclient, method, p) == {"code": code, "message": message}, path


def test_copy_uri_errors_source_first(sclient):
    """§5.1: fs/copy reports the source's URI error before the destination's."""
    assert err(sclient, "fs/copy", {"sourcePath": "rel", "destinationPath": "http://x",
                                    "recursive": False}) == {
        "code": -32602, "message": "invalid URI: relative URL without a base"}
    assert err(sclient, "fs/copy", {"sourcePath": "file:///nonexistent-src",
                                    "destinationPath": "http://x", "recursive": False}) == {
        "code": -32602, "message": "unsupported path URI scheme `http`"}


@pytest.mark.parametrize("method", ["fs/readDirectory", "fs/canonicalize", "fs/remove",
                                    "fs/copy", "fs/walk"])
@pytest.mark.needs("sandbox")  # served by the sandboxed fs helper
def test_sandboxed_request(sclient, tmp_path, method):
    """§6.11: with a sandbox granting only reads, reads succeed and fs/remove / fs/copy fail
    with -32603 'Read-only file system (os error 30)' as on the reference; nothing changes."""
    write(tmp_path / "f")
    p = {"path": U(tmp_path)}
    if method == "fs/walk":
        p["options"] = opts()
    if method == "fs/copy":
        p = {"sourcePath": U(tmp_path / "f"), "destinationPath": U(tmp_path / "g"),
             "recursive": False}
    p["sandbox"] = SANDBOX_WW
    r = sclient.call(method, p, timeout=60)
    if method in ("fs/remove", "fs/copy"):
        assert r.get("error") == {"code": -32603, "message": "Read-only file system (os error 30)"}
    else:
        assert "result" in r, r
    assert os.path.exists(tmp_path / "f") and not os.path.exists(tmp_path / "g")
    p["sandbox"] = {"permissions": {"type": "disabled"}, "windowsSandboxLevel": "disabled",
                    "cwd": U(tmp_path)}
    ok(sclient, method, p)


# --------------------------------------------------------------------------
# fs/readDirectory (§6.17)


def test_read_directory_types_and_raw_order(sclient, tmp_path):
    """§6.17: readdir order, no ./.., hidden files listed, types through symlinks,
    FIFOs/sockets both false, dangling and looping links omitted."""
    d = tmp_path / "d"
    os.mkdir(d)
    write(d / "file")
    write(d / ".hidden")
    os.mkdir(d / "sub")
    os.mkfifo(d / "fifo")
    make_socket(d / "sock")
    os.symlink("sub", d / "link-dir")
    os.symlink("file", d / "link-file")
    os.symlink("fifo", d / "link-fifo")
    os.symlink("nowhere", d / "dangling")
    os.symlink("loop", d / "loop")
    res = ok(sclient, "fs/readDirectory", {"path": U(d)})
    expected_types = {
        "file": (False, True), ".hidden": (False, True), "sub": (True, False),
        "fifo": (False, False), "sock": (False, False), "link-dir": (True, False),
        "link-file": (False, True), "link-fifo": (False, False)}
    raw = [n for n in os.listdir(d) if n in expected_types]
    assert entry_names(res) == raw          # the raw directory order, not sorted
    for e in res["entries"]:
        assert list(e) == ["fileName", "isDirectory", "isFile"]
        assert (e["isDirectory"], e["isFile"]) == expected_types[e["fileName"]], e


def test_read_directory_paths_and_errors(sclient, tmp_path):
    """§6.17 table: empty dir, file -> ENOTDIR, missing -> -32004, link to a dir lists the
    target, FIFO path -> ENOTDIR without blocking, dangling -> -32004, loop -> ELOOP."""
    os.mkdir(tmp_path / "empty")
    write(tmp_path / "f")
    os.mkdir(tmp_path / "dir")
    write(tmp_path / "dir" / "x.txt")
    os.symlink("dir", tmp_path / "link-dir")
    os.mkfifo(tmp_path / "fifo")
    os.symlink("nowhere", tmp_path / "dangling")
    os.symlink("loop", tmp_path / "loop")
    R = lambda p: sclient.call("fs/readDirectory", {"path": p})
    assert R(U(tmp_path / "empty"))["result"] == {"entries": []}
    assert R(U(tmp_path / "f"))["error"] == ENOTDIR_ERR
    assert R(U(tmp_path / "f") + "/")["error"] == ENOTDIR_ERR
    assert R(U(tmp_path / "missing"))["error"] == ENOENT_ERR
    assert R(U(tmp_path / "fifo"))["error"] == ENOTDIR_ERR
    assert R(U(tmp_path / "dangling"))["error"] == ENOENT_ERR
    assert R(U(tmp_path / "loop"))["error"] == ELOOP_ERR
    want = {"entries": [{"fileName": "x.txt", "isDirectory": False, "isFile": True}]}
    assert R(U(tmp_path / "link-dir"))["result"] == want
    assert R(U(tmp_path / "dir") + "/")["result"] == want
    # native path (uexec) and other URI spellings (§5.1)
    assert R(str(tmp_path / "dir"))["result"] == want
    assert R("file://localhost" + str(tmp_path / "dir"))["result"] == want
    assert R(U(tmp_path) + "/x/../dir")["result"] == want


def test_read_directory_non_utf8_names_lossy(sclient, tmp_path):
    """§6.17: invalid UTF-8 converted as Rust's from_utf8_lossy (confirmed on the
    reference): each maximal invalid subsequence -> one U+FFFD."""
    d = tmp_path / "d"
    os.mkdir(d)
    cases = {
        b"bad-\xff\xfe.bin": "bad-\ufffd\ufffd.bin",
        b"n-\xe2\x82": "n-\ufffd",                     # truncated 3-byte sequence
        b"a\xf0\x9f\x98b": "a\ufffdb",                 # truncated 4-byte sequence
        b"s-\xed\xa0\x80": "s-\ufffd\ufffd\ufffd",     # surrogate: 3 bytes, 3 marks
        b"o-\xc0\xaf": "o-\ufffd\ufffd",               # overlong
        b"h-\xf4\x90\x80\x80": "h-\ufffd\ufffd\ufffd\ufffd",  # > U+10FFFF
        "unicodé €".encode(): "unicodé €",
    }
    for raw in cases:
        with open(os.path.join(os.fsencode(d), raw), "wb") as f:
            f.write(b"x")
    res = ok(sclient, "fs/readDirectory", {"path": U(d)})
    assert sorted(entry_names(res)) == sorted(cases.values())


# --------------------------------------------------------------------------
# fs/canonicalize (§6.16)


def test_canonicalize(sclient, tmp_path):
    """§6.16: realpath, links resolved, non-ASCII percent-encoded; missing, missing parent,
    dangling -> -32004; loop -> ELOOP; through a file -> ENOTDIR; file:/// -> file:///."""
    write(tmp_path / "a.txt")
    write(tmp_path / "unicodé.txt")
    os.mkdir(tmp_path / "dir")
    os.symlink("a.txt", tmp_path / "link-a")
    os.symlink(str(tmp_path / "dir"), tmp_path / "link-dir")
    os.symlink("nowhere", tmp_path / "dangling")
    os.symlink("loop", tmp_path / "loop")
    with open(os.path.join(os.fsencode(tmp_path), b"raw-\xff"), "wb"):
        pass
    C = lambda p: sclient.call("fs/canonicalize", {"path": p})
    assert C(U(tmp_path / "link-a"))["result"] == {"path": U(tmp_path / "a.txt")}
    assert C(U(tmp_path / "link-dir"))["result"] == {"path": U(tmp_path / "dir")}
    assert C(U(tmp_path / "link-dir") + "/")["result"] == {"path": U(tmp_path / "dir")}
    assert C(U(tmp_path / "dir") + "/../a.txt")["result"] == {"path": U(tmp_path / "a.txt")}
    assert C(U(tmp_path) + "/unicod%C3%A9.txt")["result"] == {"path": U(tmp_path) + "/unicod%C3%A9.txt"}
    assert C(U(tmp_path) + "/raw-%FF")["result"]["path"] == U(tmp_path) + "/raw-%FF"
    assert C(str(tmp_path / "link-a"))["result"] == {"path": U(tmp_path / "a.txt")}
    assert C("file:///")["result"] == {"path": "file:///"}
    assert C(U(tmp_path / "missing"))["error"] == ENOENT_ERR
    assert C(U(tmp_path / "missing" / "child"))["error"] == ENOENT_ERR
    assert C(U(tmp_path / "dangling"))["error"] == ENOENT_ERR
    assert C(U(tmp_path / "loop"))["error"] == ELOOP_ERR
    assert C(U(tmp_path / "a.txt" / "x"))["error"] == ENOTDIR_ERR


# --------------------------------------------------------------------------
# fs/walk (§6.21)


def make_w(root):
    """The tree of p07's walk summaries."""
    os.makedirs(root / ".hid" / "inner")
    write(root / ".hid" / "inner" / "f")
    os.makedirs(root / "a" / "b" / "c" / "d")
    write(root / "a" / "b" / "c" / "d" / "deep.txt")
    os.mkdir(root / "noperm")
    return root


W_BASE = [[".hid", "directory"], ["a", "directory"], ["noperm", "directory"],
          [".hid/inner", "directory"], ["a/b", "directory"], [".hid/inner/f", "file"],
          ["a/b/c", "directory"], ["a/b/c/d", "directory"], ["a/b/c/d/deep.txt", "file"]]


@pytest.mark.parametrize("kw,n,truncated", [
    ({}, 9, False),
    ({"maxDepth": 0}, 3, False),
    ({"maxDepth": 1}, 5, False),
    ({"maxDepth": 2}, 7, False),
    ({"maxEntries": 2}, 2, True),
    ({"maxDirectories": 1}, 3, True),
    ({"maxDirectories": 2}, 4, True),
    ({"maxDepth": 64, "maxDirectories": 10000, "maxEntries": 50000}, 9, False),
])
def test_walk_limits_p07(sclient, tmp_path, kw, n, truncated):
    """§6.21, p07 walk summaries: sorted BFS, maxDepth/maxEntries/maxDirectories."""
    root = make_w(tmp_path / "w")
    res = walk(sclient, root, **kw)
    assert list(res) == ["entries", "errors", "truncated"]
    assert rel(res, root) == W_BASE[:n]
    assert res["errors"] == [] and res["truncated"] is truncated


def test_walk_prune_hidden(sclient, tmp_path):
    """§6.21: pruneHiddenDirectories lists hidden directories but does not enter them;
    hidden files are listed; a hidden root is still walked."""
    root = make_w(tmp_path / "w")
    write(root / "a" / ".hf")
    res = walk(sclient, root, pruneHiddenDirectories=True)
    assert rel(res, root) == [[".hid", "directory"], ["a", "directory"], ["noperm", "directory"],
                              ["a/.hf", "file"], ["a/b", "directory"], ["a/b/c", "directory"],
                              ["a/b/c/d", "directory"], ["a/b/c/d/deep.txt", "file"]]
    res = walk(sclient, root / ".hid", pruneHiddenDirectories=True)
    assert rel(res, root / ".hid") == [["inner", "directory"], ["inner/f", "file"]]


def test_walk_truncation_edges(sclient, tmp_path):
    """§6.21 (confirmed on the reference): exactly maxEntries entries is not truncated;
    a directory left to read past a limit is, even if it is empty; maxDepth never truncates."""
    root = tmp_path / "t"
    for n in "abc":
        write(root / n)
    res = walk(sclient, root, maxEntries=3)
    assert len(res["entries"]) == 3 and res["truncated"] is False
    os.mkdir(root / "d")                               # empty
    res = walk(sclient, root, maxEntries=4)
    assert len(res["entries"]) == 4 and res["truncated"] is True
    res = walk(sclient, root, maxEntries=4, maxDepth=0)
    assert len(res["entries"]) == 4 and res["truncated"] is False
    res = walk(sclient, root, maxDirectories=1)
    assert len(res["entries"]) == 4 and res["truncated"] is True
    res = walk(sclient, root, maxDirectories=2)
    assert len(res["entries"]) == 4 and res["truncated"] is False
    res = walk(sclient, root, maxDirectories=1, maxDepth=0)
    assert res["truncated"] is False


def test_walk_sorted_by_bytes(sclient, tmp_path):
    """§6.21: within a directory, byte order (uppercase before lowercase, UTF-8 last)."""
    root = tmp_path / "s"
    names = ["b", "B", "a", "_", "é", "Z", "a b", "a-b", "10", "9"]
    for n in names:
        write(root / n)
    res = walk(sclient, root)
    assert [e["path"] for e in res["entries"]] == [
        U(root / n) for n in sorted(names, key=lambda s: s.encode())]


def test_walk_symlinks(sclient, tmp_path):
    """§6.21: links omitted unless following; then only links to directories are
    listed, a directory reached twice is entered once, dangling/looping links and
    FIFOs/sockets are never listed (confirmed on the reference)."""
    root = tmp_path / "r"
    os.makedirs(root / "z")
    write(root / "z" / "f")
    write(root / "f0")
    os.symlink("z", root / "a-link")
    os.symlink("z", root / "zz-link")
    os.symlink(str(root / "z"), root / "abs-link")
    os.symlink("f0", root / "flink")
    os.symlink("nowhere", root / "dang")
    os.symlink("loop", root / "loop")
    os.symlink(".", root / "self")
    os.mkdir(root / "q")
    os.symlink("..", root / "q" / "up")
    os.mkfifo(root / "fifo")
    make_socket(root / "sock")
    res = walk(sclient, root)
    assert rel(res, root) == [["f0", "file"], ["q", "directory"], ["z", "directory"],
                              ["z/f", "file"]]
    res = walk(sclient, root, followDirectorySymlinks=True)
    assert rel(res, root) == [
        ["a-link", "directory"], ["abs-link", "directory"], ["f0", "file"], ["q", "directory"],
        ["self", "directory"], ["z", "directory"], ["zz-link", "directory"],
        ["a-link/f", "file"], ["q/up", "directory"]]
    assert res["errors"] == [] and res["truncated"] is False


def test_walk_root_kinds(sclient, tmp_path):
    """§6.21: root is a file, FIFO or (not followed) link -> empty; a followed link is
    walked under the link's own path; missing/dangling -> -32004; loop -> ELOOP."""
    empty = {"entries": [], "errors": [], "truncated": False}
    os.mkdir(tmp_path / "dir")
    write(tmp_path / "dir" / "x")
    write(tmp_path / "file")
    os.mkfifo(tmp_path / "fifo")
    os.symlink("dir", tmp_path / "link")
    os.symlink("nowhere", tmp_path / "dang")
    os.symlink("loop", tmp_path / "loop")
    assert walk(sclient, tmp_path / "file") == empty
    assert walk(sclient, tmp_path / "fifo") == empty
    assert walk(sclient, tmp_path / "link") == empty
    res = walk(sclient, tmp_path / "link", followDirectorySymlinks=True)
    assert res["entries"] == [{"path": U(tmp_path / "link" / "x"), "kind": "file"}]
    W = lambda p: sclient.call("fs/walk", {"path": U(p), "options": opts()})
    assert W(tmp_path / "missing")["error"] == ENOENT_ERR
    assert W(tmp_path / "dang")["error"] == ENOENT_ERR
    assert W(tmp_path / "loop")["error"] == ELOOP_ERR
    assert ok(sclient, "fs/walk", {"path": str(tmp_path / "dir"), "options": opts()})[
        "entries"] == [{"path": U(tmp_path / "dir" / "x"), "kind": "file"}]


def test_walk_limit_checks(sclient, tmp_path):
    """§6.21: a zero limit -> -32600 (maxDepth 0 is fine); over the reference's maximums
    (64/10000/50000) -> -32600 (also u64::MAX); URI errors come first, then limits,
    then the disk (a missing root with bad limits reports the limits)."""
    zero = {"code": -32600, "message": "filesystem walk limits must be greater than zero"}
    over = {"code": -32600, "message": LIMITS_TEXT}
    W = lambda p, **kw: sclient.call("fs/walk", {"path": p, "options": opts(**kw)})
    d = U(tmp_path)
    assert W(d, maxEntries=0)["error"] == zero
    assert W(d, maxDirectories=0)["error"] == zero
    assert W(d, maxDepth=65, maxEntries=0)["error"] == zero
    assert W(d, maxDepth=0)["result"]["truncated"] is False
    assert W(d, maxDepth=65)["error"] == over
    assert W(d, maxDirectories=10001)["error"] == over
    assert W(d, maxEntries=50001)["error"] == over
    assert W(d, maxEntries=2 ** 64 - 1, maxDepth=2 ** 63)["error"] == over
    assert W(U(tmp_path / "missing"), maxEntries=0)["error"] == zero
    assert W(U(tmp_path / "missing"), maxEntries=50001)["error"] == over
    assert W("relative", maxEntries=0)["error"] == {
        "code": -32602, "message": "invalid URI: relative URL without a base"}
    # positional options (serde accepts a sequence; the 5th field has a default)
    res = ok(sclient, "fs/walk", {"path": d, "options": [10, 1000, 1000, False]})
    assert res["truncated"] is False


def test_walk_non_utf8_names_listed(sclient, tmp_path):
    """uexec: a name that is not UTF-8 is listed with its bytes percent-encoded (the path
    round-trips); the reference mangles it and reports ENOENT in errors instead."""
    root = tmp_path / "u"
    os.mkdir(root)
    with open(os.path.join(os.fsencode(root), b"bad-\xff\xfe.bin"), "wb") as f:
        f.write(b"data")
    write(root / "sp ace%41é")
    res = walk(sclient, root)
    assert res["entries"] == [
        {"path": U(root) + "/bad-%FF%FE.bin", "kind": "file"},
        {"path": U(root) + "/sp%20ace%2541%C3%A9", "kind": "file"}]
    assert res["errors"] == []
    listed = ok(sclient, "fs/canonicalize", {"path": res["entries"][0]["path"]})
    assert listed["path"] == U(root) + "/bad-%FF%FE.bin"


def test_walk_server_cap_on_a_huge_directory(sclient, tmp_path):
    """uexec: one directory larger than maxEntries -> the smallest names, truncated
    (only maxEntries names are kept in memory while reading it)."""
    root = tmp_path / "big"
    os.mkdir(root)
    names = ["f%05d" % i for i in range(3000)]
    touch_many(root, reversed(names))
    res = walk(sclient, root, maxEntries=7)
    assert [r[0] for r in rel(res, root)] == names[:7] and res["truncated"] is True
    res = walk(sclient, root, maxEntries=3000)
    assert [r[0] for r in rel(res, root)] == names and res["truncated"] is False


# --------------------------------------------------------------------------
# fs/remove (§6.18)


def test_remove_table(sclient, tmp_path):
    """§6.18 table: file; non-empty dir (default recursive); recursive:false non-empty ->
    ENOTEMPTY; empty dir with recursive:false; missing with/without force; missing parent;
    through a file -> ENOTDIR even with force; FIFO."""
    R = lambda p, **kw: sclient.call("fs/remove", dict({"path": U(p)}, **kw))
    write(tmp_path / "file")
    assert R(tmp_path / "file")["result"] == {}
    assert not os.path.lexists(tmp_path / "file")
    write(tmp_path / "full" / "sub" / "x")
    assert R(tmp_path / "full", recursive=False)["error"] == {
        "code": -32603, "message": "Directory not empty (os error 39)"}
    assert os.path.exists(tmp_path / "full" / "sub" / "x")
    assert R(tmp_path / "full")["result"] == {}
    assert not os.path.lexists(tmp_path / "full")
    write(tmp_path / "full3" / "a" / "b" / "c")
    assert R(tmp_path / "full3", recursive=True)["result"] == {}
    assert not os.path.lexists(tmp_path / "full3")
    os.mkdir(tmp_path / "emptyd")
    assert R(tmp_path / "emptyd", recursive=False)["result"] == {}
    assert not os.path.lexists(tmp_path / "emptyd")
    assert R(tmp_path / "missing")["result"] == {}
    assert R(tmp_path / "missing", force=True)["result"] == {}
    assert R(tmp_path / "missing", force=False)["error"] == ENOENT_ERR
    assert R(tmp_path / "missing", recursive=False, force=False)["error"] == ENOENT_ERR
    assert R(tmp_path / "missing" / "child")["result"] == {}
    assert R(tmp_path / "missing" / "child", force=False)["error"] == ENOENT_ERR
    write(tmp_path / "plain")
    assert R(tmp_path / "plain" / "x")["error"] == ENOTDIR_ERR
    assert R(tmp_path / "plain" / "x", force=False)["error"] == ENOTDIR_ERR
    os.mkfifo(tmp_path / "fifo")
    assert R(tmp_path / "fifo", recursive=False)["result"] == {}
    assert not os.path.lexists(tmp_path / "fifo")
    write(tmp_path / "native")
    assert ok(sclient, "fs/remove", {"path": str(tmp_path / "native")}) == {}
    assert not os.path.lexists(tmp_path / "native")


def test_remove_symlinks_never_followed(sclient, tmp_path):
    """§6.18: a link (to a dir, dangling, with a trailing slash) is removed, not its target;
    links inside a tree are unlinked and what they point to stays intact."""
    R = lambda p, **kw: sclient.call("fs/remove", dict({"path": p}, **kw))
    outside = tmp_path / "outside"
    write(outside / "keep")
    os.symlink(str(outside), tmp_path / "link-dir")
    assert R(U(tmp_path / "link-dir"))["result"] == {}
    assert not os.path.lexists(tmp_path / "link-dir") and os.path.exists(outside / "keep")
    os.symlink(str(outside), tmp_path / "link-dir")
    assert R(U(tmp_path / "link-dir") + "/")["result"] == {}
    assert not os.path.lexists(tmp_path / "link-dir") and os.path.exists(outside / "keep")
    os.symlink("nowhere", tmp_path / "dangling")
    assert R(U(tmp_path / "dangling"), force=False)["result"] == {}
    assert not os.path.lexists(tmp_path / "dangling")
    tree = tmp_path / "tree"
    write(tree / "sub" / "x")
    os.symlink(str(outside), tree / "to-outside")
    os.symlink(str(outside), tree / "sub" / "deeper")
    os.symlink(str(outside / "keep"), tree / "to-file")
    assert R(U(tree))["result"] == {}
    assert not os.path.lexists(tree)
    assert os.listdir(outside) == ["keep"] and read(outside / "keep") == b"x"


def test_remove_follow_symlinks_false(sclient, tmp_path):
    """§6.11 + uexec: followSymlinks:false removes files and trees but refuses a symlink as
    the path (-32600 'path contains a symbolic link', like fs/getMetadata; the reference
    only supports it together with recursive:false) and, as the reference, a symlink among
    its directories (-32603 ENOTDIR: the directories are opened without following)."""
    R = lambda p, **kw: sclient.call("fs/remove", dict({"path": U(p), "followSymlinks": False},
                                                       **kw))
    link_err = {"code": -32600, "message": "path contains a symbolic link"}
    write(tmp_path / "f")
    assert R(tmp_path / "f")["result"] == {}
    write(tmp_path / "t" / "x")
    assert R(tmp_path / "t")["result"] == {}
    assert not os.path.lexists(tmp_path / "t")
    write(tmp_path / "real" / "x")
    os.symlink("real", tmp_path / "link")
    assert R(tmp_path / "link")["error"] == link_err
    assert R(tmp_path / "link", recursive=False)["error"] == link_err
    assert R(tmp_path / "link" / "x", recursive=False)["error"] == {
        "code": -32603, "message": "Not a directory (os error 20)"}
    assert R(tmp_path / "link" / "x")["error"] == {
        "code": -32603, "message": "Not a directory (os error 20)"}
    assert os.path.exists(tmp_path / "real" / "x") and os.path.islink(tmp_path / "link")
    assert ok(sclient, "fs/remove", {"path": U(tmp_path / "link"), "followSymlinks": True}) == {}
    assert not os.path.lexists(tmp_path / "link") and os.path.exists(tmp_path / "real" / "x")


@pytest.mark.needs("root")  # CAP_LINUX_IMMUTABLE
@pytest.mark.needs_programs("chattr")
def test_remove_immutable_eperm(sclient, tmp_path):
    """§6.18/§4: EPERM (immutable file) -> -32600 even with force (p07)."""
    write(tmp_path / "imm")
    p = subprocess.run(["chattr", "+i", str(tmp_path / "imm")], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip("needs a file system with the immutable flag at %s: chattr +i: %s"
                    % (tmp_path, p.stderr.strip()))
    try:
        assert err(sclient, "fs/remove", {"path": U(tmp_path / "imm"), "force": True}) == {
            "code": -32600, "message": "Operation not permitted (os error 1)"}
        assert os.path.exists(tmp_path / "imm")
    finally:
        subprocess.run(["chattr", "-i", str(tmp_path / "imm")])


def test_remove_refuses_server_ground(server_factory, tmp_path):
    """uexec (§13): '/', the server's cwd and home and any of their ancestors are refused
    (-32600), by identity (other spellings too); nothing is removed. A symlink to the cwd
    is just a link and is removed."""
    work = tmp_path / "work"
    cwd = work / "proj" / "sub"
    home = tmp_path / "home" / "user"
    os.makedirs(cwd)
    os.makedirs(home)
    write(cwd / "keep")
    write(home / "keep")
    write(work / "sibling" / "x")
    srv = server_factory(cwd=str(cwd), env=dict(os.environ, HOME=str(home)))
    c = srv.connect()
    R = lambda p, **kw: c.call("fs/remove", dict({"path": p}, **kw))
    root_err = {"code": -32600, "message": "fs/remove refuses to remove the root directory"}

    def cwd_err(p):
        return {"code": -32600, "message": "fs/remove refuses to remove `%s`: it is or contains "
                "the server's working directory" % p}

    def home_err(p):
        return {"code": -32600, "message": "fs/remove refuses to remove `%s`: it is or contains "
                "the server's home directory" % p}

    # recursive:false keeps these harmless even if a refusal were missing
    for p in ("file:///", "file:////", "file:///..", "/", "/./"):
        assert R(p, recursive=False)["error"] == root_err, p
    assert R(U(cwd))["error"] == cwd_err(str(cwd))
    assert R(U(cwd), recursive=False)["error"] == cwd_err(str(cwd))
    assert R(U(work / "proj"))["error"] == cwd_err(str(work / "proj"))
    assert R(U(work) + "/proj/sub/..")["error"] == cwd_err(str(work / "proj"))
    assert R(U(home))["error"] == home_err(str(home))
    assert R(U(tmp_path / "home"))["error"] == home_err(str(tmp_path / "home"))
    assert R(U(tmp_path))["error"]["code"] == -32600
    # another spelling of an ancestor: a symlinked parent path
    os.symlink(str(work), tmp_path / "alias")
    assert R(U(tmp_path / "alias" / "proj"))["error"] == cwd_err(str(tmp_path / "alias" / "proj"))
    assert os.path.exists(cwd / "keep") and os.path.exists(home / "keep")
    # a link to the cwd is only a link
    os.symlink(str(cwd), tmp_path / "cwd-link")
    assert R(U(tmp_path / "cwd-link"))["result"] == {}
    assert os.path.exists(cwd / "keep")
    # unrelated directories next to them are fine
    assert R(U(work / "sibling"))["result"] == {}
    assert not os.path.exists(work / "sibling")
    c.ws.abort()


def test_remove_root_refused_with_defaults(nobody_server):
    """uexec (§13): {"path": "file:///"} with the recursive+force defaults is refused. Run as
    nobody, so that even a broken refusal could not remove anything that matters."""
    srv, scratch = nobody_server
    c = srv.connect()
    assert err(c, "fs/remove", {"path": "file:///"}) == {
        "code": -32600, "message": "fs/remove refuses to remove the root directory"}
    assert os.path.isdir("/etc") and os.path.isdir(scratch)
    c.ws.abort()


def test_remove_tree_symlink_swap_race(sclient, tmp_path):
    """uexec: while a tree is removed, another thread keeps swapping its directories for
    symlinks to an outside directory; nothing outside may be removed (TOCTOU)."""
    outside = tmp_path / "outside"
    for i in range(50):
        write(outside / ("keep%d" % i))
    victim = tmp_path / "victim"
    n = 150
    for i in range(n):
        for k in range(15):
            write(victim / ("d%03d" % i) / ("f%d" % k))
    moved = tmp_path / "moved"
    os.mkdir(moved)
    stop = threading.Event()

    def swapper():
        while not stop.is_set():
            for i in range(n):
                d = victim / ("d%03d" % i)
                try:
                    os.rename(d, moved / ("d%03d-%d" % (i, os.getpid())))
                    os.symlink(str(outside), d)
                except OSError:
                    pass
                try:
                    if os.path.islink(d):
                        os.unlink(d)
                        os.symlink(str(outside), d)
                except OSError:
                    pass

    t = threading.Thread(target=swapper)
    t.start()
    try:
        for _ in range(3):
            r = sclient.call("fs/remove", {"path": U(victim)}, timeout=60)
            assert "result" in r or r["error"]["code"] in (-32603, -32004), r
            if "result" in r:
                break
    finally:
        stop.set()
        t.join()
    assert sorted(os.listdir(outside)) == sorted("keep%d" % i for i in range(50))


# --------------------------------------------------------------------------
# fs/copy (§6.19)


def test_copy_file_rows(sclient, tmp_path):
    """§6.19: file -> new (data + permission bits), -> existing (truncated, rewritten in
    place, mode follows the source), -> existing dir EISDIR, missing parent and missing
    source -32004, trailing slash, large file, /proc file (reported size 0)."""
    src = tmp_path / "a.txt"
    write(src, b"hello", 0o751)
    assert copy(sclient, src, tmp_path / "new.txt")["result"] == {}
    assert read(tmp_path / "new.txt") == b"hello"
    assert stat.S_IMODE(os.stat(tmp_path / "new.txt").st_mode) == 0o751
    write(tmp_path / "exist.txt", b"older and longer content", 0o600)
    ino = os.stat(tmp_path / "exist.txt").st_ino
    assert copy(sclient, src, tmp_path / "exist.txt", recursive=True)["result"] == {}
    assert read(tmp_path / "exist.txt") == b"hello"
    st = os.stat(tmp_path / "exist.txt")
    assert st.st_ino == ino and stat.S_IMODE(st.st_mode) == 0o751
    os.mkdir(tmp_path / "dir")
    assert copy(sclient, src, tmp_path / "dir")["error"] == {
        "code": -32603, "message": "Is a directory (os error 21)"}
    assert copy(sclient, src, tmp_path / "nodir" / "x.txt")["error"] == ENOENT_ERR
    assert copy(sclient, tmp_path / "missing", tmp_path / "cp-m")["error"] == ENOENT_ERR
    p = {"sourcePath": U(src), "destinationPath": U(tmp_path / "slash.txt") + "/",
         "recursive": False}
    assert ok(sclient, "fs/copy", p) == {} and read(tmp_path / "slash.txt") == b"hello"
    big = os.urandom(3 << 20) + b"tail"
    write(tmp_path / "big.bin", big)
    assert copy(sclient, tmp_path / "big.bin", tmp_path / "big2.bin")["result"] == {}
    assert read(tmp_path / "big2.bin") == big
    assert ok(sclient, "fs/copy", {"sourcePath": "/proc/version",
                                   "destinationPath": str(tmp_path / "version"),
                                   "recursive": False}) == {}
    assert read(tmp_path / "version") == read("/proc/version") != b""


def test_copy_onto_itself_refused(sclient, tmp_path):
    """uexec (§13): the reference truncates a file copied onto itself; uexec refuses by
    device + inode: same name, a trailing-slash spelling, a hard link, a symlink to it."""
    src = tmp_path / "a.txt"
    write(src, b"precious")
    os.link(src, tmp_path / "hard")
    os.symlink("a.txt", tmp_path / "link")
    for dst, rec in ((src, False), (src, True), (tmp_path / "hard", False),
                     (tmp_path / "link", False)):
        assert copy(sclient, src, dst, recursive=rec)["error"] == SAME_FILE, dst
        assert read(src) == b"precious"
    p = {"sourcePath": U(src), "destinationPath": U(src) + "/", "recursive": False}
    assert err(sclient, "fs/copy", p) == SAME_FILE
    assert read(src) == b"precious"


def test_copy_tree_rows(sclient, tmp_path):
    """§6.19: recursive:false on a dir -> -32600; tree copied (files keep their mode, dirs get
    the default, links stay links); onto an existing dir the contents merge (no nesting);
    missing parents of the destination are created; dir onto a file -> EEXIST; through a
    file -> ENOTDIR."""
    src = tmp_path / "dir"
    write(src / "x.txt", b"x", 0o640)
    write(src / "sub" / "y.txt", b"y")
    os.chmod(src, 0o711)
    os.symlink("x.txt", src / "lx")
    os.symlink("/nowhere/at/all", src / "dangling")
    assert copy(sclient, src, tmp_path / "cp")["error"] == NEEDS_RECURSIVE
    assert not os.path.exists(tmp_path / "cp")
    assert copy(sclient, src, tmp_path / "cp", recursive=True)["result"] == {}
    cp = tmp_path / "cp"
    assert sorted(os.listdir(cp)) == ["dangling", "lx", "sub", "x.txt"]
    assert read(cp / "x.txt") == b"x" and read(cp / "sub" / "y.txt") == b"y"
    assert stat.S_IMODE(os.stat(cp / "x.txt").st_mode) == 0o640
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(cp).st_mode) in (0o777 & ~umask, 0o755)
    assert os.readlink(cp / "lx") == "x.txt" and os.readlink(cp / "dangling") == "/nowhere/at/all"
    # again onto the existing copy: merged, not nested
    write(cp / "extra")
    write(cp / "x.txt", b"changed")
    assert copy(sclient, src, cp, recursive=True)["error"] == EEXIST_ERR  # links exist
    os.unlink(cp / "lx")
    os.unlink(cp / "dangling")
    assert copy(sclient, src, cp, recursive=True)["result"] == {}
    assert sorted(os.listdir(cp)) == ["dangling", "extra", "lx", "sub", "x.txt"]
    assert read(cp / "x.txt") == b"x" and not os.path.exists(cp / "dir")
    # missing parents are created for a directory copy (as the reference does)
    assert copy(sclient, src, tmp_path / "p1" / "p2" / "cp", recursive=True)["result"] == {}
    assert read(tmp_path / "p1" / "p2" / "cp" / "sub" / "y.txt") == b"y"
    write(tmp_path / "file")
    assert copy(sclient, src, tmp_path / "file", recursive=True)["error"] == EEXIST_ERR
    assert copy(sclient, src, tmp_path / "file" / "x", recursive=True)["error"] == ENOTDIR_ERR


def test_copy_tree_conflicts_inside(sclient, tmp_path):
    """§6.19 (confirmed on the reference): inside a tree, a file onto a dir -> EISDIR, a dir
    onto a file -> EEXIST, a link onto a file -> EEXIST; a file onto a link writes through."""
    write(tmp_path / "s2" / "f")
    os.makedirs(tmp_path / "d2" / "f")
    assert copy(sclient, tmp_path / "s2", tmp_path / "d2", True)["error"] == {
        "code": -32603, "message": "Is a directory (os error 21)"}
    os.makedirs(tmp_path / "s3" / "sub")
    write(tmp_path / "d3" / "sub", b"in the way")
    assert copy(sclient, tmp_path / "s3", tmp_path / "d3", True)["error"] == EEXIST_ERR
    write(tmp_path / "s5" / "f", b"data")
    write(tmp_path / "target", b"old")
    os.makedirs(tmp_path / "d5")
    os.symlink(str(tmp_path / "target"), tmp_path / "d5" / "f")
    assert copy(sclient, tmp_path / "s5", tmp_path / "d5", True)["result"] == {}
    assert read(tmp_path / "target") == b"data" and os.path.islink(tmp_path / "d5" / "f")


def test_copy_into_itself_refused(sclient, tmp_path):
    """§6.19: a directory into itself or a descendant -> -32600, also when the destination
    does not exist yet or is reached through a symlink; a name sharing a prefix is fine."""
    src = tmp_path / "dir"
    write(src / "sub" / "y")
    os.symlink(str(src), tmp_path / "alias")
    for dst in (src, src / "sub", src / "sub" / "inside", src / "nonex" / "inside",
                tmp_path / "alias" / "sub" / "in"):
        assert copy(sclient, src, dst, recursive=True)["error"] == INTO_ITSELF, dst
    assert sorted(os.listdir(src)) == ["sub"] and os.listdir(src / "sub") == ["y"]
    assert copy(sclient, src, tmp_path / "dirx", recursive=True)["result"] == {}
    assert err(sclient, "fs/copy", {"sourcePath": "file:///", "destinationPath": U(tmp_path / "r"),
                                    "recursive": True}) == INTO_ITSELF


def test_copy_symlinks_and_special_files(sclient, tmp_path):
    """§6.19: a symlink source (to a file, to a dir, dangling; recursive or not) is copied as
    a link; onto an existing file -> EEXIST; a FIFO/socket source -> -32600; FIFOs inside a
    tree are skipped (as the reference does)."""
    write(tmp_path / "a", b"a")
    os.mkdir(tmp_path / "d")
    os.symlink("a", tmp_path / "la")
    os.symlink("d", tmp_path / "ld")
    os.symlink("nowhere", tmp_path / "dang")
    for s, rec in (("la", False), ("ld", False), ("ld", True), ("dang", False)):
        dst = tmp_path / ("%s-copy-%s" % (s, rec))
        assert copy(sclient, tmp_path / s, dst, recursive=rec)["result"] == {}
        assert os.readlink(dst) == os.readlink(tmp_path / s)
    write(tmp_path / "exists")
    assert copy(sclient, tmp_path / "la", tmp_path / "exists")["error"] == EEXIST_ERR
    os.mkfifo(tmp_path / "fifo")
    make_socket(tmp_path / "sock")
    for s in ("fifo", "sock"):
        for rec in (False, True):
            assert copy(sclient, tmp_path / s, tmp_path / "x", recursive=rec)["error"] == \
                ONLY_SUPPORTS
    assert err(sclient, "fs/copy", {"sourcePath": "file:///dev/null",
                                    "destinationPath": U(tmp_path / "null"),
                                    "recursive": False}) == ONLY_SUPPORTS
    t = tmp_path / "t"
    write(t / "aa")
    os.mkfifo(t / "ff")
    write(t / "zz")
    assert copy(sclient, t, tmp_path / "tcopy", recursive=True)["result"] == {}
    assert sorted(os.listdir(tmp_path / "tcopy")) == ["aa", "zz"]


def test_copy_mode_bits(sclient, tmp_path):
    """§6.19: permission and sticky bits follow the source; set-user-ID and set-group-ID
    bits never do, whether the copy keeps the owner or not (the reference keeps them: as
    root that minted root-owned set-id copies; README "Protocol notes")."""
    conftest.HOST.require("root")  # to create files owned by someone else
    write(tmp_path / "mine", b"s", 0o4755)
    write(tmp_path / "sticky", b"s", 0o1644)
    write(tmp_path / "theirs", b"s")
    os.chown(tmp_path / "theirs", NOBODY, NOBODY)
    os.chmod(tmp_path / "theirs", 0o6755)
    for s in ("mine", "sticky", "theirs"):
        assert copy(sclient, tmp_path / s, tmp_path / (s + "2"))["result"] == {}
    mode = lambda n: stat.S_IMODE(os.stat(tmp_path / n).st_mode)
    assert mode("mine2") == 0o755 and os.stat(tmp_path / "mine2").st_uid == 0
    assert mode("sticky2") == 0o1644
    assert mode("theirs2") == 0o755 and os.stat(tmp_path / "theirs2").st_uid == 0


# --------------------------------------------------------------------------
# EACCES as a non-root server (p08)


def test_permission_errors_as_nobody(nobody_server):
    """p08 / §4: EACCES -> -32600 'Permission denied (os error 13)' on every method;
    an unreadable directory in a walk is listed and reported in errors, an unreadable
    root gives no entries and one error; fs/remove's force does not hide it."""
    srv, scratch = nobody_server
    base = os.path.join(scratch, "perm")
    os.mkdir(base)
    write(os.path.join(base, "secret.txt"), b"secret", 0o600)
    os.makedirs(os.path.join(base, "closed", "inner"))
    os.chmod(os.path.join(base, "closed"), 0o700)
    os.mkdir(os.path.join(base, "rodir"))
    write(os.path.join(base, "rodir", "file.txt"))
    os.makedirs(os.path.join(base, "walk", "ok"))
    os.makedirs(os.path.join(base, "walk", "closed"))
    write(os.path.join(base, "walk", "ok", "f"))
    os.chmod(os.path.join(base, "walk", "closed"), 0o700)
    mine = os.path.join(scratch, "work")
    c = srv.connect()
    P = lambda *a: U(os.path.join(base, *a))
    assert err(c, "fs/readDirectory", {"path": P("closed")}) == EACCES_ERR
    assert err(c, "fs/canonicalize", {"path": P("closed", "inner")}) == EACCES_ERR
    assert err(c, "fs/remove", {"path": P("rodir", "file.txt")}) == EACCES_ERR
    assert err(c, "fs/remove", {"path": P("rodir", "file.txt"), "force": True}) == EACCES_ERR
    assert err(c, "fs/remove", {"path": P("rodir")}) == EACCES_ERR
    assert os.path.exists(os.path.join(base, "rodir", "file.txt"))
    assert err(c, "fs/copy", {"sourcePath": P("secret.txt"), "destinationPath":
                              U(os.path.join(mine, "copy.txt")), "recursive": False}) == EACCES_ERR
    assert err(c, "fs/copy", {"sourcePath": P("rodir", "file.txt"), "destinationPath":
                              P("rodir", "copy.txt"), "recursive": False}) == EACCES_ERR
    res = ok(c, "fs/walk", {"path": P("walk"), "options": opts(maxDepth=5, maxDirectories=50,
                                                                maxEntries=100)})
    assert res == {"entries": [{"path": P("walk", "closed"), "kind": "directory"},
                               {"path": P("walk", "ok"), "kind": "directory"},
                               {"path": P("walk", "ok", "f"), "kind": "file"}],
                   "errors": [{"path": P("walk", "closed"),
                               "message": "Permission denied (os error 13)"}],
                   "truncated": False}
    res = ok(c, "fs/walk", {"path": P("closed"), "options": opts()})
    assert res == {"entries": [], "errors": [{"path": P("closed"),
                                              "message": "Permission denied (os error 13)"}],
                   "truncated": False}
    c.ws.abort()


# --------------------------------------------------------------------------
# worker pool behaviour


def test_connection_closed_while_jobs_run(server, tmp_path):
    """uexec: a connection that closes with jobs in the worker pool gets no reply and the
    jobs are freed when they finish (the server stays healthy; ASan checks the rest)."""
    root = tmp_path / "t"
    for i in range(20):
        touch_many(root / ("d%02d" % i), ("f%03d" % k for k in range(250)))
    c = server.connect()
    for _ in range(20):
        c.request("fs/walk", {"path": U(root), "options": opts(maxEntries=50000)})
        c.request("fs/readDirectory", {"path": U(root / "d00")})
    c.ws.abort()
    c2 = server.connect()
    res = ok(c2, "fs/walk", {"path": U(root), "options": opts(maxEntries=50000)})
    assert len(res["entries"]) == 20 + 20 * 250 and res["truncated"] is False
    c2.ws.abort()


def test_busy_when_too_many_jobs(server, tmp_path):
    """uexec: more than 256 filesystem jobs queued -> -32603 'server busy: too many
    filesystem operations in progress'; the others complete and the server recovers.
    Six connections: one alone pauses at its in-flight budget (each walk is charged
    1 MiB until it is serialised, 64 MiB per connection) and never reaches 256."""
    # each walk reads 10 000 names but returns one: slow jobs, small replies
    root = tmp_path / "t"
    touch_many(root, ("f%05d" % k for k in range(10000)))
    conns = [server.connect() for _ in range(6)]
    ids = [(c, c.request("fs/walk", {"path": U(root), "options": opts(maxEntries=1)}))
           for c in conns for _ in range(60)]
    busy = done = 0
    for c, i in ids:
        r = c.wait_reply(i, timeout=120)
        if "error" in r:
            assert r["error"] == {"code": -32603, "message":
                                  "server busy: too many filesystem operations in progress"}
            busy += 1
        else:
            assert r["result"]["entries"] == [{"path": U(root / "f00000"), "kind": "file"}]
            assert r["result"]["truncated"] is True
            done += 1
    assert done >= 257 and busy >= 1, (done, busy)
    assert ok(conns[0], "fs/canonicalize", {"path": U(root)}) == {"path": U(root)}
    for c in conns:
        c.ws.abort()


def test_walk_100k_tree_does_not_stall_long_poll(server, tmp_path):
    """§6.21 + architecture: walks of a 100 000-file tree run in the worker pool while a
    process/read long poll is woken by output and answers. Shown by order on one
    connection: the write that wakes the poll is sent after the six walks, and the poll's
    answer still comes before the last walk's (a loop that ran the walks itself would
    read the write only after them)."""
    root = tmp_path / "huge"
    for i in range(100):
        touch_many(root / ("d%03d" % i), ("f%04d" % k for k in range(1000)))
    a = server.connect()
    a.start("lp", ["/bin/sh", "-c", "read x; echo got-$x; sleep 1000"],
            env={"PATH": "/usr/bin:/bin"}, pipeStdin=True)
    poll = a.request("process/read", {"processId": "lp", "waitMs": 600000})
    walks = [a.request("fs/walk", {"path": U(root), "options": opts(
        maxDepth=64, maxDirectories=10000, maxEntries=50000)}) for _ in range(6)]
    write = a.request("process/write", {"processId": "lp", "chunk": wsclient.b64(b"go\n"),
                                        "writeId": "w1"})
    res = a.wait_reply(poll, timeout=120)["result"]
    assert b"".join(wsclient.unb64(ch["chunk"]) for ch in res["chunks"]) == b"got-go\n"
    assert a.wait_reply(write)["result"] == {"status": "accepted"}
    assert not all(a.has_reply(i) for i in walks), "every walk answered before the poll"
    for i in walks:
        r = a.wait_reply(i, timeout=120)["result"]
        assert len(r["entries"]) == 50000 and r["truncated"] is True
        assert r["entries"][0] == {"path": U(root / "d000"), "kind": "directory"}
        assert r["entries"][100] == {"path": U(root / "d000" / "f0000"), "kind": "file"}
    a.terminate("lp")
    a.ws.abort()
