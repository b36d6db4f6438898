#!/usr/bin/env bash
# Run the real Codex CLI 0.169.0 against an exec-server with a scripted mock model.
#   tests/e2e/run.sh [--server ref|uexec] [--remote | --forward] [--sandbox MODE]
#                    [--only basic,poll,...] [--out DIR] [--list]
# Exit: 0 all PASS, 1 some FAIL, 77 skipped (codex package or uexec binary absent).
# Needs /usr/bin/python3 (stdlib only). Install the CLI with scripts/install-reference.sh.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
PY="${UEXEC_PYTHON:-/usr/bin/python3}"
[ -x "$PY" ] || PY="$(command -v python3)"
exec "$PY" "$here/run.py" "$@"
