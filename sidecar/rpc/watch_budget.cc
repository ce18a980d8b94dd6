#include "sidecar/rpc/watch_budget.h"

#include <string>

namespace fencekeeper::rpc {

std::optional<Refusal> WatchBudget::admit(uint32_t uid) const {
  uint32_t mine = ofPeer(uid);
  if (limits_.maxHolderWatchesPerPeer && mine >= limits_.maxHolderWatchesPerPeer) {
    return Refusal{engine::LeaseError::kLimitReached,
                   "uid " + std::to_string(uid) + " has " + std::to_string(mine) +
                       " holder watches open, its limit (" +
                       std::to_string(limits_.maxHolderWatchesPerPeer) +
                       "): drop watches no longer needed, or raise --max-watches-per-peer"};
  }
  if (limits_.maxHolderWatchesTotal && total_ >= limits_.maxHolderWatchesTotal) {
    return Refusal{engine::LeaseError::kLimitReached,
                   "this sidecar has " + std::to_string(total_) +
                       " holder watches open, its limit (" +
                       std::to_string(limits_.maxHolderWatchesTotal) + "): raise --max-watches"};
  }
  return std::nullopt;
}

void WatchBudget::opened(uint32_t uid) {
  ++byUid_[uid];
  ++total_;
}

void WatchBudget::closed(uint32_t uid) {
  auto it = byUid_.find(uid);
  if (it == byUid_.end()) return;
  if (--it->second == 0) byUid_.erase(it);
  --total_;
}

uint32_t WatchBudget::ofPeer(uint32_t uid) const {
  auto it = byUid_.find(uid);
  return it == byUid_.end() ? 0 : it->second;
}

}  // namespace fencekeeper::rpc
