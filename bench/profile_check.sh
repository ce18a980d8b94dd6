#!/usr/bin/env bash
# Where a Lease::check() round trip goes, or with `cycle` an acquire+release cycle on one lock:
# instructions per call on each side (valgrind's callgrind, which counts the same on a loaded
# machine) with the top functions by own cost, and the system calls per call on each side
# (strace -c, where strace is installed).
# A `fencekeeper --dev` sidecar (its own ZooKeeper on 127.0.0.1) in a temp dir, stopped by PID.
#
#   bash bench/profile_check.sh [COUNT] [cycle]   # default 2000 calls; ~2 min
#
# FK_BENCH_BUILD_DIR as for run.sh (default /tmp/fk-bench-build). Results in $build/profile-check/.
set -euo pipefail
count="${1:-2000}"
mode="${2:-}"
[ -z "$mode" ] || [ "$mode" = cycle ] || { echo "profile_check: mode is cycle or nothing" >&2; exit 2; }
what=$([ "$mode" = cycle ] && echo "acquire+release cycle" || echo check)
source "$(dirname "$0")/profile_common.sh"
profile_setup profile_check "profile-check${mode:+-$mode}" valgrind fk_check_loop
trap stop EXIT

# Instructions: the sidecar's counters are zeroed once it serves, so they hold the calls alone
# (and the client's connect, acquire and warm-up, a few percent); the client's run less its
# run with no calls.
run_sidecar valgrind --tool=callgrind --callgrind-out-file="$out/sidecar.cg"
callgrind_control -z "$pid" >/dev/null
valgrind --tool=callgrind --callgrind-out-file="$out/client.cg" \
  "$build/bench/fk_check_loop" "$sock" "$count" $mode 2>"$out/client.valgrind" | tee "$out/client.txt"
valgrind --tool=callgrind --callgrind-out-file="$out/client0.cg" \
  "$build/bench/fk_check_loop" "$sock" 0 $mode 2>"$out/client0.valgrind" >/dev/null
callgrind_control -d "$pid" >/dev/null
stop
pid=""
total() { callgrind_annotate "$1" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'; }
# The sidecar's first dump (callgrind_control -d) holds the calls; the file written at its exit,
# what came after.
sidecar_ir=$(total "$out/sidecar.cg.1")
client_ir=$(( $(total "$out/client.cg") - $(total "$out/client0.cg") ))
# The sidecar served both clients: COUNT calls and two warm-ups of 200.
calls=$((count + 400))
echo "instructions per $what: sidecar $((sidecar_ir / calls)), client $((client_ir / count))"
for side in sidecar.cg.1 client.cg; do
  echo "-- ${side%%.*}: top functions by own instructions (callgrind_annotate $out/$side)"
  callgrind_annotate --auto=no --threshold=100 "$out/$side" 2>/dev/null >"$out/$side.txt"
  # The lines of 90% and more are main() and its callers: inclusive, not own cost.
  awk '/^ *[0-9,]+ \(/ && !/PROGRAM TOTALS/ && $2 !~ /^\((9[0-9]|100)\./ && n < 12 {
    print substr($0, 1, 150); n++ }' "$out/$side.txt"
done

if command -v strace >/dev/null; then
  run_sidecar
  strace -c -f -p "$pid" -o "$out/sidecar.strace" 2>/dev/null &
  tracer=$!
  sleep 1
  strace -c -f -o "$out/client.strace" "$build/bench/fk_check_loop" "$sock" "$count" $mode >/dev/null
  kill -INT "$tracer" && wait "$tracer" 2>/dev/null || true
  for side in client sidecar; do
    echo "-- $side: system calls per $what (strace -c; $out/$side.strace)"
    # One client here: its warm-up and COUNT calls, on each side.
    awk -v n="$((count + 200))" '$NF ~ /^[a-z_0-9]+$/ && $4 ~ /^[0-9]+$/ && $4 >= n / 2 {
      printf "  %-14s %.1f\n", $NF, $4 / n }' "$out/$side.strace"
  done
else
  echo "(no strace: system call counts skipped)"
fi
