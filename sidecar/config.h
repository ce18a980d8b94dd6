// The daemon's command line: flags, environment fallbacks, defaults, validation.
#pragma once

#include <optional>
#include <string>

#include "sidecar/common/clock.h"

namespace fencekeeper {

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
};

struct ParsedFlags {
  std::optional<SidecarConfig> config;  // empty: exit with `exitCode` after printing `message`
  int exitCode = 0;
  std::string message;
};

// Parses argv (environment: FENCEKEEPER_ZK, FENCEKEEPER_SOCKET, FENCEKEEPER_ROOT).
ParsedFlags parseFlags(int argc, char** argv);

}  // namespace fencekeeper
