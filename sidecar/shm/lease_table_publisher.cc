#include "sidecar/shm/lease_table_publisher.h"

namespace fencekeeper::shm {

namespace lt = lease_table;

LeaseTablePublisher::LeaseTablePublisher(LeaseTableWriter& table, TimePoint safeUntil)
    : table_(table) {
  vouchedUntil(safeUntil);
}

void LeaseTablePublisher::leaseEvent(const engine::LeaseEvent& e) {
  switch (e.kind) {
    case engine::LeaseEventKind::kGranted:
      table_.hold(e.id, e.token, e.deadline, e.lock);  // full: no slot, the client falls back
      return;
    case engine::LeaseEventKind::kLost:
      table_.end(e.id, lt::SlotState::kLost);
      return;
    case engine::LeaseEventKind::kReleased:
      table_.end(e.id, lt::SlotState::kReleased);
      return;
    case engine::LeaseEventKind::kRenewFailed:
      return;
  }
}

void LeaseTablePublisher::leaseRenewed(engine::LeaseId id, TimePoint deadline) {
  table_.renew(id, deadline);
}

void LeaseTablePublisher::sessionState(zk::SessionState state) {
  // The guard's own lapse follows, after the engine has lost every lease: vouch for none now.
  if (state == zk::SessionState::kExpired) {
    state_ = lt::SessionState::kExpired;
    table_.setSession(state_, TimePoint{});
  }
}

void LeaseTablePublisher::vouchedUntil(TimePoint safeUntil) {
  if (safeUntil.count() > 0) {
    state_ = lt::SessionState::kVouched;
  } else if (state_ != lt::SessionState::kExpired) {
    state_ = lt::SessionState::kUncertain;
  }
  table_.setSession(state_, safeUntil);
}

}  // namespace fencekeeper::shm
