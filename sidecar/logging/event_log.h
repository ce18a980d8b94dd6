// The log's lease and session events: one line per lease event (grant, renew failure, loss with
// its reason, release) at info (a loss at warn), with lock, token and client, and one per session
// state change and vouching lapse. The text format writes the fields as key=value in the
// message; the JSON format also as members of the line's object (line_fields.h).
#pragma once

#include "sidecar/engine/engine_events.h"

namespace fencekeeper::logging {

class EventLog final : public engine::EngineObserver {
 public:
  void leaseEvent(const engine::LeaseEvent& e) override;
  void sessionState(zk::SessionState state) override;
  void vouchingLapsed() override;
};

}  // namespace fencekeeper::logging
