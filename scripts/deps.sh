#!/usr/bin/env bash
# Installs the Debian 12 packages uexec needs to build and test (idempotent).
set -euo pipefail
pkgs=(meson ninja-build pkg-config gcc g++ liburing-dev libjansson-dev libssl-dev libseccomp-dev
      libtomlplusplus-dev libyaml-dev libsodium-dev libmd-dev libprotobuf-c-dev protobuf-c-compiler
      zlib1g-dev libzstd-dev
      python3 python3-pytest python3-websockets python3-prometheus-client stunnel4 help2man
      # the optional BPF denial tracer (meson -Dbpf=auto builds without them)
      clang bpftool libbpf-dev)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing: ${missing[*]}" >&2
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
