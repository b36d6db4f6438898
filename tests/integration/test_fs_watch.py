# SPDX-License-Identifier: MIT
"""fs/watchMissing and fs/missingChanged (PROTOCOL.md §6.22, §7.4; evidence
p09_watch.out, p05/p06 decoding texts, p08 permissions, the real-client
transcripts realclient/basic-*.jsonl).

"Does not fire" is checked by ordering, without any wait: one inotify instance serves
the whole server and handles the kernel's events in order, sending a fire at once; a
probe connection's watch on a fresh name, created after the harmless change, fires
only once that change has been handled, and a reply on the tested connection to a
request sent after that follows whatever the change made the server send there
(quiet())."""

import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

import wsclient
import conftest
from conftest import EVENT_TIMEOUT, SANITIZER_MARKERS, wait_until
from wsclient import file_uri

# the programs this module's processes run (skipped, with the names, where missing)
pytestmark = pytest.mark.needs_programs("/bin/sh")

FIRE_TIMEOUT = EVENT_TIMEOUT   # the reference fires within ~45 ms; ASan on a loaded host
METHOD = "fs/missingChanged"
_ABSENT = object()


# ---- helpers

def watch_params(wid, missing=_ABSENT, present=_ABSENT, native=False):
    conv = str if native else file_uri
    p = {"watchId": wid}
    if missing is not _ABSENT:
        p["missing"] = [conv(m) for m in missing]
    if present is not _ABSENT:
        p["present"] = None if present is None else conv(present)
    return p


def watch(c, wid, missing=_ABSENT, present=_ABSENT, native=False):
    """fs/watchMissing; returns the `watching` boolean (fails on an error reply)."""
    res = c.result("fs/watchMissing", watch_params(wid, missing, present, native))
    assert list(res) == ["watching"], res
    return res["watching"]


def watch_error(c, params):
    return c.error("fs/watchMissing", params)


def changed(c, timeout=FIRE_TIMEOUT):
    """The next fs/missingChanged notification's watchId."""
    m = c.next_notification(METHOD, timeout=timeout)
    assert list(m) == ["method", "params"] and list(m["params"]) == ["watchId"], m
    return m["params"]["watchId"]


def quiet(c):
    """No fs/missingChanged on c for any change made before: ordered, not timed (see the
    module's docstring). A probe connection watches a fresh name and creates it; its fire
    comes once the server has handled every earlier inotify event; then c's reply to a
    request comes after whatever those events made the server send to c."""
    probe = wsclient.connect(c.url)
    d = tempfile.mkdtemp(prefix="uexec-quiet-")
    try:
        os.chmod(d, 0o755)     # a server that is not root watches it too
        assert watch(probe, 1, [os.path.join(d, "m")]) is True
        touch(os.path.join(d, "m"))
        assert changed(probe) == 1
    finally:
        probe.ws.abort()
        shutil.rmtree(d, ignore_errors=True)
    assert c.result("environment/status", None) == {"status": "ready"}
    got = [m for m in c.drain_notifications() if m["method"] == METHOD]
    assert got == [], got


def expect_only(c, wid):
    """Exactly one fs/missingChanged, for wid (nothing queued before it, nothing after)."""
    assert changed(c) == wid
    quiet(c)


def touch(path):
    with open(path, "w"):
        pass


def inotify_fds(pid):
    out = []
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)) == "anon_inode:inotify":
                out.append(fd)
        except FileNotFoundError:
            pass
    return out


def inotify_wds(pid):
    """The kernel watches of every inotify instance of pid (fdinfo lines)."""
    lines = []
    for fd in inotify_fds(pid):
        try:
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                lines += [ln for ln in f.read().splitlines() if ln.startswith("inotify wd:")]
        except FileNotFoundError:
            pass
    return lines


# ---- firing (§6.22 semantics, p09)

def test_fires_on_create(sclient, tmp_path):
    """§7.4/p09: creating a missing file fires once, with the exact notification shape."""
    target = tmp_path / "a"
    assert watch(sclient, 1, [target], None) is True
    touch(target)
    m = sclient.next_notification(METHOD, timeout=FIRE_TIMEOUT)
    assert m == {"method": "fs/missingChanged", "params": {"watchId": 1}}
    quiet(sclient)


def test_fires_on_mkdir_and_rename_into_place(sclient, tmp_path):
    """§6.22: a directory created, or a name renamed into place (IN_MOVED_TO), fires."""
    assert watch(sclient, 1, [tmp_path / "dir"]) is True
    os.mkdir(tmp_path / "dir")
    expect_only(sclient, 1)
    (tmp_path / "tmpname").write_text("x")
    assert watch(sclient, 2, [tmp_path / "moved"]) is True
    os.rename(tmp_path / "tmpname", tmp_path / "moved")
    expect_only(sclient, 2)


def test_fires_when_missing_ancestor_created(sclient, tmp_path):
    """p09 nested: registering p/q/r and creating p fires."""
    assert watch(sclient, 11, [tmp_path / "p" / "q" / "r"]) is True
    os.mkdir(tmp_path / "p")
    expect_only(sclient, 11)


def test_fires_when_intermediate_ancestor_created(sclient, tmp_path):
    """§6.22: with p existing, creating q (still above r) fires too."""
    os.mkdir(tmp_path / "p")
    assert watch(sclient, 1, [tmp_path / "p" / "q" / "r"]) is True
    (tmp_path / "x").write_text("x")           # unrelated sibling of p
    quiet(sclient)
    os.mkdir(tmp_path / "p" / "q")
    expect_only(sclient, 1)


def test_any_of_several_missing_paths(sclient, tmp_path):
    """p09 basic: a watch over several paths fires once when any one appears."""
    paths = [tmp_path / ("m%d" % i) for i in range(5)]
    assert watch(sclient, 2, paths) is True
    touch(paths[3])
    touch(paths[1])
    expect_only(sclient, 2)


def test_present_deleted_fires(sclient, tmp_path):
    """p09 semantics: the present path deleted fires."""
    pres = tmp_path / "pres"
    pres.write_text("x")
    assert watch(sclient, 30, [tmp_path / "never"], pres) is True
    pres.unlink()
    expect_only(sclient, 30)


def test_present_directory_removed_or_renamed_fires(sclient, tmp_path):
    """§6.22: a present directory removed, or renamed away, fires."""
    d = tmp_path / "pd"
    d.mkdir()
    assert watch(sclient, 1, [tmp_path / "never"], d) is True
    d.rmdir()
    expect_only(sclient, 1)
    d.mkdir()
    assert watch(sclient, 2, [tmp_path / "never"], d) is True
    os.rename(d, tmp_path / "elsewhere")
    expect_only(sclient, 2)


def test_present_contents_and_siblings_do_not_fire(sclient, tmp_path):
    """p09 semantics: files created/changed/removed inside a present directory, a
    sibling created next to a missing path, and writes to the present file do not fire."""
    pres = tmp_path / "pres2"
    pres.mkdir()
    (pres / "old").write_text("x")
    pfile = tmp_path / "pfile"
    pfile.write_text("x")
    target = tmp_path / "target32"
    assert watch(sclient, 31, [target], pres) is True
    (pres / "new").write_text("y")
    (pres / "old").write_text("changed")
    (pres / "old").unlink()
    (pres / "sub").mkdir()
    (tmp_path / "target32.sibling").write_text("s")
    (tmp_path / "target3").write_text("s")     # a prefix of the awaited name
    quiet(sclient)
    assert watch(sclient, 32, [target], pfile) is True
    with open(pfile, "a") as f:
        f.write("more")
    os.utime(pfile)
    os.chmod(pfile, 0o600)
    quiet(sclient)
    touch(target)
    expect_only(sclient, 32)


def test_one_shot(sclient, tmp_path):
    """§7.4/p09: at most once per watch: recreating or writing to the path does not fire again."""
    a = tmp_path / "a"
    assert watch(sclient, 1, [a]) is True
    touch(a)
    assert changed(sclient) == 1
    a.write_text("modified")
    a.unlink()
    touch(a)
    quiet(sclient)
    # same id again after it fired: not newer (p09 "same watchId again after it fired")
    assert watch(sclient, 1, [tmp_path / "e20"]) is False
    touch(tmp_path / "e20")
    quiet(sclient)
    assert watch(sclient, 2, [tmp_path / "b"]) is True
    touch(tmp_path / "b")
    expect_only(sclient, 2)


def test_create_then_delete_fires(sclient, tmp_path):
    """p09 nested: a create followed by a delete within 10 ms still fires."""
    blink = tmp_path / "blink"
    assert watch(sclient, 12, [blink]) is True
    touch(blink)
    blink.unlink()
    expect_only(sclient, 12)
    assert watch(sclient, 13, [tmp_path / "bdir" / "x"]) is True
    os.mkdir(tmp_path / "bdir")
    os.rmdir(tmp_path / "bdir")
    expect_only(sclient, 13)


def test_fs_write_file_by_the_server_fires(sclient, tmp_path):
    """p09 server: the server's own fs/writeFile counts."""
    target = tmp_path / "by-rpc"
    assert watch(sclient, 21, [target]) is True
    reply = sclient.call("fs/writeFile", {"path": file_uri(target), "dataBase64": "eA=="})
    assert reply.get("result") == {}, reply
    expect_only(sclient, 21)


def test_child_process_fires(sclient, tmp_path, uniq):
    """p09 server: a file created by a process the server runs fires."""
    target = tmp_path / "by-proc"
    assert watch(sclient, 22, [target]) is True
    pid = uniq("w")
    sclient.start(pid, ["/bin/sh", "-c", "touch '%s'" % target], cwd=str(tmp_path),
                  env={"PATH": "/usr/bin:/bin"})
    assert changed(sclient) == 22
    run = sclient.collect(pid)
    assert run.exit_code == 0
    quiet(sclient)


def test_anchor_removed_then_recreated(sclient, tmp_path):
    """§6.22: deleting the deepest existing ancestor is not a creation (no fire); the
    watch moves up and creating that directory again (now a missing ancestor) fires."""
    (tmp_path / "a" / "b").mkdir(parents=True)
    assert watch(sclient, 1, [tmp_path / "a" / "b" / "c" / "x"]) is True
    (tmp_path / "a" / "b").rmdir()
    quiet(sclient)
    (tmp_path / "a" / "unrelated").mkdir()
    quiet(sclient)
    (tmp_path / "a" / "b").mkdir()
    expect_only(sclient, 1)


def test_anchor_renamed_away(sclient, tmp_path):
    """§6.22: the deepest existing ancestor renamed away: creating the path later still fires."""
    (tmp_path / "a").mkdir()
    assert watch(sclient, 1, [tmp_path / "a" / "x"]) is True
    os.rename(tmp_path / "a", tmp_path / "a-old")
    quiet(sclient)
    (tmp_path / "a-old" / "x").write_text("not our path any more")
    quiet(sclient)
    (tmp_path / "a").mkdir()
    expect_only(sclient, 1)


def test_symlinked_anchor(sclient, tmp_path):
    """§6.22: a missing path below a symlink to a directory is watched in the target."""
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "link")
    assert watch(sclient, 1, [tmp_path / "link" / "x"]) is True
    touch(tmp_path / "real" / "x")
    expect_only(sclient, 1)


def test_real_client_pattern(sclient, tmp_path):
    """realclient/basic-*.jsonl: watchId 1, missing = .agents/skills and the .git of cwd
    and every ancestor up to /, present null; a .git appearing in cwd fires."""
    cwd = tmp_path / "rc" / "work"
    cwd.mkdir(parents=True)
    missing = [cwd / ".agents" / "skills"]
    d = cwd
    while True:
        missing.append(d / ".git")
        if str(d) == "/":
            break
        d = d.parent
    missing = [m for m in missing if not os.path.lexists(m)]
    assert watch(sclient, 1, missing, None) is True
    (cwd / ".git").mkdir()
    expect_only(sclient, 1)


def test_native_paths_accepted(sclient, tmp_path):
    """uexec difference (§5.1, README): native absolute paths work like file: URIs."""
    target = tmp_path / "native"
    pres = tmp_path / "pres"
    pres.write_text("x")
    assert watch(sclient, 1, [target], pres, native=True) is True
    touch(target)
    expect_only(sclient, 1)
    assert watch(sclient, 2, [tmp_path / "never"], pres, native=True) is True
    pres.unlink()
    expect_only(sclient, 2)


def test_uri_spellings(sclient, tmp_path):
    """§5.1: percent-encoding and dot segments in missing paths name the same file."""
    target = tmp_path / "with space"
    uri = file_uri(tmp_path) + "/sub/../with%20space"
    assert sclient.result("fs/watchMissing", {"watchId": 1, "missing": [uri]}) == \
        {"watching": True}
    touch(target)
    expect_only(sclient, 1)


# ---- watching:false (p09 basic, p08)

def test_watching_false_cases(sclient, tmp_path):
    """p09 basic: empty `missing`, an existing missing path (alone or among others),
    present absent, present with an empty missing list -> watching:false. `missing`
    omitted is no watch request at all: -32602 `missing field `missing`` as on the
    reference 0.169.0 (tests/reference/steps.py params_fs_handles)."""
    exists = tmp_path / "exists"
    exists.write_text("x")
    nope = tmp_path / "nope"
    assert watch(sclient, 3, []) is False
    assert watch(sclient, 4, [exists]) is False
    assert watch(sclient, 5, [exists, nope]) is False
    assert watch(sclient, 6, [], exists) is False
    assert watch(sclient, 7, [nope], tmp_path / "not-there") is False
    assert sclient.error("fs/watchMissing", watch_params(8)) == {
        "code": -32602, "message": "missing field `missing`"}
    assert watch(sclient, 9, [nope], exists) is True        # p09: nope2 + present exists
    assert watch(sclient, 10, ["/"]) is False               # the root always exists
    # none of the failed ones watches anything
    touch(nope)
    quiet(sclient)


def test_first_id_zero_is_newer(sclient, tmp_path):
    """§6.22: on a fresh connection any id is newer, 0 included."""
    assert watch(sclient, 0, [tmp_path / "zero"]) is True
    touch(tmp_path / "zero")
    expect_only(sclient, 0)


def test_u64_max_watch_id(sclient, tmp_path):
    """p09 basic: watchId 18446744073709551615 is accepted and echoed exactly."""
    top = 18446744073709551615
    assert watch(sclient, 0, [tmp_path / "zero"]) is True
    assert watch(sclient, top, [tmp_path / "max"]) is True
    touch(tmp_path / "zero")
    touch(tmp_path / "max")
    expect_only(sclient, top)
    assert watch(sclient, top, [tmp_path / "again"]) is False


def test_present_root(sclient, tmp_path):
    """§6.22: present "/" exists and never goes away; the missing path still fires."""
    assert watch(sclient, 1, [tmp_path / "x"], "/") is True
    touch(tmp_path / "x")
    expect_only(sclient, 1)


# ---- one active watch per connection, newer id wins

def test_newer_id_replaces(sclient, tmp_path):
    """p09 semantics: a larger watchId cancels the active watch."""
    assert watch(sclient, 10, [tmp_path / "a10"]) is True
    assert watch(sclient, 11, [tmp_path / "b11"]) is True
    touch(tmp_path / "a10")
    quiet(sclient)
    touch(tmp_path / "b11")
    expect_only(sclient, 11)


def test_smaller_id_ignored(sclient, tmp_path):
    """p09 semantics: a smaller id answers watching:false and leaves the active watch."""
    assert watch(sclient, 20, [tmp_path / "c20"]) is True
    assert watch(sclient, 15, [tmp_path / "d15"]) is False
    touch(tmp_path / "d15")
    quiet(sclient)
    touch(tmp_path / "c20")
    expect_only(sclient, 20)


def test_equal_id_ignored(sclient, tmp_path):
    """p09 nested: repeating the active id (with other paths, or an empty list) is
    watching:false and the original watch still fires."""
    assert watch(sclient, 13, [tmp_path / "m1"]) is True
    assert watch(sclient, 13, [tmp_path / "m2"]) is False
    assert watch(sclient, 13, []) is False
    touch(tmp_path / "m2")
    quiet(sclient)
    touch(tmp_path / "m1")
    expect_only(sclient, 13)


def test_newer_failing_id_still_cancels(sclient, tmp_path):
    """§6.22: a newer id that fails to install (watching:false) still cancels the active
    watch, and counts as registered (a later id between the two is not newer)."""
    exists = tmp_path / "exists"
    exists.write_text("x")
    assert watch(sclient, 10, [tmp_path / "a"]) is True
    assert watch(sclient, 12, []) is False
    touch(tmp_path / "a")
    quiet(sclient)
    assert watch(sclient, 11, [tmp_path / "b"]) is False
    assert watch(sclient, 13, [tmp_path / "c"]) is True
    assert watch(sclient, 14, [exists]) is False            # cancels 13
    touch(tmp_path / "b")
    touch(tmp_path / "c")
    quiet(sclient)
    assert watch(sclient, 15, [tmp_path / "d"]) is True
    touch(tmp_path / "d")
    expect_only(sclient, 15)


def test_many_replacements(sclient, tmp_path):
    """p09 nested "many watches": 200 successive ids, only the last one is active."""
    (tmp_path / "many").mkdir()
    for i in range(200):
        assert watch(sclient, 1000 + i, [tmp_path / "many" / str(i)]) is True
    for i in (7, 100, 198):
        touch(tmp_path / "many" / str(i))
    quiet(sclient)
    touch(tmp_path / "many" / "199")
    expect_only(sclient, 1199)


# ---- connections

def test_two_connections_independent(shared_server, tmp_path):
    """p09 twoconn: the same watchId on two connections; each fires only on its own path."""
    a = shared_server.connect()
    b = shared_server.connect()
    try:
        assert watch(a, 1, [tmp_path / "x1"]) is True
        assert watch(b, 1, [tmp_path / "x2"]) is True
        touch(tmp_path / "x1")
        assert changed(a) == 1
        quiet(b)
        touch(tmp_path / "x2")
        assert changed(b) == 1
        quiet(a)
        quiet(b)
    finally:
        a.ws.abort()
        b.ws.abort()


def test_same_path_on_two_connections(shared_server, tmp_path):
    """§6.22: two connections waiting for the same path (one shared kernel watch) both fire,
    and one connection's watch ending does not disturb the other's."""
    a = shared_server.connect()
    b = shared_server.connect()
    try:
        assert watch(a, 1, [tmp_path / "x"]) is True
        assert watch(b, 5, [tmp_path / "x"]) is True
        assert watch(a, 2, [tmp_path / "y"]) is True          # a moves away from x
        touch(tmp_path / "x")
        assert changed(b) == 5
        quiet(a)
        touch(tmp_path / "y")
        expect_only(a, 2)
    finally:
        a.ws.abort()
        b.ws.abort()


def test_one_inotify_instance_per_server(server, tmp_path):
    """Architecture: one inotify instance for the whole server, whatever the connections."""
    clients = [server.connect() for _ in range(3)]
    try:
        for i, c in enumerate(clients):
            assert watch(c, 1, [tmp_path / ("d%d" % i) / "x"]) is True
        assert len(inotify_fds(server.pid)) == 1
        # three distinct anchors? no: all three share tmp_path, one kernel watch
        assert len(inotify_wds(server.pid)) == 1
    finally:
        for c in clients:
            c.ws.abort()


@pytest.mark.parametrize("how", ["abort", "close"])
def test_closing_connection_removes_watch(server, tmp_path, how):
    """§2.2/§6.22: watches die with the connection: the kernel watches go, nobody is
    notified, and the server keeps serving."""
    a = server.connect()
    other = server.connect()
    try:
        assert watch(a, 1, [tmp_path / "gone" / "x", tmp_path / "y"], tmp_path) is True
        assert inotify_wds(server.pid), "no kernel watch while a watch is active"
        if how == "abort":
            a.ws.abort()
        else:
            a.ws.close()
        wait_until(lambda: not inotify_wds(server.pid),
                   what="the inotify watches to be removed")
        touch(tmp_path / "y")
        quiet(other)
        assert watch(other, 1, [tmp_path / "z"]) is True
        touch(tmp_path / "z")
        expect_only(other, 1)
        wait_until(lambda: not inotify_wds(server.pid),
                   what="the fired watch's inotify watches to be removed")
    finally:
        a.ws.abort()
        other.ws.abort()


def test_fired_and_replaced_watches_release_kernel_watches(server, tmp_path):
    """Resources: a fired watch and a replaced watch leave no kernel watch behind."""
    c = server.connect()
    try:
        (tmp_path / "d").mkdir()
        assert watch(c, 1, [tmp_path / "a"], tmp_path / "d") is True
        assert len(inotify_wds(server.pid)) == 2               # tmp_path, d itself
        assert watch(c, 2, [tmp_path / "d" / "sub" / "x"]) is True
        wait_until(lambda: len(inotify_wds(server.pid)) == 1,
                   what="the replaced watch's kernel watches to go")
        (tmp_path / "d" / "sub").mkdir()
        assert changed(c) == 2
        wait_until(lambda: not inotify_wds(server.pid),
                   what="the fired watch's kernel watches to go")
    finally:
        c.ws.abort()


def test_watch_not_restored_on_resume(server, tmp_path):
    """p09 resume: after the connection closes, resuming the session does not bring the
    watch back."""
    a = server.connect()
    sid = a.init_result["sessionId"]
    assert watch(a, 31, [tmp_path / "after-close"]) is True
    a.ws.abort()
    wait_until(lambda: not inotify_wds(server.pid), what="watch removal")
    b = server.connect(initialize=False)
    try:
        assert b.initialize(resume=sid)["sessionId"] == sid
        touch(tmp_path / "after-close")
        quiet(b)
        # the id history is per connection too: 1 is newer on this one
        assert watch(b, 1, [tmp_path / "new"]) is True
        touch(tmp_path / "new")
        expect_only(b, 1)
    finally:
        b.ws.abort()


# ---- parameters (p02, p05, p06, p07, p09, p18)

@pytest.mark.parametrize("params,code,message", [
    ({}, -32602, "missing field `watchId`"),
    ({"missing": []}, -32602, "missing field `watchId`"),
    ({"watchId": True, "missing": []}, -32602, "invalid type: boolean `true`, expected u64"),
    ({"watchId": False}, -32602, "invalid type: boolean `false`, expected u64"),
    ({"watchId": -1, "missing": ["file:///tmp/neg"]}, -32602, "invalid number"),
    ({"watchId": 1, "missing": True}, -32602, "invalid type: boolean `true`, expected a sequence"),
    ({"watchId": 1, "missing": [True]}, -32602, "invalid type: boolean `true`, expected a string"),
    ({"watchId": 1, "missing": [], "present": True}, -32602,
     "invalid type: boolean `true`, expected a string"),
    ({"watchId": 1, "missing": [], "present": ["file:///tmp"]}, -32602,
     "invalid type: sequence, expected a string"),
    ({"watchId": 1, "missing": ["relative"]}, -32602, "invalid URI: relative URL without a base"),
    ({"watchId": 1, "missing": [""]}, -32602, "invalid URI: relative URL without a base"),
    ({"watchId": 1, "missing": ["http://x/y"]}, -32602, "unsupported path URI scheme `http`"),
    ({"watchId": 1, "missing": ["file:///tmp/x?q"]}, -32602,
     "query parameters are not allowed in path URIs"),
    ({"watchId": 1, "missing": [], "present": "relative"}, -32602,
     "invalid URI: relative URL without a base"),
    ({"watchId": 1, "missing": ["file://otherhost/x"]}, -32600,
     "'file://otherhost/x' is invalid on 'linux'"),
])
def test_bad_params(sclient, params, code, message):
    """p02/p05/p06/p07/p09: serde's texts; URI errors as every fs method."""
    assert watch_error(sclient, params) == {"code": code, "message": message}


def test_bad_params_change_nothing(sclient, tmp_path):
    """A request rejected while decoding is not a registration: the active watch stays
    and its id is not consumed."""
    assert watch(sclient, 5, [tmp_path / "a"]) is True
    watch_error(sclient, {"watchId": 9, "missing": ["relative"]})
    watch_error(sclient, {"watchId": 9, "missing": [], "present": []})
    assert watch(sclient, 6, [tmp_path / "b"]) is True      # 6 > 5: 9 was never registered
    touch(tmp_path / "a")
    quiet(sclient)
    touch(tmp_path / "b")
    expect_only(sclient, 6)


def test_params_not_an_object(sclient):
    """§3: null params and non-objects are decoding errors (-32602)."""
    for params in (None, 5, "x"):
        err = watch_error(sclient, params)
        assert err["code"] == -32602, err
        assert err["message"].startswith("invalid type: "), err


def test_path_limit(sclient, tmp_path):
    """uexec limit: at most 256 paths per watch; more is -32602 with a clear message."""
    ok = [tmp_path / ("n%d" % i) for i in range(256)]
    assert watch(sclient, 1, ok) is True
    err = watch_error(sclient, watch_params(2, ok + [tmp_path / "one-more"]))
    assert err["code"] == -32602 and "256" in err["message"], err
    touch(tmp_path / "n255")
    expect_only(sclient, 1)                 # the refused request changed nothing


def test_gating(server):
    """p18: a filesystem method before `initialized` is refused with the family text."""
    c = server.connect(initialize=False)
    try:
        c.result("initialize", {"clientName": "t"})
        err = watch_error(c, {"watchId": 1, "missing": ["file:///nonexistent-probe-path"]})
        assert err == {"code": -32600,
                       "message": "client must send initialized before using filesystem methods"}
    finally:
        c.ws.abort()


# ---- permissions (p08): needs a server that is not root

def _start_unprivileged(logdir):
    conftest.HOST.require("unprivileged-server")
    setpriv = conftest.HOST.program("setpriv")
    out = open(os.path.join(logdir, "nobody.stdout"), "wb")
    err_path = os.path.join(logdir, "nobody.stderr")
    err = open(err_path, "wb")
    proc = subprocess.Popen([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                             conftest.UEXEC_BIN, "--listen", "ws://127.0.0.1:0"],
                            stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd="/",
                            start_new_session=True)
    url = None
    deadline = time.monotonic() + EVENT_TIMEOUT
    while url is None:
        with open(out.name, "rb") as f:
            data = f.read()
        if b"\n" in data:
            url = data.split(b"\n", 1)[0].decode().strip()
        elif proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            with open(err_path, "rb") as f:
                # the unprivileged-server probe said it can start here
                pytest.fail("the unprivileged server did not start: %r" % f.read()[-500:])
        else:
            time.sleep(0.01)
    return proc, url, err_path, (out, err)


def test_eacces_on_ancestor_is_watching_false(tmp_path):
    """p08: a path below a directory the server cannot search answers watching:false
    (server running as nobody); a readable sibling directory still works."""
    logdir = tmp_path / "logs"
    logdir.mkdir()
    base = tempfile.mkdtemp(prefix="uexec-watch-perm-", dir="/tmp")
    os.chmod(base, 0o755)
    os.mkdir(os.path.join(base, "closed"), 0o700)
    os.mkdir(os.path.join(base, "open"), 0o755)
    proc, url, err_path, files = _start_unprivileged(str(logdir))
    c = None
    try:
        c = wsclient.connect(url)
        assert watch(c, 7, [os.path.join(base, "closed", "inner", "x")]) is False
        assert watch(c, 8, [os.path.join(base, "open", "x")],
                     os.path.join(base, "closed", "p")) is False
        assert watch(c, 9, [os.path.join(base, "open", "x")]) is True
        touch(os.path.join(base, "open", "x"))
        expect_only(c, 9)
    finally:
        if c is not None:
            c.ws.abort()
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(EVENT_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        for f in files:
            f.close()
        shutil.rmtree(base, ignore_errors=True)
    with open(err_path, "rb") as f:
        log = f.read()
    assert rc == 0, log[-2000:]
    assert not [m for m in SANITIZER_MARKERS if m in log], log[-4000:]
