// Rows 7a-7d: lock cycles per second with 1-256 client threads, each on a lock of its own, through
// one sidecar and through four, beside the raw capacity of the same ZooKeeper work with the C
// client's async API (create2 + getChildren + delete, pipelined by as many logical clients).
#pragma once

#include "bench/harness.h"
#include "bench/stats.h"
#include "tests/support/sidecar_cluster.h"

namespace fencekeeper::bench {

// REQUIRES: `cluster` runs at least 4 sidecars, each allowing 256 connections of this uid.
// Writes the curve to opt.outDir/throughput.tsv.
void benchThroughput(const Options& opt, testing::SidecarCluster& cluster, Table& table);

}  // namespace fencekeeper::bench
