#!/usr/bin/env python3
"""Two figures the issues ask for, for uexec and (when installed) the reference:

1. walk_liveness: the p50/p99 round trip of another client's `process/read`
   (waitMs 0) while a first client walks a 100,000-file tree with fs/walk,
   against the same figure on an idle server.
2. sandbox_spawn: spawn -> process/closed latency of /bin/true without a
   sandbox and under the real client's workspace-write sandbox.

Usage: /usr/bin/python3 bench/fs_sandbox.py [--uexec PATH] [--ref PATH] [--quick]
Prints one JSON line per metric and a small table. The Python client adds a
constant ~0.1 ms to every round trip: compare servers, not absolute values.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import wsclient  # noqa: E402

REF_DEFAULT = "/opt/uexec-ref/codex"


def start_server(kind, path):
    env = dict(os.environ)
    home = None
    if kind == "reference":
        home = tempfile.mkdtemp(prefix="uexec-bench-home-", dir="/var/tmp")
        env["CODEX_HOME"] = home
        argv = [path, "exec-server", "--listen", "ws://127.0.0.1:0"]
    else:
        argv = [path, "--listen", "ws://127.0.0.1:0", "--log-level", "error"]
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    url = p.stdout.readline().decode().strip()
    return p, url, home


def stop_server(p, home):
    p.terminate()
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
    if home:
        shutil.rmtree(home, ignore_errors=True)


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def uri(p):
    return "file://" + p


def make_tree(base, dirs, files):
    for d in range(dirs):
        dd = os.path.join(base, "d%04d" % d)
        os.makedirs(dd)
        for f in range(files):
            open(os.path.join(dd, "f%04d" % f), "w").close()


def rtt_loop(c, pid, stop, out):
    while not stop.is_set():
        t = time.perf_counter()
        c.result("process/read", {"processId": pid, "waitMs": 0})
        out.append((time.perf_counter() - t) * 1000)


WALKER = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
import wsclient
url, tree, seconds = sys.argv[2], sys.argv[3], float(sys.argv[4])
a = wsclient.connect(url)
walks = 0
deadline = time.time() + seconds
while time.time() < deadline:
    res = a.result("fs/walk", {"path": "file://" + tree, "options": {
        "maxDepth": 4, "maxDirectories": 10000, "maxEntries": 50000,
        "followDirectorySymlinks": False}}, timeout=120)
    assert len(res["entries"]) > 1000, "walk returned too little"
    walks += 1
print(walks)
"""


def walk_liveness(url, tree, seconds):
    """The walking client runs in its own process: parsing megabytes of walk
    replies must not stall the measuring client (one interpreter, one GIL)."""
    b = wsclient.connect(url)
    b.start("live", ["/bin/sleep", "600"], cwd="/tmp", env={})
    idle, busy = [], []
    stop = threading.Event()
    t = threading.Thread(target=rtt_loop, args=(b, "live", stop, idle))
    t.start()
    time.sleep(seconds / 2)
    stop.set()
    t.join()
    walker = subprocess.Popen([sys.executable, "-c", WALKER,
                               os.path.join(ROOT, "tests", "integration"), url, tree,
                               str(seconds)], stdout=subprocess.PIPE)
    time.sleep(0.5)  # let the first walk start
    stop = threading.Event()
    t = threading.Thread(target=rtt_loop, args=(b, "live", stop, busy))
    t.start()
    out, _ = walker.communicate(timeout=seconds + 180)
    stop.set()
    t.join()
    b.result("process/terminate", {"processId": "live"})
    b.close()
    return idle, busy, int(out.strip() or 0)


def ws_sandbox(root):
    w = uri(root)
    return {"permissions": {"type": "managed", "file_system": {"type": "restricted", "entries": [
        {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"},
        {"path": {"type": "special", "value": {"kind": "project_roots"}}, "access": "write"},
        {"path": {"type": "special", "value": {"kind": "slash_tmp"}}, "access": "write"},
        {"path": {"type": "special", "value": {"kind": "project_roots", "subpath": ".git"}},
         "access": "read", "missing_path_behavior": "skip"}]},
        "network": "restricted"},
        "cwd": w, "workspaceRoots": [w], "windowsSandboxLevel": "disabled",
        "useLegacyLandlock": False}


def spawn_latency(url, work, n, sandbox):
    c = wsclient.connect(url)
    lat = []
    for i in range(n):
        params = {"processId": "s%d" % i, "argv": ["/bin/true"], "cwd": uri(work),
                  "env": {}, "tty": False}
        if sandbox:
            params["sandbox"] = ws_sandbox(work)
        t = time.perf_counter()
        r = c.call("process/start", params)
        if "error" in r:
            c.close()
            return None, r["error"]["message"]
        c.collect("s%d" % i)
        lat.append((time.perf_counter() - t) * 1000)
    c.close()
    return lat, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--uexec", default=os.path.join(ROOT, "build-release", "src", "uexec"))
    ap.add_argument("--ref", default=REF_DEFAULT)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    servers = [("uexec", args.uexec)]
    if os.path.exists(args.ref):
        servers.append(("reference", args.ref))
    base = tempfile.mkdtemp(prefix="uexec-bench-fs-", dir="/var/tmp")
    tree = os.path.join(base, "tree")
    work = os.path.join(base, "work")
    os.makedirs(work)
    make_tree(tree, 100, 200 if args.quick else 1000)
    seconds = 4 if args.quick else 10
    n = 40 if args.quick else 200
    rows = []
    try:
        for kind, path in servers:
            p, url, home = start_server(kind, path)
            try:
                idle, busy, walks = walk_liveness(url, tree, seconds)
                for name, xs in (("read_rtt_idle", idle), ("read_rtt_during_walk", busy)):
                    for q, tag in ((0.5, "p50"), (0.99, "p99")):
                        rows.append({"name": "%s_%s" % (name, tag), "unit": "ms",
                                     "value": round(pct(xs, q), 3), "iters": len(xs),
                                     "server": kind})
                rows.append({"name": "walks_of_100k_tree", "unit": "count", "value": walks,
                             "iters": 1, "server": kind})
                for sb in (False, True):
                    lat, err = spawn_latency(url, work, n, sb)
                    tag = "spawn_closed_sandboxed" if sb else "spawn_closed_plain"
                    if lat is None:
                        rows.append({"name": tag, "unit": "error", "value": err, "iters": 0,
                                     "server": kind})
                        continue
                    for q, qt in ((0.5, "p50"), (0.99, "p99")):
                        rows.append({"name": "%s_%s" % (tag, qt), "unit": "ms",
                                     "value": round(pct(lat, q), 3), "iters": len(lat),
                                     "server": kind})
            finally:
                stop_server(p, home)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    for r in rows:
        print(json.dumps(r))
    by = {}
    for r in rows:
        by.setdefault(r["name"], {})[r["server"]] = r["value"]
    print("\n%-34s %14s %14s" % ("metric", "uexec", "reference"))
    for name, v in by.items():
        print("%-34s %14s %14s" % (name, v.get("uexec", "-"), v.get("reference", "-")))


if __name__ == "__main__":
    main()
