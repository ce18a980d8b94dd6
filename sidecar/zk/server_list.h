// The server list of a ZooKeeper connect string, for moving a session off a silent server with
// zoo_set_servers(), which takes host:port pairs only (the chroot stays with the handle).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace fencekeeper::zk {

struct ConnectString {
  std::vector<std::string> servers;  // "host:port", in the given order
  std::string chroot;                // "" or "/path"
};
ConnectString parseConnectString(const std::string& hosts);

// The addresses "ip:port" (IPv6 as "[ip]:port") a "host:port" stands for, as the C client
// formats its current server.
std::vector<std::string> resolveServer(const std::string& server);

// Every server of `servers` that does not stand for `current` (an "ip:port" from
// zoo_get_current_server), joined with commas; "" when none is left.
std::string serversOtherThan(
    const std::vector<std::string>& servers, const std::string& current,
    const std::function<std::vector<std::string>(const std::string&)>& resolve = resolveServer);

}  // namespace fencekeeper::zk
