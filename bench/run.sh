#!/usr/bin/env bash
# The one command for the benchmarks (see bench/README.md):
#
#   bench/run.sh [--head] [--quick] [--no-reference] [--no-kernel] [--repeat N]
#                [--only kernel,spawn,latency,rpc,throughput,echo,rss,relay,cgroup,proxy]
#
# Builds a release tree (build-release/), runs every scenario against uexec and,
# when installed (scripts/install-reference.sh), the reference codex exec-server,
# prints one JSON line per metric and the comparison table, and writes
# bench/results/<date>.jsonl (+ <date>.txt with the table).
#
# --head benchmarks the committed HEAD instead of the work tree: uexec is built
# from a `git archive HEAD` snapshot under /var/tmp (useful while the work tree
# is mid-edit); the bench programs still come from this tree.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
head=0
args=()
for a in "$@"; do
	if [ "$a" = "--head" ]; then head=1; else args+=("$a"); fi
done
if [ ! -f build-release/build.ninja ]; then
	meson setup build-release --buildtype=release >/dev/null
fi
ninja -C build-release bench/uexec-loadgen bench/uexec-bench-child \
	bench/kernel-spawn bench/kernel-pipe bench/kernel-rtt \
	bench/uexec-relaybench bench/uexec-rendezvous bench/noise-bench bench/uexec-proxybench >/dev/null
if [ $head = 1 ]; then
	sha=$(git rev-parse --short HEAD)
	snap=/var/tmp/uexec-bench-head-$sha
	if [ ! -x "$snap/build/src/uexec" ]; then
		rm -rf "$snap" && mkdir -p "$snap/src"
		git archive HEAD | tar -x -C "$snap/src"
		meson setup "$snap/build" "$snap/src" --buildtype=release >/dev/null
		ninja -C "$snap/build" src/uexec >/dev/null
	fi
	uexec=$snap/build/src/uexec
	args+=(--commit "$sha")
else
	if ! ninja -C build-release src/uexec >/dev/null; then
		echo "bench/run.sh: building uexec from the work tree failed; try bench/run.sh --head" >&2
		exit 1
	fi
	uexec=$root/build-release/src/uexec
fi
exec /usr/bin/python3 bench/bench.py --uexec "$uexec" --bindir build-release/bench ${args[@]+"${args[@]}"}
