// Who is on the other end of a lease-socket connection (SO_PEERCRED), for limits, the
// allow-lists, logs and status. Processes of one uid are one principal.
#pragma once

#include <kj/async-io.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fencekeeper::rpc {

struct Peer {
  uint64_t connection = 0;
  int32_t pid = 0;  // 0 when the peer is in another PID namespace
  uint32_t uid = 0;
  uint32_t gid = 0;
  bool known = false;  // false: the credentials could not be read (treated as refused)
  std::string describe() const;
};

// Reads the peer credentials of an accepted Unix-socket connection.
Peer readPeer(uint64_t connection, const kj::AsyncIoStream& stream);

// The --allow-uid / --allow-gid lists (empty: everyone who can open the socket).
struct AllowList {
  std::vector<uint32_t> uids;
  std::vector<uint32_t> gids;
  // Why `peer` is refused, or empty when allowed.
  std::string refusal(const Peer& peer) const;
};

}  // namespace fencekeeper::rpc
