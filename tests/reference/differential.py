#!/usr/bin/python3
"""Differential runner: replay steps.SCRIPTS against the reference exec-server and
uexec, print PASS / KNOWN (whitelisted difference) / FAIL per step.

  /usr/bin/python3 tests/reference/differential.py [--only a,b] [--verbose] [--self-check]

--self-check runs the reference against itself (two runs) to validate the
normalisation without uexec. Exit: 0 no FAIL, 1 some FAIL, 77 skipped.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import diffharness as harness  # noqa: E402
import steps  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--verbose", "-v", action="store_true")
    ap.add_argument("--self-check", action="store_true",
                    help="compare the reference with itself (no uexec needed)")
    args = ap.parse_args()
    if not harness.find_reference():
        print("SKIP: reference codex binary not installed (scripts/install-reference.sh)")
        return 77
    if not args.self_check and not harness.find_uexec():
        print("SKIP: uexec binary not found (build it or set UEXEC_BIN)")
        return 77
    scripts = steps.SCRIPTS
    if args.only:
        want = set(args.only.split(","))
        scripts = [s for s in scripts if s["name"] in want]
    servers, work = harness.start_servers(("ref",) if args.self_check else ("ref", "uexec"))
    if args.self_check:
        servers["uexec"] = servers["ref"]
    print("reference %s, uexec %s, work %s" % (servers["ref"].url, servers["uexec"].url, work))
    counts = {"PASS": 0, "KNOWN": 0, "FAIL": 0}
    try:
        for sc in scripts:
            res = harness.run_both(servers, work, sc)
            rows = harness.compare(sc, res["ref"], res["uexec"])
            bad = sum(1 for r in rows if r[1] == "FAIL")
            print("%s %s (%s)" % ("FAIL" if bad else "ok  ", sc["name"], sc.get("doc", "")))
            for label, status, detail in rows:
                counts[status] += 1
                if status != "PASS" or args.verbose:
                    print("   %-5s %s%s" % (status, label, (": " + detail) if detail else ""))
            if args.verbose:
                for name in ("ref", "uexec"):
                    for label, o in res[name]:
                        print("      [%s] %s: %s" % (name, label, str(o)[:400]))
            for name in res["_crashed"]:
                counts["FAIL"] += 1
                print("   FAIL  server %s crashed during this script (see %s; restarted "
                      "for the next script)" % (name, servers[name].log))
    finally:
        for s in set(servers.values()):
            s.stop()
    print("%d passed, %d failed, %d known differences" % (counts["PASS"], counts["FAIL"],
                                                         counts["KNOWN"]))
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
