# SPDX-License-Identifier: MIT
"""Chaos soak (marked slow: `-Dslow_tests=true`, or `-m slow`): several client threads
against one server for UEXEC_CHAOS_SECONDS (default 20), each picking random actions
from a seeded generator: whole runs whose results are checked, floods dropped mid-way
(abort, reset, garbage, half a frame), stdin writes, terminations, fs round trips,
sessions resumed after a drop, watches dropped with events pending, scrapes, while an
operator's SIGHUP comes now and then. Every
complete action checks what it got; afterwards the server must be as it was (no
session, no child, the fd count of the start), still answer, and exit cleanly without
a sanitizer report (the fixture's teardown). A failure prints the seed
(UEXEC_CHAOS_SEED replays it; threads interleave differently, the actions do not).
UEXEC_CHAOS_ARGS adds server flags (e.g. `--denial-evidence bpf`)."""

import os
import random
import shutil
import signal
import socket
import tempfile
import threading
import time

import pytest

from conftest import (HOST, bounded_server, children_of, own, settled_fd_count, start_workers,
                      wait_until)
from test_sandbox import Area, ws_policy
from wsclient import b64, file_uri, http_exchange, unb64

pytestmark = [pytest.mark.slow,
              pytest.mark.needs_programs("/bin/sh", "/bin/cat", "/bin/echo", "/bin/sleep",
                                         "/usr/bin/head")]

ENV = {"PATH": "/usr/bin:/bin"}
# the long-running command; its argument marks the processes of one test (drain test)
SLEEP = ["/bin/sleep", "1000"]
THREADS = 4


def sessions_gone(srv):
    status, _, body = http_exchange(srv.host, srv.port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == "HTTP/1.1 200 OK"
    text = body.decode()
    return ('uexec_sessions{state="attached"} 0\n' in text
            and 'uexec_sessions{state="detached"} 0\n' in text)


def fds_of(pid):
    out = {}
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            out[int(fd)] = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            pass
    return out


def drop(c, rnd):
    """Ends a connection the rough way."""
    how = rnd.choice(["abort", "reset", "garbage", "half-frame", "close"])
    try:
        if how == "garbage":
            c.ws.send_raw(bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 64))))
        elif how == "half-frame":
            frame = c.ws.build_frame(0x1, b'{"id":99,"method":"process/list","params":{}}')
            c.ws.send_raw(frame[:rnd.randint(1, len(frame) - 1)])
        elif how == "close":
            c.ws.send_close(1000)
            return
    except OSError:
        pass
    if how == "reset":
        c.ws.reset()
    else:
        c.ws.abort()


def act_run(srv, rnd, tmp, tag):
    c = srv.connect()
    word = "w%d" % rnd.getrandbits(32)
    run = c.run(tag, ["/bin/echo", word], env=ENV, tty=rnd.random() < 0.3)
    run.check_sequencing()
    assert run.exit_code == 0
    assert (run.pty or run.stdout).replace(b"\r\n", b"\n") == (word + "\n").encode()
    c.ws.close()


def act_flood_drop(srv, rnd, tmp, tag):
    c = srv.connect()
    n = rnd.choice([1 << 16, 1 << 20, 16 << 20])
    c.start(tag, ["/usr/bin/head", "-c", str(n), "/dev/zero"], env=ENV,
            tty=rnd.random() < 0.3)
    for _ in range(rnd.randint(0, 5)):
        if c.next_notification()["method"] == "process/closed":
            break
    drop(c, rnd)


def act_stdin(srv, rnd, tmp, tag):
    c = srv.connect()
    c.start(tag, ["/bin/cat"], env=ENV, pipeStdin=True)
    sent = b""
    for i in range(rnd.randint(1, 8)):
        chunk = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 3000)))
        c.write(tag, chunk, str(i + 1))
        sent += chunk
    got = b""
    while len(got) < len(sent):
        m = c.next_notification("process/output",
                                pred=lambda p: p["processId"] == tag)
        got += unb64(m["params"]["chunk"])
    assert got == sent
    assert c.terminate(tag) == {"running": True}
    assert c.collect(tag).exit_code == 137
    c.ws.close()


def act_terminate_many(srv, rnd, tmp, tag):
    c = srv.connect()
    ids = ["%s-%d" % (tag, i) for i in range(rnd.randint(1, 6))]
    for pid in ids:
        c.start(pid, SLEEP, env=ENV)
    if rnd.random() < 0.5:
        drop(c, rnd)  # the resume window ends them
        return
    for pid in ids:
        assert c.terminate(pid) == {"running": True}
    for pid in ids:
        assert c.collect(pid).exit_code == 137
    c.ws.close()


def act_fs(srv, rnd, tmp, tag):
    c = srv.connect()
    d = os.path.join(tmp, tag)
    assert c.result("fs/createDirectory", {"path": file_uri(d), "recursive": True}) == {}
    data = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 100000)))
    f = os.path.join(d, "f")
    assert c.result("fs/writeFile", {"path": file_uri(f), "dataBase64": b64(data)}) == {}
    assert unb64(c.result("fs/readFile", {"path": file_uri(f)})["dataBase64"]) == data
    assert c.result("fs/getMetadata", {"path": file_uri(f)})["isFile"] is True
    names = [e["fileName"] for e in
             c.result("fs/readDirectory", {"path": file_uri(d)})["entries"]]
    assert names == ["f"]
    assert c.result("fs/remove", {"path": file_uri(d)}) == {}
    assert not os.path.exists(d)
    c.ws.close()


def act_resume(srv, rnd, tmp, tag):
    c = srv.connect()
    sid = c.init_result["sessionId"]
    c.start(tag, ["/bin/sh", "-c", "sleep 0.2; echo done"], env=ENV)
    drop(c, rnd)
    r = srv.connect(initialize=False)
    res = r.call("initialize", {"clientName": "chaos", "resumeSessionId": sid})
    if "error" in res:
        # the old connection may not be gone yet ("already attached"): not resumed
        r.ws.abort()
        return
    r.notify("initialized", {})
    got = r.read(tag, afterSeq=0, waitMs=0)
    out = b"".join(unb64(ch["chunk"]) for ch in got["chunks"])
    while not got["exited"]:
        got = r.read(tag, afterSeq=got["nextSeq"] - 1, waitMs=2000)
        out += b"".join(unb64(ch["chunk"]) for ch in got["chunks"])
    assert got["exitCode"] == 0 and out == b"done\n"
    r.ws.close()


def act_watch(srv, rnd, tmp, tag):
    c = srv.connect()
    d = os.path.join(tmp, tag)
    os.makedirs(d, exist_ok=True)
    c.result("fs/watch", {"path": file_uri(d), "recursive": True})
    for i in range(rnd.randint(1, 50)):
        with open(os.path.join(d, "x%d" % i), "w") as f:
            f.write("x")
    if rnd.random() < 0.5:
        c.next_notification("fs/changed")
    drop(c, rnd)


def act_scrape(srv, rnd, tmp, tag):
    for path in (b"/metrics", b"/readyz"):
        status, _, _ = http_exchange(srv.host, srv.port,
                                     b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        assert status == "HTTP/1.1 200 OK", status


def act_raw(srv, rnd, tmp, tag):
    """Bytes that are not HTTP, or a head cut short, then gone."""
    s = socket.create_connection((srv.host, srv.port), timeout=60)
    try:
        s.sendall(rnd.choice([b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n",
                              bytes(rnd.getrandbits(8) for _ in range(200)), b"\r\n\r\n"]))
    finally:
        s.close()


def act_pipelined(srv, rnd, tmp, tag):
    """Requests sent back to back, answered each by its id, whatever the order."""
    c = srv.connect()
    want = {}
    for i in range(rnd.randint(2, 20)):
        kind = rnd.randrange(4)
        if kind == 0:
            want[c.request("environment/status", None)] = ("result", {"status": "ready"})
        elif kind == 1:
            want[c.request("fs/getMetadata", {"path": file_uri(os.path.join(tmp, "no", tag))})] = (
                "code", -32004)
        elif kind == 2:
            want[c.request("no/such", {})] = ("code", -32601)
        else:
            want[c.request("process/read", {"processId": tag + "-none"})] = ("code", -32600)
    for rid, (what, val) in want.items():
        reply = c.wait_reply(rid)
        got = reply.get("result") if what == "result" else reply.get("error", {}).get("code")
        assert got == val, (rid, reply)
    c.ws.close()


def act_tty_resize(srv, rnd, tmp, tag):
    c = srv.connect()
    rows, cols = rnd.randint(1, 1000), rnd.randint(1, 1000)
    c.start(tag, ["/bin/sh", "-c", "stty -echo; echo ready; read a; stty size"], env=ENV,
            tty=True, size={"rows": rnd.randint(1, 1000), "cols": rnd.randint(1, 1000)})
    run = c.collect_until_output(tag, "ready")
    assert c.result("process/resize", {"processId": tag, "rows": rows, "cols": cols}) == {}
    c.write(tag, b"\n", "1")
    run = c.collect(tag, run=run)
    assert run.exit_code == 0
    assert run.pty.replace(b"\r", b"").split(b"\n")[1] == b"%d %d" % (rows, cols), run.pty
    c.ws.close()


def act_close_stdin(srv, rnd, tmp, tag):
    c = srv.connect()
    c.start(tag, ["/bin/cat"], env=ENV, pipeStdin=True)
    data = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 20000)))
    c.write(tag, data, "1")
    assert c.result("process/closeStdin", {"processId": tag}) == {"status": "closed"}
    run = c.collect(tag)
    assert run.exit_code == 0 and run.stdout == data
    c.ws.close()


def act_timeout(srv, rnd, tmp, tag):
    c = srv.connect()
    run = c.run(tag, SLEEP, env=ENV, tty=rnd.random() < 0.3,
                timeoutMs=rnd.randint(1, 300))
    assert run.exited["timedOut"] is True
    assert run.exit_code == 143, run.exited  # SIGTERM
    c.ws.close()


class Sandboxed:
    """A sandboxed write inside the workspace (allowed, sandboxDenied false) or outside
    it (refused, sandboxDenied true, the file never made)."""

    def __init__(self, area):
        self.area = area

    def __call__(self, srv, rnd, tmp, tag):
        c = srv.connect()
        sb = ws_policy(self.area.ws)
        if rnd.random() < 0.5:
            target = os.path.join(self.area.ws, tag)
            expect_denied = False
        else:
            target = os.path.join(self.area.out, tag)
            expect_denied = True
        c.start(tag, ["/bin/sh", "-c", 'echo x > "$1"', "sh", target], cwd=self.area.ws,
                env=ENV, sandbox=sb)
        run = c.collect(tag)
        # (sh's exit status for a failed redirection is 2)
        assert (run.exit_code != 0, run.exited["sandboxDenied"]) == (expect_denied,) * 2, (
            run.exited, run.stderr)
        assert os.path.exists(target) == (not expect_denied)
        c.ws.close()

    __name__ = "act_sandboxed"


ACTIONS = [act_run, act_flood_drop, act_stdin, act_terminate_many, act_fs, act_resume,
           act_watch, act_scrape, act_raw, act_pipelined, act_tty_resize, act_close_stdin,
           act_timeout]


def test_chaos_soak(server_factory):
    seconds = float(os.environ.get("UEXEC_CHAOS_SECONDS", "20"))
    seed = int(os.environ.get("UEXEC_CHAOS_SEED", str(random.randrange(1 << 32))))
    actions = list(ACTIONS)
    # not under pytest's 0700 tmp_path: a non-root uexec (UEXEC_TEST_AS_UID) works here too
    scratch = tempfile.mkdtemp(prefix="uexec-chaos-", dir="/var/tmp")
    area = None
    try:
        own(scratch)
        if not HOST.missing("sandbox"):
            area = Area()
            actions.append(Sandboxed(area))
        soak(server_factory, scratch, seconds, seed, actions)
    finally:
        if area:
            area.cleanup()
        shutil.rmtree(scratch, ignore_errors=True)


def run_workers(srv, tmp, deadline, seed, actions, stop_at_error=True):
    """THREADS workers doing random actions on srv until deadline (conftest's
    start_workers), and an operator's SIGHUPs now and then."""
    errors, counts, threads = start_workers(
        THREADS, deadline, seed, actions, lambda k, act, rnd, tag: act(srv, rnd, tmp, tag),
        stop_at_error)

    def reloader():
        """An operator's SIGHUPs (configuration and secrets read again) now and then."""
        rnd = random.Random(seed * 31 + THREADS)
        while time.monotonic() < deadline and not errors:
            time.sleep(rnd.uniform(0.1, 1.0))
            try:
                if srv.proc.poll() is None:
                    os.kill(srv.pid, signal.SIGHUP)
            except ProcessLookupError:
                return  # it just exited (the drain test)

    threads.append(threading.Thread(target=reloader))
    threads[-1].start()
    return errors, counts, threads


def soak(server_factory, tmp, seconds, seed, actions):
    extra = os.environ.get("UEXEC_CHAOS_ARGS", "").split()  # e.g. --denial-evidence bpf
    srv = bounded_server(server_factory, "--resume-window-ms", "500", "--max-queued-bytes",
                         "262144", *extra)
    # what is made once and kept (the server's inotify instance) exists before the baseline
    act_run(srv, random.Random(0), tmp, "warm")
    c = srv.connect()
    c.result("fs/watch", {"path": file_uri(tmp)})
    c.ws.close()
    wait_until(lambda: sessions_gone(srv), what="the warm-up sessions to end")
    base = settled_fd_count(srv.pid, 0.5, 20)
    base_fds = fds_of(srv.pid)
    deadline = time.monotonic() + seconds
    errors, counts, threads = run_workers(srv, tmp, deadline, seed, actions)
    for t in threads:
        t.join(seconds + 120)
    assert not any(t.is_alive() for t in threads), "a worker hung (seed %d)" % seed
    assert not errors, "seed %d: %s" % (seed, errors)
    print("seed %d, actions: %s" % (seed, counts))
    wait_until(lambda: sessions_gone(srv), what="every session to end")
    wait_until(lambda: not children_of(srv.pid),
               what="no children (left: %r)" % children_of(srv.pid))
    act_run(srv, random.Random(1), tmp, "after")
    wait_until(lambda: sessions_gone(srv), what="the last session to end")
    # (the BPF tracer stays attached 2 s after the last sandboxed tree: a bpf_link fd)
    try:
        wait_until(lambda: len(fds_of(srv.pid)) == base, what="the fds of the start")
    except BaseException:
        print("fds now vs at the start:",
              sorted(set(fds_of(srv.pid).items()) ^ set(base_fds.items())))
        raise


def marked_processes(mark):
    """pids of processes whose command line holds mark."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/cmdline" % d, "rb") as f:
                    if mark.encode() in f.read():
                        out.append(int(d))
            except OSError:
                pass
    return out


def test_chaos_drain_under_load(server_factory):
    """SIGTERM with --drain-timeout-ms while the chaos runs: uexec exits 0 within the
    timeout and its 3 s of reaping, leaves no process of its own behind (the long-running
    ones are marked by their argument) and no sanitizer report. Clients see refusals or
    closed connections after the signal; before it, every action must succeed."""
    seconds = float(os.environ.get("UEXEC_CHAOS_SECONDS", "20")) / 2
    seed = int(os.environ.get("UEXEC_CHAOS_SEED", str(random.randrange(1 << 32))))
    scratch = tempfile.mkdtemp(prefix="uexec-chaos-", dir="/var/tmp")
    mark = "1000.%06d" % random.Random(seed).randrange(10 ** 6)
    SLEEP[1] = mark
    try:
        own(scratch)
        srv = bounded_server(server_factory, "--resume-window-ms", "500", "--max-queued-bytes",
                             "262144", "--drain-timeout-ms", "1500")
        errors, counts, threads = run_workers(srv, scratch, time.monotonic() + 600, seed,
                                              list(ACTIONS), stop_at_error=False)
        time.sleep(seconds)
        # and processes the drain must kill at its timeout, on a connection kept open
        keeper = srv.connect()
        for i, tty in enumerate((False, False, True)):
            keeper.start("keep-%d" % i, SLEEP, env=ENV, tty=tty)
        kept = [p["pid"] for p in keeper.result("process/list", {})["processes"]]
        assert len(kept) == 3 and all(pid in marked_processes(mark) for pid in kept)
        before = list(errors)
        t0 = time.monotonic()
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.proc.wait(60) == 0
        took = time.monotonic() - t0
        for t in threads:
            t.join(60)
        assert not any(t.is_alive() for t in threads), "a worker hung (seed %d)" % seed
        assert not before, "seed %d: %s" % (seed, before)
        print("seed %d, actions: %s, exit after %.1f s, %d clients refused or cut off" % (
            seed, counts, took, len(errors)))
        assert took >= 1.4, "exited %.1f s after SIGTERM, before the drain timeout" % took
        wait_until(lambda: not marked_processes(mark),
                   what="no process of the drained server (left: %r)" % marked_processes(mark))
        srv.stopped = True
        problems = srv.sanitizer_problems()
        assert not problems, problems
    finally:
        SLEEP[1] = "1000"
        shutil.rmtree(scratch, ignore_errors=True)
