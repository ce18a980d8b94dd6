// Ends the ZooKeeper C client's connection to a silent server without touching the client: a
// shutdown(2) of its TCP socket wakes the client's I/O thread, which then takes its ordinary
// connection-loss path (requests in flight fail with connection loss, CONNECTING is reported, the
// next server of the list is tried) and the session lives on. zoo_set_servers(), which closes the
// socket under the I/O thread, left the 3.8 client spinning on a stale descriptor when tried.
#pragma once

#include <sys/socket.h>

#include <string>

namespace fencekeeper::zk {

// "ip:port", or "[ipv6]:port", as zoo_get_current_server() formats a server.
std::string formatEndpoint(const sockaddr_storage& addr);

// Shuts down (SHUT_RDWR, never close) every TCP socket of this process whose peer is `endpoint`.
// Returns how many. A process with several ZooKeeper handles on one server would see them all cut
// (the sidecar has one).
int shutdownSocketsTo(const std::string& endpoint);

}  // namespace fencekeeper::zk
