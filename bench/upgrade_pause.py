#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The live upgrade's SERIALIZE pause on a running server (issue 26; docs/UPGRADE.md).

Starts uexec, runs N processes spread over K sessions, each printing B bytes and
then sleeping, with every session attached to its own WebSocket connection, then
sends SIGUSR2 R times. Each SIGUSR2 makes the server build the state blob from
its live objects, seal it, parse it, check its fds and build its view on the
loop (the dry run that precedes the hand-over, which is not built yet); the
`upgrade.state` log event says how long that took, and `upgrade.quiesce` how
long QUIESCE took before it (cancelling every read, write, exit wait and the
accept, and reaping their completions). Prints one JSON line with p50/p99 of
both, and the blob's size.

The sessions are filled while detached (connections closed, output goes to
retention only), then resumed, so that no client has to read 1,000 streams.

With --handover, each SIGUSR2 is a real upgrade (execve of the same binary in
the same pid, which adopts every session, process and connection): the pause
is `upgrade.done`'s pauseUs (QUIESCE in the old binary to the end of RESTORE in
the new one) and restoreUs its RESTORE part, and the attached clients are
checked to be answered on their same connections after the last one. Without
it, the server runs with UEXEC_UPGRADE_DRY_RUN=1 (everything but the execve).

With --sandbox, every process runs in the real client's workspace-write sandbox
(the object `codex exec -s workspace-write` sends, tests/integration/test_sandbox.py)
over a fresh workspace, and the server keeps its default denial evidence (the BPF
tracer or audit where the host has them): the hand-over then carries each plan's
mount points and the evidence sources as well.

usage: upgrade_pause.py [--handover] [--sandbox] UEXEC_BIN [N=1000] [K=100] [B=65536] [R=20]
"""
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
import wsclient  # noqa: E402

TIMEOUT = 300


def wait_for(pred, what):
    deadline = time.monotonic() + TIMEOUT
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            sys.exit("timed out waiting for %s" % what)
        time.sleep(0.05)


def events(path, name):
    with open(path, "rb") as f:
        lines = f.read().splitlines()
    tag = b'"event":"%s"' % name.encode()
    return [json.loads(l) for l in lines if tag in l]


def state_events(path):
    return events(path, "upgrade.state")


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, (len(v) * q) // 100)]


def main():
    args = sys.argv[1:]
    handover = "--handover" in args
    sandboxed = "--sandbox" in args
    args = [a for a in args if a not in ("--handover", "--sandbox")]
    exe = os.path.abspath(args[0])
    n, k, b, rounds = [int(a) for a in args[1:5]] + [1000, 100, 65536, 20][len(args[1:5]):]
    log = tempfile.NamedTemporaryFile(prefix="uexec-upgrade-pause-", suffix=".log", delete=False)
    env = dict(os.environ) if handover else dict(os.environ, UEXEC_UPGRADE_DRY_RUN="1")
    argv = [exe, "--listen", "ws://127.0.0.1:0", "--log-format", "json",
            "--resume-window-ms", "600000"]
    extra, ws = {}, None
    if sandboxed:
        from test_sandbox import realclient_sandbox  # noqa: E402
        ws = tempfile.mkdtemp(prefix="uexec-upgrade-pause-ws-")
        extra = {"sandbox": realclient_sandbox(ws)[1], "cwd": ws}
    else:
        argv += ["--denial-evidence", "none"]
    srv = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, start_new_session=True,
                           env=env)
    try:
        url = srv.stdout.readline().decode().strip()
        script = "head -c %d /dev/zero | tr '\\0' x; exec sleep 3600" % b
        sessions = []
        for s in range(k):
            c = wsclient.connect(url, keep_log=False)
            sid = c.init_result["sessionId"]
            for p in range(s, n, k):
                c.start("p%d" % p, ["/bin/sh", "-c", script], env={"PATH": "/usr/bin:/bin"},
                        **extra)
            c.ws.sock.close()           # detached: output goes to retention only
            sessions.append(sid)
        # Every process printed everything: the dry run's own count says so.
        want = n * b
        got = {"retained": 0}

        def filled():
            if handover:   # a SIGUSR2 during a hand-over is refused: let the last one end
                wait_for(lambda: len(events(log.name, "upgrade.done")) >=
                         len(events(log.name, "upgrade.exec")), "the last upgrade.done")
            srv.send_signal(signal.SIGUSR2)
            before = len(state_events(log.name))
            wait_for(lambda: len(state_events(log.name)) > before, "a state line")
            got["retained"] = state_events(log.name)[-1]["fields"]["retainedBytes"]
            return got["retained"] >= want
        wait_for(filled, "%d bytes retained (have %d)" % (want, got["retained"]))
        if handover:   # the filling's own upgrades are over
            wait_for(lambda: len(events(log.name, "upgrade.done")) >=
                     len(events(log.name, "upgrade.exec")), "the last upgrade.done")
        conns = []
        for sid in sessions:
            c = wsclient.connect(url, initialize=False, keep_log=False)
            c.initialize("upgrade-pause", resume=sid)
            conns.append(c)
        first = len(state_events(log.name))
        first_q = len(events(log.name, "upgrade.quiesce"))
        first_d = len(events(log.name, "upgrade.done"))
        for _ in range(rounds):
            before = len(state_events(log.name))
            done = len(events(log.name, "upgrade.done"))
            srv.send_signal(signal.SIGUSR2)
            wait_for(lambda: len(state_events(log.name)) > before, "a state line")
            if handover:
                wait_for(lambda: len(events(log.name, "upgrade.done")) > done, "upgrade.done")
        ev = state_events(log.name)[first:]
        qev = events(log.name, "upgrade.quiesce")[first_q:]
        us = sorted(e["fields"]["us"] for e in ev)
        qus = sorted(e["fields"]["us"] for e in qev)
        f = ev[-1]["fields"]
        assert f["processes"] == n and f["connections"] == k and f["sessions"] == k, f
        if handover:
            dev = events(log.name, "upgrade.done")[first_d:]
            pause = [e["fields"]["pauseUs"] for e in dev]
            restore = [e["fields"]["restoreUs"] for e in dev]
            for e in dev:
                assert (e["fields"]["sessions"], e["fields"]["processes"],
                        e["fields"]["connections"]) == (k, n, k), e["fields"]
            # Every client is answered on the connection it had before the upgrades.
            for i, c in enumerate(conns):
                procs = c.result("process/list", {})["processes"]
                assert len(procs) == len(range(i, n, k)), (i, len(procs))
            print(json.dumps({
                "name": "upgrade_handover_pause", "unit": "ms", "rounds": len(pause),
                "p50": round(statistics.median(pause) / 1000, 2),
                "p99": round(pct(pause, 99) / 1000, 2),
                "restore_p50": round(statistics.median(restore) / 1000, 2),
                "restore_p99": round(pct(restore, 99) / 1000, 2),
                "serialize_p50": round(statistics.median(us) / 1000, 2),
                "quiesce_p50": round(statistics.median(qus) / 1000, 2),
                "processes": n, "connections": k, "retained_bytes_each": b,
                "sandboxed": sandboxed, "blob_bytes": f["bytes"], "fds": f["fds"]}))
            return
        print(json.dumps({
            "name": "upgrade_dry_run_pause", "unit": "ms", "rounds": len(us),
            "p50": round(statistics.median(us) / 1000, 2),
            "p99": round(us[min(len(us) - 1, (len(us) * 99) // 100)] / 1000, 2),
            "quiesce_p50": round(statistics.median(qus) / 1000, 2),
            "quiesce_p99": round(qus[min(len(qus) - 1, (len(qus) * 99) // 100)] / 1000, 2),
            "ops_cancelled": qev[-1]["fields"]["opsCancelled"],
            "processes": n, "connections": k, "retained_bytes_each": b,
            "blob_bytes": f["bytes"], "fds": f["fds"]}))
        for c in conns:
            c.ws.sock.close()
    finally:
        os.killpg(srv.pid, signal.SIGTERM)
        srv.wait(60)
        os.unlink(log.name)
        if ws:
            shutil.rmtree(ws, ignore_errors=True)


if __name__ == "__main__":
    main()
