// What the engine tells the rest of the sidecar about leases and its session: one call per state
// change, on the loop thread. The event log (one line per lease event, text or JSON), the
// metrics and the shared-memory lease table are observers; the engine itself logs no lease event.
// A loss or release is told before the engine deletes the node, answers, or calls the holder.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "sidecar/engine/lease_types.h"
#include "sidecar/zk/zk_client.h"

namespace fencekeeper::engine {

enum class LeaseEventKind {
  kGranted,      // `waited`: from the acquire to the grant; `ttl`
  kRenewFailed,  // a renew (or token) of a lease no longer held: `error`
  kLost,         // `reason`, `held`
  kReleased,     // `held`; `how`: "" (release()), "dropped" (capability or connection gone),
                 // "sidecar shutting down"
};
const char* leaseEventName(LeaseEventKind kind);

struct LeaseEvent {
  LeaseEventKind kind = LeaseEventKind::kGranted;
  LeaseId id = 0;
  std::string_view lock;
  uint64_t token = 0;
  int32_t clientPid = 0;
  uint32_t clientUid = 0;
  uint64_t connection = 0;
  std::string_view ownerLabel;
  Millis ttl{0};
  Millis waited{0};
  Millis held{0};
  TimePoint deadline{};  // the lease's TTL deadline (CLOCK_BOOTTIME), while held
  LossReason reason = LossReason::kTtlExpired;
  LeaseError error = LeaseError::kOk;
  std::string_view how;
  LockMode mode = LockMode::kExclusive;
  uint32_t permits = 0;
};

class EngineObserver {
 public:
  virtual ~EngineObserver() = default;
  virtual void leaseEvent(const LeaseEvent&) {}
  // A renew moved a held lease's TTL deadline; before the renew is answered.
  virtual void leaseRenewed(LeaseId, TimePoint /*deadline*/) {}
  virtual void sessionState(zk::SessionState) {}
  // The session could no longer be vouched for (every held lease is lost with it).
  virtual void vouchingLapsed() {}
  // How long the SessionGuard vouches for the session moved: later after a heartbeat, 0 at once
  // when it can vouch for nothing (lapse, expiry). Never later than what the guard vouches for.
  virtual void vouchedUntil(TimePoint /*safeUntil*/) {}
  virtual void heartbeatAnswered(std::chrono::microseconds /*roundTrip*/) {}
};

// Calls every observer in turn; the sidecar wires the event log and the metrics through it.
class ObserverList final : public EngineObserver {
 public:
  void add(EngineObserver& observer) { observers_.push_back(&observer); }
  void leaseEvent(const LeaseEvent& e) override {
    for (auto* o : observers_) o->leaseEvent(e);
  }
  void leaseRenewed(LeaseId id, TimePoint deadline) override {
    for (auto* o : observers_) o->leaseRenewed(id, deadline);
  }
  void sessionState(zk::SessionState s) override {
    for (auto* o : observers_) o->sessionState(s);
  }
  void vouchingLapsed() override {
    for (auto* o : observers_) o->vouchingLapsed();
  }
  void vouchedUntil(TimePoint safeUntil) override {
    for (auto* o : observers_) o->vouchedUntil(safeUntil);
  }
  void heartbeatAnswered(std::chrono::microseconds rtt) override {
    for (auto* o : observers_) o->heartbeatAnswered(rtt);
  }

 private:
  std::vector<EngineObserver*> observers_;  // not owned: main() owns them, and outlives the engine
};

}  // namespace fencekeeper::engine
