#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The default test suite (unit, integration, fuzz corpus replay) once more in
# build-asan, built with ASan + UBSan. LeakSanitizer stays on: the server's
# children exec other programs (or _exit before), so only uexec itself is
# checked. Every sanitizer report, including those of server processes the
# integration tests start and stop, goes to a log directory; a report fails
# the run even if the test that caused it passed. Extra arguments go to
# `meson test` (e.g. --suite unit). Run by scripts/test.sh after the plain
# suite; takes ~3 minutes on 2 cores (ASan build ~1.5, suite ~1.5).
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${UEXEC_ASAN_BUILD:-build-asan}
[ -d "$dir" ] || meson setup "$dir" -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
rm -f "$dir/meson-logs/testlog.json" # scripts/test.sh counts it: never a stale one
ninja -C "$dir"

logs=$(mktemp -d "${TMPDIR:-/tmp}/uexec-sanitize.XXXXXX")
trap 'rm -rf "$logs"' EXIT
chmod 1777 "$logs" # servers the suite runs as another uid (test_sandbox_nonroot.py) report here too
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:halt_on_error=1:log_exe_name=1:log_path=$logs/asan"
export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1:log_exe_name=1:log_path=$logs/ubsan"

# test_upgrade_rebuilt.py: the live upgrade hands over to another build and back
if [ -z "${UEXEC_UPGRADE_OTHER_BIN:-}" ] && [ -x build/src/uexec ]; then
	export UEXEC_UPGRADE_OTHER_BIN="$PWD/build/src/uexec"
fi

status=0
meson test -C "$dir" --print-errorlogs "$@" || status=$?

if compgen -G "$logs/*" >/dev/null; then
	echo "sanitizer reports:" >&2
	for f in "$logs"/*; do
		echo "==> ${f##*/}" >&2
		cat "$f" >&2
	done
	[ $status -ne 0 ] || status=1
fi
exit $status
