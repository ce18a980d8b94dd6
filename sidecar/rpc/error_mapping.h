// The one place where engine outcomes become schema enums.
#pragma once

#include <optional>

#include "ipc/fencekeeper.capnp.h"
#include "sidecar/engine/lease_types.h"

namespace fencekeeper::rpc {

ipc::Error toIpc(engine::LeaseError error);
ipc::LossReason toIpc(engine::LossReason reason);
ipc::HolderState toIpc(engine::HolderState state);
ipc::LockMode toIpc(engine::LockMode mode);
std::optional<engine::LockMode> fromIpc(ipc::LockMode mode);

}  // namespace fencekeeper::rpc
