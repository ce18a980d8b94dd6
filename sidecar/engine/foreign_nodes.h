// Queue entries the lock recipe did not make: persistent nodes planted in a lock's queue
// (ephemeralOwner 0), which block the lock until an operator deletes them, and entries this
// session may not read (their ACL). Waiters keep waiting behind them, never skip them; each is
// logged once, when first seen, and forgotten once it is gone from its queue.
//
// Runs on the loop thread; owned by the LockEngine. Bounded: past `bound` entries new ones are
// logged but not kept.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sidecar/engine/lock_name.h"

namespace fencekeeper::engine {

class ForeignNodes {
 public:
  explicit ForeignNodes(size_t bound = 1'024) : bound_(bound) {}

  // A persistent node at `path` in `lock`'s queue.
  void planted(const std::string& lock, const std::string& path);
  // A queue entry at `path` this session may not read.
  void unreadable(const std::string& lock, const std::string& path);
  // The entry at `path` was deleted (a watch said so).
  void gone(const std::string& path) { nodes_.erase(path); }
  // `children` are the names in the queue of the lock node `lockPath` now.
  void prune(const std::string& lockPath, const std::vector<std::string>& children);

  // The path of the lowest planted entry known in `queue` (of the lock node `lockPath`), or "".
  std::string firstPlanted(const std::string& lockPath, std::vector<QueueNode> queue) const;
  // Every planted entry known, by path.
  std::vector<std::string> planted() const;

 private:
  enum class Kind { kPlanted, kUnreadable };
  void notice(const std::string& lock, const std::string& path, Kind kind);

  const size_t bound_;
  std::map<std::string, Kind> nodes_;
};

}  // namespace fencekeeper::engine
