// Rows 9a-9d: the herd. 200 waiters on one lock across 4 sidecars, handed the lock one after the
// other: ZooKeeper watch notifications per hand-over (`mntr`, the server's own count), and the
// hand-over's latency beside a ZooKeeper write round trip measured in the same run.
#pragma once

#include "bench/harness.h"
#include "bench/stats.h"
#include "tests/support/sidecar_cluster.h"

namespace fencekeeper::bench {

// REQUIRES: `cluster` runs at least 4 sidecars.
void benchHerd(const Options& opt, testing::SidecarCluster& cluster, Table& table);

}  // namespace fencekeeper::bench
