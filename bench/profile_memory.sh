#!/usr/bin/env bash
# Where a lease's memory goes in the sidecar: valgrind's massif snapshots the heap with
# CONNECTIONS clients connected, then again once they hold LEASES leases; prints the heap a lease
# (with malloc's own overhead) and the allocation sites that grew the most, per lease.
# A `fencekeeper --dev` sidecar (its own ZooKeeper on 127.0.0.1) in a temp dir, stopped by PID.
#
#   bash bench/profile_memory.sh [LEASES] [CONNECTIONS]   # default 2000 over 200; ~3 min
#
# FK_BENCH_BUILD_DIR as for run.sh (default /tmp/fk-bench-build). Results in $build/profile-memory/.
set -euo pipefail
leases="${1:-2000}"
connections="${2:-200}"
source "$(dirname "$0")/profile_common.sh"
profile_setup profile_memory profile-memory valgrind fk_hold_leases
holder=""
stop_all() {
  [ -n "$holder" ] && kill "$holder" 2>/dev/null || true
  stop
}
trap stop_all EXIT

sidecar_flags=(--max-leases $((leases + 1000)) --max-leases-per-peer $((leases + 1000))
  --max-connections $((connections + 100)))
run_sidecar valgrind --tool=massif --threshold=0.1 --massif-out-file="$out/massif.out"

# wait_for WORD: until the holder prints WORD (10 min: massif slows the sidecar 20-50x).
wait_for() {
  for _ in $(seq 6000); do grep -qx "$1" "$out/holder.out" && return 0; sleep 0.1; done
  echo "profile_memory: the holder never said '$1'" >&2
  exit 1
}
mkfifo "$out/go"
exec 3<>"$out/go"
# (Without fd 3: the holder must not keep the fifo open for writing, or it never sees its end.)
"$build/bench/fk_hold_leases" "$sock" "$leases" "$connections" <"$out/go" 3>&- >"$out/holder.out" &
holder=$!
# A snapshot waits 3 s for what is still in flight (answers, Finish messages) to settle.
wait_for connected
sleep 3
vgdb --pid="$pid" detailed_snapshot "$out/connected.massif" >/dev/null
echo go >&3
wait_for held
sleep 3
vgdb --pid="$pid" detailed_snapshot "$out/held.massif" >/dev/null
exec 3>&-
wait "$holder" || true
holder=""

python3 - "$out/connected.massif" "$out/held.massif" "$leases" <<'PY'
import re, sys
def read(path):
    text = open(path).read()
    heap = int(re.search(r"mem_heap_B=(\d+)", text).group(1))
    extra = int(re.search(r"mem_heap_extra_B=(\d+)", text).group(1))
    sites = {}
    tree = text[text.index("heap_tree="):].splitlines()[1:]
    for line in tree:
        m = re.match(r" n\d+: (\d+) (.*)", line)  # depth 1: the allocation sites
        if m:
            sites[m.group(2)] = sites.get(m.group(2), 0) + int(m.group(1))
    return heap, extra, sites
(h0, x0, s0), (h1, x1, s1), n = read(sys.argv[1]), read(sys.argv[2]), int(sys.argv[3])
print(f"heap per lease: {(h1 - h0) / n:.0f} bytes requested + {(x1 - x0) / n:.0f} of malloc's "
      f"overhead = {(h1 + x1 - h0 - x0) / n:.0f} (the lease table's slot, 256 bytes, is not heap)")
print("allocation sites that grew, bytes per lease (ms_print the .massif files for call stacks):")
grown = sorted(((s1.get(k, 0) - s0.get(k, 0)) / n, k) for k in set(s0) | set(s1))
for per, site in reversed(grown[-16:]):
    if per >= 4:
        print(f"  {per:6.0f}  {site[:150]}")
PY
