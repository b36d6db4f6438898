#!/usr/bin/env bash
# Installs what is missing, builds uexec and runs the default test suite
# (unit, integration, fuzz corpus replay), then the same suite under ASan +
# UBSan in build-asan (tests/sanitize.sh; UEXEC_SANITIZE=0 skips that pass).
# Exit status is non-zero if either pass failed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
[ -d build ] || meson setup build >/dev/null
ninja -C build
status=0
meson test -C build --print-errorlogs "$@" || status=$?
logs=(build/meson-logs/testlog.json)
san=0
if [ "${UEXEC_SANITIZE:-1}" != 0 ]; then
	tests/sanitize.sh "$@" || san=$?
	logs+=("${UEXEC_ASAN_BUILD:-build-asan}/meson-logs/testlog.json")
	[ $san -eq 0 ] || status=$san
fi
# One plain summary line counting every TAP subtest and pytest case of both
# passes (a sanitizer report without a failed test counts as one failure).
UEXEC_SAN_STATUS=$san /usr/bin/python3 - "${logs[@]}" <<'PY' || true
import json, os, re, sys
passed = failed = skipped = 0
lines = [l for path in sys.argv[1:] if os.path.exists(path) for l in open(path)]
for line in lines:
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
if os.environ.get("UEXEC_SAN_STATUS", "0") != "0" and failed == 0:
    failed = 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
exit $status
