#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The server's resident set, by phase and by mapping (bench/README.md, "Footprint").

usage: bench/footprint.py LOADGEN LABEL=UEXEC[,ARG...] ...   (REPS=3 in the environment)

For each uexec binary (extra arguments after commas, e.g. a --config file), REPS
servers, the binaries interleaved; each is measured from /proc/PID/smaps_rollup
(Rss, Pss, Anonymous) 1 s after start (idle), 3 s after one connection that runs
one /bin/true, and 3 s after `uexec-loadgen spawn --iters 1000` on one connection
(the session freed: --resume-window-ms 1000). Prints the medians (with the Rss
range) and the per-mapping Rss of the last run (/proc/PID/smaps).
"""
import collections, os, select, statistics, subprocess, sys, time
LOADGEN = None
FIELDS = ("Rss", "Pss", "Private_Dirty", "Anonymous")

def smaps(pid):
    by = collections.OrderedDict(); name = None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            parts = line.split()
            if "-" in parts[0] and not parts[0].endswith(":"):
                name = parts[5] if len(parts) > 5 else "[anon]"
                name = os.path.basename(name) if name.startswith("/") else name
                by.setdefault(name, dict.fromkeys(FIELDS, 0))
            elif parts[0][:-1] in FIELDS:
                by[name][parts[0][:-1]] += int(parts[1])
    return by

def rollup(pid):
    d = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            p = line.split()
            if p[0][:-1] in FIELDS: d[p[0][:-1]] = int(p[1])
    return d

def run(binary, extra):
    p = subprocess.Popen([binary, "--listen", "ws://127.0.0.1:0", "--log-level", "warning",
                          "--resume-window-ms", "1000", *extra],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd="/var/tmp")
    select.select([p.stdout], [], [], 30)
    url = p.stdout.readline().decode().strip()
    assert url.startswith("ws://"), url
    time.sleep(1.0)
    ph = {"idle": (rollup(p.pid), smaps(p.pid))}
    out = subprocess.run([LOADGEN, "spawn", "--url", url, "--iters", "1", "--conns", "1"], capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    time.sleep(3.0)
    ph["1conn"] = (rollup(p.pid), smaps(p.pid))
    out = subprocess.run([LOADGEN, "spawn", "--url", url, "--iters", "1000", "--conns", "1", "--seconds", "600"],
                         capture_output=True, timeout=900)
    assert out.returncode == 0, out.stderr[-500:]
    time.sleep(3.0)
    ph["1000"] = (rollup(p.pid), smaps(p.pid))
    p.terminate(); p.wait(10)
    return ph

if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    LOADGEN = os.path.abspath(sys.argv[1])
    reps = int(os.environ.get("REPS", "3"))
    specs = [[a.split("=", 1)[0], *a.split("=", 1)[1].split(",")] for a in sys.argv[2:]]
    res = {s[0]: [] for s in specs}
    for _ in range(reps):
        for s in specs:
            res[s[0]].append(run(s[1], s[2:]))
    print("median of %d runs, KB" % reps)
    print("%-14s %-26s %-26s %-26s" % ("", "idle Rss/Pss/Anon", "after 1 conn", "after 1000 procs"))
    for label, runs in res.items():
        cells = []
        for ph in ("idle", "1conn", "1000"):
            m = [statistics.median(r[ph][0][f] for r in runs) for f in ("Rss", "Pss", "Anonymous")]
            rng = (min(r[ph][0]["Rss"] for r in runs), max(r[ph][0]["Rss"] for r in runs))
            cells.append("%d/%d/%d (%d-%d)" % (*m, *rng))
        print("%-14s %-26s %-26s %-26s" % (label, *cells))
    labels = list(res)
    names = []
    for l in labels:
        for n in res[l][-1]["1000"][1]:
            if n not in names: names.append(n)
    print("\nsmaps Rss KB, last run: idle | after 1000 procs")
    print("%-26s" % "mapping" + "".join("%20s" % l[:19] for l in labels))
    for n in names:
        row = ["%d | %d" % (res[l][-1]["idle"][1].get(n, {}).get("Rss", 0), res[l][-1]["1000"][1].get(n, {}).get("Rss", 0)) for l in labels]
        if any(r != "0 | 0" for r in row):
            print("%-26s" % n[:26] + "".join("%20s" % r for r in row))
