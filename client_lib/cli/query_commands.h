// `fencectl holder`: who holds a lock, for people or as JSON; `fencectl valid`: whether a lease
// is valid now, from the sidecar's shared-memory lease table.
#pragma once

#include <cstdint>
#include <string>

#include "client_lib/cli/sidecar_errors.h"

namespace fencekeeper {

int holderCommand(const SidecarAddress& sidecar, const std::string& name, bool json);
// `fencectl holder NAME --watch`: one line per holder change (JSON with `json`) until a signal.
int holderWatchCommand(const SidecarAddress& sidecar, const std::string& name, bool json);
// One line of a holder watch, for people or as JSON.
std::string describeHolderChange(const std::string& name, const HolderChange& change, bool json);

// Exit 0 when the lease table shows `name` held with `token` and valid now, 1 when it does not
// (a line on stderr says which), 69 when the table cannot be read. Advisory (docs/fencing.md).
int validCommand(const SidecarAddress& sidecar, const std::string& name, uint64_t token);

}  // namespace fencekeeper
