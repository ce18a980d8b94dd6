// `fencectl status`: the sidecar's state for people (a summary, leases and waiters as tables) or
// as the status socket's JSON, once or refreshed until SIGINT.
#pragma once

#include "client_lib/cli/sidecar_errors.h"

namespace fencekeeper {

struct StatusArgs {
  bool json = false;
  bool watch = false;
  Millis interval{2'000};  // between refreshes with watch
};

int statusCommand(const SidecarAddress& sidecar, const StatusArgs& args);

}  // namespace fencekeeper
