// `fencectl health [--ready]`: asks the status socket's /healthz (or /readyz), for probes.
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

}  // namespace fencekeeper
