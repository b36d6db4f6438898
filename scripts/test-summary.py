#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The last lines of scripts/test.sh: one plain summary counting every TAP subtest and
pytest case of the passes it ran, and every meson test that needed more than half its
timeout (a test that slow is close to failing on a loaded machine: it is named before
it flakes).

usage: test-summary.py BUILDDIR...   (each with meson-logs/testlog.json)
UEXEC_SAN_STATUS: the sanitizer pass's exit status (a report without a failed test
counts as one failure).
"""

import json
import os
import re
import subprocess
import sys


def timeouts(builddir):
    """{test name: timeout in seconds} from meson's introspection (testlog.json has none)."""
    try:
        p = subprocess.run(["meson", "introspect", "--tests", builddir], capture_output=True,
                           text=True, timeout=120)
        # testlog.json names a test "<project>:<suite> / <name>"; introspection's suite
        # entries are "<project>:<suite>"
        return {"%s / %s" % (t["suite"][0], t["name"]): t.get("timeout")
                for t in json.loads(p.stdout) if t.get("suite")}
    except (OSError, ValueError, subprocess.TimeoutExpired, KeyError, IndexError):
        return {}


def count(t):
    """(passed, failed, skipped) of one meson test's record."""
    out = t.get("stdout") or ""
    if t.get("protocol") == "tap" or re.search(r"^(not )?ok \d+", out, re.M):
        p = f = s = 0
        for line in out.splitlines():
            if re.match(r"ok \d+ .*# SKIP", line):
                s += 1
            elif line.startswith("ok "):
                p += 1
            elif line.startswith("not ok"):
                f += 1
        return p, f, s
    # a pytest file (tests/integration/run.py): its own summary line, the last one
    summary = [line for line in out.splitlines()
               if re.search(r"\d+ (passed|failed|errors?|skipped|deselected)", line)
               and re.search(r" in [\d.]+s", line)]
    if summary:
        p = f = s = 0
        for n, what in re.findall(r"(\d+) (passed|failed|skipped|errors?|deselected)",
                                  summary[-1]):
            if what == "passed":
                p += int(n)
            elif what in ("failed", "error", "errors"):
                f += int(n)
            elif what == "skipped":
                s += int(n)
        if t.get("result") not in ("OK", "SKIP") and f == 0:
            f = 1   # a timeout or a crash after the last case
        return p, f, s
    if t.get("result") == "OK":
        return 1, 0, 0
    if t.get("result") == "SKIP":
        return 0, 0, 1
    return 0, 1, 0


def main():
    passed = failed = skipped = 0
    slow = []
    for builddir in sys.argv[1:]:
        log = os.path.join(builddir, "meson-logs", "testlog.json")
        if not os.path.exists(log):
            continue
        limits = timeouts(builddir)
        for line in open(log):
            t = json.loads(line)
            p, f, s = count(t)
            passed, failed, skipped = passed + p, failed + f, skipped + s
            limit = limits.get(t["name"])
            if limit and t.get("duration", 0) > limit / 2:
                slow.append("%s (%s): %.0f s of its %d s timeout"
                            % (t["name"], builddir, t["duration"], limit))
    if os.environ.get("UEXEC_SAN_STATUS", "0") != "0" and failed == 0:
        failed = 1
    for s in slow:
        print("slow: " + s)
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))


if __name__ == "__main__":
    main()
