#!/usr/bin/env bash
# Installs what is missing, builds uexec and runs it in the foreground.
# Extra arguments go to uexec (default: --listen ws://127.0.0.1:8822).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
[ -d build ] || meson setup build --buildtype=release >/dev/null
ninja -C build >/dev/null
[ $# -gt 0 ] || set -- --listen ws://127.0.0.1:8822
exec build/src/uexec "$@"
