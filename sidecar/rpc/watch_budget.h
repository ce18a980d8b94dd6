// Holder watches open per peer uid and on the whole sidecar. Each costs memory (its lock's state,
// its capability, a ZooKeeper watch) and ZooKeeper reads when its lock changes or the session
// recovers, so one uid's watches are bounded whatever number of connections it opens.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "sidecar/rpc/connection_budget.h"

namespace fencekeeper::rpc {

class WatchBudget {
 public:
  explicit WatchBudget(const ConnectionLimits& limits) : limits_(limits) {}

  // Admits one more watch of `uid`, or says why not (naming the flag that raises the limit).
  std::optional<Refusal> admit(uint32_t uid) const;
  void opened(uint32_t uid);
  void closed(uint32_t uid);

  uint32_t total() const { return total_; }
  uint32_t ofPeer(uint32_t uid) const;

 private:
  const ConnectionLimits& limits_;
  std::map<uint32_t, uint32_t> byUid_;
  uint32_t total_ = 0;
};

}  // namespace fencekeeper::rpc
