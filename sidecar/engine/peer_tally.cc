#include "sidecar/engine/peer_tally.h"

namespace fencekeeper::engine {

void PeerTally::apply(Counts& c, Bucket from, Bucket to) {
  auto slot = [&c](Bucket b) -> uint32_t* {
    switch (b) {
      case Bucket::kWaiting:
        return &c.waiting;
      case Bucket::kHeld:
        return &c.held;
      case Bucket::kNone:
        break;
    }
    return nullptr;
  };
  if (uint32_t* f = slot(from)) --*f;
  if (uint32_t* t = slot(to)) ++*t;
}

template <typename Key>
void PeerTally::apply(std::map<Key, Counts>& map, Key key, Bucket from, Bucket to) {
  Counts& c = map[key];
  apply(c, from, to);
  if (c.held == 0 && c.waiting == 0) map.erase(key);  // a closed connection leaves nothing
}

void PeerTally::move(uint32_t uid, uint64_t connection, Bucket from, Bucket to) {
  if (from == to) return;
  apply(peers_, uid, from, to);
  apply(connections_, connection, from, to);
  apply(total_, from, to);
}

}  // namespace fencekeeper::engine
