#include "common/kj_loop.h"

#include <kj/debug.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <stdexcept>

namespace fencekeeper {

KjLoopExecutor::KjLoopExecutor(kj::UnixEventPort& port)
    : eventFd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (eventFd_ < 0) throw std::runtime_error("eventfd() failed");
  observer_ = std::make_unique<kj::UnixEventPort::FdObserver>(
      port, eventFd_, kj::UnixEventPort::FdObserver::OBSERVE_READ);
  draining_ = std::make_unique<kj::Promise<void>>(drainLoop().eagerlyEvaluate(
      [](kj::Exception&& e) { KJ_LOG(ERROR, "loop executor failed", e); }));
}

KjLoopExecutor::~KjLoopExecutor() {
  draining_.reset();
  observer_.reset();
  close(eventFd_);
}

void KjLoopExecutor::post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(fn));
    // The loop takes the whole queue after each wake: only the first of a batch must wake it.
    if (queue_.size() > 1) return;
  }
  uint64_t one = 1;
  ssize_t n = write(eventFd_, &one, sizeof one);
  (void)n;  // EAGAIN means the counter is already non-zero: the loop will wake anyway
}

kj::Promise<void> KjLoopExecutor::drainLoop() {
  return observer_->whenBecomesReadable().then([this] {
    uint64_t count;
    ssize_t n = read(eventFd_, &count, sizeof count);
    (void)n;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      running_.swap(queue_);
    }
    for (auto& fn : running_) fn();
    running_.clear();  // keeps its capacity: a wake allocates nothing
    return drainLoop();
  });
}

KjTimer::KjTimer(kj::Timer& timer) : timer_(timer) {
  waking_ = std::make_unique<kj::Promise<void>>(wakeLoop().eagerlyEvaluate(
      [](kj::Exception&& e) { KJ_LOG(ERROR, "timer callback failed", e); }));
}

KjTimer::~KjTimer() noexcept { waking_.reset(); }

uint64_t KjTimer::schedule(TimePoint when, std::function<void()> fn) {
  uint64_t id = queue_.add(when, std::move(fn));
  if (!armedFor_ || when < *armedFor_) {
    armedFor_ = when;
    if (wakeEarly_ && wakeEarly_->isWaiting()) wakeEarly_->fulfill();
  }
  return id;
}

kj::Promise<void> KjTimer::wakeLoop() {
  auto early = kj::newPromiseAndFulfiller<void>();
  wakeEarly_ = kj::mv(early.fulfiller);
  kj::Promise<void> wait = kj::mv(early.promise);
  armedFor_ = queue_.nextDeadline();
  if (armedFor_) {
    auto delay = std::max(*armedFor_ - now(), TimePoint(0));
    wait = timer_.afterDelay(delay.count() * kj::NANOSECONDS).exclusiveJoin(kj::mv(wait));
  }
  // KJ's timer and CLOCK_BOOTTIME agree on rates, not on rounding: runDue() never fires early,
  // and what a slightly early wake leaves is waited for again.
  return wait.then([this] {
    // A callback that throws is logged; the rest of what is due runs on the next wake.
    KJ_IF_MAYBE (e, kj::runCatchingExceptions([this] { queue_.runDue(now()); })) {
      KJ_LOG(ERROR, "timer callback failed", *e);
    }
    return wakeLoop();
  });
}

}  // namespace fencekeeper
