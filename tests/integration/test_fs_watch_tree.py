# SPDX-License-Identifier: MIT
"""fs/watch, fs/unwatch and fs/changed, a uexec extension (README "Protocol extensions",
capability uexecFsWatch; issue 15 item 5): change events of a file or a directory tree on
fs/watchMissing's inotify instance (watch-tree.c), with a per-watch limit on directories
and on queued events, an overflow event instead of silent loss, a limit on watches per
connection, and watches that end with their connection without leaving a kernel watch.

Sequences are checked exactly where inotify fixes them (one writer, changes made one after
the other); "nothing more" is checked by ordering, without waiting: a marker file created
afterwards must be the next thing reported (quiet())."""

import collections
import os
import shutil
import signal
import time

import pytest

import conftest
import wsclient
from conftest import EVENT_TIMEOUT, fd_count, wait_until
from wsclient import file_uri as U

METHOD = "fs/changed"
TIMEOUT = EVENT_TIMEOUT


# ---- helpers

def all_stopped(pid):
    """True when every thread of pid is in the stopped state (T). The ring's kernel workers
    (iou-*) are left out: they do not stop and do not read the inotify instance."""
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, t)) as f:
                stat = f.read()
        except OSError:
            continue
        comm, rest = stat.split("(", 1)[1].rsplit(")", 1)
        if not comm.startswith("iou-") and rest.split()[0] != "T":
            return False
    return True


def watch(c, path, **kw):
    p = {"path": U(path)}
    p.update(kw)
    r = c.call("fs/watch", p)
    assert "result" in r, r
    assert list(r["result"]) == ["watchId"], r
    return r["result"]["watchId"]


def ev(kind, path, is_dir=False, old=None):
    e = {"kind": kind}
    if old is not None:
        e["oldPath"] = U(old)
    e["path"] = U(path)
    e["isDirectory"] = is_dir
    return e


def events(c, wid, until, timeout=TIMEOUT):
    """fs/changed events of wid, in order, until until(events) is true."""
    got = []
    deadline = time.monotonic() + timeout
    while not until(got):
        left = deadline - time.monotonic()
        if left <= 0:
            pytest.fail("timed out waiting for events; got %r" % got)
        m = c.next_notification(METHOD, timeout=left)
        assert list(m["params"]) == ["watchId", "events"], m
        assert m["params"]["events"], m        # never an empty notification
        if m["params"]["watchId"] == wid:
            got += m["params"]["events"]
    return got


def first_difference(got, want, marks=()):
    """A short text for where two long lists of events part."""
    for i, (x, y) in enumerate(zip(got, want)):
        if x != y:
            return "at %d of %d (overflow marks %r): got %r, want %r; got before: %r" % (
                i, len(got), list(marks)[:5], x, y, got[max(0, i - 2):i])
    return "lengths %d and %d" % (len(got), len(want))


def next_events(c, wid, n):
    return events(c, wid, lambda g: len(g) >= n)


def expect(c, wid, want):
    got = next_events(c, wid, len(want))
    assert got == want
    return got


def quiet(c, marker, wid, rescanned=(), via=None):
    """Nothing more comes to c for the changes made before: ordered, not timed. marker: a
    new file to create inside watch wid of connection `via` (c by default). inotify
    queues its creation after every earlier change; the server handles the kernel's
    events in that order (one instance for all watches) and sends each batch's events
    before it reads the next requests. So once the marker's `created` came on via, what
    the earlier changes made the server send to via came before it, and to c (when it
    is another connection) before c's reply to a request sent after it. `rescanned`:
    paths reported as created by a scan of a new directory, which README "Protocol
    extensions" allows to come once more (an entry made while its directory was being
    read is also in the kernel's queue); only such a repeat is tolerated."""
    via = via or c
    open(marker, "w").close()                  # created, not modified
    mark = ev("created", marker)
    before = []
    while True:
        m = via.next_notification(METHOD, timeout=TIMEOUT)
        evs = m["params"]["events"]
        if m["params"]["watchId"] == wid and mark in evs:
            before += evs[:evs.index(mark)] + evs[evs.index(mark) + 1:]
            break
        before += evs
    if via is not c:
        assert c.result("environment/status", None) == {"status": "ready"}
        before = [e for m in c.drain_notifications() if m["method"] == METHOD
                  for e in m["params"]["events"]]
    extra = [e for e in before if not (e["kind"] == "created" and e["path"] in rescanned)]
    assert extra == [], before


def inotify_wds(pid):
    lines = []
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)) != "anon_inode:inotify":
                continue
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                lines += [ln for ln in f.read().splitlines() if ln.startswith("inotify wd:")]
        except FileNotFoundError:
            pass
    return lines


def write(path, data="x"):
    with open(path, "w") as f:
        f.write(data)


def quiet_marker(c, marker, wid):
    """Creates marker inside watch wid of c and returns every fs/changed event that came
    on c before its `created` (the events of every earlier change: see quiet())."""
    open(marker, "w").close()
    mark, before = ev("created", marker), []
    while True:
        m = c.next_notification(METHOD, timeout=TIMEOUT)
        evs = m["params"]["events"]
        if m["params"]["watchId"] == wid and mark in evs:
            return before + evs[:evs.index(mark)]
        before += evs


# ---- the extension is advertised

def test_advertised(sclient):
    caps = sclient.result("environment/info", {})["capabilities"]
    assert caps.get("uexecFsWatch") is True
    assert caps.get("fsWatchMissing") is True          # the reference's flag keeps its meaning


# ---- event sequences

def test_tree_sequence_with_new_subdirectory(sclient, tmp_path):
    """created/modified/deleted/renamed in a recursive watch, including in a subdirectory
    created after the watch (watched as it appears) and a directory renamed inside the
    tree (still watched under its new name)."""
    root = tmp_path / "root"
    (root / "old").mkdir(parents=True)
    wid = watch(sclient, root, recursive=True)
    write(root / "a")
    expect(sclient, wid, [ev("created", root / "a"), ev("modified", root / "a")])
    with open(root / "a", "a") as f:          # one write, one IN_MODIFY (no truncation)
        f.write("more")
    expect(sclient, wid, [ev("modified", root / "a")])
    os.mkdir(root / "sub")
    expect(sclient, wid, [ev("created", root / "sub", True)])
    write(root / "sub" / "f")
    expect(sclient, wid, [ev("created", root / "sub" / "f"), ev("modified", root / "sub" / "f")])
    os.rename(root / "a", root / "sub" / "a2")
    expect(sclient, wid, [ev("renamed", root / "sub" / "a2", old=root / "a")])
    os.rename(root / "sub", root / "sub-renamed")
    expect(sclient, wid, [ev("renamed", root / "sub-renamed", True, old=root / "sub")])
    os.unlink(root / "sub-renamed" / "f")
    expect(sclient, wid, [ev("deleted", root / "sub-renamed" / "f")])
    os.chmod(root / "sub-renamed" / "a2", 0o600)
    expect(sclient, wid, [ev("modified", root / "sub-renamed" / "a2")])
    write(root / "old" / "deep")
    expect(sclient, wid, [ev("created", root / "old" / "deep"),
                          ev("modified", root / "old" / "deep")])
    shutil.rmtree(root / "old")
    expect(sclient, wid, [ev("deleted", root / "old" / "deep"), ev("deleted", root / "old", True)])
    quiet(sclient, root / "quiet", wid)


def test_new_nested_tree_is_reported_whole(sclient, tmp_path):
    """A tree that appears at once (moved in, or made faster than the watch follows) is
    reported whole: every entry as created (one made while its directory was being
    watched may come twice), and its directories are watched from then on."""
    root = tmp_path / "root"
    root.mkdir()
    staged = tmp_path / "staged"
    (staged / "a" / "b").mkdir(parents=True)
    write(staged / "a" / "b" / "f")
    write(staged / "top")
    wid = watch(sclient, root, recursive=True)
    os.rename(staged, root / "in")
    want = {U(root / "in"), U(root / "in" / "a"), U(root / "in" / "a" / "b"),
            U(root / "in" / "a" / "b" / "f"), U(root / "in" / "top")}
    got = events(sclient, wid, lambda g: want <= {e["path"] for e in g})
    assert {e["kind"] for e in got} == {"created"}, got
    assert got[0] == ev("created", root / "in", True)
    os.makedirs(root / "x" / "y" / "z")
    open(root / "x" / "y" / "z" / "leaf", "w").close()   # created, not modified
    want = {U(root / "x"), U(root / "x" / "y"), U(root / "x" / "y" / "z"),
            U(root / "x" / "y" / "z" / "leaf")}
    got = events(sclient, wid, lambda g: want <= {e["path"] for e in g})
    assert {e["path"] for e in got} <= want and got[0] == ev("created", root / "x", True)
    quiet(sclient, root / "quiet", wid, rescanned=want)
    # the moved-in and nested directories are watched now
    write(root / "in" / "a" / "b" / "new")
    expect(sclient, wid, [ev("created", root / "in" / "a" / "b" / "new"),
                          ev("modified", root / "in" / "a" / "b" / "new")])


def test_moved_out_of_the_tree_is_deleted_and_unwatched(sclient, tmp_path):
    root = tmp_path / "root"
    (root / "d").mkdir(parents=True)
    wid = watch(sclient, root, recursive=True)
    os.rename(root / "d", tmp_path / "outside")
    expect(sclient, wid, [ev("deleted", root / "d", True)])
    write(tmp_path / "outside" / "f")          # no longer in the tree
    quiet(sclient, root / "quiet", wid)
    write(root / "still")
    expect(sclient, wid, [ev("created", root / "still"), ev("modified", root / "still")])


def test_not_recursive_sees_direct_entries_only(sclient, tmp_path):
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    wid = watch(sclient, root)                 # recursive defaults to false
    write(root / "sub" / "inner")
    os.mkdir(root / "new")
    expect(sclient, wid, [ev("created", root / "new", True)])
    write(root / "new" / "inner")
    quiet(sclient, root / "quiet", wid)
    os.unlink(root / "new" / "inner")
    os.rmdir(root / "new")
    expect(sclient, wid, [ev("deleted", root / "new", True)])


def test_file_watch(sclient, tmp_path):
    """A file is watched through its directory, filtered by its name: siblings are not
    reported; a replacement by rename (an editor's save) is a rename onto it; deleting and
    re-creating it is seen."""
    f = tmp_path / "f.txt"
    write(f, "v1")
    wid = watch(sclient, f)
    write(tmp_path / "sibling")
    with open(f, "a") as fh:
        fh.write("v2")
    expect(sclient, wid, [ev("modified", f)])
    write(tmp_path / ".f.txt.swp", "v3")
    os.rename(tmp_path / ".f.txt.swp", f)
    expect(sclient, wid, [ev("renamed", f, old=tmp_path / ".f.txt.swp")])
    os.unlink(f)
    expect(sclient, wid, [ev("deleted", f)])
    write(f, "again")
    expect(sclient, wid, [ev("created", f), ev("modified", f)])
    os.rename(f, tmp_path / "elsewhere")
    expect(sclient, wid, [ev("renamed", tmp_path / "elsewhere", old=f)])
    quiet(sclient, f, wid)                     # the watched name itself is the marker


def test_root_removed_ends_the_watch(server, tmp_path):
    """The root deleted: its contents' deletions, then `ended`; the id is gone and no
    kernel watch is left."""
    c = server.connect()
    try:
        root = tmp_path / "root"
        (root / "d").mkdir(parents=True)
        write(root / "d" / "f")
        wid = watch(c, root, recursive=True)
        shutil.rmtree(root)
        got = events(c, wid, lambda g: g and g[-1]["kind"] == "ended")
        assert got == [ev("deleted", root / "d" / "f"), ev("deleted", root / "d", True),
                       {"kind": "ended", "reason": "deleted"}]
        assert c.error("fs/unwatch", {"watchId": wid}) == {
            "code": -32600, "message": "unknown watch id %d" % wid}
        wait_until(lambda: not inotify_wds(server.pid), what="no kernel watch")
        root.mkdir()
        wid2 = watch(c, root)
        os.rename(root, tmp_path / "moved")
        assert events(c, wid2, lambda g: g)[-1] == {"kind": "ended", "reason": "moved"}
    finally:
        c.ws.abort()


def test_two_watches_on_one_tree_and_watch_missing_share_the_instance(server, tmp_path):
    """Two connections watching the same tree and an fs/watchMissing in it share one
    inotify instance (and one kernel watch per directory); each gets its own events and
    ending one leaves the others working."""
    a, b = server.connect(), server.connect()
    try:
        root = tmp_path / "root"
        root.mkdir()
        wa = watch(a, root, recursive=True)
        wb = watch(b, root, recursive=True)
        assert b.result("fs/watchMissing", {"watchId": 1, "missing": [U(root / "m")]}) == {
            "watching": True}
        assert len(inotify_wds(server.pid)) == 1
        write(root / "m")
        expect(a, wa, [ev("created", root / "m"), ev("modified", root / "m")])
        expect(b, wb, [ev("created", root / "m"), ev("modified", root / "m")])
        assert b.next_notification("fs/missingChanged", timeout=TIMEOUT)["params"] == {
            "watchId": 1}
        assert a.result("fs/unwatch", {"watchId": wa}) == {}
        assert b.result("fs/watchMissing", {"watchId": 2, "missing": [U(root / "n")]}) == {
            "watching": True}
        write(root / "n")
        expect(b, wb, [ev("created", root / "n"), ev("modified", root / "n")])
        assert b.next_notification("fs/missingChanged", timeout=TIMEOUT)["params"] == {
            "watchId": 2}
        quiet(a, root / "quiet", wb, via=b)
    finally:
        a.ws.abort()
        b.ws.abort()


def test_large_tree_installs_in_steps(server, tmp_path):
    """A recursive watch's first scan runs in steps from the loop: another connection is
    answered meanwhile; changes made during the scan come after the reply, never before;
    a connection that goes while its watch is being installed leaves nothing behind."""
    root = tmp_path / "root"
    for i in range(40):
        for j in range(20):
            d = root / ("a%d" % i) / ("b%d" % j)
            d.mkdir(parents=True)
            for k in range(10):
                open(d / ("f%d" % k), "w").close()
    a, b, gone = server.connect(), server.connect(), server.connect()
    try:
        gone.request("fs/watch", {"path": U(root), "recursive": True})
        rid = a.request("fs/watch", {"path": U(root), "recursive": True, "maxDirectories": 900})
        sid = a.request("environment/status", {})   # right behind it on the same connection
        gone.ws.abort()
        assert b.result("environment/status", {}) is not None
        write(root / "a0" / "b0" / "during")
        res = a.wait_reply(rid, timeout=60)
        # answered while the install ran: before it, though asked after it
        replies = [m.get("id") for m in a.log if m.get("id") in (rid, sid)]
        assert replies == [sid, rid], replies
        assert list(res["result"]) == ["watchId"], res
        wid = res["result"]["watchId"]
        write(root / "a39" / "b19" / "deep")
        got = events(a, wid, lambda g: any(e["path"] == U(root / "a39" / "b19" / "deep")
                                            for e in g))
        assert got[-2:] == [ev("created", root / "a39" / "b19" / "deep"),
                            ev("modified", root / "a39" / "b19" / "deep")] or \
            got[-1] == ev("created", root / "a39" / "b19" / "deep")
        # nothing of this watch before its reply
        order = [m for m in a.log if m.get("id") == rid or
                 (m.get("method") == METHOD and m["params"]["watchId"] == wid)]
        assert order[0].get("id") == rid
        # 1 + 40 + 800 directories: one kernel watch each, the aborted install's are gone
        wait_until(lambda: len(inotify_wds(server.pid)) == 841,
                   what="only the installed watch's kernel watches")
    finally:
        a.ws.abort()
        b.ws.abort()
        gone.ws.abort()
    wait_until(lambda: not inotify_wds(server.pid), what="no kernel watch")


# ---- limits and overflow

def test_renames_while_the_server_reads_stay_renames(server, tmp_path):
    """rename(2) queues IN_MOVED_FROM and IN_MOVED_TO one after the other, and the
    server's read can come in between, with room left in its buffer: the first half
    must wait for the second. Before, 10-200 of 40000 renames were reported as a
    deletion and a creation (a move out of the watch and one into it). In batches, each
    read to its end marker, so that no queue overflows even under ASan."""
    c = server.connect()
    try:
        root = tmp_path / "r"
        root.mkdir()
        a, b = root / "a", root / "b"
        wid = watch(c, root)
        open(a, "w").close()
        got = events(c, wid, lambda g: len(g) >= 1)
        batches, n = 40, 500
        for k in range(batches):
            for _ in range(n):
                os.rename(a, b)
                os.rename(b, a)
            mark = root / ("m%d" % k)
            open(mark, "w").close()
            batch = []
            while not batch or batch[-1].get("path") != U(mark):
                m = c.next_notification(METHOD, timeout=TIMEOUT)
                if m["params"]["watchId"] == wid:
                    batch += m["params"]["events"]
            got += batch[:-1]
        kinds = collections.Counter(e["kind"] for e in got)
        assert kinds == {"created": 1, "renamed": 2 * n * batches}, kinds
        ok = all(e["path"] == U(b if i % 2 else a) for i, e in enumerate(got[1:], 1))
        assert ok, first_difference(got, [ev("created", a)] + [
            ev("renamed", b, old=a), ev("renamed", a, old=b)] * (n * batches))
    finally:
        c.ws.abort()


def test_queue_bound_overflow_event(server_factory, tmp_path):
    """A client that stops reading: its connection congests (--max-queued-bytes), events
    queue up to maxQueuedEvents, then one overflow event takes the place of what is
    dropped. What comes before it is exactly the start of the real sequence (nothing lost
    silently); once the client reads again the watch goes on. Long paths make each event
    big enough to fill the socket buffers quickly."""
    srv = server_factory("--max-queued-bytes", "65536")
    c = srv.connect()
    probe = srv.connect()
    try:
        # the probe's watch tells when the server has read the renames (see below)
        beacon = tmp_path / "beacon"
        beacon.mkdir()
        bid = watch(probe, beacon)
        root = tmp_path / ("d" * 200) / ("e" * 200) / ("f" * 200)
        root.mkdir(parents=True)
        a, b = root / ("a" * 200), root / ("b" * 200)
        wid = watch(c, root, maxQueuedEvents=50)
        open(a, "w").close()
        n = 3000
        for _ in range(n):
            os.rename(a, b)
            os.rename(b, a)
        # The server reads them all while c does not read: the kernel queues the beacon's
        # creation after them, and the server handles its events in order, so the probe
        # hears of the beacon once every rename has been handled (queued for c, or dropped).
        open(beacon / "m", "w").close()
        expect(probe, bid, [ev("created", beacon / "m")])
        got = events(c, wid, lambda g: any(e["kind"] == "overflow" for e in g))
        open(root / "after", "w").close()   # the watch goes on after the drain
        got += events(c, wid, lambda g: any(e.get("path") == U(root / "after") for e in g))
        assert got[-1] == ev("created", root / "after")
        got = got[:-1]
        marks = [i for i, e in enumerate(got) if e["kind"] == "overflow"]
        assert marks and all(got[i] == {"kind": "overflow", "reason": "queue"} for i in marks)
        real = [ev("created", a)] + [ev("renamed", b, old=a), ev("renamed", a, old=b)] * n
        delivered = len(got) - len(marks)
        assert 1 < delivered < len(real), "nothing was dropped: the bound did not apply"
        # between the marks, events are contiguous runs of the real sequence: nothing is
        # lost without an overflow event in its place (booleans first: pytest's diff of
        # lists of thousands of events takes many minutes)
        segs, start = [], 0
        for i in marks + [len(got)]:
            segs.append(got[start:i])
            start = i + 1
        ok = segs[0] == real[:len(segs[0])]
        assert ok, first_difference(segs[0], real, marks)
        for seg in segs[1:]:
            ok = all(e["kind"] == "renamed" for e in seg)
            assert ok, seg[:3]
            ok = all(x["path"] == y["oldPath"] for x, y in zip(seg, seg[1:]))
            assert ok, seg[:3]
        if segs[-1]:
            assert segs[-1][-1] == real[-1]      # the last rename was not lost
    finally:
        c.ws.abort()
        probe.ws.abort()


def test_kernel_queue_overflow(server, tmp_path):
    """The kernel's inotify queue overflows (the server stopped while more events than
    fs.inotify.max_queued_events happen): every watch gets an overflow event of reason
    `kernel`, the tree is scanned again so that a directory whose creation was lost is
    watched, and fs/watchMissing re-checks its paths."""
    with open("/proc/sys/fs/inotify/max_queued_events") as f:
        limit = int(f.read())
    if limit > 65536:
        pytest.skip("fs.inotify.max_queued_events is %d: too many events to make" % limit)
    c = server.connect()
    try:
        root = tmp_path / "root"
        root.mkdir()
        wid = watch(c, root, recursive=True)
        assert c.result("fs/watchMissing", {"watchId": 1, "missing": [U(root / "late" / "m")]}) \
            == {"watching": True}
        os.kill(server.pid, signal.SIGSTOP)
        try:
            # kill(2) returns before the stop: until every thread is stopped, a read of the
            # instance (io_uring task work on the way to the stop) can drain the first
            # events and keep the kernel's queue under its limit
            wait_until(lambda: all_stopped(server.pid), what="the server stopped")
            for i in range(limit + 100):
                os.close(os.open(root / ("f%d" % i), os.O_CREAT | os.O_WRONLY, 0o644))
            os.mkdir(root / "late")          # its IN_CREATE is past the kernel's queue
        finally:
            os.kill(server.pid, signal.SIGCONT)
        got = events(c, wid, lambda g: any(e == {"kind": "overflow", "reason": "kernel"}
                                           for e in g), timeout=60)
        assert all(e["kind"] in ("created", "overflow") for e in got)
        assert not any(e.get("path") == U(root / "late") for e in got)
        # fs/watchMissing: its anchor's event was lost too; the re-check fires it
        assert c.next_notification("fs/missingChanged", timeout=TIMEOUT)["params"] == {
            "watchId": 1}
        # the re-scan reports `late` and its entries as it finds them: x, whether made
        # before or after the scan reached `late`, is reported as created
        write(root / "late" / "x")
        got = events(c, wid, lambda g: any(e.get("path") == U(root / "late" / "x") for e in g))
        assert ev("created", root / "late" / "x") in got
    finally:
        c.ws.abort()


def test_directory_limit(sclient, tmp_path):
    """maxDirectories: a tree above it is refused with a clear error; a directory that
    appears once the limit is reached is reported as created and as an overflow naming it
    (its contents are not watched)."""
    root = tmp_path / "root"
    for d in ("a", "b", "c"):
        (root / d).mkdir(parents=True)
    assert sclient.error("fs/watch", {"path": U(root), "recursive": True,
                                      "maxDirectories": 3}) == {
        "code": -32600,
        "message": "fs/watch: `%s` holds more than 3 directories (maxDirectories)" % root}
    wid = watch(sclient, root, recursive=True, maxDirectories=5)
    os.mkdir(root / "d")
    expect(sclient, wid, [ev("created", root / "d", True)])
    os.mkdir(root / "e")
    expect(sclient, wid, [ev("created", root / "e", True),
                          {"kind": "overflow", "reason": "directoryLimit",
                           "path": U(root / "e")}])
    write(root / "e" / "unseen")
    write(root / "d" / "seen")
    expect(sclient, wid, [ev("created", root / "d" / "seen"), ev("modified", root / "d" / "seen")])


def test_watches_per_connection_limit_and_unwatch(server, tmp_path):
    """16 watches per connection; fs/unwatch frees a slot and its kernel watches."""
    c = server.connect()
    try:
        dirs = []
        for i in range(17):
            d = tmp_path / ("d%d" % i)
            d.mkdir()
            dirs.append(d)
        ids = [watch(c, d) for d in dirs[:16]]
        assert ids == list(range(1, 17))
        assert c.error("fs/watch", {"path": U(dirs[16])}) == {
            "code": -32600,
            "message": "fs/watch: at most 16 watches per connection; fs/unwatch one first"}
        assert len(inotify_wds(server.pid)) == 16
        assert c.result("fs/unwatch", {"watchId": 3}) == {}
        assert len(inotify_wds(server.pid)) == 15
        write(dirs[2] / "unwatched")
        quiet(c, dirs[0] / "quiet", ids[0])
        assert watch(c, dirs[16]) == 17
        assert c.error("fs/unwatch", {"watchId": 3}) == {
            "code": -32600, "message": "unknown watch id 3"}
        for i in ids:
            if i != 3:
                assert c.result("fs/unwatch", {"watchId": i}) == {}
        assert c.result("fs/unwatch", {"watchId": 17}) == {}
        assert inotify_wds(server.pid) == []
    finally:
        c.ws.abort()


@pytest.mark.parametrize("how", ["abort", "close"])
def test_no_leaks_after_disconnect(server, tmp_path, how):
    """Watches end with their connection: no kernel watch and no fd stays, other
    connections are not notified, and the server keeps serving."""
    root = tmp_path / "root"
    for i in range(20):
        (root / ("d%d" % i) / "x").mkdir(parents=True)
    first = server.connect()
    watch(first, root)                      # the instance is opened once, then kept
    first.ws.abort()
    wait_until(lambda: not inotify_wds(server.pid), what="no kernel watch")
    other = server.connect()
    base_fds = fd_count(server.pid)
    c = server.connect()
    for _ in range(5):
        watch(c, root, recursive=True)
    assert len(inotify_wds(server.pid)) == 41
    if how == "abort":
        c.ws.abort()
    else:
        c.ws.close()
    wait_until(lambda: not inotify_wds(server.pid), what="the kernel watches to go")
    wait_until(lambda: fd_count(server.pid) == base_fds, what="the fds to go")
    wid = watch(other, root)                # direct entries only: d0/f is not one
    write(root / "d0" / "f")
    quiet(other, root / "quiet", wid)
    write(root / "g")
    expect(other, wid, [ev("created", root / "g"), ev("modified", root / "g")])
    other.ws.abort()


# ---- parameters

@pytest.mark.parametrize("params,error", [
    ({}, {"code": -32602, "message": "missing field `path`"}),
    ({"path": "relative"}, {"code": -32602, "message": "invalid URI: relative URL without a base"}),
    ({"path": "file:///nonexistent-uexec-watch"},
     {"code": -32004, "message": "No such file or directory (os error 2)"}),
    ({"path": "file:///tmp", "maxQueuedEvents": 0},
     {"code": -32602, "message": "invalid value: integer `0`, expected maxQueuedEvents between "
                                 "1 and 16384"}),
    ({"path": "file:///tmp", "maxDirectories": 8193},
     {"code": -32602, "message": "invalid value: integer `8193`, expected maxDirectories "
                                 "between 1 and 8192"}),
    ({"path": "file:///tmp", "sandbox": {
        "permissions": {"type": "managed", "file_system": {"type": "restricted", "entries": []},
                        "network": "restricted"}, "cwd": "file:///tmp",
        "windowsSandboxLevel": "disabled"}},
     {"code": -32602, "message": "sandbox intent cannot be enforced on this executor"}),
])
def test_bad_params(sclient, params, error):
    assert sclient.error("fs/watch", params) == error


def test_unwatch_bad_params(sclient):
    assert sclient.error("fs/unwatch", {}) == {"code": -32602,
                                               "message": "missing field `watchId`"}
    assert sclient.error("fs/unwatch", {"watchId": 99}) == {
        "code": -32600, "message": "unknown watch id 99"}


# ---- symlinks swapped in never lead out of the tree

_EXCHANGER = r"""
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
a, b, stop = sys.argv[1].encode(), sys.argv[2].encode(), sys.argv[3]
print("ready", flush=True)
n = 0
while not os.path.exists(stop):
    libc.renameat2(-100, a, -100, b, 2)  # RENAME_EXCHANGE
    n += 1
    t = time.perf_counter() + 0.0003
    while time.perf_counter() < t:
        pass
if n % 2:
    libc.renameat2(-100, a, -100, b, 2)  # back where it started
"""


def test_directory_swapped_for_a_symlink_is_never_followed(server, tmp_path):
    """A directory of the tree that another process keeps exchanging with a symlink to a
    directory outside (same names below it) while the tree is scanned: every directory the
    watch scans and every kernel watch it takes is the one it found inside the tree, never
    one reached through the symlink (the path is re-resolved without following symlinks and
    checked against the node's identity)."""
    import subprocess
    import sys
    root, outside = tmp_path / "root", tmp_path / "outside"
    n_sub, n_files = 60, 600  # many scan steps
    for i in range(n_sub):
        d = root / "a" / ("b%d" % i)
        d.mkdir(parents=True)
        for k in range(n_files):
            os.close(os.open(d / ("f%d" % k), os.O_CREAT | os.O_WRONLY))
        (outside / ("b%d" % i) / "deep").mkdir(parents=True)
    os.symlink(str(outside), str(root / "alt"))
    foreign = {os.stat(p).st_ino for p in [outside] + list(outside.rglob("*"))}
    stop = tmp_path / "stop"
    sw = subprocess.Popen([sys.executable, "-c", _EXCHANGER, str(root / "a"),
                           str(root / "alt"), str(stop)], stdout=subprocess.PIPE)
    c = server.connect()
    try:
        assert sw.stdout.readline() == b"ready\n"
        r = c.call("fs/watch", {"path": U(root), "recursive": True, "maxDirectories": 8192},
                   timeout=60)
        assert list(r.get("result", {})) == ["watchId"], r
        wid = r["result"]["watchId"]
        # (the exchanges go on a moment with the watch installed: its events are handled
        # while the names keep swapping; the checks below do not depend on how long)
        time.sleep(0.3)
        stop.write_text("")
        assert sw.wait(timeout=EVENT_TIMEOUT) == 0
        # every event of the exchanges handled (ordered by a marker made after them)
        quiet_marker(c, root / "m1", wid)
        assert (root / "a").is_dir() and (root / "alt").is_symlink()
        held = {int(ln.split("ino:")[1].split()[0], 16) for ln in inotify_wds(server.pid)}
        assert held, "the watch holds kernel watches"
        assert not held & foreign, "kernel watches on directories outside the tree"
        # and nothing written outside is reported as part of the tree
        for i in range(n_sub):
            write(outside / ("b%d" % i) / "deep" / "x")
        got = quiet_marker(c, root / "m2", wid)    # what those writes caused came before
        assert not [e for e in got if "/deep" in e.get("path", "")], got
    finally:
        stop.write_text("")
        sw.wait(timeout=EVENT_TIMEOUT)
        c.ws.abort()


def test_one_large_directory_is_scanned_in_steps(server, tmp_path):
    """A single directory of 100 000 entries is read a step at a time like a tree of many
    small ones: another connection's requests are answered many times while the watch is
    being installed (the old scan read the whole directory in one go, answering none), and
    every entry is still covered: a change to the last one read is reported."""
    flat = tmp_path / "flat"
    flat.mkdir()
    n = 100000
    for i in range(n):
        os.close(os.open(flat / ("f%06d" % i), os.O_CREAT | os.O_WRONLY))
    (flat / "zdir").mkdir()
    a, b = server.connect(), server.connect()
    try:
        assert b.result("environment/status", {}) is not None  # b is warm
        rid = a.request("fs/watch", {"path": U(flat), "recursive": True})
        answered = 0
        deadline = time.monotonic() + 60
        while not a.has_reply(rid):
            assert time.monotonic() < deadline, "the install never ended"
            b.result("environment/status", {})
            try:
                a.pump(0.001)
            except wsclient.Timeout:
                answered += 1  # answered while the install was still running
        res = a.wait_reply(rid, timeout=60)
        assert list(res["result"]) == ["watchId"], res
        assert answered >= 5, "only %d replies to another connection during the scan" % answered
        wid = res["result"]["watchId"]
        # the subdirectory met at the end of the scan got its kernel watch
        write(flat / "zdir" / "new")
        got = events(a, wid, lambda g: any(e["path"] == U(flat / "zdir" / "new") for e in g))
        assert ev("created", flat / "zdir" / "new") in got, got
    finally:
        a.ws.abort()
        b.ws.abort()
