// Ordered deadlines for a loop's timers (KjTimer, ManualTimer): schedule, cancel by id, fire what
// is due. One entry costs no allocation of its own: a renew cancels and re-adds a lease's TTL entry,
// and each lease holds one (two map nodes each, 160 bytes with malloc's overhead, before).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace fencekeeper {

class TimerQueue {
 public:
  using TimePoint = std::chrono::nanoseconds;  // as clock.h's

  // Never returns 0, and never returns an id twice.
  uint64_t add(TimePoint when, std::function<void()> fn);
  // Removing an id that has fired, was removed or was never issued is a no-op.
  void remove(uint64_t id);
  // The earliest deadline queued, if any.
  std::optional<TimePoint> nextDeadline() const;
  // Fires, in deadline order (equal deadlines in the order added), every entry due at `now`,
  // including ones added while firing.
  void runDue(TimePoint now);
  size_t size() const { return heap_.size(); }

 private:
  // An entry lives in a slot, reused once it fires or is removed. Its id is the slot's index and
  // generation, bumped on every reuse, so a stale id never matches a later entry; a slot whose
  // generation would wrap is retired instead.
  struct Slot {
    TimePoint when{};
    uint64_t order = 0;  // ties between equal deadlines: the order entries were added
    std::function<void()> fn;
    uint32_t generation = 1;
    uint32_t heapIndex = kFree;
  };
  static constexpr uint32_t kFree = UINT32_MAX;

  bool earlier(uint32_t a, uint32_t b) const;
  void place(size_t at, uint32_t slot);
  void siftUp(size_t at);
  void siftDown(size_t at);
  // Takes the slot out of the heap and frees it, returning its callback.
  std::function<void()> take(uint32_t slot);

  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
  std::vector<uint32_t> heap_;  // slot indexes, a binary min-heap on (when, order)
  uint64_t nextOrder_ = 0;
};

}  // namespace fencekeeper
