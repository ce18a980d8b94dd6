#include "sidecar/config.h"

#include <arpa/inet.h>
#include <getopt.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <sstream>

#include "common/duration.h"
#include "common/socket_path.h"

namespace fencekeeper {

namespace {

constexpr const char* kUsage = R"(usage: fencekeeper (--zk HOSTS | --dev) [options]

A per-pod sidecar that grants fenced leases on named locks, held as ZooKeeper
ephemeral sequential nodes; every grant carries a fencing token (the node's czxid).

  --zk HOST:PORT[,HOST:PORT...][/chroot]
                         the ZooKeeper ensemble (env FENCEKEEPER_ZK); a /chroot
                         must exist (the sidecar creates --root inside it)
  --zk-auth-file PATH    ZooKeeper digest credentials, one line user:password, in a file
                         no other user may read (default none). Every session authenticates
                         with them (also a new session after an expiry) and every node the
                         sidecar creates gets the ACL: all rights for that identity, read for
                         the world. Without it nodes are open to every ZooKeeper client
                         (world:anyone:cdrwa; a warning at start). See docs/security.md
  --dev                  start a private standalone ZooKeeper on a free loopback port
                         (Debian's zookeeper package) and print the --zk string that
                         another sidecar can use to join it
  --dev-data DIR         keep the --dev ZooKeeper's data and logs in DIR
  --socket PATH          the lease socket (env FENCEKEEPER_SOCKET;
                         default /run/fencekeeper/fencekeeper.sock). Its directory is
                         created 0750 whatever the umask; an existing one must be owned
                         by this uid or root. Where it is writable by group or others (a
                         Kubernetes emptyDir, /tmp), the socket goes in a subdirectory of
                         its own, DIR/NAME.d/NAME (0750), where clients given PATH look
                         for it too. Only the socket this process bound is removed (a
                         failed start also removes the directory, lease table and status
                         socket it created, and logs one line: cannot start: WHAT: WHY)
  --socket-world         make the socket accessible to every user: socket 0777 and its
                         directory 0755 (default 0660 and 0750: the socket's group)
  --root ZNODE           where locks live in ZooKeeper (env FENCEKEEPER_ROOT;
                         default /fencekeeper): <root>/locks/<name>/<guid>__lock__<seq>
  --session-timeout DUR  requested ZooKeeper session timeout (default 10s; the
                         server bounds it to [2, 20] x its tickTime)
  --persistent-parents   create lock parents as PERSISTENT nodes instead of CONTAINER
                         nodes (use it when kazoo clients share the locks: kazoo caches
                         that a parent exists and fails after the server reaps it)
  --default-ttl DUR      lease TTL when a client asks for 0 (default 30s)
  --max-ttl DUR          longest TTL a client may ask for (default 1h)
  --min-grant-vouch DUR  grant only while the session is vouched for at least DUR
                         (default a quarter of the negotiated session timeout); a
                         request stays queued until then or until its wait runs out
  --max-pending-deletes N  lock node deletions kept for retry while ZooKeeper does not
                         confirm them (default 1000); while that many are pending, acquire
                         answers limitReached, and a delete beyond them is sent once and
                         then left to the session's end (the lease ended all the same)

Limits (0: unlimited; a refused request answers limitReached naming the limit):
  --max-connections N    open connections of one peer uid (default 128)
  --max-leases-per-peer N  leases one uid holds or waits for (default 2500)
  --max-waiting-per-peer N  acquires one uid has waiting (default 1000)
  --max-calls-per-connection N  unanswered calls of one connection (default 256)
  --max-leases N         leases held or waited for on this sidecar (default 10000)
  --max-queued-reply-bytes N  bytes of replies to one connection its peer has not
                         read (default 1048576); above it the connection is closed
  --max-queued-replies N  replies to one connection its peer has not read (default
                         256; each holds 8 KiB or more); above it the connection is closed
  --max-calls-per-peer N  unanswered calls of one uid, all its connections (default 1024)
  --max-calls N          unanswered calls on this sidecar (default 4096)
  --max-queued-replies-per-peer N  replies one uid's connections have not read, in all
                         (default 1024); above it the one with the most unread is closed
  --max-queued-reply-bytes-per-peer N  their bytes (default 4194304), the same way
  --max-watches-per-peer N  holder watches one uid has open (default 1000)
  --max-watches N        holder watches open on this sidecar (default 10000)
  --max-holder-reads-per-peer N  ZooKeeper holder reads (holder(), holder watches) made
                         for one uid a second (default 1000, at least 1); more wait their turn
  --allow-uid UID[,UID...]  only these uids may use the socket (repeatable; with
                         --allow-gid, a peer in either list is allowed); others get
                         permissionDenied and an audit line
  --allow-gid GID[,GID...]  only peers with these primary gids (repeatable)

  --status-socket PATH   the status socket: HTTP, read-only (/healthz, /readyz, /status,
                         /metrics); default NAME.status beside the lease socket where the
                         sidecar binds it (--socket /tmp/fk.sock: /tmp/fk.sock.d/fk.sock.status;
                         --socket /run/fk/fk.sock: /run/fk/fk.sock.status); a PATH given
                         follows the lease socket's directory rules; `none` serves none
  --status-listen ADDR:PORT  serve /healthz, /readyz and /metrics on TCP too, e.g.
                         0.0.0.0:9464 for Prometheus (default off; IPv6 as [::1]:9464);
                         /status stays on the status socket, where peers are checked
  --lease-table PATH     the shared-memory lease table clients read to check a lease
                         without a call (docs/protocol.md): default NAME.leases beside
                         the lease socket, in the directory the sidecar owns; `none`
                         publishes none. Mode 0644, owned by this uid; room for
                         --max-leases leases (at most 1000000; a lease beyond gets no
                         slot and its client checks locally)
  --metrics-lock-labels  label lease metrics with the lock name (at most 1000 locks get
                         their own series, the rest "_other"; default off: unbounded names)

  --check-config         parse every flag as a start would, print the effective
                         configuration (key=value, one a line; shutdown-wait-ms is the
                         longest SIGTERM waits for ZooKeeper) and exit 0, touching neither
                         ZooKeeper nor any socket or file (it looks at the lease socket's
                         directory only, for where the status socket goes); a bad flag
                         exits 64 as ever
  --log-level LEVEL      trace, debug, info, warn, error (default info)
  --log-format FORMAT    text or json (env FENCEKEEPER_LOG_FORMAT; default text): json writes
                         every line as one JSON object with time (RFC 3339, UTC, ms), level,
                         event (grant, renew_failed, lost, release, session_state,
                         vouching_lapsed; "log" for other lines) and msg, and each lease
                         event's lock, token, client_pid, client_uid, connection, owner,
                         reason, ttl_ms, waited_ms, held_ms, how (docs/operations.md, Logs)
  --help                 this text

Durations: 250ms, 2s, 1m, 1h (a bare number is milliseconds).
SIGTERM/SIGINT/SIGHUP: tell every holder, delete every lease's node (waiting for ZooKeeper's
confirmation at most the session timeout + 5s), close the session, remove the socket
(only the one it created), exit 0.
)";

// Shutdown waits for holders to acknowledge their loss, at most for the validity they were
// given, which the session timeout bounds; the slack covers ZooKeeper's confirmations.
constexpr Millis kShutdownSlack{5'000};

// ADDR:PORT with a numeric IPv4 address, or [IPv6]:PORT; port 1-65535.
bool validListenAddress(const std::string& text) {
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  std::string host = text.substr(0, colon), port = text.substr(colon + 1);
  char* end = nullptr;
  unsigned long n = std::strtoul(port.c_str(), &end, 10);
  if (port.empty() || *end || n == 0 || n > 65535) return false;
  unsigned char buf[sizeof(in6_addr)];
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    return inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), buf) == 1;
  }
  return inet_pton(AF_INET, host.c_str(), buf) == 1;
}

bool validRoot(const std::string& root) {
  if (root.size() < 2 || root[0] != '/' || root.back() == '/') return false;
  return root.find("//") == std::string::npos;
}

}  // namespace

std::string statusSocketPath(const SidecarConfig& config, const std::string& boundLeaseSocket) {
  if (config.statusSocket == "none") return {};
  if (!config.statusSocket.empty()) return config.statusSocket;
  return statusSocketBeside(boundLeaseSocket);
}

std::string leaseTablePath(const SidecarConfig& config, const std::string& boundLeaseSocket) {
  if (config.leaseTable == "none") return {};
  if (!config.leaseTable.empty()) return config.leaseTable;
  return boundLeaseSocket + ".leases";
}

ParsedFlags parseFlags(int argc, char** argv) {
  SidecarConfig c;
  if (const char* v = std::getenv("FENCEKEEPER_ZK")) c.zk = v;
  if (const char* v = std::getenv("FENCEKEEPER_SOCKET")) c.socket = v;
  if (const char* v = std::getenv("FENCEKEEPER_ROOT")) c.root = v;
  if (const char* v = std::getenv("FENCEKEEPER_LOG_FORMAT")) c.logFormat = v;

  enum : int {
    kZk = 1000,
    kZkAuthFile,
    kSocket,
    kRoot,
    kSessionTimeout,
    kDev,
    kDevData,
    kPersistentParents,
    kDefaultTtl,
    kMaxTtl,
    kMinGrantVouch,
    kMaxPendingDeletes,
    kSocketWorld,
    kLogLevel,
    kLogFormat,
    kMaxConnections,
    kMaxLeasesPerPeer,
    kMaxWaitingPerPeer,
    kMaxCallsPerConnection,
    kMaxLeases,
    kMaxQueuedReplyBytes,
    kMaxQueuedReplies,
    kMaxCallsPerPeer,
    kMaxCalls,
    kMaxQueuedRepliesPerPeer,
    kMaxQueuedReplyBytesPerPeer,
    kMaxWatchesPerPeer,
    kMaxWatches,
    kMaxHolderReadsPerPeer,
    kAllowUid,
    kAllowGid,
    kStatusSocket,
    kStatusListen,
    kLeaseTable,
    kMetricsLockLabels,
    kCheckConfig,
    kHelp,
  };
  static const option options[] = {
      {"zk", required_argument, nullptr, kZk},
      {"zk-auth-file", required_argument, nullptr, kZkAuthFile},
      {"socket", required_argument, nullptr, kSocket},
      {"root", required_argument, nullptr, kRoot},
      {"session-timeout", required_argument, nullptr, kSessionTimeout},
      {"dev", no_argument, nullptr, kDev},
      {"dev-data", required_argument, nullptr, kDevData},
      {"persistent-parents", no_argument, nullptr, kPersistentParents},
      {"default-ttl", required_argument, nullptr, kDefaultTtl},
      {"max-ttl", required_argument, nullptr, kMaxTtl},
      {"min-grant-vouch", required_argument, nullptr, kMinGrantVouch},
      {"max-pending-deletes", required_argument, nullptr, kMaxPendingDeletes},
      {"socket-world", no_argument, nullptr, kSocketWorld},
      {"log-level", required_argument, nullptr, kLogLevel},
      {"log-format", required_argument, nullptr, kLogFormat},
      {"max-connections", required_argument, nullptr, kMaxConnections},
      {"max-leases-per-peer", required_argument, nullptr, kMaxLeasesPerPeer},
      {"max-waiting-per-peer", required_argument, nullptr, kMaxWaitingPerPeer},
      {"max-calls-per-connection", required_argument, nullptr, kMaxCallsPerConnection},
      {"max-leases", required_argument, nullptr, kMaxLeases},
      {"max-queued-reply-bytes", required_argument, nullptr, kMaxQueuedReplyBytes},
      {"max-queued-replies", required_argument, nullptr, kMaxQueuedReplies},
      {"max-calls-per-peer", required_argument, nullptr, kMaxCallsPerPeer},
      {"max-calls", required_argument, nullptr, kMaxCalls},
      {"max-queued-replies-per-peer", required_argument, nullptr, kMaxQueuedRepliesPerPeer},
      {"max-queued-reply-bytes-per-peer", required_argument, nullptr,
       kMaxQueuedReplyBytesPerPeer},
      {"max-watches-per-peer", required_argument, nullptr, kMaxWatchesPerPeer},
      {"max-watches", required_argument, nullptr, kMaxWatches},
      {"max-holder-reads-per-peer", required_argument, nullptr, kMaxHolderReadsPerPeer},
      {"allow-uid", required_argument, nullptr, kAllowUid},
      {"allow-gid", required_argument, nullptr, kAllowGid},
      {"status-socket", required_argument, nullptr, kStatusSocket},
      {"status-listen", required_argument, nullptr, kStatusListen},
      {"lease-table", required_argument, nullptr, kLeaseTable},
      {"metrics-lock-labels", no_argument, nullptr, kMetricsLockLabels},
      {"check-config", no_argument, nullptr, kCheckConfig},
      {"help", no_argument, nullptr, kHelp},
      {nullptr, 0, nullptr, 0},
  };
  auto bad = [](std::string message) {
    return ParsedFlags{std::nullopt, 64, "fencekeeper: " + message + " (see --help)"};
  };
  int index = 0;  // of the long option just parsed, which names it in a complaint
  auto duration = [&](Millis& out) {
    auto d = parseDuration(optarg);
    if (!d || d->count() == 0) return false;
    out = *d;
    return true;
  };
  auto badDuration = [&] {
    return bad(std::string("bad --") + options[index].name + " '" + optarg + "'");
  };
  // A non-negative integer no larger than `max` (0 means unlimited where a limit takes it).
  auto count = [&](uint64_t& out, uint64_t max) {
    char* end = nullptr;
    errno = 0;
    unsigned long long n = std::strtoull(optarg, &end, 10);
    if (!*optarg || *end || *optarg == '-' || errno == ERANGE || n > max) return false;
    out = n;
    return true;
  };
  auto ids = [&](std::vector<uint32_t>& out) {
    std::string list = optarg;
    size_t start = 0;
    while (start <= list.size()) {
      size_t comma = list.find(',', start);
      std::string one = list.substr(start, comma == std::string::npos ? comma : comma - start);
      char* end = nullptr;
      errno = 0;
      unsigned long long n = std::strtoull(one.c_str(), &end, 10);
      if (one.empty() || *end || one[0] == '-' || errno == ERANGE || n > UINT32_MAX - 1) {
        return false;
      }
      out.push_back(static_cast<uint32_t>(n));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return true;
  };
  auto badCount = [&] {
    return bad(std::string("bad --") + options[index].name + " '" + optarg + "'");
  };
  optind = 1;
  opterr = 0;
  int opt;
  while ((opt = getopt_long(argc, argv, "", options, &index)) != -1) {
    switch (opt) {
      case kZk:
        c.zk = optarg;
        break;
      case kZkAuthFile:
        c.zkAuthFile = optarg;
        break;
      case kSocket:
        c.socket = optarg;
        break;
      case kRoot:
        c.root = optarg;
        break;
      case kSessionTimeout:
        if (!duration(c.sessionTimeout)) return badDuration();
        break;
      case kDev:
        c.dev = true;
        break;
      case kDevData:
        c.devDataDir = optarg;
        break;
      case kPersistentParents:
        c.persistentParents = true;
        break;
      case kDefaultTtl:
        if (!duration(c.defaultTtl)) return badDuration();
        break;
      case kMaxTtl:
        if (!duration(c.maxTtl)) return badDuration();
        break;
      case kMinGrantVouch:
        if (!duration(c.minGrantVouch)) return badDuration();
        break;
      case kMaxPendingDeletes: {
        char* end = nullptr;
        unsigned long n = std::strtoul(optarg, &end, 10);
        if (!*optarg || *end || n == 0 || n > 1'000'000) {
          return bad(std::string("bad --max-pending-deletes '") + optarg + "' (1 to 1000000)");
        }
        c.maxPendingDeletes = n;
        break;
      }
      case kSocketWorld:
        c.socketWorldAccessible = true;
        break;
      case kLogLevel:
        c.logLevel = optarg;
        break;
      case kLogFormat:
        c.logFormat = optarg;
        break;
      case kMaxConnections:
        if (!count(c.limits.maxConnections, UINT32_MAX)) return badCount();
        break;
      case kMaxLeasesPerPeer:
        if (!count(c.limits.maxLeasesPerPeer, UINT32_MAX)) return badCount();
        break;
      case kMaxWaitingPerPeer:
        if (!count(c.limits.maxWaitingPerPeer, UINT32_MAX)) return badCount();
        break;
      case kMaxCallsPerConnection:
        if (!count(c.limits.maxCallsPerConnection, UINT32_MAX)) return badCount();
        break;
      case kMaxLeases:
        if (!count(c.limits.maxLeases, UINT32_MAX)) return badCount();
        break;
      case kMaxQueuedReplyBytes:
        if (!count(c.limits.maxQueuedReplyBytes, UINT64_MAX)) return badCount();
        break;
      case kMaxQueuedReplies:
        if (!count(c.limits.maxQueuedReplies, UINT32_MAX)) return badCount();
        break;
      case kMaxCallsPerPeer:
        if (!count(c.limits.maxCallsPerPeer, UINT32_MAX)) return badCount();
        break;
      case kMaxCalls:
        if (!count(c.limits.maxCalls, UINT32_MAX)) return badCount();
        break;
      case kMaxQueuedRepliesPerPeer:
        if (!count(c.limits.maxQueuedRepliesPerPeer, UINT32_MAX)) return badCount();
        break;
      case kMaxQueuedReplyBytesPerPeer:
        if (!count(c.limits.maxQueuedReplyBytesPerPeer, UINT64_MAX)) return badCount();
        break;
      case kMaxWatchesPerPeer:
        if (!count(c.limits.maxWatchesPerPeer, UINT32_MAX)) return badCount();
        break;
      case kMaxWatches:
        if (!count(c.limits.maxWatches, UINT32_MAX)) return badCount();
        break;
      case kMaxHolderReadsPerPeer:
        if (!count(c.limits.maxHolderReadsPerPeer, UINT32_MAX)) return badCount();
        if (c.limits.maxHolderReadsPerPeer == 0) {
          return bad("bad --max-holder-reads-per-peer '0': a rate, at least 1 a second");
        }
        break;
      case kAllowUid:
        if (!ids(c.allowUids)) return badCount();
        break;
      case kAllowGid:
        if (!ids(c.allowGids)) return badCount();
        break;
      case kStatusSocket:
        if (!*optarg) return bad("--status-socket needs a path, or none");
        c.statusSocket = optarg;
        break;
      case kStatusListen:
        if (!validListenAddress(optarg)) {
          return bad(std::string("bad --status-listen '") + optarg +
                     "': give ADDR:PORT, e.g. 127.0.0.1:9464 or [::1]:9464");
        }
        c.statusListen = optarg;
        break;
      case kLeaseTable:
        if (!*optarg) return bad("--lease-table needs a path, or none");
        c.leaseTable = optarg;
        break;
      case kMetricsLockLabels:
        c.metricsLockLabels = true;
        break;
      case kCheckConfig:
        c.checkConfig = true;
        break;
      case kHelp:
        return ParsedFlags{std::nullopt, 0, kUsage};
      default:
        return bad(std::string("unknown or incomplete option '") + argv[optind - 1] + "'");
    }
  }
  if (optind < argc) return bad(std::string("unexpected argument '") + argv[optind] + "'");
  if (c.logFormat != "text" && c.logFormat != "json") {
    return bad("bad --log-format '" + c.logFormat + "' (text or json)");
  }
  if (c.zk.empty() && !c.dev) return bad("give --zk HOSTS or --dev");
  if (!validRoot(c.root)) return bad("--root must be an absolute znode path like /fencekeeper");
  if (c.defaultTtl > c.maxTtl) return bad("--default-ttl is longer than --max-ttl");
  if (c.sessionTimeout > Millis(600'000)) return bad("--session-timeout above 10m");
  // Right after a heartbeat the session is vouched for about 3/4 of its timeout, less a margin.
  if (c.minGrantVouch > c.sessionTimeout / 2) {
    return bad("--min-grant-vouch above half of --session-timeout: nothing could be granted");
  }
  return ParsedFlags{c, 0, {}};
}

Millis shutdownWait(const SidecarConfig& config) { return config.sessionTimeout + kShutdownSlack; }

std::string describeConfig(const SidecarConfig& c) {
  std::ostringstream out;
  auto line = [&](const char* key, const auto& value) { out << key << '=' << value << '\n'; };
  auto flag = [](bool on) { return on ? "true" : "false"; };
  auto idList = [](const std::vector<uint32_t>& ids) {
    std::string list;
    for (uint32_t id : ids) list += (list.empty() ? "" : ",") + std::to_string(id);
    return list;
  };
  // Where this start would bind it: the default follows the lease socket into its subdirectory
  // when the lease socket's directory is writable by others (the one file system look here).
  std::string boundSocket = resolveSocketPath(c.socket);
  std::string status = statusSocketPath(c, boundSocket);
  std::string leaseTable = leaseTablePath(c, boundSocket);
  line("zk", c.zk);
  line("dev", flag(c.dev));
  line("dev-data", c.devDataDir);
  line("zk-auth-file", c.zkAuthFile);
  line("socket", c.socket);
  line("socket-world", flag(c.socketWorldAccessible));
  line("status-socket", status.empty() ? "none" : status);
  line("status-listen", c.statusListen);
  line("lease-table", leaseTable.empty() ? "none" : leaseTable);
  line("metrics-lock-labels", flag(c.metricsLockLabels));
  line("root", c.root);
  line("persistent-parents", flag(c.persistentParents));
  line("session-timeout-ms", c.sessionTimeout.count());
  line("default-ttl-ms", c.defaultTtl.count());
  line("max-ttl-ms", c.maxTtl.count());
  line("min-grant-vouch-ms", c.minGrantVouch.count());  // 0: a quarter of the negotiated
  line("max-pending-deletes", c.maxPendingDeletes);
  line("max-connections", c.limits.maxConnections);
  line("max-leases-per-peer", c.limits.maxLeasesPerPeer);
  line("max-waiting-per-peer", c.limits.maxWaitingPerPeer);
  line("max-calls-per-connection", c.limits.maxCallsPerConnection);
  line("max-leases", c.limits.maxLeases);
  line("max-queued-reply-bytes", c.limits.maxQueuedReplyBytes);
  line("max-queued-replies", c.limits.maxQueuedReplies);
  line("max-calls-per-peer", c.limits.maxCallsPerPeer);
  line("max-calls", c.limits.maxCalls);
  line("max-queued-replies-per-peer", c.limits.maxQueuedRepliesPerPeer);
  line("max-queued-reply-bytes-per-peer", c.limits.maxQueuedReplyBytesPerPeer);
  line("max-watches-per-peer", c.limits.maxWatchesPerPeer);
  line("max-watches", c.limits.maxWatches);
  line("max-holder-reads-per-peer", c.limits.maxHolderReadsPerPeer);
  line("allow-uid", idList(c.allowUids));
  line("allow-gid", idList(c.allowGids));
  line("log-level", c.logLevel);
  line("log-format", c.logFormat);
  line("shutdown-wait-ms", shutdownWait(c).count());
  return out.str();
}

}  // namespace fencekeeper
