// Event loop glue: an Executor that wakes a KJ loop from other threads (an eventfd it watches, a
// std::mutex-guarded queue: visible to ThreadSanitizer, unlike KJ's own cross-thread executor),
// and a Timer on the loop's kj::Timer. Both live on the loop thread. The sidecar and the client
// library's I/O thread use them.
#pragma once

#include <kj/async-io.h>
#include <kj/async-unix.h>
#include <kj/async.h>

#include <deque>
#include <map>
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

// Deadlines are CLOCK_BOOTTIME (bootTimeNow()); each is armed on KJ's monotonic timer as its own
// task. A cancelled entry's task still wakes up once and finds nothing to run.
class KjTimer final : public Timer, public kj::TaskSet::ErrorHandler {
 public:
  explicit KjTimer(kj::Timer& timer)
      : timer_(timer), tasks_(std::make_unique<kj::TaskSet>(*this)) {}
  ~KjTimer() override;
  TimePoint now() const override { return bootTimeNow(); }
  uint64_t schedule(TimePoint when, std::function<void()> fn) override;
  void cancel(uint64_t id) override { pending_.erase(id); }

 private:
  void arm(uint64_t id, TimePoint when);
  void taskFailed(kj::Exception&& exception) override;

  kj::Timer& timer_;
  uint64_t nextId_ = 1;
  std::map<uint64_t, std::function<void()>> pending_;
  std::unique_ptr<kj::TaskSet> tasks_;
};

}  // namespace fencekeeper
