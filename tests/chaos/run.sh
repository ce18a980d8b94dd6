#!/usr/bin/env bash
# The fault campaign (see tests/chaos/campaign.py and docs/failure-modes.md): a 3-node ZooKeeper
# ensemble, 3 sidecars, a fenced store and worker loops, under seeded faults (freezes and kills
# of ZooKeeper nodes, sidecars, holders and waiters; network cuts made with iptables in a chain of
# its own, loopback only). Exits 0 when the checker finds nothing.
#
#   bash tests/chaos/run.sh [--minutes N] [--seed S] [--keep]
#
# Needs root (the cuts, and the uids that tell the processes apart) and a build in $FK_BUILD_DIR
# (default build/) with fencekeeper, fencectl, fenced-store and fk-zk-harness.
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
build="${FK_BUILD_DIR:-$here/build}"
[ "$(id -u)" = 0 ] || { echo "chaos: needs root (iptables, and a uid per process)" >&2; exit 2; }
for bin in sidecar/fencekeeper client_lib/fencectl examples/fenced_store/fenced-store \
           sidecar/fk-zk-harness; do
  [ -x "$build/$bin" ] || { echo "chaos: $build/$bin is not built" >&2; exit 2; }
done
exec /usr/bin/python3 "$here/tests/chaos/campaign.py" --build "$build" "$@"
