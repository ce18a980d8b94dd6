#include "client_lib/cli/query_commands.h"

#include <csignal>
#include <cstdio>
#include <ctime>

#include "client_lib/cli/exit_codes.h"
#include "client_lib/cli/sidecar_errors.h"
#include "client_lib/cli/text_table.h"
#include "common/json_string.h"
#include "fencekeeper/client.h"

namespace fencekeeper {
namespace {

// `text` as a JSON string literal (quotes included), valid whatever bytes it holds.
std::string jsonText(const std::string& text) {
  std::string out;
  appendJsonString(text, out);
  return out;
}

std::string isoTime(int64_t unixMs) {
  time_t secs = static_cast<time_t>(unixMs / 1000);
  struct tm tm {};
  gmtime_r(&secs, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return std::string(buf) + "." + std::to_string(1000 + unixMs % 1000).substr(1) + "Z";
}

// One holder as JSON; `state` and `detail` are set by watches (a one-shot query has neither).
std::string holderJson(const std::string& name, const HolderInfo& info, const char* state,
                       const std::string& detail) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                ",\"held\":%s,\"token\":%llu,\"sinceUnixMs\":%lld,\"waiters\":%u,"
                "\"thisSidecar\":%s,\"foreign\":%s",
                info.held ? "true" : "false", static_cast<unsigned long long>(info.token),
                static_cast<long long>(info.sinceUnixMs), info.waiters,
                info.thisSidecar ? "true" : "false", info.foreign ? "true" : "false");
  std::string out = "{\"lock\":" + jsonText(name);
  if (state) out += std::string(",\"state\":\"") + state + "\"";
  out += buf;
  out +=
      ",\"owner\":" + jsonText(info.ownerLabel) + ",\"foreignNode\":" + jsonText(info.foreignNode);
  out += ",\"holders\":[";
  for (size_t i = 0; i < info.holders.size(); ++i) {
    const HolderEntry& h = info.holders[i];
    std::snprintf(buf, sizeof buf,
                  "%s{\"token\":%llu,\"mode\":\"%s\",\"permits\":%u,\"sinceUnixMs\":%lld,"
                  "\"thisSidecar\":%s,\"owner\":",
                  i ? "," : "", static_cast<unsigned long long>(h.token), lockModeName(h.mode),
                  h.permits, static_cast<long long>(h.sinceUnixMs),
                  h.thisSidecar ? "true" : "false");
    out += buf + jsonText(h.ownerLabel) + "}";
  }
  out += "]";
  if (state) out += ",\"detail\":" + jsonText(detail);
  return out + "}";
}

std::string holderText(const std::string& name, const HolderInfo& info) {
  char buf[1024];
  if (!info.held) {
    std::snprintf(buf, sizeof buf, "%s: not held", printable(name).c_str());
  } else if (info.foreign) {
    std::snprintf(buf, sizeof buf,
                  "%s: blocked by %s, a persistent node planted in its queue (no lease): delete "
                  "it to unblock the lock; %u waiting",
                  printable(name).c_str(), printable(info.foreignNode).c_str(), info.waiters);
  } else if (info.holders.size() > 1 ||
             (!info.holders.empty() && info.holders.front().mode != LockMode::kExclusive)) {
    // A shared lock's or a semaphore's holders, one line each.
    const HolderEntry& first = info.holders.front();
    std::string mode = first.mode == LockMode::kPermits
                           ? "of " + std::to_string(first.permits) + " permits"
                           : lockModeName(first.mode);
    std::snprintf(buf, sizeof buf, "%s: held by %zu (%s), %u waiting", printable(name).c_str(),
                  info.holders.size(), mode.c_str(), info.waiters);
    std::string out = buf;
    for (const HolderEntry& h : info.holders) {
      std::snprintf(buf, sizeof buf, "\n  token %llu, owner '%s', since %s%s",
                    static_cast<unsigned long long>(h.token), printable(h.ownerLabel).c_str(),
                    isoTime(h.sinceUnixMs).c_str(), h.thisSidecar ? " (through this sidecar)" : "");
      out += buf;
    }
    return out;
  } else {
    std::snprintf(buf, sizeof buf, "%s: held, token %llu, owner '%s', since %s, %u waiting%s",
                  printable(name).c_str(), static_cast<unsigned long long>(info.token),
                  printable(info.ownerLabel).c_str(), isoTime(info.sinceUnixMs).c_str(),
                  info.waiters, info.thisSidecar ? " (through this sidecar)" : "");
  }
  return buf;
}

const char* stateName(HolderState state) {
  switch (state) {
    case HolderState::kHeld:
      return "held";
    case HolderState::kFree:
      return "free";
    case HolderState::kUnknown:
      break;
  }
  return "unknown";
}

}  // namespace

int holderCommand(const SidecarAddress& sidecar, const std::string& name, bool json) {
  auto client = connectOrReport(sidecar);
  if (!client) return kExitUnavailable;
  HolderInfo info;
  Status s = client->holder(name, &info);
  if (!s.ok()) {
    std::fprintf(stderr, "fencectl: holder %s: %s\n", name.c_str(), s.message.c_str());
    return exitCodeFor(s);
  }
  std::string line = json ? holderJson(name, info, nullptr, {}) : holderText(name, info);
  std::printf("%s\n", line.c_str());
  return 0;
}

std::string describeHolderChange(const std::string& name, const HolderChange& change, bool json) {
  if (json) return holderJson(name, change.info, stateName(change.state), change.detail);
  if (change.state == HolderState::kUnknown)
    return name + ": holder unknown (" + change.detail + ")";
  return holderText(name, change.info);
}

int holderWatchCommand(const SidecarAddress& sidecar, const std::string& name, bool json) {
  // Until SIGINT, SIGTERM or SIGHUP: taken by sigwait, blocked before the I/O thread starts.
  sigset_t stop;
  sigemptyset(&stop);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&stop, sig);
  sigprocmask(SIG_BLOCK, &stop, nullptr);
  auto client = connectOrReport(sidecar);
  if (!client) return kExitUnavailable;
  Status s;
  auto watch = client->watchHolder(
      name,
      [name, json](const HolderChange& change) {
        std::printf("%s\n", describeHolderChange(name, change, json).c_str());
        std::fflush(stdout);
      },
      &s);
  if (!watch) {
    std::fprintf(stderr, "fencectl: holder %s --watch: %s\n", name.c_str(), s.message.c_str());
    return exitCodeFor(s);
  }
  int sig = 0;
  sigwait(&stop, &sig);
  return 0;
}

}  // namespace fencekeeper

namespace fencekeeper {

int validCommand(const SidecarAddress& sidecar, const std::string& name, uint64_t token) {
  auto client = connectOrReport(sidecar);
  if (!client) return kExitUnavailable;
  bool valid = false;
  Status s = client->tableShowsValid(name, token, &valid);
  if (!s.ok()) {
    std::fprintf(stderr, "fencectl: valid %s: %s\n", name.c_str(), s.message.c_str());
    return kExitUnavailable;
  }
  if (!valid) {
    std::fprintf(stderr, "fencectl: %s with token %llu is not held and valid now\n", name.c_str(),
                 static_cast<unsigned long long>(token));
    return kExitInvalid;
  }
  return 0;
}

}  // namespace fencekeeper
