// Rows 8a-8e: scale. One sidecar of its own with its lease limits raised, 1,000 client
// connections, 1k and 10k leases (100k with --full), one lock each: the sidecar's resident memory
// at each size and per lease, renew latency, and the size and time of `status` (the RPC and the
// status socket's /status).
#pragma once

#include "bench/harness.h"
#include "bench/stats.h"
#include "tests/support/sidecar_cluster.h"

namespace fencekeeper::bench {

// Starts one more sidecar in `cluster` and stops it (SIGKILL) at the end. Writes the memory curve
// to opt.outDir/memory.tsv.
void benchScale(const Options& opt, testing::SidecarCluster& cluster, Table& table);

}  // namespace fencekeeper::bench
