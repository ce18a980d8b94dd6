// `fencectl holder` and `fencectl status`: the sidecar's answers, for people or as JSON.
#pragma once

#include <string>

namespace fencekeeper {

int holderCommand(const std::string& socket, const std::string& name, bool json);
int statusCommand(const std::string& socket, bool json);

}  // namespace fencekeeper
