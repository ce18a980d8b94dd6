// `fencectl holder`: who holds a lock, for people or as JSON.
#pragma once

#include <string>

#include "client_lib/cli/sidecar_errors.h"

namespace fencekeeper {

int holderCommand(const SidecarAddress& sidecar, const std::string& name, bool json);

}  // namespace fencekeeper
