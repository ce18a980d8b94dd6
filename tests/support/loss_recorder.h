// Records when a lease was lost and why (the loss callback runs on the client's I/O thread).
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>

#include "fencekeeper/client.h"

namespace fencekeeper::testing {

struct LossRecorder {
  std::atomic<bool> lost{false};
  std::atomic<int> reason{-1};
  std::chrono::steady_clock::time_point at{};
  std::mutex mu;
  LossCallback callback() {
    return [this](uint64_t, LossReason r) {
      std::lock_guard<std::mutex> lock(mu);
      at = std::chrono::steady_clock::now();
      reason = static_cast<int>(r);
      lost = true;
    };
  }
  std::chrono::steady_clock::time_point when() {
    std::lock_guard<std::mutex> lock(mu);
    return at;
  }
};

}  // namespace fencekeeper::testing
