// ZooKeeper's JVM compiles its hot paths for tens of seconds after it starts, taking about a core
// the cycles need. A cold server slows a cycle that crosses three processes (client, sidecar,
// ZooKeeper) more than the recipe's two, so the ratios against the recipe are taken warm, as a
// long-running ensemble is.
#pragma once

#include "bench/harness.h"
#include "tests/support/sidecar_cluster.h"

namespace fencekeeper::bench {

// Runs the recipe's cycles and fencekeeper's on sidecar 0 until `cap` is over (round to round,
// the recipe's median moves 10-20% on this machine even when warm: no settling test would be
// reliable). Reports the first and last rounds' medians on stderr.
void warmUpZooKeeper(testing::SidecarCluster& cluster, const Cap& cap);

}  // namespace fencekeeper::bench
