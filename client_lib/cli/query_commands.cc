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

int statusCommand(const SidecarAddress& sidecar, bool json) {
  auto client = connectOrReport(sidecar);
  if (!client) return kExitUnavailable;
  SidecarStatus st;
  Status s = client->status(&st);
  if (!s.ok()) {
    std::fprintf(stderr, "fencectl: status: %s\n", s.message.c_str());
    return kExitUnavailable;
  }
  if (json) {
    std::printf(
        "{\"zkState\":\"%s\",\"sessionId\":\"%s\",\"sessionTimeoutMs\":%u,\"safeForMs\":%u,"
        "\"leasesHeld\":%u,\"waiters\":%u,\"connections\":%u,\"uptimeMs\":%llu,"
        "\"grantsTotal\":%llu,\"root\":\"%s\",\"pendingDeletes\":%u,\"droppedDeletes\":%llu,"
        "\"leases\":[",
        jsonEscape(st.zkState).c_str(), jsonEscape(st.sessionId).c_str(), st.sessionTimeoutMs,
        st.safeForMs, st.leasesHeld, st.waiters, st.connections,
        static_cast<unsigned long long>(st.uptimeMs),
        static_cast<unsigned long long>(st.grantsTotal), jsonEscape(st.root).c_str(),
        st.pendingDeletes, static_cast<unsigned long long>(st.droppedDeletes));
    for (size_t i = 0; i < st.leases.size(); ++i) {
      auto& l = st.leases[i];
      std::printf(
          "%s{\"name\":\"%s\",\"token\":%llu,\"owner\":\"%s\",\"pid\":%d,\"uid\":%u,"
          "\"connection\":%llu,\"validMs\":%u}",
          i ? "," : "", jsonEscape(l.name).c_str(), static_cast<unsigned long long>(l.token),
          jsonEscape(l.ownerLabel).c_str(), l.clientPid, l.clientUid,
          static_cast<unsigned long long>(l.connection), l.validMs);
    }
    const auto& lim = st.limits;
    std::printf(
        "],\"limits\":{\"maxConnections\":%u,\"maxLeasesPerPeer\":%u,\"maxWaitingPerPeer\":%u,"
        "\"maxCallsPerConnection\":%u,\"maxLeases\":%u,\"maxQueuedReplyBytes\":%llu},"
        "\"refusedTotal\":%llu,\"accepting\":%s,\"acceptFailures\":%llu,\"peers\":[",
        lim.maxConnections, lim.maxLeasesPerPeer, lim.maxWaitingPerPeer,
        lim.maxCallsPerConnection, lim.maxLeases,
        static_cast<unsigned long long>(lim.maxQueuedReplyBytes),
        static_cast<unsigned long long>(st.refusedTotal), st.accepting ? "true" : "false",
        static_cast<unsigned long long>(st.acceptFailures));
    for (size_t i = 0; i < st.peers.size(); ++i) {
      auto& p = st.peers[i];
      std::printf("%s{\"uid\":%u,\"connections\":%u,\"leases\":%u,\"waiting\":%u}",
                  i ? "," : "", p.uid, p.connections, p.leases, p.waiting);
    }
    std::printf("],\"connectionList\":[");
    for (size_t i = 0; i < st.connectionList.size(); ++i) {
      auto& c = st.connectionList[i];
      std::printf(
          "%s{\"id\":%llu,\"pid\":%d,\"uid\":%u,\"gid\":%u,\"leases\":%u,\"waiting\":%u,"
          "\"callsInFlight\":%u,\"queuedReplyBytes\":%llu}",
          i ? "," : "", static_cast<unsigned long long>(c.id), c.pid, c.uid, c.gid, c.leases,
          c.waiting, c.callsInFlight, static_cast<unsigned long long>(c.queuedReplyBytes));
    }
    std::printf("]}\n");
    return 0;
  }
  std::printf("zookeeper:   %s, session %s, timeout %u ms, vouched for %u ms\n", st.zkState.c_str(),
              st.sessionId.c_str(), st.sessionTimeoutMs, st.safeForMs);
  std::printf("root:        %s\n", st.root.c_str());
  std::printf("leases held: %u, waiting: %u, connections: %u, grants since start: %llu\n",
              st.leasesHeld, st.waiters, st.connections,
              static_cast<unsigned long long>(st.grantsTotal));
  std::printf("uptime:      %llu s\n", static_cast<unsigned long long>(st.uptimeMs / 1000));
  std::printf("deletes:     %u pending, %llu dropped\n", st.pendingDeletes,
              static_cast<unsigned long long>(st.droppedDeletes));
  for (auto& node : st.foreignNodes) {
    std::printf("planted:     %s (a persistent node blocking its lock: delete it)\n", node.c_str());
  }
  const auto& lim = st.limits;
  std::printf(
      "limits:      %u connections per uid, %u leases and %u waiting per uid, %u calls per "
      "connection, %u leases in all; %llu refused since start\n",
      lim.maxConnections, lim.maxLeasesPerPeer, lim.maxWaitingPerPeer, lim.maxCallsPerConnection,
      lim.maxLeases, static_cast<unsigned long long>(st.refusedTotal));
  if (!st.accepting) {
    std::printf("accepting:   NO (accept() failing, %llu failures): new clients cannot connect\n",
                static_cast<unsigned long long>(st.acceptFailures));
  }
  for (auto& p : st.peers) {
    std::printf("  uid %-8u %u connections, %u leases, %u waiting\n", p.uid, p.connections,
                p.leases, p.waiting);
  }
  for (auto& l : st.leases) {
    std::printf("  %-30s token %-14llu owner '%s' pid %d uid %u valid %u ms\n", l.name.c_str(),
                static_cast<unsigned long long>(l.token), l.ownerLabel.c_str(), l.clientPid,
                l.clientUid, l.validMs);
  }
  return 0;
}

}  // namespace fencekeeper
