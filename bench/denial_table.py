#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Precision and recall of sandboxDenied on the labelled corpus (issue 14).

Runs tests/integration/denial_corpus.py against uexec once per evidence
source: --denial-evidence none (the reference heuristic), audit (audit
records only), bpf (the sys_exit tracer only) and auto (audit + bpf), and
prints a markdown table plus the misses; a row whose source is not in use on
this host says so (the source column is what the server's start-up line
named). Needs root, a kernel with audit, and BPF for the last rows. Usage:
    UEXEC_BIN=build/src/uexec python3 bench/denial_table.py
    ... --overhead     sandboxed spawn->exited p50 and syscall-heavy loops per source
    ... --reference    the reference codex exec-server's row (scripts/install-reference.sh)
"""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))

from conftest import Server  # noqa: E402
from denial_corpus import CASES  # noqa: E402
from test_denial_evidence import run_corpus  # noqa: E402


SOURCES = (("heuristic (the reference's; `--denial-evidence none`)", "none"),
           ("audit records (`--denial-evidence audit`)", "audit"),
           ("BPF sys_exit tracer (`--denial-evidence bpf`)", "bpf"),
           ("audit + BPF (`--denial-evidence auto`, the default)", "auto"))


def source_of(srv):
    """What the server's start-up line says it uses: "audit + bpf (tp_btf)", "audit", ..."""
    for line in srv.stderr().decode(errors="replace").splitlines():
        if "Denial evidence: " in line:
            rest = line.split("Denial evidence: ", 1)[1]
            return rest.split(":")[0].split(" (")[0] if not rest.startswith("audit + bpf") \
                else rest.split(":")[0]
    return "?"


def measure(args):
    srv = Server(args=args, logdir=tempfile.gettempdir())
    try:
        c = srv.connect()
        source = source_of(srv)
        with tempfile.TemporaryDirectory(dir="/var/tmp") as ws:
            rows = run_corpus(c, ws)
        c.close()
    finally:
        srv.terminate()
    return source, rows


def score(rows):
    tp = sum(1 for k, ex, _ in rows if k.denied and ex["sandboxDenied"])
    fp = sum(1 for k, ex, _ in rows if not k.denied and ex["sandboxDenied"])
    fn = sum(1 for k, ex, _ in rows if k.denied and not ex["sandboxDenied"])
    prec = tp / (tp + fp) if tp + fp else 1.0
    rec = tp / (tp + fn) if tp + fn else 1.0
    return tp, fp, fn, prec, rec


def main():
    n_d = sum(1 for k in CASES if k.denied)
    print("corpus: %d cases, %d denied, %d not denied\n" % (len(CASES), n_d, len(CASES) - n_d))
    print("| sandboxDenied from | TP | FP | FN | precision | recall |")
    print("|---|---|---|---|---|---|")
    details = []
    for label, mode in SOURCES:
        source, rows = measure(["--enable-audit", "--denial-evidence", mode])
        tp, fp, fn, prec, rec = score(rows)
        print("| %s [source: %s] | %d | %d | %d | %.1f%% | %.1f%% |"
              % (label, source, tp, fp, fn, 100 * prec, 100 * rec))
        details.append((label, [(k.name, k.klass, "FP" if not k.denied else "FN")
                                for k, ex, _ in rows if ex["sandboxDenied"] != k.denied]))
    for label, wrong in details:
        print("\n%s, wrong: %s" % (label, ", ".join("%s (%s, %s)" % w for w in wrong) or "none"))


if __name__ == "__main__" and not {"--overhead", "--reference"} & set(sys.argv):
    main()


HEAVY = (("stat", "import os\nfor i in range(200000): os.stat(\"/\")"),
         ("denied", "import socket\nfor i in range(20000):\n try: socket.socket()\n"
                    " except OSError: pass"))


def overhead(modes, n=40, rounds=3):
    """p50 of sandboxed /bin/true start -> process/exited, and the median time of each
    syscall-heavy sandboxed loop (HEAVY), per --denial-evidence mode. One server per mode,
    all running; every run is interleaved across them so that this shared host's load
    hits each alike."""
    import statistics
    import time
    from test_sandbox import ENV, ws_policy
    srvs = {m: Server(args=["--enable-audit", "--denial-evidence", m], logdir=tempfile.gettempdir())
            for m in modes}
    lat = {m: [] for m in modes}
    heavy = {m: {name: [] for name, _ in HEAVY} for m in modes}
    try:
        cl = {m: s.connect() for m, s in srvs.items()}
        with tempfile.TemporaryDirectory(dir="/var/tmp") as ws:
            for i in range(n):
                for m, c in cl.items():
                    t0 = time.monotonic()
                    c.start("t%d" % i, ["/bin/true"], cwd=ws, env=ENV, sandbox=ws_policy(ws))
                    c.collect("t%d" % i, 60, until="process/exited")
                    lat[m].append(time.monotonic() - t0)
            for r in range(rounds):
                for name, code in HEAVY:
                    for m, c in cl.items():
                        pid = "h-%s-%d" % (name, r)
                        t0 = time.monotonic()
                        c.start(pid, ["/usr/bin/python3", "-c", code], cwd=ws, env=ENV,
                                sandbox=ws_policy(ws))
                        c.collect(pid, 300, until="process/exited")
                        heavy[m][name].append(time.monotonic() - t0)
        for c in cl.values():
            c.close()
    finally:
        for s in srvs.values():
            s.terminate()
    return {m: (statistics.median(lat[m]) * 1000,
                {k: statistics.median(v) for k, v in heavy[m].items()}) for m in modes}


def main_overhead():
    modes = (("heuristic", "none"), ("audit", "audit"), ("bpf", "bpf"), ("audit + bpf", "auto"))
    res = overhead([m for _, m in modes])
    print("\n| source | sandboxed /bin/true start->exited p50 | 200k stat() loop | 20k refused socket() loop |")
    print("|---|---|---|---|")
    for label, m in modes:
        p50, heavy = res[m]
        print("| %s | %.1f ms | %.2f s | %.2f s |" % (label, p50, heavy["stat"], heavy["denied"]))


if __name__ == "__main__" and "--overhead" in sys.argv:
    main_overhead()


def main_reference():
    """The reference codex exec-server (scripts/install-reference.sh) on the same corpus."""
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "reference"))
    import diffharness
    import wsclient
    if not diffharness.find_reference():
        sys.exit("reference codex exec-server not installed (scripts/install-reference.sh)")
    srv, _ = diffharness.start_servers(("ref",))
    try:
        c = wsclient.connect(srv["ref"].url)
        with tempfile.TemporaryDirectory(dir="/var/tmp") as ws:
            rows = run_corpus(c, ws)
        c.close()
    finally:
        srv["ref"].stop()
    tp, fp, fn, prec, rec = score(rows)
    print("| reference 0.169.0 (heuristic) | %d | %d | %d | %.1f%% | %.1f%% |"
          % (tp, fp, fn, 100 * prec, 100 * rec))
    print("\nwrong: " + ", ".join("%s (%s, %s)" % (k.name, k.klass, "FP" if not k.denied else "FN")
                                  for k, ex, _ in rows if ex["sandboxDenied"] != k.denied))


if __name__ == "__main__" and "--reference" in sys.argv:
    main_reference()
