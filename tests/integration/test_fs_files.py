"""fs/getMetadata, fs/readFile, fs/writeFile, fs/createDirectory and the streaming
fs/open, fs/readBlock, fs/writeBlock, fs/close (PROTOCOL.md §6.11-§6.15, §6.20,
evidence p07_fs.out). Native absolute paths are accepted as well as file: URIs
(uexec difference)."""

import base64
import os
import stat

import pytest

from wsclient import file_uri

ENOENT = {"code": -32004, "message": "No such file or directory (os error 2)"}


def b64(data):
    return base64.b64encode(data).decode()


def unb64(s):
    return base64.b64decode(s)


# ---- fs/getMetadata (§6.15)

def test_metadata_file(sclient, tmp_path):
    """§6.15: a regular file: type flags, size and mtime in ms (truncated)."""
    f = tmp_path / "f.txt"
    f.write_bytes(b"x" * 70)
    os.utime(f, (1700000001.25, 1700000001.25))
    res = sclient.result("fs/getMetadata", {"path": file_uri(f)})
    assert list(res) == ["isDirectory", "isFile", "isSymlink", "size", "createdAtMs",
                         "modifiedAtMs"]
    assert res["isDirectory"] is False and res["isFile"] is True and res["isSymlink"] is False
    assert res["size"] == 70
    assert res["modifiedAtMs"] == 1700000001250
    assert isinstance(res["createdAtMs"], int) and res["createdAtMs"] >= 0


def test_metadata_directory(sclient, tmp_path):
    """§6.15: a directory."""
    res = sclient.result("fs/getMetadata", {"path": file_uri(tmp_path)})
    assert res["isDirectory"] is True and res["isFile"] is False and res["isSymlink"] is False


def test_metadata_missing(sclient, tmp_path):
    """§6.15: missing path -> -32004 ENOENT."""
    assert sclient.error("fs/getMetadata", {"path": file_uri(tmp_path / "nope")}) == ENOENT


def test_metadata_symlink_to_file_and_dir(sclient, tmp_path):
    """§6.15: a link reports the target's type and isSymlink true."""
    (tmp_path / "t.txt").write_text("t")
    os.symlink(tmp_path / "t.txt", tmp_path / "lf")
    os.symlink(tmp_path, tmp_path / "ld")
    lf = sclient.result("fs/getMetadata", {"path": file_uri(tmp_path / "lf")})
    ld = sclient.result("fs/getMetadata", {"path": file_uri(tmp_path / "ld")})
    assert (lf["isFile"], lf["isSymlink"], lf["size"]) == (True, True, 1)
    assert (ld["isDirectory"], ld["isSymlink"]) == (True, True)


def test_metadata_dangling_symlink(sclient, tmp_path):
    """§6.15: a dangling link -> -32004."""
    os.symlink(tmp_path / "gone", tmp_path / "dl")
    assert sclient.error("fs/getMetadata", {"path": file_uri(tmp_path / "dl")}) == ENOENT


def test_metadata_no_follow_on_symlink(sclient, tmp_path):
    """§6.15: followSymlinks false on a link -> -32600 'path contains a symbolic link'."""
    os.symlink(tmp_path, tmp_path / "ld")
    assert sclient.error("fs/getMetadata", {"path": file_uri(tmp_path / "ld"),
                                            "followSymlinks": False}) == {
        "code": -32600, "message": "path contains a symbolic link"}


def test_metadata_fifo(sclient, tmp_path):
    """§6.15: a FIFO is neither file nor directory."""
    os.mkfifo(tmp_path / "fifo")
    res = sclient.result("fs/getMetadata", {"path": file_uri(tmp_path / "fifo")})
    assert (res["isFile"], res["isDirectory"]) == (False, False)


def test_metadata_native_path(sclient, tmp_path):
    """uexec: a native absolute path is accepted."""
    (tmp_path / "n").write_text("n")
    assert sclient.result("fs/getMetadata", {"path": str(tmp_path / "n")})["isFile"] is True


def test_metadata_bad_uri(sclient):
    """§5.1: scheme, query, relative paths and remote hosts."""
    assert sclient.error("fs/getMetadata", {"path": "http://x/y"}) == {
        "code": -32602, "message": "unsupported path URI scheme `http`"}
    assert sclient.error("fs/getMetadata", {"path": "file:///tmp?x=1"}) == {
        "code": -32602, "message": "query parameters are not allowed in path URIs"}
    assert sclient.error("fs/getMetadata", {"path": "relative/x"}) == {
        "code": -32602, "message": "invalid URI: relative URL without a base"}
    assert sclient.error("fs/getMetadata", {"path": "file://otherhost/root/x"}) == {
        "code": -32600, "message": "'file://otherhost/root/x' is invalid on 'linux'"}


def test_metadata_param_errors(sclient):
    """p05: missing path, wrong types."""
    assert sclient.error("fs/getMetadata", {}) == {"code": -32602,
                                                   "message": "missing field `path`"}
    assert sclient.error("fs/getMetadata", {"path": "/tmp", "followSymlinks": "x"}) == {
        "code": -32602, "message": 'invalid type: string "x", expected a boolean'}


# ---- fs/readFile (§6.12)

def test_read_file_binary_round_trip(sclient, tmp_path):
    """§6.12: bytes come back exactly."""
    data = bytes(range(256)) * 33
    (tmp_path / "b.bin").write_bytes(data)
    res = sclient.result("fs/readFile", {"path": file_uri(tmp_path / "b.bin"), "sandbox": None})
    assert list(res) == ["dataBase64"] and unb64(res["dataBase64"]) == data


def test_read_file_empty(sclient, tmp_path):
    """§6.12: an empty file -> dataBase64 ''."""
    (tmp_path / "e").write_bytes(b"")
    assert sclient.result("fs/readFile", {"path": file_uri(tmp_path / "e")}) == {"dataBase64": ""}


def test_read_file_missing_and_dangling(sclient, tmp_path):
    """§6.12: missing file or dangling link -> -32004."""
    os.symlink(tmp_path / "gone", tmp_path / "dl")
    assert sclient.error("fs/readFile", {"path": file_uri(tmp_path / "nope")}) == ENOENT
    assert sclient.error("fs/readFile", {"path": file_uri(tmp_path / "dl")}) == ENOENT


def test_read_file_directory_and_fifo(sclient, tmp_path):
    """§6.12: a directory or a FIFO -> -32600 path `...` is not a file (FIFO never blocks)."""
    os.mkfifo(tmp_path / "fifo")
    for p in (tmp_path, tmp_path / "fifo"):
        assert sclient.error("fs/readFile", {"path": file_uri(p)}) == {
            "code": -32600, "message": "path `%s` is not a file" % p}


def test_read_file_dev_null(sclient):
    """§6.12: /dev/null is not a regular file."""
    assert sclient.error("fs/readFile", {"path": "file:///dev/null"}) == {
        "code": -32600, "message": "path `/dev/null` is not a file"}


def test_read_file_proc(sclient):
    """§6.12: /proc files report size 0 but are read fully."""
    res = sclient.result("fs/readFile", {"path": "file:///proc/self/status"})
    assert b"Pid:" in unb64(res["dataBase64"])


def test_read_file_symlink_followed_or_loop(sclient, tmp_path):
    """§6.12: links are followed; followSymlinks false -> -32603 ELOOP."""
    (tmp_path / "t").write_bytes(b"target")
    os.symlink(tmp_path / "t", tmp_path / "l")
    assert unb64(sclient.result("fs/readFile", {"path": file_uri(tmp_path / "l")})
                 ["dataBase64"]) == b"target"
    assert sclient.error("fs/readFile", {"path": file_uri(tmp_path / "l"),
                                         "followSymlinks": False}) == {
        "code": -32603, "message": "Symbolic link loop (os error 40)"}


def test_read_file_sparse_too_large(sclient, tmp_path):
    """§6.12: > 512 MiB (by size; a sparse file fails at once) -> -32600."""
    with open(tmp_path / "huge", "wb") as f:
        f.truncate((512 << 20) + 1)
    assert sclient.error("fs/readFile", {"path": file_uri(tmp_path / "huge")}) == {
        "code": -32600, "message": "file is too large to read: limit is 536870912 bytes"}


def test_read_file_64mib(server, tmp_path):
    """§6.12 / issue: a 64 MiB file streams through intact."""
    data = os.urandom(1 << 20) * 64
    (tmp_path / "big").write_bytes(data)
    c = server.connect()
    res = c.result("fs/readFile", {"path": file_uri(tmp_path / "big")}, timeout=120)
    assert unb64(res["dataBase64"]) == data


def _ws_sandbox(root):
    """The fs form of the real client's workspace-write sandbox (§5.4), rooted at root."""
    w = file_uri(root)
    return {"permissions": {"type": "managed", "file_system": {"type": "restricted", "entries": [
        {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"},
        {"path": {"type": "special", "value": {"kind": "project_roots"}}, "access": "write"},
        {"path": {"type": "special", "value": {"kind": "project_roots", "subpath": ".git"}},
         "access": "read", "missing_path_behavior": "skip"}]},
        "network": "restricted"},
        "cwd": w, "policyContext": {"cwd": w, "workspaceRoots": [w]}, "workspaceRoots": [w],
        "userHomeDir": "file:///root", "windowsSandboxLevel": "disabled"}


@pytest.fixture
def sandbox_dirs():
    """A workspace and an outside directory that are not under /tmp (which may be writable)."""
    import shutil
    import tempfile
    base = tempfile.mkdtemp(dir="/var/tmp", prefix="uexec-fs-sbx-")
    os.makedirs(os.path.join(base, "work", ".git"))
    os.makedirs(os.path.join(base, "outside"))
    yield __import__("pathlib").Path(base)
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.needs("sandbox")  # served by the sandboxed fs helper
def test_sandboxed_write_inside_and_read_back(sclient, sandbox_dirs):
    """issue 5: a sandboxed fs/writeFile inside the workspace succeeds (helper process)."""
    w = sandbox_dirs / "work"
    sb = _ws_sandbox(w)
    assert sclient.result("fs/writeFile", {"path": file_uri(w / "a.txt"),
                                           "dataBase64": b64(b"inside"), "sandbox": sb}) == {}
    assert (w / "a.txt").read_bytes() == b"inside"
    assert unb64(sclient.result("fs/readFile", {"path": file_uri(w / "a.txt"), "sandbox": sb})
                 ["dataBase64"]) == b"inside"


@pytest.mark.needs("sandbox")  # served by the sandboxed fs helper
def test_sandboxed_write_outside_is_read_only(sclient, sandbox_dirs):
    """§6.11: a sandboxed write outside the writable set -> -32603 EROFS; nothing written."""
    sb = _ws_sandbox(sandbox_dirs / "work")
    target = sandbox_dirs / "outside" / "x"
    assert sclient.error("fs/writeFile", {"path": file_uri(target), "dataBase64": b64(b"x"),
                                          "sandbox": sb}) == {
        "code": -32603, "message": "Read-only file system (os error 30)"}
    assert not target.exists()


@pytest.mark.needs("sandbox")  # served by the sandboxed fs helper
def test_sandboxed_write_into_git_is_read_only(sclient, sandbox_dirs):
    """issue 5: .git under a writable root stays read-only for sandboxed fs writes."""
    w = sandbox_dirs / "work"
    assert sclient.error("fs/writeFile", {"path": file_uri(w / ".git" / "config"),
                                          "dataBase64": b64(b"x"), "sandbox": _ws_sandbox(w)})[
        "message"] == "Read-only file system (os error 30)"
    assert not (w / ".git" / "config").exists()


def test_sandboxed_fs_requires_cwd(sclient, sandbox_dirs):
    """§5.4: a restricting fs sandbox without cwd -> -32602."""
    sb = _ws_sandbox(sandbox_dirs / "work")
    del sb["cwd"]
    assert sclient.error("fs/readFile", {"path": "file:///etc/hostname", "sandbox": sb}) == {
        "code": -32602,
        "message": "file system sandbox context with dynamic permissions requires cwd"}


# ---- fs/writeFile (§6.13)

def test_write_file_creates_0644(sclient, tmp_path):
    """§6.13: creates the file (0644 under umask 022), result {}."""
    p = tmp_path / "new.txt"
    assert sclient.result("fs/writeFile", {"path": file_uri(p), "dataBase64": b64(b"hi\n"),
                                           "sandbox": None}) == {}
    assert p.read_bytes() == b"hi\n"
    assert stat.S_IMODE(p.stat().st_mode) == 0o644 & ~_umask()


def _umask():
    m = os.umask(0)
    os.umask(m)
    return m


def test_write_file_in_place_keeps_inode_and_links(sclient, tmp_path):
    """§6.13: truncate and rewrite in place: same inode, mode kept, hard links share."""
    p = tmp_path / "f"
    p.write_bytes(b"old content that is long")
    os.chmod(p, 0o600)
    os.link(p, tmp_path / "hard")
    ino = p.stat().st_ino
    sclient.result("fs/writeFile", {"path": file_uri(p), "dataBase64": b64(b"new")})
    assert p.stat().st_ino == ino and stat.S_IMODE(p.stat().st_mode) == 0o600
    assert (tmp_path / "hard").read_bytes() == b"new"


def test_write_file_missing_parent(sclient, tmp_path):
    """§6.13: parents are not created -> -32004."""
    assert sclient.error("fs/writeFile", {"path": file_uri(tmp_path / "no/dir/f"),
                                          "dataBase64": ""}) == ENOENT


def test_write_file_dangling_link_creates_target(sclient, tmp_path):
    """§6.13: a dangling link is followed: the target is created, the link stays."""
    os.symlink(tmp_path / "target", tmp_path / "l")
    sclient.result("fs/writeFile", {"path": file_uri(tmp_path / "l"), "dataBase64": b64(b"x")})
    assert (tmp_path / "target").read_bytes() == b"x" and os.path.islink(tmp_path / "l")


def test_write_file_no_follow(sclient, tmp_path):
    """§6.13: followSymlinks false on a link -> -32603 ELOOP."""
    os.symlink(tmp_path / "target", tmp_path / "l")
    assert sclient.error("fs/writeFile", {"path": file_uri(tmp_path / "l"), "dataBase64": "",
                                          "followSymlinks": False})["message"] == \
        "Symbolic link loop (os error 40)"


def test_write_file_directory(sclient, tmp_path):
    """§6.13: a directory -> -32603 EISDIR."""
    assert sclient.error("fs/writeFile", {"path": file_uri(tmp_path), "dataBase64": ""}) == {
        "code": -32603, "message": "Is a directory (os error 21)"}


def test_write_file_bad_base64(sclient, tmp_path):
    """§6.13: invalid base64 -> -32600 with the decoder's detail."""
    assert sclient.error("fs/writeFile", {"path": file_uri(tmp_path / "x"),
                                          "dataBase64": "!!!!"}) == {
        "code": -32600,
        "message": "fs/writeFile requires valid base64 dataBase64: Invalid symbol 33, offset 0."}
    assert not (tmp_path / "x").exists()


def test_write_then_read_binary(sclient, tmp_path):
    """§6.13: 8 MiB written and read back byte for byte."""
    data = os.urandom(8 << 20)
    p = tmp_path / "w.bin"
    sclient.result("fs/writeFile", {"path": file_uri(p), "dataBase64": b64(data)}, timeout=60)
    assert p.read_bytes() == data
    assert unb64(sclient.result("fs/readFile", {"path": file_uri(p)}, timeout=60)
                 ["dataBase64"]) == data


# ---- fs/createDirectory (§6.14)

def test_mkdir_recursive_default(sclient, tmp_path):
    """§6.14: missing parents are created by default (0755 under umask 022)."""
    p = tmp_path / "a/b/c"
    assert sclient.result("fs/createDirectory", {"path": file_uri(p)}) == {}
    assert p.is_dir()
    assert stat.S_IMODE(p.stat().st_mode) == 0o777 & ~_umask()


def test_mkdir_existing(sclient, tmp_path):
    """§6.14: existing directory: {} unless recursive false (EEXIST)."""
    assert sclient.result("fs/createDirectory", {"path": file_uri(tmp_path)}) == {}
    assert sclient.result("fs/createDirectory", {"path": file_uri(tmp_path),
                                                 "recursive": True}) == {}
    assert sclient.error("fs/createDirectory", {"path": file_uri(tmp_path),
                                                "recursive": False}) == {
        "code": -32603, "message": "File exists (os error 17)"}


def test_mkdir_non_recursive_missing_parent(sclient, tmp_path):
    """§6.14: recursive false with a missing parent -> -32004."""
    assert sclient.error("fs/createDirectory", {"path": file_uri(tmp_path / "x/y"),
                                                "recursive": False}) == ENOENT


def test_mkdir_over_file(sclient, tmp_path):
    """§6.14: the path is a file -> EEXIST (any recursive); a file as parent -> ENOTDIR."""
    (tmp_path / "f").write_text("f")
    for rec in (None, True, False):
        params = {"path": file_uri(tmp_path / "f")}
        if rec is not None:
            params["recursive"] = rec
        assert sclient.error("fs/createDirectory", params) == {
            "code": -32603, "message": "File exists (os error 17)"}
    assert sclient.error("fs/createDirectory", {"path": file_uri(tmp_path / "f/sub")}) == {
        "code": -32603, "message": "Not a directory (os error 20)"}


def test_mkdir_symlink_to_dir(sclient, tmp_path):
    """§6.14: a link to a directory: {} by default, EEXIST with recursive false."""
    os.symlink(tmp_path, tmp_path / "ld")
    assert sclient.result("fs/createDirectory", {"path": file_uri(tmp_path / "ld")}) == {}
    assert sclient.error("fs/createDirectory", {"path": file_uri(tmp_path / "ld"),
                                                "recursive": False})["message"] == \
        "File exists (os error 17)"


# ---- streaming (§6.20)

def test_open_read_blocks(sclient, tmp_path):
    """§6.20 / p07: positional reads, eof on a short read and past the end."""
    (tmp_path / "bin.dat").write_bytes(bytes(range(256)))
    h = "h-%s" % tmp_path.name[-8:]
    assert sclient.result("fs/open", {"handleId": h, "path": file_uri(tmp_path / "bin.dat")}) \
        == {"handleId": h}
    assert sclient.result("fs/readBlock", {"handleId": h, "offset": 0, "len": 16}) == {
        "chunk": "AAECAwQFBgcICQoLDA0ODw==", "eof": False}
    assert sclient.result("fs/readBlock", {"handleId": h, "offset": 250, "len": 16}) == {
        "chunk": "+vv8/f7/", "eof": True}
    assert sclient.result("fs/readBlock", {"handleId": h, "offset": 999, "len": 16}) == {
        "chunk": "", "eof": True}
    assert sclient.result("fs/close", {"handleId": h}) == {}
    assert sclient.error("fs/readBlock", {"handleId": h, "offset": 0, "len": 1}) == {
        "code": -32004, "message": "unknown file handle `%s`" % h}


def test_read_block_len_bounds(sclient, tmp_path):
    """§6.20: len 0 or > 1 MiB -> -32600."""
    (tmp_path / "f").write_bytes(b"x")
    sclient.result("fs/open", {"handleId": "lb", "path": file_uri(tmp_path / "f")})
    for n in (0, (1 << 20) + 1):
        assert sclient.error("fs/readBlock", {"handleId": "lb", "offset": 0, "len": n}) == {
            "code": -32600, "message": "file read block length must be between 1 and 1048576"}
    sclient.result("fs/close", {"handleId": "lb"})


def test_open_replace_and_write_blocks(sclient, tmp_path):
    """§6.20: replace truncates at once; writeBlock is positional with zero-filled holes."""
    p = tmp_path / "out"
    p.write_bytes(b"old data")
    sclient.result("fs/open", {"handleId": "w1", "path": file_uri(p), "mode": "replace"})
    assert p.read_bytes() == b""
    assert sclient.result("fs/writeBlock", {"handleId": "w1", "offset": 4,
                                            "chunk": b64(b"tail")}) == {}
    assert sclient.result("fs/writeBlock", {"handleId": "w1", "offset": 0,
                                            "chunk": b64(b"ab")}) == {}
    assert p.read_bytes() == b"ab\0\0tail"
    assert sclient.error("fs/readBlock", {"handleId": "w1", "offset": 0, "len": 1}) == {
        "code": -32603, "message": "Bad file descriptor (os error 9)"}
    sclient.result("fs/close", {"handleId": "w1"})


def test_write_block_on_read_handle(sclient, tmp_path):
    """§6.20: writeBlock on a read handle -> EBADF."""
    (tmp_path / "r").write_bytes(b"r")
    sclient.result("fs/open", {"handleId": "r1", "path": file_uri(tmp_path / "r")})
    assert sclient.error("fs/writeBlock", {"handleId": "r1", "offset": 0,
                                           "chunk": b64(b"x")}) == {
        "code": -32603, "message": "Bad file descriptor (os error 9)"}
    sclient.result("fs/close", {"handleId": "r1"})


def test_open_errors(sclient, tmp_path):
    """§6.20: duplicate id, id > 32 bytes, directory/FIFO, missing file, bad mode."""
    (tmp_path / "f").write_bytes(b"f")
    os.mkfifo(tmp_path / "fifo")
    sclient.result("fs/open", {"handleId": "dup", "path": file_uri(tmp_path / "f")})
    assert sclient.error("fs/open", {"handleId": "dup", "path": file_uri(tmp_path / "f")}) == {
        "code": -32600, "message": "file handle `dup` already exists"}
    sclient.result("fs/close", {"handleId": "dup"})
    assert sclient.error("fs/open", {"handleId": "x" * 33, "path": file_uri(tmp_path / "f")}) \
        == {"code": -32600, "message": "file handle ID must not exceed 32 bytes"}
    for p in (tmp_path, tmp_path / "fifo"):
        assert sclient.error("fs/open", {"handleId": "d", "path": file_uri(p)}) == {
            "code": -32600, "message": "path `%s` is not a file" % p}
    assert sclient.error("fs/open", {"handleId": "m", "path": file_uri(tmp_path / "nope")}) \
        == ENOENT
    assert sclient.error("fs/open", {"handleId": "m", "path": file_uri(tmp_path / "f"),
                                     "mode": {"replace": {}}})["code"] == -32602
    # a failed open leaves no handle behind
    assert sclient.error("fs/readBlock", {"handleId": "m", "offset": 0, "len": 1})["code"] == \
        -32004


def test_close_unknown_is_ok(sclient):
    """§6.20: fs/close of an unknown handle -> {}."""
    assert sclient.result("fs/close", {"handleId": "never-opened"}) == {}


def test_handle_limit_per_connection(server, tmp_path):
    """§6.20: the 129th open handle of a connection is refused; handles die with it."""
    (tmp_path / "f").write_bytes(b"f")
    c = server.connect()
    for i in range(128):
        c.result("fs/open", {"handleId": "h%d" % i, "path": file_uri(tmp_path / "f")})
    assert c.error("fs/open", {"handleId": "h128", "path": file_uri(tmp_path / "f")}) == {
        "code": -32600, "message": "at most 128 file handles may be open per connection"}
    before = len(os.listdir("/proc/%d/fd" % server.pid))
    c.close()
    from conftest import wait_until
    wait_until(lambda: len(os.listdir("/proc/%d/fd" % server.pid)) <= before - 128,
               what="handles closed with the connection")


def test_no_follow_holds_while_a_parent_is_swapped_for_a_symlink(sclient, tmp_path):
    """followSymlinks false: the parent is opened without symlinks and the operation
    starts from that directory (before, the check's descriptor was closed and the
    operation walked the path again). A thread keeps exchanging the directory `d` with
    a symlink to `outside` (renameat2 RENAME_EXCHANGE) while writeFile, createDirectory
    and getMetadata go through `d`: nothing is written or made in `outside`, and what
    is answered is success or the reference's refusal, nothing else. Before, 7 of 300
    writes landed in `outside`."""
    import ctypes
    import threading
    libc = ctypes.CDLL(None, use_errno=True)
    if not hasattr(libc, "renameat2"):
        pytest.skip("needs renameat2 in libc")
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    d, swap = ws / "d", ws / "swap"
    d.mkdir()
    os.symlink(str(outside), str(swap))
    stop = threading.Event()

    def swapper():
        a, b = str(d).encode(), str(swap).encode()
        while not stop.is_set():
            if libc.renameat2(-100, a, -100, b, 2) != 0:  # AT_FDCWD, RENAME_EXCHANGE
                raise OSError(ctypes.get_errno(), "renameat2")

    t = threading.Thread(target=swapper)
    t.start()
    try:
        for i in range(300):
            p = d / ("f%d" % i)
            r = sclient.call("fs/writeFile", {"path": file_uri(p), "dataBase64": "eA==",
                                              "followSymlinks": False})
            assert "result" in r or r["error"]["code"] in (-32600, -32603, -32004), r
            r = sclient.call("fs/createDirectory", {"path": file_uri(d / ("n%d" % i)),
                                                    "recursive": False,
                                                    "followSymlinks": False})
            assert "result" in r or r["error"]["code"] in (-32600, -32603, -32004), r
            r = sclient.call("fs/getMetadata", {"path": file_uri(p), "followSymlinks": False})
            assert "result" in r or r["error"]["code"] in (-32600, -32603, -32004), r
    finally:
        stop.set()
        t.join()
    assert os.listdir(str(outside)) == []
