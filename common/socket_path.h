// Where the lease socket is, for the sidecar and its clients alike. A directory that others may
// write (a Kubernetes emptyDir is 0777, /tmp is 1777) cannot protect a socket in it: there the
// sidecar serves from a subdirectory of its own, "<dir>/<name>.d/<name>".
#pragma once

#include <sys/types.h>

#include <string>

namespace fencekeeper {

// True when users other than the owner may create or remove entries in a directory of `mode`.
inline bool writableByOthers(mode_t mode) { return (mode & 022) != 0; }

// "0750": a mode's permission bits as people write them.
std::string modeText(mode_t mode);

// The path the sidecar binds for the configured `--socket` path: the configured path itself,
// or the subdirectory form when the configured path's directory is writable by others.
std::string resolveSocketPath(const std::string& configured);

// The status socket the sidecar serves by default for the lease socket it bound at
// `boundLeaseSocket` (a resolveSocketPath result): "<bound path>.status", named after the lease
// socket as the lease table is ("<bound path>.leases"), so that sidecars whose lease sockets share
// a directory each have their own.
inline std::string statusSocketBeside(const std::string& boundLeaseSocket) {
  return boundLeaseSocket + ".status";
}

}  // namespace fencekeeper
