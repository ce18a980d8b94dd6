// Decides how long this sidecar can vouch that its ZooKeeper session is alive.
//
// The C client exposes no ping replies, so the guard sends its own heartbeat, a sync (it goes
// through the leader), about every sessionTimeout/4. With `sent` the send time of the answered
// heartbeat before the most recent answered one (a follower hands session touches to the leader
// only later):
//     safeUntil = sent + negotiatedTimeout * (1 - 0.002) - margin
// Past safeUntil nothing may be granted, renewed or called valid: the session may be gone and
// another sidecar may hold our locks. Runs on the loop thread.
#pragma once

#include <functional>

#include "sidecar/common/clock.h"
#include "sidecar/zk/zk_client.h"

namespace fencekeeper::engine {

class SessionGuard {
 public:
  // `onUnsafe` runs when safeUntil passes without a newer heartbeat; `onSafe` when vouching
  // becomes possible again (after a connect, or after an unsafe spell).
  SessionGuard(zk::Client& zk, Timer& timer, Millis margin, std::function<void()> onUnsafe,
               std::function<void()> onSafe);
  ~SessionGuard();

  // The engine forwards every session state change here.
  void onSessionState(zk::SessionState state);

  bool safe() const { return timer_.now() < safeUntil_; }
  // Runs the unsafe transition now if safeUntil has passed and its timer has not run yet, so that
  // a loss is final even if a late heartbeat extends safeUntil before that timer fires.
  void noticeExpiry();
  TimePoint safeUntil() const { return safeUntil_; }
  Millis safeFor() const;

 private:
  void sendHeartbeat();
  void onAnswered(uint64_t epoch, TimePoint sentAt, zk::Code code);
  void extend(TimePoint until);
  void scheduleExpiry();

  zk::Client& zk_;
  Timer& timer_;
  const Millis margin_;
  std::function<void()> onUnsafe_;
  std::function<void()> onSafe_;

  uint64_t epoch_ = 0;  // bumped per session: answers of an older session do not count
  bool inFlight_ = false;
  int answeredThisEpoch_ = 0;
  TimePoint latestAnsweredSend_{};
  TimePoint safeUntil_{};
  bool wasSafe_ = false;
  uint64_t heartbeatTimer_ = 0;
  uint64_t expiryTimer_ = 0;
};

}  // namespace fencekeeper::engine
