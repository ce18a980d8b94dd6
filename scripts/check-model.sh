#!/usr/bin/env bash
# Model-checks the lock queue (docs/model/queue.pml): the queue policy as built, for exclusive,
# shared and permit leases with faults, must hold in every configuration, and three changes to it
# must be caught (a hand-over with two nodes ahead, a permit waiter watching one node, no orphan
# sweep). Then the vouching rule (docs/model/vouch.pml) with spin: the rule as built (RULE 1 with the
# long-round-trip guard and no anchor sent before the latest lapse, plus the reconnect anchor while
# still vouched for, against ZooKeeper's revalidation race) must hold in every configuration, and the two holes found must still be caught
# (RULE 1 without the guard; the reconnect anchor after a lapse).
set -euo pipefail
models="$(cd "$(dirname "$0")/.." && pwd)/docs/model"
model="$models/vouch.pml"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
check() {  # expected-errors spin-defines...
  local want="$1"; shift
  spin "$@" -a "$model" >/dev/null
  gcc -O1 -w -DSAFETY -o pan pan.c  # -O2 took 3x the compile for no faster a search
  local out errors
  out="$(./pan -m2000000)"
  errors="$(grep -o 'errors: [0-9]*' <<<"$out" | awk '{print $2}')"
  if grep -q 'max search depth too small' <<<"$out"; then
    echo "check-model: search depth too small for $*" >&2; return 1
  fi
  if { [ "$want" = 0 ] && [ "$errors" != 0 ]; } || { [ "$want" != 0 ] && [ "$errors" = 0 ]; }; then
    echo "check-model: $* -> errors: $errors (wanted $([ "$want" = 0 ] && echo none || echo some))" >&2
    return 1
  fi
  echo "check-model: $* -> errors: $errors ($(grep -o '[0-9]* states, stored' <<<"$out"))"
}
model="$models/queue.pml"
ex=(-DM0=0 -DM1=0 -DM2=0)
check 0 -DNS=3 -DROUNDS=1 "${ex[@]}"
check 0 -DNS=2 -DROUNDS=2 "${ex[@]}"
check 0 -DNS=3 -DROUNDS=1 -DM0=0 -DM1=1 -DM2=1               # a writer and readers
check 0 -DNS=3 -DROUNDS=1 -DM0=1 -DM1=0 -DM2=1
check 0 -DNS=2 -DROUNDS=2 -DM0=0 -DM1=1
check 0 -DNS=3 -DROUNDS=1 -DM0=2 -DP0=2 -DM1=2 -DP1=2 -DM2=2 -DP2=2   # 2 permits, 3 sidecars
check 0 -DNS=2 -DROUNDS=2 -DM0=2 -DP0=1 -DM1=2 -DP1=1
check 0 -DNS=3 -DROUNDS=1 -DM0=2 -DP0=2 -DM1=2 -DP1=3 -DM2=0 # modes that refuse each other
check 1 -DNS=3 -DROUNDS=1 "${ex[@]}" -DHANDOVER_TWO_AHEAD
check 1 -DNS=3 -DROUNDS=1 -DM0=2 -DP0=2 -DM1=2 -DP1=2 -DM2=2 -DP2=2 -DPERMITS_WINDOW_ONE
check 1 -DNS=2 -DROUNDS=2 "${ex[@]}" -DNO_ORPHAN_SWEEP

model="$models/vouch.pml"
base=(-DT=16 -DQ=4 -DTMAX=44 -DREVALIDATE_ANCHOR -DREVALIDATE_RACE)
built=(-DLONG_RTT_GUARD -DFRESH_AFTER_LAPSE)
check 0 "${base[@]}" -DP=4 -DSYNCL=20 "${built[@]}"
check 0 "${base[@]}" -DP=2 -DSYNCL=20 "${built[@]}"
check 0 "${base[@]}" -DP=4 -DSYNCL=6 "${built[@]}"
check 1 "${base[@]}" -DP=4 -DSYNCL=20
check 1 "${base[@]}" -DP=4 -DSYNCL=20 -DLONG_RTT_GUARD -DREVALIDATE_EVEN_AFTER_LAPSE
