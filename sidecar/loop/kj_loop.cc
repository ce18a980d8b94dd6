#include "sidecar/loop/kj_loop.h"

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
    std::deque<std::function<void()>> batch;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      batch.swap(queue_);
    }
    for (auto& fn : batch) fn();
    return drainLoop();
  });
}

uint64_t KjTimer::schedule(TimePoint when, std::function<void()> fn) {
  uint64_t id = nextId_++;
  pending_.emplace(id, std::move(fn));
  arm(id, when);
  return id;
}

void KjTimer::arm(uint64_t id, TimePoint when) {
  auto delay = std::max(when - now(), TimePoint(0));
  tasks_->add(timer_.afterDelay(delay.count() * kj::NANOSECONDS).then([this, id, when] {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;  // cancelled
    // KJ's timer and CLOCK_BOOTTIME agree on rates, not on rounding: never fire early.
    if (now() < when) return arm(id, when);
    auto fn = std::move(it->second);
    pending_.erase(it);
    fn();
  }));
}

KjTimer::~KjTimer() { tasks_.reset(); }

void KjTimer::taskFailed(kj::Exception&& e) { KJ_LOG(ERROR, "timer callback failed", e); }

}  // namespace fencekeeper
