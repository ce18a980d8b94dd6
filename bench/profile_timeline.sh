#!/usr/bin/env bash
# Where an acquire+release cycle's time goes, step by step: the system calls of a sidecar and its
# client are recorded (`perf trace record -p`) for a while during back-to-back cycles on one lock
# (fk_check_loop), then those of the recipe's minimum done with the C client (fk_recipe_loop);
# ZooKeeper is not traced. bench/timeline.py follows each cycle from thread to thread through the
# calls that hand it on, and prints the median of each step and their sums: round trips to
# ZooKeeper, hand-offs between threads, work within a thread. Recording slows the sidecar's
# cycle far more than the recipe's (it makes many more system calls), mostly in the waits for
# ZooKeeper: read the hand-offs and the work, and take the round trips from the bench's rows. A
# `fencekeeper --dev` sidecar in a temp dir (log level info, as the bench's), stopped by PID.
#
#   bash bench/profile_timeline.sh [SECONDS]   # default 2 s traced of each; ~1 min
#
# FK_BENCH_BUILD_DIR as for run.sh (default /tmp/fk-bench-build). Results in
# $build/profile-timeline/.
set -euo pipefail
seconds="${1:-2}"
source "$(dirname "$0")/profile_common.sh"
profile_setup profile_timeline profile-timeline perf fk_check_loop fk_recipe_loop
sidecar_log_level=info
trap stop EXIT
run_sidecar
zk=$(sed -n 's/.*join it with --zk \([0-9.:]*\).*/\1/p' "$out/sidecar.log" | head -n 1)
[ -n "$zk" ] || { echo "profile_timeline: no ZooKeeper address in $out/sidecar.log" >&2; exit 1; }

# trace NAME LOOP ARGS...: runs the loop long enough; from 1 s in (past its 200 cycles of
# warm-up) records the system calls of it and of the processes $traced for $seconds, and lists
# their file descriptors (a recorded trace does not name them); waits for the loop to end.
trace() {
  local name="$1" loop="$2"
  shift 2
  local count=$(( (seconds + 4) * 1000 ))  # cycles take 1-3 ms here: it outlasts the trace
  "$build/bench/$loop" "$@" "$count" ${mode:-} >"$out/$name.txt" &
  local looping=$!
  sleep 1
  for p in $looping ${traced:-}; do
    echo "# $(cat "/proc/$p/comm")" && ls -l "/proc/$p/fd"
  done >>"$out/fds.txt"
  # perf takes a second or more to start recording: the timeout allows for it. (A workload to
  # time it, `-- sleep`, recorded nothing of two processes given with -p.)
  timeout -s INT $((seconds + 2)) perf trace record -q -o "$out/$name.data" \
    -p "$looping${traced:+,$traced}" || true  # (stopped by the timeout's SIGINT)
  wait "$looping"
  cat "$out/$name.txt"
  perf trace -i "$out/$name.data" -T -o "$out/$name.trace" 2>/dev/null
}
# ZooKeeper's JVM compiles its hot paths for tens of seconds after it starts, on a core the
# cycles need: traced cold, fencekeeper's cycle (traced first) met a busier ZooKeeper than the
# recipe's. Both run until it is warm (the cycle times settle within 5%).
"$build/bench/fk_recipe_loop" "$zk" 20000 >/dev/null
"$build/bench/fk_check_loop" "$sock" 10000 cycle >/dev/null
mode=cycle traced="$pid" trace fencekeeper fk_check_loop "$sock"
mode="" traced="" trace recipe fk_recipe_loop "$zk"
/usr/bin/python3 "$here/bench/timeline.py" "$out/fds.txt" "$out/fencekeeper.trace" "$out/recipe.trace" |
  tee "$out/timeline.txt"
