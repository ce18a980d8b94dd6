#include "sidecar/engine/session_guard.h"

#include <spdlog/spdlog.h>

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
  // At most half the negotiated timeout (the server may have cut the one asked for): right after
  // a heartbeat about 3/4 of it is vouched for, so a higher floor would hold every grant back.
  Millis half(zk_.negotiatedTimeoutMs() / 2);
  return minGrantVouch_.count() > 0 ? std::min(minGrantVouch_, half) : spacing();
}

void SessionGuard::onSessionState(zk::SessionState state) {
  if (state == zk::SessionState::kExpired) {
    // A new session proves nothing about the old one, and the old one is gone anyway.
    ++epoch_;
    inFlight_ = false;
    lastAnswered_.reset();
    lastCompleted_.reset();
    safeUntil_ = TimePoint{};
    if (vouchListener_) vouchListener_(TimePoint{});
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
    // that completed before it was sent. Only while still vouched for: the leader may answer a
    // revalidation as valid while it expires a session that is due (its tracker's race).
    noticeExpiry();
    if (lastCompleted_ && safe()) anchor(*lastCompleted_);
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
  zk_.sync("/",
           [this, alive = std::weak_ptr<bool>(alive_), epoch, connection, sentAt](zk::Code code) {
             if (alive.lock()) onAnswered(epoch, connection, sentAt, code);
           });
  timer_.cancel(silenceTimer_);
  silenceTimer_ = timer_.schedule(sentAt + 2 * spacing(), [this, heartbeat, sentAt] {
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
    if (heartbeatListener_) heartbeatListener_(since(sentAt, now));
  } else {
    spdlog::debug("heartbeat failed: {}", zk::codeName(code));
  }
  // As soon as the spacing allows: on a connection, heartbeats are at least Q apart (rule 1).
  Millis delay = code == zk::Code::kOk ? Millis(0) : kRetryDelay;
  scheduleHeartbeat(std::max(sentAt + spacing(), now + delay));
}

// A heartbeat unanswered for T/2: leave the server (a frozen one would hold the session until the
// client's own timeout, 2/3 of T). No plain read can tell a frozen server from a live follower
// whose leader is gone: the server answers a session's reads only after its pending sync.
void SessionGuard::checkSilence(uint64_t heartbeat, TimePoint sentAt) {
  if (!inFlight_ || heartbeat != heartbeats_) return;
  if (zk_.sessionState() != zk::SessionState::kConnected) return;  // the client moves already
  spdlog::warn("zookeeper session 0x{:x}: heartbeat unanswered for {} ms; leaving the server",
               zk_.sessionId(), since(sentAt, timer_.now()).count() / 1000);
  zk_.leaveServer();
}

void SessionGuard::anchor(TimePoint sentAt) {
  if (sentAt < lapsedAt_) return;
  Millis timeout(zk_.negotiatedTimeoutMs());
  auto vouched = std::chrono::duration_cast<TimePoint>(timeout * (1.0 - kClockRateAllowance));
  extend(sentAt + vouched - margin_);
}

void SessionGuard::noticeExpiry() {
  if (safe() || !wasSafe_) return;
  wasSafe_ = false;
  lapsedAt_ = timer_.now();
  spdlog::warn(
      "zookeeper session 0x{:x} can no longer be vouched for: no heartbeat answered "
      "in time",
      zk_.sessionId());
  if (vouchListener_) vouchListener_(TimePoint{});  // before the losses onUnsafe_ tells
  onUnsafe_();
}

void SessionGuard::extend(TimePoint until) {
  noticeExpiry();  // an extension must not skip over a lapse: leases granted before it are lost
  if (until <= safeUntil_) return;
  safeUntil_ = until;
  if (vouchListener_) vouchListener_(safeUntil_);
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
