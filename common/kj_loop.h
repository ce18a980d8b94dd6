// Event loop glue: an Executor that wakes a KJ loop from other threads (an eventfd it watches, a
// std::mutex-guarded queue: visible to ThreadSanitizer, unlike KJ's own cross-thread executor),
// and a Timer on the loop's kj::Timer. Both live on the loop thread. The sidecar and the client
// library's I/O thread use them.
#pragma once

#include <kj/async-io.h>
#include <kj/async-unix.h>
#include <kj/async.h>

#include <vector>
#include <memory>
#include <mutex>
#include <optional>

#include "common/clock.h"
#include "common/executor.h"

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
  std::vector<std::function<void()>> queue_;
  std::vector<std::function<void()>> running_;  // the batch being run, loop thread only
};

// Deadlines are CLOCK_BOOTTIME (bootTimeNow()), queued in a TimerQueue; one KJ timer is armed for
// the earliest. A cancelled entry costs nothing after cancel(): with one KJ task per entry, every
// renew left its old TTL timer's task (about 300 bytes) alive until that deadline.
class KjTimer final : public Timer {
 public:
  explicit KjTimer(kj::Timer& timer);
  ~KjTimer() noexcept override;
  TimePoint now() const override { return bootTimeNow(); }
  uint64_t schedule(TimePoint when, std::function<void()> fn) override;
  void cancel(uint64_t id) override { queue_.remove(id); }

 private:
  // Waits for the earliest deadline (or an earlier one scheduled meanwhile), runs what is due,
  // and waits again.
  kj::Promise<void> wakeLoop();

  kj::Timer& timer_;
  TimerQueue queue_;
  std::optional<TimePoint> armedFor_;  // the deadline the running wait ends at (none: no entries)
  kj::Own<kj::PromiseFulfiller<void>> wakeEarly_;
  std::unique_ptr<kj::Promise<void>> waking_;
};

}  // namespace fencekeeper
