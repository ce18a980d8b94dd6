// The sidecar's status() answer, read into the public API: the C++ structs, or its JSON.
#pragma once

#include <string>

#include "fencekeeper/client.h"
#include "ipc/fencekeeper.capnp.h"

namespace fencekeeper::internal {

// Replaces everything in `*out` with `in`.
void readStatus(ipc::Status::Reader in, SidecarStatus* out);
// Cap'n Proto's JsonCodec, as the status socket's /status encodes the same struct.
std::string statusJson(ipc::Status::Reader in);

}  // namespace fencekeeper::internal
