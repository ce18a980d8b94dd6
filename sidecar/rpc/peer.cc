#include "sidecar/rpc/peer.h"

#include <sys/socket.h>

#include <algorithm>

namespace fencekeeper::rpc {

std::string Peer::describe() const {
  return "pid " + std::to_string(pid) + " uid " + std::to_string(uid) + " conn " +
         std::to_string(connection);
}

Peer readPeer(uint64_t connection, const kj::AsyncIoStream& stream) {
  Peer peer;
  peer.connection = connection;
  KJ_IF_MAYBE (fd, stream.getFd()) {
    ucred cred{};
    socklen_t length = sizeof cred;
    if (getsockopt(*fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) == 0) {
      peer.pid = cred.pid;
      peer.uid = cred.uid;
      peer.gid = cred.gid;
      peer.known = true;
    }
  }
  return peer;
}

std::string AllowList::refusal(const Peer& peer) const {
  if (!peer.known) return "the peer's credentials (SO_PEERCRED) could not be read";
  if (uids.empty() && gids.empty()) return {};
  auto has = [](const std::vector<uint32_t>& list, uint32_t id) {
    return std::find(list.begin(), list.end(), id) != list.end();
  };
  if (has(uids, peer.uid) || has(gids, peer.gid)) return {};
  return "uid " + std::to_string(peer.uid) + " gid " + std::to_string(peer.gid) +
         " is not in --allow-uid/--allow-gid";
}

}  // namespace fencekeeper::rpc
