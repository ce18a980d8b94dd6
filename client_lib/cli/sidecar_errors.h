// What fencectl makes of a failed call to the sidecar: a line on stderr and an exit code.
#pragma once

#include <memory>
#include <string>

#include "fencekeeper/client.h"

namespace fencekeeper {

// fencectl's exit code for a failed call (exit_codes.h).
int exitCodeFor(const Status& s);

// Where fencectl finds the sidecar, and whom it trusts there (--socket, --expect-uid).
struct SidecarAddress {
  std::string socket;
  ConnectOptions options;
};

// Connects to the sidecar; says why on stderr when it returns nullptr.
std::unique_ptr<Client> connectOrReport(const SidecarAddress& sidecar);

}  // namespace fencekeeper
