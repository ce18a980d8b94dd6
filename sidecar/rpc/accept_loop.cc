#include "sidecar/rpc/accept_loop.h"

#include <spdlog/spdlog.h>

#include <memory>

namespace fencekeeper::rpc {

namespace {

long long msBetween(TimePoint from, TimePoint to) {
  return std::chrono::duration_cast<Millis>(to - from).count();
}

}  // namespace

AcceptLoop::AcceptLoop(kj::ConnectionReceiver& receiver, Timer& timer,
                       kj::Function<void(kj::AuthenticatedStream)> serve)
    : receiver_(receiver), timer_(timer), serve_(kj::mv(serve)) {
  running_ = acceptNext().eagerlyEvaluate([](kj::Exception&& e) {
    spdlog::critical("accept loop failed: {}", e.getDescription().cStr());
  });
}

AcceptLoop::~AcceptLoop() noexcept(false) = default;

kj::Promise<void> AcceptLoop::acceptNext() {
  // KJ's accept() tries accept(2) at once and throws its failure rather than rejecting the
  // promise; a promise means the socket has nothing to accept yet: it accepts again.
  kj::Promise<kj::AuthenticatedStream> next = nullptr;
  KJ_IF_MAYBE (e, kj::runCatchingExceptions([&] { next = receiver_.acceptAuthenticated(); })) {
    return retryAfter(kj::mv(*e));
  }
  recovered();
  return next.then(
      [this](kj::AuthenticatedStream stream) {
        serve_(kj::mv(stream));
        return acceptNext();
      },
      [this](kj::Exception&& e) { return retryAfter(kj::mv(e)); });
}

void AcceptLoop::recovered() {
  if (accepting_) return;
  spdlog::info("accepting again after {} failed accept() calls over {} ms", streakFailures_,
               msBetween(streakStarted_, timer_.now()));
  accepting_ = true;
  streakFailures_ = 0;
  backoff_ = kFirstBackoff;
}

kj::Promise<void> AcceptLoop::retryAfter(kj::Exception&& error) {
  ++failures_;
  ++streakFailures_;
  auto now = timer_.now();
  if (accepting_) {
    accepting_ = false;
    streakStarted_ = lastReminder_ = now;
    spdlog::error(
        "accept() failed: {}; new clients cannot connect, retrying from {} ms up to {} ms",
        error.getDescription().cStr(), kFirstBackoff.count(), kMaxBackoff.count());
  } else if (now - lastReminder_ >= kReminderEvery) {
    lastReminder_ = now;
    spdlog::error("accept() still failing after {} attempts over {} ms: {}", streakFailures_,
                  msBetween(streakStarted_, now), error.getDescription().cStr());
  }
  auto delay = backoff_;
  backoff_ = std::min(backoff_ * 2, kMaxBackoff);
  return sleep(delay).then([this] { return acceptNext(); });
}

kj::Promise<void> AcceptLoop::sleep(Millis delay) {
  auto paf = kj::newPromiseAndFulfiller<void>();
  // The timer takes a copyable callback; dropping the promise cancels the entry.
  auto fulfiller = std::make_shared<kj::Own<kj::PromiseFulfiller<void>>>(kj::mv(paf.fulfiller));
  auto id = timer_.schedule(timer_.now() + delay, [fulfiller] { (*fulfiller)->fulfill(); });
  return paf.promise.attach(kj::defer([this, id] { timer_.cancel(id); }));
}

}  // namespace fencekeeper::rpc
