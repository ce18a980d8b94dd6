// The queue policy: from a lock's queue alone, who holds it, and whom a waiter waits behind.
// Pure (no ZooKeeper, no engine state): every grant, every watch of a waiter and every holder
// listing goes through it, and its tests are a table of queues.
//
// A queue is a lock's nodes oldest first (sortQueue). Node i holds when:
// - exclusive: no node is ahead of it;
// - shared: no exclusive node is ahead of it (kazoo's ReadLock: readers wait only for writers);
// - permits N: fewer than N nodes are ahead of it, all permits of the same N (the first N hold).
// A request refuses (kConflict) rather than waits behind a node it can never share the lock with
// by design: a semaphore's permits behind a lock's nodes, a lock's behind permits, or permits of
// another N. Nodes behind it never matter: they refuse themselves, or wait.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sidecar/engine/lock_name.h"

namespace fencekeeper::engine {

struct QueueDecision {
  enum class Kind : uint8_t { kGranted, kWaiting, kConflict, kMissing };
  Kind kind = Kind::kMissing;  // kMissing: the request's node is not in the queue
  uint32_t ahead = 0;          // nodes ahead of the request's
  // kWaiting: the nodes whose deletion can change the answer, oldest first. Exclusive: the node
  // just ahead. Shared: the last exclusive node ahead. Permits N: the N nodes just ahead (any of
  // them leaving may admit it; a departure wakes at most the N waiters behind it, never a herd).
  std::vector<std::string> waitsBehind;
  // kWaiting: the deletion of any node in waitsBehind grants the request without another listing
  // (a node made later is behind it: sequence numbers only rise).
  bool grantedByAnyDeletion = false;
  std::string conflict;  // kConflict: what the queue holds, for people
};

// The decision for the request whose node is named `own` in `queue` (sorted), asking for `mode`
// with `permits` (kPermits).
QueueDecision decide(const std::vector<QueueNode>& queue, std::string_view own);

// The indexes of `queue`'s holders (sorted queue), oldest first.
std::vector<size_t> holdersOf(const std::vector<QueueNode>& queue);

}  // namespace fencekeeper::engine
