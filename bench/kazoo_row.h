// Rows 6a-6c: kazoo's Lock (bench/kazoo_lock.py, Debian's python3-kazoo) beside fencekeeper's
// acquire+release and the recipe's minimum with the C client, on one ZooKeeper, interleaved.
#pragma once

#include "bench/harness.h"
#include "bench/stats.h"
#include "tests/support/sidecar_cluster.h"

namespace fencekeeper::bench {

// Uses sidecar 0 of `cluster`.
void benchKazoo(const Options& opt, testing::SidecarCluster& cluster, Table& table);

}  // namespace fencekeeper::bench
