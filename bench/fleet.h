// Rows 10a-10c: how many sidecars one ZooKeeper ensemble carries. A 3-server ensemble on this
// machine (fsync on) and N sidecars (50, 100, 200; 10 and 25 with --quick), each holding one
// lease that its client renews (keep-alive), heartbeats at the default session timeout (10 s).
// Over a quiet window at each N: ZooKeeper's CPU and the requests a second each sidecar costs it,
// the heartbeats' round trip (p99, from every sidecar's histogram), vouching lapses (must be 0),
// and the sidecars' resident memory.
#pragma once

#include "bench/harness.h"
#include "bench/stats.h"

namespace fencekeeper::bench {

// Starts its own ensemble and sidecars and stops them at the end.
void benchFleet(const Options& opt, Table& table);

}  // namespace fencekeeper::bench
