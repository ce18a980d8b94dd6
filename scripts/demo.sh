#!/usr/bin/env bash
# The reconciliation walkthrough: why a lease needs a fencing token.
#
# Two sidecars ("two pods") on one local ZooKeeper: the first starts it (--dev), the second joins.
# Worker W1 takes the `reconcile` lease (token N), scans, and is frozen (SIGSTOP, like a long GC
# pause) past its lease. Its sidecar expires the lease; standby W2 acquires (token M > N) and writes
# the report. W1 is resumed, is told its lease is lost, and its late write with token N is rejected
# by the fenced store with 412. Exit status 0 only if all of that held.
#
# It installs only what it needs (scripts/setup.sh --demo: the build packages, ZooKeeper, python3)
# and builds only the three binaries it runs, into build/ (FK_BUILD_DIR overrides; FK_SKIP_BUILD=1
# runs what is there).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
if [ -z "${FK_SKIP_BUILD:-}" ]; then
  FK_SETUP_LEVEL=demo FK_BUILD_TARGETS="fencekeeper reconcile-worker fenced-store" \
    bash "$here/scripts/build.sh" >/dev/null
fi
build="${FK_BUILD_DIR:-$here/build}"
FENCEKEEPER="$build/sidecar/fencekeeper"
WORKER="$build/examples/reconcile/reconcile-worker"
STORE="$build/examples/fenced_store/fenced-store"
TTL_MS=3000

work="$(mktemp -d /tmp/fk-demo-XXXXXX)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -CONT "$pid" 2>/dev/null || true; kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  if [ "${keep:-0}" = 1 ]; then echo "logs kept in $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

ts() { date +%H:%M:%S.%3N; }
say() { printf '%s  --- %s\n' "$(ts)" "$*"; }
# Waits until FILE contains PATTERN, at most SECONDS.
wait_for() {
  local file=$1 pattern=$2 seconds=$3
  for _ in $(seq 1 $((seconds * 20))); do
    grep -q -- "$pattern" "$file" 2>/dev/null && return 0
    sleep 0.05
  done
  echo "timed out waiting for '$pattern' in $file" >&2
  cat "$file" >&2 || true
  keep=1
  exit 1
}

say "fenced store: a storage server that refuses tokens lower than the highest it has seen"
mkdir -p "$work/store"
"$STORE" --listen 127.0.0.1:0 --data "$work/store" --port-file "$work/store.port" \
  >"$work/store.log" 2>&1 &
pids+=($!)
wait_for "$work/store.port" "[0-9]" 10
port=$(cat "$work/store.port")

say "pod A: fencekeeper --dev (starts a private ZooKeeper on loopback)"
"$FENCEKEEPER" --dev --dev-data "$work/zk" --socket "$work/a.sock" --status-socket "$work/a.status.sock" --session-timeout 4s \
  >"$work/sidecar-a.log" 2>&1 &
pids+=($!)
wait_for "$work/sidecar-a.log" "session connected" 60
zk=$(sed -n 's/.*join it with --zk \([^ ]*\).*/\1/p' "$work/sidecar-a.log")
say "pod B: fencekeeper --zk $zk (joins the same ZooKeeper)"
"$FENCEKEEPER" --zk "$zk" --socket "$work/b.sock" --status-socket "$work/b.status.sock" --session-timeout 4s >"$work/sidecar-b.log" 2>&1 &
pids+=($!)
wait_for "$work/sidecar-b.log" "session connected" 30

say "W1 (pod A) starts reconciling"
"$WORKER" --name W1 --socket "$work/a.sock" --store-port "$port" --ttl ${TTL_MS}ms --work 1s \
  >"$work/w1.log" 2>&1 &
w1=$!
pids+=($w1)
tail -n +1 -f "$work/w1.log" --pid=$$ 2>/dev/null &
pids+=($!)
wait_for "$work/w1.log" "SCAN DONE" 20
kill -STOP "$w1"
frozen_at=$(date +%s%3N)
say "W1 FROZEN (SIGSTOP, like a long GC pause) before it could write its report"

say "W2 (pod B) stands by for the same lease"
"$WORKER" --name W2 --socket "$work/b.sock" --store-port "$port" --ttl ${TTL_MS}ms --wait 30s \
  --work 0ms >"$work/w2.log" 2>&1 &
w2=$!
pids+=($w2)
tail -n +1 -f "$work/w2.log" --pid=$$ 2>/dev/null &
pids+=($!)
wait_for "$work/sidecar-a.log" "reason=ttl expired" 15
say "pod A's sidecar expired W1's lease ($(grep -o 'lost lock=reconcile token=[0-9]*' "$work/sidecar-a.log" | head -1)) and deleted its node"
w2_status=0
wait "$w2" || w2_status=$?
granted_at=$(date +%s%3N)

say "W1 resumed (SIGCONT) $(( granted_at - frozen_at )) ms after it froze (its TTL was ${TTL_MS} ms)"
kill -CONT "$w1"
w1_status=0
wait "$w1" || w1_status=$?
sleep 0.2  # let the log tails print their last lines

token_w1=$(sed -n 's/.*W1  granted .* token \([0-9]*\).*/\1/p' "$work/w1.log")
token_w2=$(sed -n 's/.*W2  granted .* token \([0-9]*\).*/\1/p' "$work/w2.log")
final=$(/usr/bin/python3 "$here/examples/fenced_store/fence_client.py" get --port "$port" \
  --key report --lock reconcile --token "${token_w2:-0}" | tail -n +2)

echo
echo "================ summary ================"
ok=1
check() { if eval "$2"; then echo "  ok    $1"; else echo "  FAIL  $1"; ok=0; fi; }
check "W1 was granted token N=$token_w1" '[ -n "$token_w1" ]'
check "W2 was granted token M=$token_w2 > N" '[ -n "$token_w2" ] && [ "$token_w2" -gt "${token_w1:-0}" ]'
check "W1's lease expired on pod A's sidecar while W1 was frozen" 'grep -q "lost lock=reconcile token=$token_w1 .*reason=ttl expired" "$work/sidecar-a.log"'
check "W2 wrote the report (exit $w2_status)" '[ "$w2_status" = 0 ]'
check "W1 was told its lease is lost" 'grep -q "LOST" "$work/w1.log"'
check "W1's late write with token N was rejected with 412 (exit $w1_status)" '[ "$w1_status" = 3 ] && grep -q "REJECTED by the store: HTTP 412" "$work/w1.log"'
check "the store holds exactly W2's report: '$final'" '[ "$final" = "report by W2 with token $token_w2" ]'
echo "========================================="
if [ "$ok" = 1 ]; then
  echo "The lease alone could not stop W1; the fencing token did."
  exit 0
fi
keep=1
exit 1
