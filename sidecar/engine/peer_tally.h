// Live requests counted per peer (uid) and per connection, so limits see what is held and waiting
// now: a request stops counting the moment it is released, lost or withdrawn, whatever its
// caller still keeps.
#pragma once

#include <cstdint>
#include <map>

namespace fencekeeper::engine {

struct Counts {
  uint32_t held = 0;
  uint32_t waiting = 0;  // creating or queued
};

class PeerTally {
 public:
  enum class Bucket { kNone, kWaiting, kHeld };

  // Moves one request of (uid, connection) from one bucket to another.
  void move(uint32_t uid, uint64_t connection, Bucket from, Bucket to);

  Counts ofPeer(uint32_t uid) const { return find(peers_, uid); }
  Counts ofConnection(uint64_t connection) const { return find(connections_, connection); }
  Counts total() const { return total_; }

 private:
  template <typename Key>
  static Counts find(const std::map<Key, Counts>& map, Key key) {
    auto it = map.find(key);
    return it == map.end() ? Counts{} : it->second;
  }
  template <typename Key>
  static void apply(std::map<Key, Counts>& map, Key key, Bucket from, Bucket to);
  static void apply(Counts& c, Bucket from, Bucket to);

  std::map<uint32_t, Counts> peers_;
  std::map<uint64_t, Counts> connections_;
  Counts total_;
};

}  // namespace fencekeeper::engine
