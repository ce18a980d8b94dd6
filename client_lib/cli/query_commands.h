// `fencectl holder` and `fencectl status`: the sidecar's answers, for people or as JSON.
#pragma once

#include <string>

#include "client_lib/cli/sidecar_errors.h"

namespace fencekeeper {

int holderCommand(const SidecarAddress& sidecar, const std::string& name, bool json);
int statusCommand(const SidecarAddress& sidecar, bool json);

}  // namespace fencekeeper
