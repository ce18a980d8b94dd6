#include "sidecar/engine/session_guard.h"

#include <spdlog/spdlog.h>

namespace fencekeeper::engine {

namespace {
// The session timeout is measured on the server's clock, the deadline on ours: allow for the two
// clocks running at rates up to 0.2% apart.
constexpr double kClockRateAllowance = 0.002;
}  // namespace

SessionGuard::SessionGuard(zk::Client& zk, Timer& timer, Millis margin,
                           std::function<void()> onUnsafe, std::function<void()> onSafe)
    : zk_(zk),
      timer_(timer),
      margin_(margin),
      onUnsafe_(std::move(onUnsafe)),
      onSafe_(std::move(onSafe)) {
  if (zk_.sessionState() == zk::SessionState::kConnected)
    onSessionState(zk::SessionState::kConnected);
}

SessionGuard::~SessionGuard() {
  timer_.cancel(heartbeatTimer_);
  timer_.cancel(expiryTimer_);
}

Millis SessionGuard::safeFor() const {
  auto left = std::chrono::duration_cast<Millis>(safeUntil_ - timer_.now());
  return left.count() > 0 ? left : Millis(0);
}

void SessionGuard::onSessionState(zk::SessionState state) {
  if (state == zk::SessionState::kExpired) {
    // A new session proves nothing about the old one, and the old one is gone anyway.
    ++epoch_;
    answeredThisEpoch_ = 0;
    inFlight_ = false;
    safeUntil_ = TimePoint{};
    timer_.cancel(heartbeatTimer_);
    heartbeatTimer_ = 0;
    if (wasSafe_) {
      wasSafe_ = false;
      onUnsafe_();
    }
  } else if (state == zk::SessionState::kConnected) {
    // Heartbeat at once: two answers are needed before a grant.
    if (!inFlight_) sendHeartbeat();
  }
  // kConnecting: the session may live on. Heartbeats fail until it is back; safeUntil runs out.
}

void SessionGuard::sendHeartbeat() {
  timer_.cancel(heartbeatTimer_);
  heartbeatTimer_ = 0;
  if (zk_.sessionState() != zk::SessionState::kConnected) return;  // resumed on kConnected
  inFlight_ = true;
  TimePoint sentAt = timer_.now();
  uint64_t epoch = epoch_;
  zk_.sync("/", [this, epoch, sentAt](zk::Code code) { onAnswered(epoch, sentAt, code); });
}

void SessionGuard::onAnswered(uint64_t epoch, TimePoint sentAt, zk::Code code) {
  if (epoch != epoch_) return;
  inFlight_ = false;
  if (code == zk::Code::kOk) {
    if (answeredThisEpoch_ > 0) {
      Millis timeout(zk_.negotiatedTimeoutMs());
      auto vouched = std::chrono::duration_cast<TimePoint>(timeout * (1.0 - kClockRateAllowance));
      extend(latestAnsweredSend_ + vouched - margin_);
    }
    ++answeredThisEpoch_;
    latestAnsweredSend_ = sentAt;
    spdlog::trace(
        "heartbeat answered after {} us; safe for {} ms",
        std::chrono::duration_cast<std::chrono::microseconds>(timer_.now() - sentAt).count(),
        safeFor().count());
  }
  if (code != zk::Code::kOk) spdlog::debug("heartbeat failed: {}", zk::codeName(code));
  // While nothing can be vouched for (a new session, or back from a cut), heartbeat again at once.
  if (code == zk::Code::kOk && !safe()) return sendHeartbeat();
  Millis interval(std::max(1, zk_.negotiatedTimeoutMs() / 4));
  TimePoint next =
      std::max(sentAt + interval, timer_.now() + Millis(code == zk::Code::kOk ? 0 : 50));
  heartbeatTimer_ = timer_.schedule(next, [this] {
    heartbeatTimer_ = 0;
    if (!inFlight_) sendHeartbeat();
  });
}

void SessionGuard::noticeExpiry() {
  if (safe() || !wasSafe_) return;
  wasSafe_ = false;
  spdlog::warn(
      "zookeeper session 0x{:x} can no longer be vouched for: no heartbeat answered "
      "in time",
      zk_.sessionId());
  onUnsafe_();
}

void SessionGuard::extend(TimePoint until) {
  noticeExpiry();  // an extension must not skip over a lapse: leases granted before it are lost
  if (until <= safeUntil_) return;
  safeUntil_ = until;
  scheduleExpiry();
  if (!wasSafe_ && safe()) {
    wasSafe_ = true;
    spdlog::info("zookeeper session 0x{:x} vouched for {} ms", zk_.sessionId(), safeFor().count());
    onSafe_();
  }
}

void SessionGuard::scheduleExpiry() {
  timer_.cancel(expiryTimer_);
  expiryTimer_ = timer_.schedule(safeUntil_, [this] {
    expiryTimer_ = 0;
    noticeExpiry();
  });
}

}  // namespace fencekeeper::engine
