// The log's lease and session events: one line per lease event (grant, renew failure, loss with
// its reason, release) at info, with lock, token and client.
#pragma once

#include "sidecar/engine/engine_events.h"

namespace fencekeeper::logging {

class EventLog final : public engine::EngineObserver {
 public:
  void leaseEvent(const engine::LeaseEvent& e) override;
};

}  // namespace fencekeeper::logging
