# SPDX-License-Identifier: MIT
"""Live upgrade (issue 26, docs/UPGRADE.md "Watches and fs/open handles"): a client
attached during the upgrade keeps its fs watches and its fs/open handles on the same
WebSocket. Watches are added again by the new binary on its own inotify instance, so
what changed while neither binary was reading is told the way lost events are told:
an fs/watchMissing watch whose missing path appeared meanwhile fires after the upgrade;
every fs/watch watch gets an `overflow` event (reason `upgrade`) first, and a watch
whose root was replaced meanwhile ends (`moved`). Watch ids (both kinds) and the
per-connection limits go on. Handles keep their open file: fs/readBlock goes on at the
offset the client asks, fs/writeBlock writes the same file, fs/close closes it. No fd
is left behind."""

import json
import os
import re
import signal

import pytest

from conftest import EVENT_TIMEOUT, SANITIZER_MARKERS, settled_fd_count, wait_until
from test_upgrade import Launch, start_stdio_server  # the upgrade's server fixtures
from wsclient import RpcClient, StdioTransport, b64, file_uri as U, unb64

pytestmark = pytest.mark.needs_programs("/bin/sh")

CHANGED = "fs/changed"
MISSING = "fs/missingChanged"
OVERFLOW = {"kind": "overflow", "reason": "upgrade"}


def watch_missing(c, wid, missing, present=None):
    p = {"watchId": wid, "missing": [U(m) for m in missing]}
    if present is not None:
        p["present"] = U(present)
    return c.result("fs/watchMissing", p)["watching"]


def fs_watch(c, path, **kw):
    r = c.call("fs/watch", dict(path=U(path), **kw))
    assert "result" in r, r
    return r["result"]["watchId"]


def ev(kind, path, is_dir=False):
    return {"kind": kind, "path": U(path), "isDirectory": is_dir}


def events_until(c, wid, pred, what, limit=1000):
    """wid's fs/changed events on c, in order, until pred(events) holds."""
    got = []
    while not pred(got):
        m = c.next_notification(CHANGED, pred=lambda p: p["watchId"] == wid)
        assert m["params"]["events"], m
        got += m["params"]["events"]
        assert len(got) < limit, (what, got[-3:])
    return got


def read_block(c, hid, offset, n):
    return c.call("fs/readBlock", {"handleId": hid, "offset": offset, "len": n})


def test_watches_and_open_files_are_handed_over(server_factory, tmp_path):
    t = tmp_path / "w"
    d, tree, root, m, m2 = t / "d", t / "tree", t / "root", t / "m", t / "m2"
    for p in (d, tree / "sub", root, m, m2):
        p.mkdir(parents=True)
    present, ftxt = t / "present", t / "f.txt"
    present.write_text("here")
    ftxt.write_text("one")
    data = bytes(range(256)) * 8
    (t / "data").write_bytes(data)
    (t / "out").write_bytes(b"")
    os.chmod(tmp_path, 0o755)
    marker, fifo = tmp_path / "in-exec", str(tmp_path / "fifo")
    os.mkfifo(fifo)
    lu = Launch(server_factory, tmp_path, handover=True)
    pid = lu.srv.pid
    # The inotify instance is opened on first use and kept: opened before the count.
    first = lu.srv.connect()
    assert watch_missing(first, 1, [str(m / "never")]) is True
    first.ws.abort()
    wait_until(lambda: lu.srv.stderr().count(b"detached from") >= 1, what="first detached")
    base = settled_fd_count(pid)

    c = lu.srv.connect()
    # fs/watchMissing: watchId 5 over two missing paths and a present one.
    assert watch_missing(c, 5, [str(m / "a" / "b"), str(m / "c")], str(present)) is True
    w_dir = fs_watch(c, str(d))
    w_tree = fs_watch(c, str(tree), recursive=True)
    w_file = fs_watch(c, str(ftxt))
    w_root = fs_watch(c, str(root))
    assert [w_dir, w_tree, w_file, w_root] == [1, 2, 3, 4]
    # fs/open: a file read from the middle, and one written.
    assert c.result("fs/open", {"handleId": "h", "path": U(str(t / "data"))}) == \
        {"handleId": "h"}
    r = read_block(c, "h", 0, 100)["result"]
    assert unb64(r["chunk"]) == data[:100] and r["eof"] is False
    assert c.result("fs/open", {"handleId": "w", "path": U(str(t / "out")),
                                "mode": "replace"}) == {"handleId": "w"}
    assert c.result("fs/writeBlock", {"handleId": "w", "offset": 0,
                                      "chunk": b64(b"before|")}) is not None
    # Another attached client, whose missing path appears only after the upgrade.
    c2 = lu.srv.connect()
    assert watch_missing(c2, 9, [str(m2 / "later")]) is True
    # A change before the upgrade is reported as usual.
    (d / "before").write_text("x")
    got = events_until(c, w_dir, lambda g: ev("modified", str(d / "before")) in g, "before")
    assert OVERFLOW not in got, got
    fds = settled_fd_count(pid)

    lu.hold_new_binary(marker, fifo)
    lu.usr2()
    lu.wait_log(" fds over to ")
    wait_until(marker.exists, what="the new binary started")
    # During the pause: neither binary reads. The missing path appears, a file and a
    # directory are made in the watched trees, the watched file changes, and the root
    # of a watch is replaced by another directory.
    (m / "c").write_text("now")
    (d / "during").write_text("x")
    (tree / "newdir").mkdir()
    ftxt.write_text("two")
    os.rename(root, t / "root-old")
    root.mkdir()
    with open(fifo, "w") as f:
        f.write("go\n")
    lu.wait_log("Upgrade: took over from uexec ")
    err = lu.srv.stderr()
    assert lu.srv.pid == pid and b"Upgrade: no hand-over (" not in err
    # (The first client's session is handed over too, detached: its watch ended with it.)
    assert re.search(rb"\(3 sessions, 0 processes, 2 connections\), with 6 watches and 2 "
                     rb"open files", err), lu.srv.stderr_tail()

    # The missing path that appeared during the pause: fired on the same socket.
    assert c.next_notification(MISSING)["params"] == {"watchId": 5}
    # Each fs/watch watch: an overflow first (what happened meanwhile is not known).
    got = events_until(c, w_root, lambda g: len(g) >= 2, "root")
    assert got == [OVERFLOW, {"kind": "ended", "reason": "moved"}], got
    assert c.error("fs/unwatch", {"watchId": w_root})["message"] == \
        "unknown watch id %d" % w_root
    # Changes after the upgrade: in the directory, deep in the re-scanned tree (in a
    # subdirectory made during the pause too), and to the watched file.
    (d / "after").write_text("x")
    got = events_until(c, w_dir, lambda g: ev("created", str(d / "after")) in g, "dir")
    assert got[0] == OVERFLOW, got
    (tree / "sub" / "x").write_text("x")
    (tree / "newdir" / "y").write_text("y")
    got = events_until(c, w_tree, lambda g: ev("created", str(tree / "newdir" / "y")) in g,
                       "tree")
    assert got[0] == OVERFLOW and ev("created", str(tree / "sub" / "x")) in got, got
    with open(ftxt, "a") as f:
        f.write("three")
    got = events_until(c, w_file, lambda g: ev("modified", str(ftxt)) in g, "file")
    assert got[0] == OVERFLOW and all(e == OVERFLOW or e["path"] == U(str(ftxt))
                                      for e in got), got
    # The other client's missing path, made after the upgrade.
    (m2 / "later").write_text("x")
    assert c2.next_notification(MISSING)["params"] == {"watchId": 9}

    # Ids go on: fs/watchMissing ignores an id not newer than 5; fs/watch hands out 5.
    assert watch_missing(c, 3, [str(m / "zz")]) is False
    assert watch_missing(c, 6, [str(m / "zz")]) is True
    assert c.result("fs/unwatch", {"watchId": w_dir}) == {}
    assert c.error("fs/unwatch", {"watchId": w_dir})["message"] == "unknown watch id %d" % w_dir
    # The limit of 16 fs/watch watches per connection counts the adopted ones (2 left).
    made = [fs_watch(c, str(d)) for _ in range(14)]
    assert made == list(range(5, 19))
    r = c.call("fs/watch", {"path": U(str(d))})
    assert r["error"]["message"] == ("fs/watch: at most 16 watches per connection; "
                                     "fs/unwatch one first"), r

    # The handles: the read goes on where the client asks, the write lands in the file.
    r = read_block(c, "h", 100, 200)["result"]
    assert unb64(r["chunk"]) == data[100:300] and r["eof"] is False
    r = read_block(c, "h", len(data) - 10, 100)["result"]
    assert unb64(r["chunk"]) == data[-10:] and r["eof"] is True
    assert c.result("fs/writeBlock", {"handleId": "w", "offset": 7,
                                      "chunk": b64(b"after")}) is not None
    assert (t / "out").read_bytes() == b"before|after"
    assert c.result("fs/close", {"handleId": "h"}) == {}
    assert c.result("fs/close", {"handleId": "w"}) == {}
    assert read_block(c, "h", 0, 1)["error"]["message"] == "unknown file handle `h`"
    # The same fds as before the upgrade, less the two handles closed and plus the
    # 14 new watches' kernel watches (no fds), and none left once the clients go.
    wait_until(lambda: settled_fd_count(pid) == fds - 2, what="the fds of before, less two")
    c.ws.abort()
    c2.ws.abort()
    wait_until(lambda: settled_fd_count(pid) == base, what="the fds of before the clients")


def test_state_counts_watches_and_handles_on_a_dry_run(server_factory, tmp_path):
    """UEXEC_UPGRADE_DRY_RUN: the state is built with the connection's watches and its
    handle (upgrade.state's fields), and the server goes on serving them untouched: no
    overflow (nothing was lost), the events and the handle as before."""
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_bytes(b"0123456789")
    lu = Launch(server_factory, tmp_path, args=("--log-format", "json"))
    c = lu.srv.connect()
    assert watch_missing(c, 1, [str(tmp_path / "d" / "x")]) is True
    wid = fs_watch(c, str(tmp_path / "d"), recursive=True)
    assert c.result("fs/open", {"handleId": "h", "path": U(str(tmp_path / "f"))}) == \
        {"handleId": "h"}
    lu.usr2()
    lu.wait_log('"event":"upgrade.unsupported"')
    events = {e["event"]: e for e in (json.loads(line) for line in lu.srv.stderr().splitlines()
                                      if line.startswith(b"{") and b'"event":"upgrade.' in line)}
    f = events["upgrade.state"]["fields"]
    assert f["connections"] == 1 and f["watches"] == 2 and f["fsHandles"] == 1, f
    assert events["upgrade.unsupported"]["fields"]["reason"] == "UEXEC_UPGRADE_DRY_RUN is set"
    (tmp_path / "d" / "x").write_text("x")
    assert c.next_notification(MISSING)["params"] == {"watchId": 1}
    got = events_until(c, wid, lambda g: ev("created", str(tmp_path / "d" / "x")) in g, "d")
    assert OVERFLOW not in got, got
    r = read_block(c, "h", 4, 3)["result"]
    assert unb64(r["chunk"]) == b"456"


def test_stdio_connection_keeps_its_watch_and_handle(tmp_path):
    """--listen stdio: the stdio connection's watch and handle travel as a WebSocket's."""
    d = tmp_path / "d"
    d.mkdir()
    (tmp_path / "f").write_bytes(b"abcdefghij")
    proc, err_path = start_stdio_server(tmp_path)
    try:
        c = RpcClient(StdioTransport(proc))
        c.initialize("upgrade-fs-stdio")
        wid = fs_watch(c, str(d))
        assert c.result("fs/open", {"handleId": "h", "path": U(str(tmp_path / "f"))}) == \
            {"handleId": "h"}
        proc.send_signal(signal.SIGUSR2)
        wait_until(lambda: b"Upgrade: took over from uexec " in err_path.read_bytes(),
                   what="the hand-over")
        assert b"1 connections), with 1 watches and 1 open files" in err_path.read_bytes()
        (d / "after").mkdir()
        got = events_until(c, wid, lambda g: ev("created", str(d / "after"), True) in g, "d")
        assert got[0] == OVERFLOW, got
        assert unb64(read_block(c, "h", 3, 4)["result"]["chunk"]) == b"defg"
        proc.stdin.close()
        assert proc.wait(EVENT_TIMEOUT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = err_path.read_bytes()
    assert not any(mk in stderr for mk in SANITIZER_MARKERS), stderr[-2000:]


def test_events_queued_for_a_congested_client_travel(server_factory, tmp_path):
    """A client that stops reading: its connection congests (--max-queued-bytes) and its
    fs/watch events wait in the watch's queue, up to the queue's bound and its overflow
    event. They travel with the watch: once the client reads after the upgrade, what it
    gets before the upgrade's overflow is the real sequence from its start, with the queue's
    overflow last (the queue's events and its mark were not dropped at the hand-over)."""
    lu = Launch(server_factory, tmp_path, handover=True,
                args=("--max-queued-bytes", "65536", "--log-format", "json"))
    c = lu.srv.connect()
    probe = lu.srv.connect()
    beacon = tmp_path / "beacon"
    beacon.mkdir()
    bid = fs_watch(probe, str(beacon))
    root = tmp_path / ("d" * 200) / ("e" * 200) / ("f" * 200)
    root.mkdir(parents=True)
    a, b = root / ("a" * 200), root / ("b" * 200)
    wid = fs_watch(c, str(root), maxQueuedEvents=16384)
    open(a, "w").close()
    n = 4000
    for _ in range(n):
        os.rename(a, b)
        os.rename(b, a)
    # The probe hears of the beacon once the server has handled every rename before it
    # (one inotify instance, read in order): queued for c, or dropped with a mark.
    (beacon / "m").write_bytes(b"")
    events_until(probe, bid, lambda g: ev("created", str(beacon / "m")) in g, "beacon")
    real = [ev("created", str(a))] + [
        {"kind": "renamed", "oldPath": U(str(a)), "path": U(str(b)), "isDirectory": False},
        {"kind": "renamed", "oldPath": U(str(b)), "path": U(str(a)), "isDirectory": False}] * n
    lu.usr2()
    lu.wait_log("Upgrade: took over from uexec ")
    state = [json.loads(line) for line in lu.srv.stderr().splitlines()
             if line.startswith(b"{") and b'"event":"upgrade.state"' in line][-1]["fields"]
    assert state["watches"] == 2 and state["watchQueuedBytes"] > 0, state
    got = events_until(c, wid, lambda g: OVERFLOW in g, "the upgrade's overflow",
                       limit=3 * len(real))
    assert got[-1] == OVERFLOW, got[-3:]
    got = got[:-1]
    assert got[-1] == {"kind": "overflow", "reason": "queue"}, got[-3:]
    ok = got[:-1] == real[:len(got) - 1]   # (a bool first: pytest's diff of thousands is slow)
    assert ok, "the events before the marks are not the real sequence from its start"
    assert 1 < len(got) - 1 < len(real)
    # The watch goes on, on the same socket.
    (root / "after").write_bytes(b"")
    got = events_until(c, wid, lambda g: ev("created", str(root / "after")) in g, "after")
    assert got[-1] == ev("created", str(root / "after")), got[-3:]
