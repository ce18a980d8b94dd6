// Lease capabilities kept by a raw Cap'n Proto client, as a client that never drops its Lease
// objects keeps them (within the kept-capabilities limit): for the memory tests.
#pragma once

#include <capnp/ez-rpc.h>

#include <string>
#include <vector>

#include "ipc/fencekeeper.capnp.h"

namespace fencekeeper::testing {

// `count` distinct lock names from `prefix`, each acquired and released on `raw`, 100 acquires in
// flight; every Lease capability is appended to `kept`. Throws on a refused acquire.
void acquireAndRelease(capnp::EzRpcClient& raw, const std::string& prefix, int count,
                       std::vector<ipc::Lease::Client>& kept);

}  // namespace fencekeeper::testing
