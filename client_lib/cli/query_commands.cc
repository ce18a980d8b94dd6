#include "client_lib/cli/query_commands.h"

#include <cstdio>
#include <ctime>

#include "client_lib/cli/exit_codes.h"
#include "client_lib/cli/sidecar_errors.h"
#include "fencekeeper/client.h"

namespace fencekeeper {
namespace {

std::string jsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
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
  if (json) {
    std::printf(
        "{\"lock\":\"%s\",\"held\":%s,\"token\":%llu,\"owner\":\"%s\",\"sinceUnixMs\":%lld,"
        "\"waiters\":%u,\"thisSidecar\":%s,\"foreign\":%s,\"foreignNode\":\"%s\"}\n",
        jsonEscape(name).c_str(), info.held ? "true" : "false",
        static_cast<unsigned long long>(info.token), jsonEscape(info.ownerLabel).c_str(),
        static_cast<long long>(info.sinceUnixMs), info.waiters, info.thisSidecar ? "true" : "false",
        info.foreign ? "true" : "false", jsonEscape(info.foreignNode).c_str());
  } else if (!info.held) {
    std::printf("%s: not held\n", name.c_str());
  } else if (info.foreign) {
    std::printf(
        "%s: blocked by %s, a persistent node planted in its queue (no lease): delete it "
        "to unblock the lock; %u waiting\n",
        name.c_str(), info.foreignNode.c_str(), info.waiters);
  } else {
    std::printf("%s: held, token %llu, owner '%s', since %s, %u waiting%s\n", name.c_str(),
                static_cast<unsigned long long>(info.token), info.ownerLabel.c_str(),
                isoTime(info.sinceUnixMs).c_str(), info.waiters,
                info.thisSidecar ? " (through this sidecar)" : "");
  }
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
