// What the connections of each uid keep, counted per uid and in all (kept lease capabilities,
// holder watches), for the limits that bound one principal whatever its number of connections.
// Loop thread.
#pragma once

#include <cstdint>
#include <map>

namespace fencekeeper::rpc {

class UidTally {
 public:
  void add(uint32_t uid) {
    ++byUid_[uid];
    ++total_;
  }
  void remove(uint32_t uid) {
    auto it = byUid_.find(uid);
    if (it == byUid_.end()) return;
    if (--it->second == 0) byUid_.erase(it);
    --total_;
  }
  uint32_t of(uint32_t uid) const {
    auto it = byUid_.find(uid);
    return it == byUid_.end() ? 0 : it->second;
  }
  uint32_t total() const { return total_; }

 private:
  std::map<uint32_t, uint32_t> byUid_;
  uint32_t total_ = 0;
};

}  // namespace fencekeeper::rpc
