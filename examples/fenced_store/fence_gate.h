// FenceGate: the check a storage system makes before it lets a lease holder touch its data.
//
// A fencekeeper token is the czxid of the holder's lock node; it strictly rises from one holder
// of a lock to the next. A lease alone never makes a paused or partitioned holder safe (it may
// wake after its lease ended and act on it anyway), so the storage remembers, per lock, the
// highest token it has seen and refuses anything lower: the old holder's late request arrives
// with a token below the new holder's and is turned away.
//
// The contract for a store that uses this gate:
//  * Pass the token with every request that touches data guarded by the lock, reads included,
//    and let reads raise the fence too. Otherwise: holder 5 stalls; holder 7 reads x; holder 5
//    wakes and writes x, which is accepted (the store has seen nothing above 5); holder 7 then
//    writes a value computed from its outdated read. Holder 5 was told its write succeeded, yet
//    it is lost, and holder 7's read-modify-write was not exclusive. A read carrying 7 raises
//    the fence, so holder 5's write is refused instead.
//  * Check and apply in one atomic step. admit() is atomic on its own, but that is not enough:
//    if holder 5 is admitted, then holder 7 is admitted and writes, then holder 5 writes, the
//    stale write lands last. The store must hold its own lock from admit() until the write it
//    guards is applied (and made durable, if the fence is persisted), so no other request runs
//    between them.
//  * Persist the fences with the data, in the same atomic write (snapshot()/restore()): a store
//    that restarts with lower fences than it acknowledged lets a stale holder back in.
//  * Compare only tokens of the same lock: tokens of different locks come from one counter and
//    their order means nothing.
//
// Thread-safe. A plain mutex: the critical section is one map lookup, and callers hold their
// own lock around it anyway (see above), so there is no contention to design around.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace fencekeeper {

enum class FenceVerdict { kAccepted, kStale };

class FenceGate {
 public:
  // Highest token seen, per lock. Ordered so that a serialized snapshot is deterministic.
  using Fences = std::map<std::string, uint64_t, std::less<>>;

  // Accepted iff `token` >= the highest seen for `lock` (equal is accepted: the same holder
  // reads and writes several times with one token); an accepted token becomes the highest.
  FenceVerdict admit(std::string_view lock, uint64_t token);

  // 0 for a lock never seen (fencekeeper never hands out 0).
  uint64_t highest(std::string_view lock) const;

  // Forgets `lock`, so any token is accepted again. Only for the case where tokens themselves
  // restarted low (a ZooKeeper ensemble rebuilt from scratch): see docs/fencing.md.
  void reset(std::string_view lock);

  Fences snapshot() const;
  // Replaces every fence with `fences` (a store reloading its state, or undoing a failed write).
  void restore(Fences fences);

 private:
  mutable std::mutex mu_;
  Fences highest_;
};

}  // namespace fencekeeper
