#include "client_lib/src/call_answer.h"

#include <chrono>

namespace fencekeeper {

namespace {

// Long enough for a call the sidecar answers alone (row 1c of bench/: 20-40 us on an idle
// machine), short enough that a call that must wait for ZooKeeper wastes little.
constexpr auto kSpin = std::chrono::microseconds(150);

// Two threads spinning on a 2-core machine would take the cores the answer needs.
std::atomic<bool> someoneSpins{false};

void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

void CallAnswer::set(Status status) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (set_) return;
    set_ = true;
    status_ = std::move(status);
    ready_.store(true, std::memory_order_release);
  }
  answered_.notify_one();
}

Status CallAnswer::wait(bool spinFirst) {
  if (spinFirst && !ready_.load(std::memory_order_acquire) &&
      !someoneSpins.exchange(true, std::memory_order_acquire)) {
    auto until = std::chrono::steady_clock::now() + kSpin;
    while (!ready_.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < until) {
      for (int i = 0; i < 16 && !ready_.load(std::memory_order_relaxed); ++i) cpuRelax();
    }
    someoneSpins.store(false, std::memory_order_release);
  }
  std::unique_lock<std::mutex> lock(mutex_);
  answered_.wait(lock, [this] { return set_; });
  return std::move(status_);
}

}  // namespace fencekeeper
