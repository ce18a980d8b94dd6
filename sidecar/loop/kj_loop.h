// The sidecar's event loop glue: an Executor that wakes the KJ loop from other threads (an
// eventfd it watches), and a Timer on the loop's kj::Timer. Both live on the loop thread.
#pragma once

#include <kj/async-io.h>
#include <kj/async-unix.h>
#include <kj/async.h>

#include <deque>
#include <memory>
#include <mutex>

#include "sidecar/common/clock.h"
#include "sidecar/common/executor.h"

namespace fencekeeper {

class KjLoopExecutor final : public Executor {
 public:
  explicit KjLoopExecutor(kj::UnixEventPort& port);
  ~KjLoopExecutor() override;
  void post(std::function<void()> fn) override;  // thread-safe

 private:
  kj::Promise<void> drainLoop();

  int eventFd_;
  // KJ objects have throwing destructors; held by pointer so this class's destructor need not.
  std::unique_ptr<kj::UnixEventPort::FdObserver> observer_;
  std::unique_ptr<kj::Promise<void>> draining_;
  std::mutex mutex_;
  std::deque<std::function<void()>> queue_;
};

// Deadlines are CLOCK_BOOTTIME (bootTimeNow()); the wait is armed on KJ's monotonic timer.
class KjTimer final : public Timer, public kj::TaskSet::ErrorHandler {
 public:
  explicit KjTimer(kj::Timer& timer)
      : timer_(timer), tasks_(std::make_unique<kj::TaskSet>(*this)) {}
  ~KjTimer() override;
  TimePoint now() const override { return bootTimeNow(); }
  uint64_t schedule(TimePoint when, std::function<void()> fn) override;
  void cancel(uint64_t id) override { queue_.remove(id); }

 private:
  void arm();
  void taskFailed(kj::Exception&& exception) override;

  kj::Timer& timer_;
  TimerQueue queue_;
  // One wake-up is armed for the earliest deadline; a wake-up superseded by an earlier one still
  // runs, sees its generation is stale, and does nothing (cheaper than cancelling promises).
  TimePoint armedFor_ = TimePoint::max();
  uint64_t armedGeneration_ = 0;
  std::unique_ptr<kj::TaskSet> tasks_;
};

}  // namespace fencekeeper
