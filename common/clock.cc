#include "common/clock.h"

#include <time.h>

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

uint64_t ManualTimer::schedule(TimePoint when, std::function<void()> fn) {
  return queue_.add(when, std::move(fn));
}

void ManualTimer::advance(Millis by) {
  now_ += by;
  queue_.runDue(now_);
}

}  // namespace fencekeeper
