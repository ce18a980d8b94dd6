#include "common/timer_queue.h"

#include <utility>

namespace fencekeeper {

uint64_t TimerQueue::add(TimePoint when, std::function<void()> fn) {
  uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[slot];
  s.when = when;
  s.order = nextOrder_++;
  s.fn = std::move(fn);
  heap_.push_back(slot);
  s.heapIndex = static_cast<uint32_t>(heap_.size() - 1);
  siftUp(heap_.size() - 1);
  return (uint64_t{s.generation} << 32) | slot;
}

void TimerQueue::remove(uint64_t id) {
  auto slot = static_cast<uint32_t>(id);
  if (slot >= slots_.size()) return;
  const Slot& s = slots_[slot];
  if (s.heapIndex == kFree || s.generation != static_cast<uint32_t>(id >> 32)) return;
  take(slot);
}

std::optional<TimerQueue::TimePoint> TimerQueue::nextDeadline() const {
  if (heap_.empty()) return std::nullopt;
  return slots_[heap_.front()].when;
}

void TimerQueue::runDue(TimePoint now) {
  while (!heap_.empty() && slots_[heap_.front()].when <= now) {
    auto fn = take(heap_.front());
    fn();  // may add or remove entries
  }
}

bool TimerQueue::earlier(uint32_t a, uint32_t b) const {
  const Slot& x = slots_[a];
  const Slot& y = slots_[b];
  return x.when != y.when ? x.when < y.when : x.order < y.order;
}

void TimerQueue::place(size_t at, uint32_t slot) {
  heap_[at] = slot;
  slots_[slot].heapIndex = static_cast<uint32_t>(at);
}

void TimerQueue::siftUp(size_t at) {
  uint32_t moving = heap_[at];
  while (at > 0) {
    size_t parent = (at - 1) / 2;
    if (!earlier(moving, heap_[parent])) break;
    place(at, heap_[parent]);
    at = parent;
  }
  place(at, moving);
}

void TimerQueue::siftDown(size_t at) {
  uint32_t moving = heap_[at];
  for (;;) {
    size_t child = 2 * at + 1;
    if (child >= heap_.size()) break;
    if (child + 1 < heap_.size() && earlier(heap_[child + 1], heap_[child])) ++child;
    if (!earlier(heap_[child], moving)) break;
    place(at, heap_[child]);
    at = child;
  }
  place(at, moving);
}

std::function<void()> TimerQueue::take(uint32_t slot) {
  Slot& s = slots_[slot];
  size_t at = s.heapIndex;
  uint32_t last = heap_.back();
  heap_.pop_back();
  if (last != slot) {
    place(at, last);
    siftDown(at);
    siftUp(slots_[last].heapIndex);
  }
  auto fn = std::move(s.fn);
  s.fn = nullptr;
  s.heapIndex = kFree;
  if (++s.generation != 0) free_.push_back(slot);  // wrapped: retired, so no id is issued twice
  return fn;
}

}  // namespace fencekeeper
