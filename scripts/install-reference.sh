#!/usr/bin/env bash
# Install the reference Codex CLI / exec-server (@openai/codex@0.171.0, the newest tested; 0.169.0 with UEXEC_REF_VERSION) from
# the npm registry into a fixed prefix outside the repo and outside /tmp.
#
#   scripts/install-reference.sh            # installs into ${UEXEC_REF_DIR:-/opt/uexec-ref}
#   UEXEC_REF_DIR=/some/dir scripts/install-reference.sh
#
# Idempotent: re-running with the package already present only re-locates the
# binary. On success the LAST line of stdout is the absolute path of the native
# codex binary (the platform package's vendor/<triple>/bin/codex). That native
# binary can be executed directly (`codex exec-server --listen ws://...`,
# `codex exec ...`); the JS launcher (node_modules/.bin/codex) only execs it.
set -euo pipefail

VERSION="${UEXEC_REF_VERSION:-0.171.0}"
PREFIX="${UEXEC_REF_DIR:-/opt/uexec-ref}"

case "$PREFIX" in
  /tmp/*|/tmp) echo "install-reference: refusing prefix under /tmp: $PREFIX" >&2; exit 2;;
esac

find_native() {
  # The platform binary lives in an optional dependency such as
  # node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex
  # (older layouts: .../vendor/<triple>/codex/codex).
  local f
  for f in $(find "$PREFIX/node_modules/@openai" -type f -path '*/vendor/*' -name codex 2>/dev/null | sort); do
    if [ -x "$f" ] && head -c 4 "$f" | grep -q 'ELF'; then
      echo "$f"; return 0
    fi
  done
  return 1
}

installed_version() {
  local pj="$PREFIX/node_modules/@openai/codex/package.json"
  [ -f "$pj" ] && node -e 'console.log(require(process.argv[1]).version)' "$pj" 2>/dev/null || true
}

mkdir -p "$PREFIX"
if [ "$(installed_version)" = "$VERSION" ] && find_native >/dev/null; then
  echo "install-reference: @openai/codex@$VERSION already installed in $PREFIX" >&2
else
  echo "install-reference: installing @openai/codex@$VERSION into $PREFIX (large download)" >&2
  [ -f "$PREFIX/package.json" ] || echo '{"name":"uexec-ref","private":true}' > "$PREFIX/package.json"
  npm install --prefix "$PREFIX" --no-audit --no-fund --include=optional \
      "@openai/codex@$VERSION" >&2
fi

BIN="$(find_native)" || {
  echo "install-reference: native codex binary not found under $PREFIX/node_modules/@openai" >&2
  exit 1
}
ln -sfn "$BIN" "$PREFIX/codex"
"$BIN" --version >&2 || true
echo "$BIN"
