// `fencectl elect NAME --owner LABEL [--rerun] -- CMD`: leader election on the lock's queue.
#pragma once

#include "client_lib/cli/lock_command.h"

namespace fencekeeper {

// Stands by, printing who leads, until this process leads; then runs CMD as `lock` does (stopped
// on loss). After a loss: kExitLeaseLost, or with `rerun` a new campaign. Returns the exit code.
int electCommand(const SidecarAddress& sidecar, const LockArgs& args, bool rerun);

}  // namespace fencekeeper
