#!/usr/bin/env bash
# Installs what is missing, builds uexec and runs the default test suite
# (unit, integration, fuzz corpus replay). Exit status is the suite's.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
[ -d build ] || meson setup build >/dev/null
ninja -C build
status=0
meson test -C build --print-errorlogs "$@" || status=$?
# One plain summary line counting every TAP subtest and pytest case.
/usr/bin/python3 - build/meson-logs/testlog.json <<'PY' || true
import json, re, sys
passed = failed = skipped = 0
for line in open(sys.argv[1]):
    t = json.loads(line)
    out = t.get("stdout") or ""
    m = re.search(r"(\d+) passed", out.splitlines()[-1] if out.strip() else "")
    if t.get("protocol") == "tap" or re.search(r"^(not )?ok \d+", out, re.M):
        for l in out.splitlines():
            if re.match(r"ok \d+ .*# SKIP", l): skipped += 1
            elif l.startswith("ok "): passed += 1
            elif l.startswith("not ok"): failed += 1
    elif "pytest" in " ".join(t.get("command", [])):
        last = [l for l in out.splitlines() if re.search(r"\d+ (passed|failed|error)", l)]
        s = last[-1] if last else ""
        for n, what in re.findall(r"(\d+) (passed|failed|skipped|error|deselected)", s):
            if what == "passed": passed += int(n)
            elif what in ("failed", "error"): failed += int(n)
            elif what == "skipped": skipped += int(n)
        if not last and t.get("result") != "OK": failed += 1
    else:
        if t.get("result") == "OK": passed += 1
        elif t.get("result") == "SKIP": skipped += 1
        else: failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
exit $status
