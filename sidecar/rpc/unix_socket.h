// Binding the sidecar's Unix socket: a stale file from a dead sidecar is replaced, a live one is
// refused, and the parent directory is created when missing.
#pragma once

#include <string>

namespace fencekeeper::rpc {

// Returns a listening, non-blocking, close-on-exec socket fd bound at `path` (mode 0660 unless
// `worldAccessible`). Throws std::runtime_error with a message meant for a person.
int bindUnixSocket(const std::string& path, bool worldAccessible);

}  // namespace fencekeeper::rpc
