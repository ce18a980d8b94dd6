// One lock cycle, timed, the ways the rows compare: the recipe's minimum with the C client, and a
// fencekeeper acquire+release.
#pragma once

#include <chrono>
#include <string>

#include "bench/harness.h"
#include "bench/stats.h"
#include "bench/zk_sync.h"
#include "fencekeeper/client.h"

namespace fencekeeper::bench {

// create(EPHEMERAL_SEQUENTIAL) + getChildren + delete on `parent`, synchronously.
inline void recipeCycle(ZkSync& zk, const std::string& parent, Samples& out) {
  std::string path;
  auto t0 = Clock::now();
  bool ok = zk.createSeq(parent + "/x__lock__", &path) && zk.children(parent) && zk.remove(path);
  auto t1 = Clock::now();
  ok ? out.add(nsBetween(t0, t1)) : void(++out.failures);
}

// The sidecar's own ZooKeeper requests for a cycle, with no RPC in front: create and the
// listing sent together, one wait for both, then delete.
inline void pipelinedRecipeCycle(ZkSync& zk, const std::string& parent, Samples& out) {
  std::string path;
  auto t0 = Clock::now();
  bool ok = zk.createSeqAndList(parent + "/x__lock__", parent, &path) && zk.remove(path);
  auto t1 = Clock::now();
  ok ? out.add(nsBetween(t0, t1)) : void(++out.failures);
}

// acquire(name) + release(). `wait`: how long the acquire may queue (0 tries once).
inline void fencekeeperCycle(Client& client, const std::string& name, Samples& out,
                             std::chrono::milliseconds wait = std::chrono::milliseconds(0)) {
  Status s;
  auto t0 = Clock::now();
  auto lease = client.acquire(name, leaseOptions(wait), &s);
  bool ok = lease && lease->release().ok();
  auto t1 = Clock::now();
  ok ? out.add(nsBetween(t0, t1)) : void(++out.failures);
}

}  // namespace fencekeeper::bench
