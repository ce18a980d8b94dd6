// The status() answer: the engine's numbers, the session, the limits and what counts against
// them, per connection and per peer uid.
#pragma once

#include "ipc/fencekeeper.capnp.h"
#include "sidecar/rpc/sidecar_server.h"

namespace fencekeeper::rpc {

uint32_t clampMs(Millis ms);
void fillStatus(const ServerContext& ctx, ipc::Status::Builder out);

}  // namespace fencekeeper::rpc
