// `fencectl health [--ready]` and `fencectl get TARGET`: ask the status socket, for probes and for
// a look at a route where there is no curl (the container image), whatever the socket's layout.
#pragma once

#include <string>

#include "client_lib/cli/sidecar_errors.h"

namespace fencekeeper {

struct HealthArgs {
  bool ready = false;        // /readyz instead of /healthz
  std::string statusSocket;  // empty: defaultStatusSocketPath() of the lease socket
  Millis timeout{2'000};
};

// 0 on 200, kExitUnhealthy on any other answer or none.
int healthCommand(const SidecarAddress& sidecar, const HealthArgs& args);

// The routes `fencectl get` asks for (the status socket's, without queries).
inline constexpr const char* kGetTargets[] = {"/healthz", "/readyz", "/status", "/metrics"};

struct GetArgs {
  std::string target;        // REQUIRES: one of kGetTargets
  std::string statusSocket;  // empty: defaultStatusSocketPath() of the lease socket
  Millis timeout{2'000};
};

// Prints the answer's body as it came. 0 on 200; kExitUnhealthy on any other answer (which stderr
// names); kExitUnavailable when no answer came (no socket, not HTTP, or none within the timeout).
int getCommand(const SidecarAddress& sidecar, const GetArgs& args);

}  // namespace fencekeeper
