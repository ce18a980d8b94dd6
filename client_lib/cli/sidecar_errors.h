// What fencectl makes of a failed call to the sidecar: a line on stderr and an exit code.
#pragma once

#include <memory>
#include <string>

#include "fencekeeper/client.h"

namespace fencekeeper {

// fencectl's exit code for a failed call (exit_codes.h).
int exitCodeFor(const Status& s);

// Connects to the sidecar; says why on stderr when it returns nullptr.
std::unique_ptr<Client> connectOrReport(const std::string& socket);

}  // namespace fencekeeper
