// What the client library shows its own tools only (fencectl), not applications.
#pragma once

#include "fencekeeper/client.h"

namespace fencekeeper::internal {

// The file descriptor of `client`'s connection to the sidecar; -1 when it has none. fencectl's
// supervisor keeps a duplicate open, so that the sidecar sees the connection close (and releases
// the lease) only once everything CMD started is dead. Never read, write or close it.
int connectionFd(const Client& client);

}  // namespace fencekeeper::internal
