#include "sidecar/logging/event_log.h"

#include <spdlog/spdlog.h>

namespace fencekeeper::logging {

using engine::LeaseEventKind;

void EventLog::leaseEvent(const engine::LeaseEvent& e) {
  switch (e.kind) {
    case LeaseEventKind::kGranted:
      spdlog::info("grant lock={} token={} client={} owner='{}' ttl={}ms waited={}ms", e.lock,
                   e.token, e.client, e.ownerLabel, e.ttl.count(), e.waited.count());
      break;
    case LeaseEventKind::kRenewFailed:
      spdlog::info("renew failed lock={} token={} client={} error={} reason={}", e.lock, e.token,
                   e.client, engine::errorName(e.error), engine::lossReasonName(e.reason));
      break;
    case LeaseEventKind::kLost:
      spdlog::warn("lost lock={} token={} client={} reason={} held={}ms", e.lock, e.token, e.client,
                   engine::lossReasonName(e.reason), e.held.count());
      break;
    case LeaseEventKind::kReleased:
      spdlog::info("release lock={} token={} client={} held={}ms{}{}", e.lock, e.token, e.client,
                   e.held.count(), e.how.empty() ? "" : " how=", e.how);
      break;
  }
}

}  // namespace fencekeeper::logging
