// Ends the ZooKeeper C client's connection to a silent server without touching the client: a
// shutdown(2) of its TCP socket wakes the client's I/O thread, which then takes its ordinary
// connection-loss path (requests in flight fail with connection loss, CONNECTING is reported, the
// next server of the list is tried) and the session lives on. zoo_set_servers(), which closes the
// socket under the I/O thread, left the 3.8 client spinning on a stale descriptor when tried, and
// the client's own accessors for its server (zoo_get_current_server) share a buffer with its I/O
// thread: the socket is found from the outside, in /proc/self/fd.
#pragma once

#include <string>
#include <vector>

namespace fencekeeper::zk {

// The ports of a connect string, "host:port[,host:port...][/chroot]".
std::vector<int> portsOf(const std::string& hosts);

// This process's TCP sockets whose peer has one of `ports`, as "fd local>peer" lines: with one
// ZooKeeper handle in the process (the sidecar has one), its connection, or the attempt at one.
// The same text again later means the same connection is still there.
std::string tcpConnectionsTo(const std::vector<int>& ports);

// Shuts down (SHUT_RDWR, never close: the descriptor stays the client's) the sockets that
// tcpConnectionsTo() listed in `connections`, where they still are the same. Returns how many.
int shutdownConnections(const std::string& connections);

}  // namespace fencekeeper::zk
