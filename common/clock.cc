#include "common/clock.h"

#include <time.h>

#include <vector>

namespace fencekeeper {

TimePoint bootTimeNow() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

int64_t wallClockMs() {
  return std::chrono::duration_cast<Millis>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

uint64_t TimerQueue::add(TimePoint when, std::function<void()> fn) {
  uint64_t id = nextId_++;
  byDeadline_.emplace(when, id);
  byId_.emplace(id, std::make_pair(when, std::move(fn)));
  return id;
}

void TimerQueue::remove(uint64_t id) {
  auto it = byId_.find(id);
  if (it == byId_.end()) return;
  auto range = byDeadline_.equal_range(it->second.first);
  for (auto d = range.first; d != range.second; ++d) {
    if (d->second == id) {
      byDeadline_.erase(d);
      break;
    }
  }
  byId_.erase(it);
}

std::optional<TimePoint> TimerQueue::nextDeadline() const {
  if (byDeadline_.empty()) return std::nullopt;
  return byDeadline_.begin()->first;
}

void TimerQueue::runDue(TimePoint now) {
  while (!byDeadline_.empty() && byDeadline_.begin()->first <= now) {
    uint64_t id = byDeadline_.begin()->second;
    byDeadline_.erase(byDeadline_.begin());
    auto it = byId_.find(id);
    auto fn = std::move(it->second.second);
    byId_.erase(it);
    fn();  // may add or remove entries
  }
}

uint64_t ManualTimer::schedule(TimePoint when, std::function<void()> fn) {
  return queue_.add(when, std::move(fn));
}

void ManualTimer::advance(Millis by) {
  now_ += by;
  queue_.runDue(now_);
}

}  // namespace fencekeeper
