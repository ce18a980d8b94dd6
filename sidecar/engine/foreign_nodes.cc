#include "sidecar/engine/foreign_nodes.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

namespace fencekeeper::engine {

void ForeignNodes::planted(const std::string& lock, const std::string& path) {
  notice(lock, path, Kind::kPlanted);
}

void ForeignNodes::unreadable(const std::string& lock, const std::string& path) {
  notice(lock, path, Kind::kUnreadable);
}

void ForeignNodes::notice(const std::string& lock, const std::string& path, Kind kind) {
  auto it = nodes_.find(path);
  if (it != nodes_.end() && it->second == kind) return;  // logged already
  if (kind == Kind::kPlanted) {
    spdlog::warn(
        "lock {}: queue entry {} is a persistent node (ephemeralOwner 0), not a lock request: it "
        "blocks the lock for everyone until an operator deletes it; waiters keep waiting",
        lock, path);
  } else {
    spdlog::warn(
        "lock {}: queue entry {} may not be read by this session (its ACL); waiters "
        "behind it look again every second",
        lock, path);
  }
  if (it != nodes_.end()) {
    it->second = kind;
  } else if (nodes_.size() < bound_) {
    nodes_.emplace(path, kind);
  }
}

void ForeignNodes::prune(const std::string& lockPath, const std::vector<std::string>& children) {
  std::string prefix = lockPath + "/";
  std::set<std::string> present(children.begin(), children.end());
  for (auto it = nodes_.lower_bound(prefix); it != nodes_.end();) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) break;
    std::string name = it->first.substr(prefix.size());
    bool direct = name.find('/') == std::string::npos;
    it = direct && !present.count(name) ? nodes_.erase(it) : std::next(it);
  }
}

std::string ForeignNodes::firstPlanted(const std::string& lockPath,
                                       std::vector<QueueNode> queue) const {
  sortQueue(queue);
  for (auto& q : queue) {
    auto it = nodes_.find(lockPath + "/" + q.name);
    if (it != nodes_.end() && it->second == Kind::kPlanted) return it->first;
  }
  return {};
}

std::vector<std::string> ForeignNodes::planted() const {
  std::vector<std::string> out;
  for (auto& [path, kind] : nodes_) {
    if (kind == Kind::kPlanted) out.push_back(path);
  }
  return out;
}

}  // namespace fencekeeper::engine
