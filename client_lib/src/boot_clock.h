// The client's clock for validity deadlines: CLOCK_BOOTTIME, like the sidecar's, so that a machine
// waking from a suspend (or a migrated VM) sees its leases' validity as spent, not paused.
// Internal to the client library; not part of its public API.
#pragma once

#include <chrono>

namespace fencekeeper {

struct BootClock {
  using duration = std::chrono::nanoseconds;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<BootClock>;
  static constexpr bool is_steady = true;
  // CLOCK_BOOTTIME plus the offset a test added (none outside tests).
  static time_point now() noexcept;
};

// TEST ONLY: moves every later BootClock::now() forward by `by`, as a suspend of that length would.
void advanceBootClockForTesting(std::chrono::milliseconds by);

}  // namespace fencekeeper
