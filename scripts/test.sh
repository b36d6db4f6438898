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
san=0
if [ "${UEXEC_SANITIZE:-1}" != 0 ]; then
	tests/sanitize.sh "$@" || san=$?
	[ $san -eq 0 ] || status=$san
fi
# One plain summary line counting every TAP subtest and pytest case of both
# passes, and the name of every test that took more than half its timeout.
UEXEC_SAN_STATUS=$san /usr/bin/python3 scripts/test-summary.py build \
	"${UEXEC_ASAN_BUILD:-build-asan}" || true
exit $status
