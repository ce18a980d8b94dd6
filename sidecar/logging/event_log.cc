#include "sidecar/logging/event_log.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include "sidecar/engine/lock_name.h"
#include "sidecar/logging/line_fields.h"

namespace fencekeeper::logging {

using engine::LeaseEventKind;

namespace {

LineFields leaseFields(const engine::LeaseEvent& e) {
  return {engine::leaseEventName(e.kind),
          {{"lock", e.lock},
           {"token", e.token},
           {"client_pid", int64_t{e.clientPid}},
           {"client_uid", uint64_t{e.clientUid}},
           {"connection", e.connection},
           {"owner", e.ownerLabel}}};
}

int64_t ms(Millis d) { return d.count(); }

// As the RPC layer names a peer in its own lines (Peer::describe).
std::string clientOf(const engine::LeaseEvent& e) {
  return fmt::format("pid {} uid {} conn {}", e.clientPid, e.clientUid, e.connection);
}

// The owner label is the client's to choose: in the text line, a newline or quote in it must not
// forge a line or end the quotes (the JSON field has it whole).
std::string quotable(std::string_view label) { return engine::printable(label, label.size()); }

}  // namespace

void EventLog::leaseEvent(const engine::LeaseEvent& e) {
  // Two of these a lock cycle: nothing is built for a level that is not logged.
  if (!spdlog::should_log(e.kind == LeaseEventKind::kLost ? spdlog::level::warn : spdlog::level::info))
    return;
  LineFields line = leaseFields(e);
  auto& fields = line.fields;
  switch (e.kind) {
    case LeaseEventKind::kGranted:
    {
      fields.push_back({"ttl_ms", ms(e.ttl)});
      fields.push_back({"waited_ms", ms(e.waited)});
      // Exclusive leases say nothing of their mode: the line every log reader knows.
      std::string mode;
      if (e.mode != engine::LockMode::kExclusive) {
        mode = e.mode == engine::LockMode::kPermits ? "permits/" + std::to_string(e.permits)
                                                    : engine::lockModeName(e.mode);
        fields.push_back({"mode", mode});
      }
      logWithFields(spdlog::level::info, line,
                    fmt::format("grant lock={} token={} client={} owner='{}' ttl={}ms waited={}ms{}{}",
                                e.lock, e.token, clientOf(e), quotable(e.ownerLabel), ms(e.ttl),
                                ms(e.waited), mode.empty() ? "" : " mode=", mode));
      break;
    }
    case LeaseEventKind::kRenewFailed:
      fields.push_back({"error", engine::errorName(e.error)});
      fields.push_back({"reason", engine::lossReasonName(e.reason)});
      logWithFields(
          spdlog::level::info, line,
          fmt::format("renew failed lock={} token={} client={} error={} reason={}", e.lock, e.token,
                      clientOf(e), engine::errorName(e.error), engine::lossReasonName(e.reason)));
      break;
    case LeaseEventKind::kLost:
      fields.push_back({"reason", engine::lossReasonName(e.reason)});
      fields.push_back({"held_ms", ms(e.held)});
      logWithFields(spdlog::level::warn, line,
                    fmt::format("lost lock={} token={} client={} reason={} held={}ms", e.lock,
                                e.token, clientOf(e), engine::lossReasonName(e.reason), ms(e.held)));
      break;
    case LeaseEventKind::kReleased:
      fields.push_back({"held_ms", ms(e.held)});
      if (!e.how.empty()) fields.push_back({"how", e.how});
      logWithFields(spdlog::level::info, line,
                    fmt::format("release lock={} token={} client={} held={}ms{}{}", e.lock, e.token,
                                clientOf(e), ms(e.held), e.how.empty() ? "" : " how=", e.how));
      break;
  }
}

void EventLog::sessionState(zk::SessionState state) {
  std::string_view name = zk::sessionStateName(state);
  logWithFields(spdlog::level::info, {"session_state", {{"state", name}}},
                fmt::format("session state={}", name));
}

void EventLog::vouchingLapsed() {
  logWithFields(spdlog::level::warn, {"vouching_lapsed", {}},
                "vouching lapsed: every lease held is lost (session uncertain)");
}

}  // namespace fencekeeper::logging
