"""fs/open, fs/readBlock, fs/writeBlock, fs/close with a `sandbox` (PROTOCOL.md §6.20, §6.11;
issue 13 item 5; evidence p11_sandbox.out): the file is opened by the sandboxed fs helper,
which passes the descriptor back (docs/ARCHITECTURE.md, "Sandboxed fs/open"). Whatever
fs/readFile and fs/writeFile refuse under a sandbox, fs/open refuses with the same error."""

import base64
import os

import pytest

from conftest import children_of, fd_count, wait_until
from wsclient import file_uri

EROFS = {"code": -32603, "message": "Read-only file system (os error 30)"}
EACCES = {"code": -32600, "message": "Permission denied (os error 13)"}
EBADF = {"code": -32603, "message": "Bad file descriptor (os error 9)"}

pytestmark = pytest.mark.needs("sandbox")  # served by the sandboxed fs helper


def b64(data):
    return base64.b64encode(data).decode()


def unb64(s):
    return base64.b64decode(s)


def _sandbox(root, extra=(), write=True):
    """The fs form of the real client's workspace-write sandbox (§5.4) rooted at root;
    write=False: the read-only form (root readable, nothing writable)."""
    w = file_uri(root)
    entries = [{"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"}]
    if write:
        entries += [
            {"path": {"type": "special", "value": {"kind": "project_roots"}}, "access": "write"},
            {"path": {"type": "special", "value": {"kind": "project_roots", "subpath": ".git"}},
             "access": "read", "missing_path_behavior": "skip"}]
    entries += list(extra)
    return {"permissions": {"type": "managed", "file_system": {"type": "restricted",
                                                               "entries": entries},
                            "network": "restricted"},
            "cwd": w, "policyContext": {"cwd": w, "workspaceRoots": [w]}, "workspaceRoots": [w],
            "userHomeDir": "file:///root", "windowsSandboxLevel": "disabled"}


@pytest.fixture
def area():
    """base/work (the workspace, with .git and a denied secret/), base/outside; not under /tmp
    (which may be writable). Symlinks in the workspace point outside and at the secret."""
    import pathlib
    import shutil
    import tempfile
    base = pathlib.Path(tempfile.mkdtemp(dir="/var/tmp", prefix="uexec-fs-stream-"))
    w, o = base / "work", base / "outside"
    os.makedirs(w / ".git")
    os.makedirs(w / "secret")
    os.makedirs(o)
    (w / ".git" / "config").write_bytes(b"[core]\n")
    (w / "inside.txt").write_bytes(b"inside\n")
    (w / "secret" / "s.txt").write_bytes(b"secret\n")
    (o / "existing.txt").write_bytes(b"outside\n")
    os.symlink(o / "existing.txt", w / "lnk-file")
    os.symlink(o, w / "lnk-dir")
    os.symlink(w / "secret" / "s.txt", w / "lnk-secret")
    os.symlink(w / ".git" / "config", w / "lnk-git")
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _deny_secret(base):
    return _sandbox(base / "work", extra=[
        {"path": {"type": "path", "path": file_uri(base / "work" / "secret")}, "access": "deny"}])


def _helpers(pid):
    return {p: s for p, s in children_of(pid).items() if s != "Z"}


# ---- reading and writing through sandboxed handles


def test_read_inside_and_outside_the_workspace(sclient, area):
    """p11: a read handle under workspace-write reads the workspace and, root being
    readable, outside it; positional reads and eof as unsandboxed."""
    sb = _sandbox(area / "work")
    assert sclient.result("fs/open", {"handleId": "r1", "path": file_uri(area / "outside" /
                                                                         "existing.txt"),
                                      "sandbox": sb}) == {"handleId": "r1"}
    assert sclient.result("fs/readBlock", {"handleId": "r1", "offset": 0, "len": 100}) == {
        "chunk": b64(b"outside\n"), "eof": True}
    assert sclient.result("fs/readBlock", {"handleId": "r1", "offset": 3, "len": 2}) == {
        "chunk": b64(b"si"), "eof": False}
    assert sclient.error("fs/writeBlock", {"handleId": "r1", "offset": 0,
                                           "chunk": b64(b"x")}) == EBADF
    assert sclient.result("fs/close", {"handleId": "r1"}) == {}
    sclient.result("fs/open", {"handleId": "r2", "path": file_uri(area / "work" / "inside.txt"),
                               "sandbox": sb})
    assert unb64(sclient.result("fs/readBlock", {"handleId": "r2", "offset": 0, "len": 7})[
        "chunk"]) == b"inside\n"
    sclient.result("fs/close", {"handleId": "r2"})
    assert (area / "outside" / "existing.txt").read_bytes() == b"outside\n"


def test_replace_inside_the_workspace(sclient, area):
    """p11: mode replace in a writable root truncates at once and writes positionally;
    the read-only direction of the handle is refused."""
    sb = _sandbox(area / "work")
    p = area / "work" / "stream-in.txt"
    p.write_bytes(b"old content that is longer")
    ino = p.stat().st_ino
    assert sclient.result("fs/open", {"handleId": "w1", "path": file_uri(p), "mode": "replace",
                                      "sandbox": sb}) == {"handleId": "w1"}
    assert p.read_bytes() == b""
    assert sclient.result("fs/writeBlock", {"handleId": "w1", "offset": 0,
                                            "chunk": b64(b"streamed")}) == {}
    assert sclient.result("fs/writeBlock", {"handleId": "w1", "offset": 10,
                                            "chunk": b64(b"!")}) == {}
    assert sclient.error("fs/readBlock", {"handleId": "w1", "offset": 0, "len": 4}) == EBADF
    assert sclient.result("fs/close", {"handleId": "w1"}) == {}
    assert p.read_bytes() == b"streamed\0\0!" and p.stat().st_ino == ino
    # A new file too, and a large block.
    q = area / "work" / "new.bin"
    data = os.urandom(1 << 20)
    sclient.result("fs/open", {"handleId": "w2", "path": file_uri(q), "mode": "replace",
                               "sandbox": sb})
    sclient.result("fs/writeBlock", {"handleId": "w2", "offset": 0, "chunk": b64(data)})
    sclient.result("fs/close", {"handleId": "w2"})
    assert q.read_bytes() == data


def test_disabled_and_null_sandboxes_run_in_the_server(sclient, area):
    """§5.4: permissions type disabled (and null) restrict nothing: written outside."""
    sb = _sandbox(area / "work")
    sb["permissions"] = {"type": "disabled"}
    for i, s in enumerate((sb, None)):
        p = area / "outside" / ("d%d.txt" % i)
        sclient.result("fs/open", {"handleId": "d", "path": file_uri(p), "mode": "replace",
                                   "sandbox": s})
        sclient.result("fs/writeBlock", {"handleId": "d", "offset": 0, "chunk": b64(b"d")})
        sclient.result("fs/close", {"handleId": "d"})
        assert p.read_bytes() == b"d"


# ---- denials: the same errors as fs/readFile and fs/writeFile


def test_write_outside_writable_roots_is_read_only(sclient, area):
    """p11 id 21: replace outside the writable roots -> -32603 EROFS, nothing created."""
    sb = _sandbox(area / "work")
    target = area / "outside" / "stream-out.txt"
    assert sclient.error("fs/open", {"handleId": "s2", "path": file_uri(target),
                                     "mode": "replace", "sandbox": sb}) == EROFS
    assert not target.exists()
    # The id is free again, and an existing file outside was not truncated.
    assert sclient.error("fs/open", {"handleId": "s2", "path": file_uri(area / "outside" /
                                                                        "existing.txt"),
                                     "mode": "replace", "sandbox": sb}) == EROFS
    assert (area / "outside" / "existing.txt").read_bytes() == b"outside\n"


def test_read_only_policy_refuses_every_write(sclient, area):
    """p11 id 25: the read-only sandbox: the workspace itself is read-only; reads work."""
    sb = _sandbox(area / "work", write=False)
    assert sclient.error("fs/open", {"handleId": "ro", "path": file_uri(area / "work" /
                                                                        "inside.txt"),
                                     "mode": "replace", "sandbox": sb}) == EROFS
    assert (area / "work" / "inside.txt").read_bytes() == b"inside\n"
    sclient.result("fs/open", {"handleId": "ro", "path": file_uri(area / "work" / "inside.txt"),
                               "sandbox": sb})
    assert unb64(sclient.result("fs/readBlock", {"handleId": "ro", "offset": 0, "len": 64})[
        "chunk"]) == b"inside\n"
    sclient.result("fs/close", {"handleId": "ro"})


def test_git_under_a_writable_root_is_read_only(sclient, area):
    """issue 5: .git stays read-only, for a new file and an existing one (not truncated)."""
    sb = _sandbox(area / "work")
    for name in ("config", "new"):
        assert sclient.error("fs/open", {"handleId": "g", "path": file_uri(area / "work" /
                                                                           ".git" / name),
                                         "mode": "replace", "sandbox": sb}) == EROFS
    assert (area / "work" / ".git" / "config").read_bytes() == b"[core]\n"
    assert not (area / "work" / ".git" / "new").exists()


def _paths(area, pid):
    w, o = area / "work", area / "outside"
    reads = [w / "secret" / "s.txt", w / "secret", w / "lnk-secret",
             w / ".." / "work" / "secret" / "s.txt", w / "lnk-dir" / ".." / "work" / "secret" /
             "s.txt", "/proc/%d/root%s" % (pid, w / "secret" / "s.txt"),
             "/proc/self/root%s" % (w / "secret" / "s.txt"), w / "missing", w, o / "existing.txt"]
    writes = [w / "lnk-file", w / "lnk-dir" / "new", w / ".." / "outside" / "new",
              w / "lnk-git", w / ".git" / ".." / ".git" / "config", w / "secret" / "s.txt",
              w / "secret" / "new", w / "lnk-secret",
              "/proc/%d/root%s" % (pid, o / "existing.txt"),
              "/proc/self/root%s" % (o / "existing.txt"), "/proc/%d/cwd/x" % pid,
              o / "missing-dir" / "f", w / "missing-dir" / "f", w]
    return reads, writes


def test_denials_match_read_file_and_write_file(shared_server, sclient, area):
    """The attacker's paths (symlinks out of the workspace, into .git and the denied
    directory, `..`, /proc/<pid>/root of the server and of the helper, missing parents):
    fs/open refuses each exactly as fs/readFile / fs/writeFile do under the same sandbox,
    and nothing outside the writable roots changes."""
    sb = _deny_secret(area)
    reads, writes = _paths(area, shared_server.pid)
    before = {p: p.read_bytes() for p in (area / "outside" / "existing.txt",
                                          area / "work" / ".git" / "config",
                                          area / "work" / "secret" / "s.txt")}
    for i, p in enumerate(reads):
        want = sclient.call("fs/readFile", {"path": file_uri(p), "sandbox": sb})
        got = sclient.call("fs/open", {"handleId": "r%d" % i, "path": file_uri(p),
                                       "sandbox": sb})
        assert got.get("error") == want.get("error"), p
        if "result" in got:
            sclient.result("fs/close", {"handleId": "r%d" % i})
    for i, p in enumerate(writes):
        want = sclient.call("fs/writeFile", {"path": file_uri(p), "dataBase64": "",
                                             "sandbox": sb})
        got = sclient.call("fs/open", {"handleId": "w%d" % i, "path": file_uri(p),
                                       "mode": "replace", "sandbox": sb})
        assert got.get("error") == want.get("error"), p
        assert "error" in got, p
    assert {p: p.read_bytes() for p in before} == before
    assert sorted(os.listdir(area / "outside")) == ["existing.txt"]
    # The denied directory: the one error the sandbox gives for it.
    assert sclient.error("fs/open", {"handleId": "x", "path": file_uri(area / "work" /
                                                                       "secret" / "s.txt"),
                                     "sandbox": sb}) == EACCES


def test_not_a_file_and_missing(sclient, area):
    """§6.20 through the helper: a directory or FIFO -> -32600 not a file (no block),
    missing -> -32004."""
    sb = _sandbox(area / "work")
    os.mkfifo(area / "work" / "fifo")
    for p in (area / "work", area / "work" / "fifo"):
        assert sclient.error("fs/open", {"handleId": "n", "path": file_uri(p), "sandbox": sb}) == {
            "code": -32600, "message": "path `%s` is not a file" % p}
    assert sclient.error("fs/open", {"handleId": "n", "path": file_uri(area / "work" / "nope"),
                                     "sandbox": sb}) == {
        "code": -32004, "message": "No such file or directory (os error 2)"}


def test_sandbox_errors(sclient, area):
    """§5.4: a restricting sandbox without cwd -> -32602, as for the other fs methods;
    the handle id stays free."""
    sb = _sandbox(area / "work")
    del sb["cwd"]
    assert sclient.error("fs/open", {"handleId": "e", "path": file_uri(area / "work" /
                                                                       "inside.txt"),
                                     "sandbox": sb}) == {
        "code": -32602,
        "message": "file system sandbox context with dynamic permissions requires cwd"}
    sclient.result("fs/open", {"handleId": "e", "path": file_uri(area / "work" / "inside.txt"),
                               "sandbox": _sandbox(area / "work")})
    sclient.result("fs/close", {"handleId": "e"})


# ---- handles: ids, limits, lifetimes


def test_id_taken_while_the_open_runs(sclient, area):
    """The handle id is taken from the request's arrival: a second fs/open with it, sent
    before the helper answered, -> already exists; a failed open frees the id."""
    sb = _sandbox(area / "work")
    p = file_uri(area / "work" / "inside.txt")
    a = sclient.request("fs/open", {"handleId": "dup", "path": p, "sandbox": sb})
    b = sclient.request("fs/open", {"handleId": "dup", "path": p})
    assert sclient.wait_reply(b)["error"] == {"code": -32600,
                                              "message": "file handle `dup` already exists"}
    assert sclient.wait_reply(a)["result"] == {"handleId": "dup"}
    sclient.result("fs/close", {"handleId": "dup"})


def test_handle_limit_counts_sandboxed_handles(server, area):
    """§6.20: at most 128 handles per connection, sandboxed or not, pending ones included."""
    c = server.connect()
    sb = _sandbox(area / "work")
    p = file_uri(area / "work" / "inside.txt")
    ids = [c.request("fs/open", {"handleId": "h%d" % i, "path": p,
                                 "sandbox": sb if i % 2 else None}) for i in range(128)]
    over = c.request("fs/open", {"handleId": "over", "path": p, "sandbox": sb})
    assert c.wait_reply(over, timeout=60)["error"] == {
        "code": -32600, "message": "at most 128 file handles may be open per connection"}
    for i in ids:
        assert "result" in c.wait_reply(i, timeout=60)
    assert fd_count(server.pid) >= 128
    c.result("fs/close", {"handleId": "h1"})
    c.result("fs/open", {"handleId": "over", "path": p, "sandbox": sb})
    c.ws.abort()


def test_no_fd_or_helper_leaks(server, area):
    """Every path ends with the server's fd table as before and no helper left: close,
    failed opens, the connection ending with handles open, and a connection that goes away
    while sandboxed opens are still running (orphaned helpers)."""
    sb = _sandbox(area / "work")
    p = file_uri(area / "work" / "inside.txt")
    warm = server.connect()
    warm.result("fs/getMetadata", {"path": p})
    base = fd_count(server.pid)
    c = server.connect()
    for i in range(5):
        c.result("fs/open", {"handleId": "a%d" % i, "path": p, "sandbox": sb})
        c.result("fs/open", {"handleId": "b%d" % i, "path": file_uri(area / "work" /
                                                                       ("o%d" % i)),
                             "mode": "replace", "sandbox": sb})
        c.error("fs/open", {"handleId": "c%d" % i, "path": file_uri(area / "outside" / "x"),
                            "mode": "replace", "sandbox": sb})
    for i in range(3):
        c.result("fs/close", {"handleId": "a%d" % i})
    assert fd_count(server.pid) >= base + 7
    c.ws.abort()  # a0..a2 closed, the rest dropped with the connection
    wait_until(lambda: fd_count(server.pid) == base, what="the fds of the start")
    d = server.connect()
    for i in range(8):
        d.request("fs/open", {"handleId": "o%d" % i, "path": p, "sandbox": sb})
    d.ws.abort()  # the helpers are still running
    wait_until(lambda: not _helpers(server.pid) and fd_count(server.pid) == base,
               what="no helper and the fds of the start")
    assert warm.result("fs/getMetadata", {"path": p})["isFile"]
    warm.ws.abort()


def test_handle_outlives_its_file_name_and_the_helper(sclient, area):
    """The descriptor is the server's: the helper is gone once fs/open answered, and the
    handle keeps reading after the file is renamed away."""
    sb = _sandbox(area / "work")
    p = area / "work" / "moving.txt"
    p.write_bytes(b"moving\n")
    sclient.result("fs/open", {"handleId": "m", "path": file_uri(p), "sandbox": sb})
    os.rename(p, area / "outside" / "moved.txt")
    assert unb64(sclient.result("fs/readBlock", {"handleId": "m", "offset": 0, "len": 64})[
        "chunk"]) == b"moving\n"
    sclient.result("fs/close", {"handleId": "m"})


def test_capabilities_advertised(sclient):
    """§6.1: both streaming flags, now that sandboxed handles and replace work."""
    caps = sclient.result("environment/info")["capabilities"]
    assert caps["sandboxedFileStreaming"] is True
    assert caps["fileWriteStreaming"] is True
