// Decides how long this sidecar can vouch that its ZooKeeper session is alive.
//
// The C client exposes no ping replies, so the guard sends its own heartbeat, a sync (it goes
// through the leader), every Q = T/4 (T: the negotiated session timeout), one at a time. Two
// rules extend safeUntil = anchor + T * (1 - 0.002) - margin (docs/failure-modes.md argues both):
//   1. On one connection, an answered heartbeat anchors the previous answered one, if its own
//      round trip was at most Q (a slower answer may come from a leader that woke from a freeze
//      before collecting the previous touch from its follower: it proves nothing).
//   2. When a connection of the same session succeeds again while the session is still vouched
//      for (the server revalidated it with the leader: a touch there, which counts only for a
//      session not yet due), every heartbeat that completed before, answered or failed with
//      connection loss, was sent before that touch: the latest one anchors at once.
// Past safeUntil nothing may be granted, renewed or called valid: the session may be gone and
// another sidecar may hold our locks. A lapse is final for what was held before it, and a
// heartbeat sent before it anchors nothing after it: vouching resumes from evidence gathered
// after the lapse (one outage, one lapse). New grants
// also need safeFor() >= the grant floor, so a lease never starts with a few ms of vouching left.
//
// When a heartbeat stays unanswered for T/2, the guard asks the client to move the session to
// another server.
//
// Runs on the loop thread; owned by the engine.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "common/clock.h"
#include "sidecar/zk/zk_client.h"

namespace fencekeeper::engine {

class SessionGuard {
 public:
  // `onUnsafe` runs when safeUntil passes without a newer heartbeat; `onGrantable` after every
  // extension that leaves safeFor() at or above the grant floor. `minGrantVouch` 0: T/4.
  SessionGuard(zk::Client& zk, Timer& timer, Millis margin, Millis minGrantVouch,
               std::function<void()> onUnsafe, std::function<void()> onGrantable);
  ~SessionGuard();

  // Told the round trip of every answered heartbeat (metrics).
  void setHeartbeatListener(std::function<void(std::chrono::microseconds)> listener) {
    heartbeatListener_ = std::move(listener);
  }
  // Told safeUntil whenever it moves: later after an extension, 0 at a lapse or an expiry
  // (before onUnsafe runs).
  void setVouchListener(std::function<void(TimePoint)> listener) {
    vouchListener_ = std::move(listener);
  }
  // The engine forwards every session state change here.
  void onSessionState(zk::SessionState state);

  bool safe() const { return timer_.now() < safeUntil_; }
  // Safe for at least the grant floor: a new lease may be granted.
  bool grantable() const { return safe() && safeFor() >= grantFloor(); }
  // Runs the unsafe transition now if safeUntil has passed and its timer has not run yet, so that
  // a loss is final even if a late heartbeat extends safeUntil before that timer fires.
  void noticeExpiry();
  TimePoint safeUntil() const { return safeUntil_; }
  Millis safeFor() const;
  Millis grantFloor() const;

 private:
  Millis spacing() const;  // Q
  void sendHeartbeat();
  void scheduleHeartbeat(TimePoint at);
  void onAnswered(uint64_t epoch, uint64_t connection, TimePoint sentAt, zk::Code code);
  void checkSilence(uint64_t heartbeat, TimePoint sentAt);
  void anchor(TimePoint sentAt);
  void extend(TimePoint until);
  void scheduleExpiry();

  zk::Client& zk_;
  Timer& timer_;
  const Millis margin_;
  const Millis minGrantVouch_;
  std::function<void()> onUnsafe_;
  std::function<void()> onGrantable_;
  std::function<void(std::chrono::microseconds)> heartbeatListener_;
  std::function<void(TimePoint)> vouchListener_;

  uint64_t epoch_ = 0;       // bumped per session: answers of an older session do not count
  uint64_t connection_ = 0;  // bumped per kConnected: rule 1 pairs answers of one connection
  uint64_t heartbeats_ = 0;  // heartbeats sent, numbering them
  bool inFlight_ = false;
  // Send time of the latest heartbeat sent and answered on this connection (rule 1).
  std::optional<TimePoint> lastAnswered_;
  // Send time of the latest heartbeat of this session that completed (rule 2).
  std::optional<TimePoint> lastCompleted_;
  TimePoint safeUntil_{};
  bool wasSafe_ = false;
  // When the latest lapse was noticed. A pause past safeUntil (a frozen sidecar) ends with the
  // answer of a heartbeat sent before it; anchored, it vouched again for 10-277 ms from a send
  // before the pause, then lapsed a second time.
  TimePoint lapsedAt_{};
  uint64_t heartbeatTimer_ = 0;
  uint64_t silenceTimer_ = 0;
  uint64_t expiryTimer_ = 0;
  // Heartbeat answers may come after the guard is gone (the client outlives the engine).
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace fencekeeper::engine
