// Time for the sidecar: one monotonic clock (CLOCK_BOOTTIME: it keeps counting through a suspend,
// and it is the same kernel clock the pod's processes read) and timers on the loop thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "common/timer_queue.h"

namespace fencekeeper {

using Millis = std::chrono::milliseconds;
// Nanoseconds of CLOCK_BOOTTIME since boot.
using TimePoint = std::chrono::nanoseconds;

TimePoint bootTimeNow();
// Wall-clock milliseconds since the epoch, only for display (never for deadlines).
int64_t wallClockMs();

class Timer {
 public:
  virtual ~Timer() = default;
  virtual TimePoint now() const = 0;
  // Runs `fn` on the loop thread once `now() >= when`, unless cancelled first. Never inline.
  virtual uint64_t schedule(TimePoint when, std::function<void()> fn) = 0;
  // Cancelling an id that has fired or was cancelled is a no-op.
  virtual void cancel(uint64_t id) = 0;
};

// A Timer whose time moves only when a test says so. Single-threaded.
class ManualTimer final : public Timer {
 public:
  TimePoint now() const override { return now_; }
  uint64_t schedule(TimePoint when, std::function<void()> fn) override;
  void cancel(uint64_t id) override { queue_.remove(id); }
  // Moves time forward and fires what became due.
  void advance(Millis by);
  void runDue() { queue_.runDue(now_); }
  // Moves time forward and fires nothing: a loop that has not run its due timers yet.
  void skip(Millis by) { now_ += by; }

 private:
  TimePoint now_{std::chrono::seconds(1000)};
  TimerQueue queue_;
};

}  // namespace fencekeeper
