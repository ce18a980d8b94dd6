// The daemon's command line: flags, environment fallbacks, defaults, validation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"

namespace fencekeeper {

// The limits of the lease socket (docs/security.md); 0 means unlimited.
struct LimitFlags {
  uint64_t maxConnections = 128;  // per peer uid
  uint64_t maxLeasesPerPeer = 2'500;
  uint64_t maxWaitingPerPeer = 1'000;
  uint64_t maxCallsPerConnection = 256;
  uint64_t maxLeases = 10'000;
  uint64_t maxQueuedReplyBytes = 1 << 20;
  uint64_t maxQueuedReplies = 256;
  uint64_t maxCallsPerPeer = 1'024;               // unanswered, all of one uid's connections
  uint64_t maxCalls = 4'096;                      // unanswered, the whole sidecar
  uint64_t maxQueuedRepliesPerPeer = 1'024;       // unread, all of one uid's connections
  uint64_t maxQueuedReplyBytesPerPeer = 4 << 20;  // unread bytes, all of one uid's connections
  uint64_t maxWatchesPerPeer = 1'000;  // holder watches open, per peer uid
  uint64_t maxWatches = 10'000;        // holder watches open on the sidecar
  uint64_t maxHolderReadsPerPeer = 1'000;  // holder reads a second, per peer uid (not 0)
};

struct SidecarConfig {
  std::string zk;          // connect string; empty with --dev
  std::string zkAuthFile;  // --zk-auth-file: digest credentials `user:password`; empty: none
  std::string socket = "/run/fencekeeper/fencekeeper.sock";
  std::string root = "/fencekeeper";
  Millis sessionTimeout{10'000};
  bool dev = false;
  std::string devDataDir;  // --dev-data: keep the private ZooKeeper's data there
  bool persistentParents = false;
  Millis defaultTtl{30'000};
  Millis maxTtl{3'600'000};
  Millis minGrantVouch{0};  // 0: a quarter of the negotiated session timeout
  size_t maxPendingDeletes = 1'000;
  bool socketWorldAccessible = false;
  std::string logLevel = "info";
  std::string logFormat = "text";  // --log-format: text or json (sidecar/logging/log_format.h)
  LimitFlags limits;
  std::vector<uint32_t> allowUids;  // empty (both): every peer that can open the socket
  std::vector<uint32_t> allowGids;
  std::string statusSocket;  // --status-socket; empty: NAME.status beside the lease socket
  std::string statusListen;  // --status-listen ADDR:PORT; empty: no TCP
  std::string leaseTable;    // --lease-table; empty: beside the lease socket; "none": no table
  bool metricsLockLabels = false;
  bool checkConfig = false;  // --check-config: print the effective configuration and exit
};

// Where the status socket goes for a lease socket bound at `boundLeaseSocket`; empty: none.
std::string statusSocketPath(const SidecarConfig& config, const std::string& boundLeaseSocket);

// Where the shared-memory lease table goes for a lease socket bound at `boundLeaseSocket`
// ("<socket>.leases" unless --lease-table says otherwise); empty: none.
std::string leaseTablePath(const SidecarConfig& config, const std::string& boundLeaseSocket);

struct ParsedFlags {
  std::optional<SidecarConfig> config;  // empty: exit with `exitCode` after printing `message`
  int exitCode = 0;
  std::string message;
};

// Parses argv (environment: FENCEKEEPER_ZK, FENCEKEEPER_SOCKET, FENCEKEEPER_ROOT,
// FENCEKEEPER_LOG_FORMAT).
ParsedFlags parseFlags(int argc, char** argv);

// The longest the sidecar waits at SIGTERM for ZooKeeper to confirm its deletions before it
// closes the session anyway: the grace period of its pod must cover it (k8s/README.md).
Millis shutdownWait(const SidecarConfig& config);

// The effective configuration, one `key=value` a line, for --check-config.
std::string describeConfig(const SidecarConfig& config);

}  // namespace fencekeeper
