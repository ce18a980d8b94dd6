// Bounded waits on a condition: tests poll instead of sleeping and hoping.
#pragma once

#include <chrono>
#include <thread>

namespace fencekeeper::testing {

// Polls `done` every 10 ms until it holds (true) or `timeout` passes (false).
template <typename Pred>
bool waitUntil(Pred done, std::chrono::milliseconds timeout = std::chrono::milliseconds(15000)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

inline long long msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               start)
      .count();
}

}  // namespace fencekeeper::testing
