#include "boot_clock.h"

#include <time.h>

#include <atomic>

namespace fencekeeper {

namespace {
std::atomic<int64_t> testOffsetNs{0};
}  // namespace

BootClock::time_point BootClock::now() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  auto sinceBoot = std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
  return time_point(sinceBoot + std::chrono::nanoseconds(testOffsetNs.load()));
}

void advanceBootClockForTesting(std::chrono::milliseconds by) {
  testOffsetNs += std::chrono::duration_cast<std::chrono::nanoseconds>(by).count();
}

}  // namespace fencekeeper
