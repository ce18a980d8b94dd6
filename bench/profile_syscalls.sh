#!/usr/bin/env bash
# System calls per acquire+release cycle (or per check() with `check`), on the sidecar's side and
# the client's, and the sidecar's threads (issue 25's targets: at most 30 calls a cycle in the
# sidecar, at most 2 threads). strace -c follows every thread of each side; a `fencekeeper --dev`
# sidecar (its own ZooKeeper on 127.0.0.1) in a temp dir, stopped by PID. Calls a side makes at
# least once every 20 cycles are listed. System call counts hardly depend on the machine's load.
#
#   bash bench/profile_syscalls.sh [COUNT] [check]   # default 2000 cycles; ~30 s
#
# FK_BENCH_BUILD_DIR as for run.sh (default /tmp/fk-bench-build). Results in
# $build/profile-syscalls/.
set -euo pipefail
count="${1:-2000}"
mode="${2:-cycle}"
[ "$mode" = cycle ] || [ "$mode" = check ] || { echo "profile_syscalls: cycle or check" >&2; exit 2; }
loop_mode=$([ "$mode" = cycle ] && echo cycle || echo "")
source "$(dirname "$0")/profile_common.sh"
profile_setup profile_syscalls profile-syscalls strace fk_check_loop
trap stop EXIT

run_sidecar
"$build/bench/fk_check_loop" "$sock" 200 $loop_mode >/dev/null  # warm-up, not traced
strace -c -f -p "$pid" -o "$out/sidecar.strace" 2>/dev/null &
tracer=$!
sleep 1
strace -c -f -o "$out/client.strace" "$build/bench/fk_check_loop" "$sock" "$count" $loop_mode \
  >"$out/client.txt"
kill -INT "$tracer" && wait "$tracer" 2>/dev/null || true
echo "sidecar threads: $(ls "/proc/$pid/task" | wc -l)"
for side in sidecar client; do
  echo "-- $side: system calls per $mode (strace -c; $out/$side.strace)"
  # The client's warm-up inside the traced run (fk_check_loop's own 200) counts on both sides.
  awk -v n="$((count + 200))" '
    $NF ~ /^[a-z_0-9]+$/ && $4 ~ /^[0-9]+$/ && $4 >= n / 20 { printf "  %-14s %.1f\n", $NF, $4 / n }
  ' "$out/$side.strace"
done
