#include "sidecar/engine/session_guard.h"

#include <spdlog/spdlog.h>

#include <memory>

namespace fencekeeper::engine {

namespace {
// The session timeout is measured on the server's clock, the deadline on ours: allow for the two
// clocks running at rates up to 0.2% apart.
constexpr double kClockRateAllowance = 0.002;
// Delay before a heartbeat that failed for another reason than a lost connection is tried again.
constexpr Millis kRetryDelay{50};

std::chrono::microseconds since(TimePoint then, TimePoint now) {
  return std::chrono::duration_cast<std::chrono::microseconds>(now - then);
}
}  // namespace

SessionGuard::SessionGuard(zk::Client& zk, Timer& timer, Millis margin, Millis minGrantVouch,
                           std::function<void()> onUnsafe, std::function<void()> onGrantable)
    : zk_(zk),
      timer_(timer),
      margin_(margin),
      minGrantVouch_(minGrantVouch),
      onUnsafe_(std::move(onUnsafe)),
      onGrantable_(std::move(onGrantable)) {
  if (zk_.sessionState() == zk::SessionState::kConnected)
    onSessionState(zk::SessionState::kConnected);
}

SessionGuard::~SessionGuard() {
  timer_.cancel(heartbeatTimer_);
  timer_.cancel(silenceTimer_);
  timer_.cancel(expiryTimer_);
}

Millis SessionGuard::safeFor() const {
  auto left = std::chrono::duration_cast<Millis>(safeUntil_ - timer_.now());
  return left.count() > 0 ? left : Millis(0);
}

Millis SessionGuard::spacing() const { return Millis(std::max(1, zk_.negotiatedTimeoutMs() / 4)); }

Millis SessionGuard::grantFloor() const {
  return minGrantVouch_.count() > 0 ? minGrantVouch_ : spacing();
}

void SessionGuard::onSessionState(zk::SessionState state) {
  if (state == zk::SessionState::kExpired) {
    // A new session proves nothing about the old one, and the old one is gone anyway.
    ++epoch_;
    inFlight_ = false;
    lastAnswered_.reset();
    lastCompleted_.reset();
    safeUntil_ = TimePoint{};
    timer_.cancel(heartbeatTimer_);
    timer_.cancel(silenceTimer_);
    heartbeatTimer_ = silenceTimer_ = 0;
    if (wasSafe_) {
      wasSafe_ = false;
      onUnsafe_();
    }
  } else if (state == zk::SessionState::kConnected) {
    ++connection_;
    lastAnswered_.reset();
    // Rule 2: a reconnect of this session revalidated it at the leader after every heartbeat
    // that completed before it was sent.
    if (lastCompleted_) anchor(*lastCompleted_);
    if (!inFlight_) sendHeartbeat();
  }
}

void SessionGuard::sendHeartbeat() {
  timer_.cancel(heartbeatTimer_);
  heartbeatTimer_ = 0;
  if (zk_.sessionState() != zk::SessionState::kConnected) return;  // resumed on kConnected
  inFlight_ = true;
  TimePoint sentAt = timer_.now();
  uint64_t epoch = epoch_, connection = connection_, heartbeat = ++heartbeats_;
  zk_.sync("/", [this, epoch, connection, sentAt](zk::Code code) {
    onAnswered(epoch, connection, sentAt, code);
  });
  timer_.cancel(silenceTimer_);
  silenceTimer_ = timer_.schedule(sentAt + spacing(), [this, heartbeat, sentAt] {
    silenceTimer_ = 0;
    checkSilence(heartbeat, sentAt);
  });
}

void SessionGuard::scheduleHeartbeat(TimePoint at) {
  timer_.cancel(heartbeatTimer_);
  heartbeatTimer_ = timer_.schedule(at, [this] {
    heartbeatTimer_ = 0;
    if (!inFlight_) sendHeartbeat();
  });
}

void SessionGuard::onAnswered(uint64_t epoch, uint64_t connection, TimePoint sentAt,
                              zk::Code code) {
  if (epoch != epoch_) return;
  inFlight_ = false;
  timer_.cancel(silenceTimer_);
  silenceTimer_ = 0;
  TimePoint now = timer_.now();
  if (code == zk::Code::kOk || zk::isAmbiguous(code)) {
    if (!lastCompleted_ || sentAt > *lastCompleted_) lastCompleted_ = sentAt;
  }
  if (code == zk::Code::kOk) {
    bool slow = now - sentAt > spacing();
    // One sent before the latest reconnect (the client may have queued it for the new
    // connection) pairs with nothing: its touch may have come later than its send time.
    if (connection == connection_) {
      if (lastAnswered_ && !slow) anchor(*lastAnswered_);
      lastAnswered_ = sentAt;
    }
    if (slow) {
      spdlog::info("heartbeat answered after {} ms: it anchors nothing",
                   since(sentAt, now).count() / 1000);
    }
    spdlog::trace("heartbeat answered after {} us; safe for {} ms", since(sentAt, now).count(),
                  safeFor().count());
  } else {
    spdlog::debug("heartbeat failed: {}", zk::codeName(code));
  }
  // As soon as the spacing allows: on a connection, heartbeats are at least Q apart (rule 1).
  Millis delay = code == zk::Code::kOk ? Millis(0) : kRetryDelay;
  scheduleHeartbeat(std::max(sentAt + spacing(), now + delay));
}

// A heartbeat unanswered for Q: ask for a plain read too. Unanswered both for T/2 in all: the
// server itself is silent (frozen or cut off), not just its leader; leave it for another one.
void SessionGuard::checkSilence(uint64_t heartbeat, TimePoint sentAt) {
  auto probe = std::make_shared<bool>(false);
  zk_.get("/", [probe](zk::GetResult result) { *probe = result.code == zk::Code::kOk; });
  silenceTimer_ = timer_.schedule(sentAt + 2 * spacing(), [this, heartbeat, sentAt, probe] {
    silenceTimer_ = 0;
    if (!inFlight_ || heartbeat != heartbeats_ || *probe) return;
    if (zk_.sessionState() != zk::SessionState::kConnected) return;  // the client moves already
    spdlog::warn("zookeeper server silent for {} ms (heartbeat and read unanswered): moving the "
                 "session 0x{:x} to another server",
                 since(sentAt, timer_.now()).count() / 1000, zk_.sessionId());
    zk_.leaveServer();
  });
}

void SessionGuard::anchor(TimePoint sentAt) {
  Millis timeout(zk_.negotiatedTimeoutMs());
  auto vouched = std::chrono::duration_cast<TimePoint>(timeout * (1.0 - kClockRateAllowance));
  extend(sentAt + vouched - margin_);
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
  }
  if (grantable()) onGrantable_();
}

void SessionGuard::scheduleExpiry() {
  timer_.cancel(expiryTimer_);
  expiryTimer_ = timer_.schedule(safeUntil_, [this] {
    expiryTimer_ = 0;
    noticeExpiry();
  });
}

}  // namespace fencekeeper::engine
