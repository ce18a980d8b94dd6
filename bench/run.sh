#!/usr/bin/env bash
# Builds fk_bench (RelWithDebInfo, its own build dir so it never reconfigures build/) and runs it:
# real standalone ZooKeeper (fsync on; then forceSync=no; then the what-if run), real sidecars, all
# on 127.0.0.1. Prints a compact table; keeps the full output, a TSV, the samples and the PNG plots
# in the build dir (fk_bench --out DIR elsewhere).
#
#   bash bench/run.sh                 # every row but the slowest, full sample counts (~3-4 min built)
#   bash bench/run.sh --full          # also 100k leases (adds several minutes)
#   bash bench/run.sh --quick         # fewer samples
#   bash bench/run.sh --only rpc,valid
#
# FK_BENCH_BUILD_DIR overrides the build dir (default /tmp/fk-bench-build). Needs what
# scripts/setup.sh installs (the harness is plain C++; Google Benchmark is not used).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${FK_BENCH_BUILD_DIR:-/tmp/fk-bench-build}"
# Seconds: fk_bench bounds its loops by this; the watchdog below adds a margin.
budget=420
for a in "$@"; do [ "$a" = --full ] && budget=1200; done

start=$(date +%s)
echo "== building fk_bench (RelWithDebInfo) in $build" >&2
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=ON >/dev/null
if ! cmake --build "$build" --target fk_bench -j"$(nproc)" >"$build/bench-build.log" 2>&1; then
  grep -E "error|Error" "$build/bench-build.log" | head -40 >&2
  echo "build failed; see $build/bench-build.log" >&2
  exit 1
fi
echo "== built in $(( $(date +%s) - start )) s; running" >&2

out="$build/bench-last-run.txt"
tsv="$build/bench-last-run.tsv"
# Its own session and process group: ZooKeeper JVMs and sidecars started by fk_bench are in it
# (fencectl children get groups of their own and are stopped by PID). `timeout` sends SIGTERM
# (fk_bench stops its loops and cleans up), then SIGKILL 15 s later.
setsid timeout -k 15 $((budget + 30)) "$build/bench/fk_bench" --budget "$budget" --tsv "$tsv" "$@" \
  > >(tee "$out") &
pid=$!
rc=0
wait "$pid" || rc=$?
# Safety net, by process-group id: nothing should be left unless fk_bench was killed.
kill -KILL -- "-$pid" 2>/dev/null || true
sleep 0.2  # let tee finish
echo "== total $(( $(date +%s) - start )) s (exit $rc); output in $out, TSV in $tsv" >&2
exit "$rc"
