// The one place where engine outcomes become schema enums.
#pragma once

#include "ipc/fencekeeper.capnp.h"
#include "sidecar/engine/lease_types.h"

namespace fencekeeper::rpc {

ipc::Error toIpc(engine::LeaseError error);
ipc::LossReason toIpc(engine::LossReason reason);
ipc::HolderState toIpc(engine::HolderState state);

}  // namespace fencekeeper::rpc
