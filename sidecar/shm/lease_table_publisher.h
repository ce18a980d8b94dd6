// Keeps the shared-memory lease table in step with the engine: an EngineObserver, so it hears of
// each change on the loop thread before the engine acts on it (a loss or release is in the table
// before the node is deleted, release answered or the holder's watcher called; a renew's deadline
// before the renew is answered), and safeUntil exactly as the SessionGuard moves it.
#pragma once

#include "sidecar/engine/engine_events.h"
#include "sidecar/shm/lease_table_writer.h"

namespace fencekeeper::shm {

class LeaseTablePublisher final : public engine::EngineObserver {
 public:
  // `safeUntil`: what the engine vouches for now (0: nothing), for a publisher added late.
  LeaseTablePublisher(LeaseTableWriter& table, TimePoint safeUntil);

  void leaseEvent(const engine::LeaseEvent& e) override;
  void leaseRenewed(engine::LeaseId id, TimePoint deadline) override;
  void sessionState(zk::SessionState state) override;
  void vouchedUntil(TimePoint safeUntil) override;

 private:
  LeaseTableWriter& table_;
  lease_table::SessionState state_ = lease_table::SessionState::kUnknown;
};

}  // namespace fencekeeper::shm
