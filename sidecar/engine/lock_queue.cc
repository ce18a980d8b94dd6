#include "sidecar/engine/lock_queue.h"

#include <algorithm>

namespace fencekeeper::engine {

namespace {
std::string describe(const QueueNode& node) {
  if (node.mode == LockMode::kPermits) {
    return "a semaphore of " + std::to_string(node.permits) + " permits (node " + node.name + ")";
  }
  return std::string("a lock (") + lockModeName(node.mode) + " node " + node.name + ")";
}

std::string asked(const QueueNode& node) {
  if (node.mode == LockMode::kPermits) {
    return "a semaphore of " + std::to_string(node.permits) + " permits";
  }
  return node.mode == LockMode::kShared ? "a shared lock" : "an exclusive lock";
}

// Whether `ahead`, a node before `node`, rules `node` out by design (see the header).
bool conflicts(const QueueNode& node, const QueueNode& ahead) {
  bool semaphore = node.mode == LockMode::kPermits;
  if (semaphore != (ahead.mode == LockMode::kPermits)) return true;
  return semaphore && ahead.permits != node.permits;
}
}  // namespace

QueueDecision decide(const std::vector<QueueNode>& queue, std::string_view own) {
  QueueDecision d;
  auto mine = std::find_if(queue.begin(), queue.end(), [&](auto& q) { return q.name == own; });
  if (mine == queue.end()) return d;
  const QueueNode& node = *mine;
  d.ahead = static_cast<uint32_t>(mine - queue.begin());
  for (auto it = queue.begin(); it != mine; ++it) {
    if (conflicts(node, *it)) {
      d.kind = QueueDecision::Kind::kConflict;
      d.conflict = "asked for " + asked(node) + ", but the queue holds " + describe(*it);
      return d;
    }
  }
  d.kind = QueueDecision::Kind::kWaiting;
  switch (node.mode) {
    case LockMode::kExclusive:
      if (d.ahead == 0) break;
      d.waitsBehind.push_back((mine - 1)->name);
      d.grantedByAnyDeletion = d.ahead == 1;
      return d;
    case LockMode::kShared: {
      const QueueNode* lastWriter = nullptr;
      uint32_t writers = 0;
      for (auto it = queue.begin(); it != mine; ++it) {
        if (it->mode != LockMode::kExclusive) continue;
        lastWriter = &*it;
        ++writers;
      }
      if (!lastWriter) break;
      d.waitsBehind.push_back(lastWriter->name);
      d.grantedByAnyDeletion = writers == 1;
      return d;
    }
    case LockMode::kPermits:
      if (d.ahead < node.permits) break;
      for (auto it = mine - node.permits; it != mine; ++it) d.waitsBehind.push_back(it->name);
      d.grantedByAnyDeletion = d.ahead == node.permits;
      return d;
  }
  d.kind = QueueDecision::Kind::kGranted;
  return d;
}

// decide() for every node in one pass (the table test checks the two agree): holder reads list
// queues of thousands.
std::vector<size_t> holdersOf(const std::vector<QueueNode>& queue) {
  std::vector<size_t> holders;
  bool lockAhead = false;        // an exclusive or shared node
  uint32_t semaphoreAhead = 0;   // the N of the permits ahead (0: none)
  bool mixedPermits = false;     // permits of two Ns ahead
  for (size_t i = 0; i < queue.size(); ++i) {
    const QueueNode& q = queue[i];
    switch (q.mode) {
      case LockMode::kExclusive:
        if (i == 0) holders.push_back(i);
        return holders;  // nobody behind an exclusive node holds (it waits, or conflicts)
      case LockMode::kShared:
        if (semaphoreAhead == 0) holders.push_back(i);
        lockAhead = true;
        break;
      case LockMode::kPermits:
        if (!lockAhead && !mixedPermits && (semaphoreAhead == 0 || semaphoreAhead == q.permits) &&
            i < q.permits) {
          holders.push_back(i);
        }
        if (semaphoreAhead != 0 && semaphoreAhead != q.permits) mixedPermits = true;
        semaphoreAhead = q.permits;
        break;
    }
  }
  return holders;
}

}  // namespace fencekeeper::engine
