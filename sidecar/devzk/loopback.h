// Small TCP helpers on 127.0.0.1 for the development ZooKeeper and the test proxy: free ports,
// listening and connecting sockets with deadlines, and ZooKeeper's four-letter-word probe. Only the
// loopback address is ever used: nothing here may open a port to the network.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/unique_fd.h"

namespace fencekeeper::devzk {

// A TCP port on 127.0.0.1 that nothing listens on right now. The kernel picks it (bind to port 0),
// so it comes from the ephemeral range; Linux hands bind() odd ports and connect() even ones
// first, which keeps outgoing connections from taking it before the server binds it. Throws
// std::runtime_error when no socket can be made.
int freeLoopbackPort();
// `n` distinct free ports: every probe socket stays bound until all are chosen, so the kernel
// can't hand out the same port twice (an ensemble needs three per node).
std::vector<int> freeLoopbackPorts(size_t n);

// A non-blocking, close-on-exec socket listening on 127.0.0.1:port (0: the kernel picks) with
// SO_REUSEADDR. Throws std::runtime_error on failure.
UniqueFd listenLoopback(int port, int backlog = 128);
// The port a bound socket has.
int boundPort(int fd);

// Connects to 127.0.0.1:port within `timeoutMs`. Returns a blocking, close-on-exec socket, or an
// invalid one when refused or timed out. Non-blocking connect underneath: a frozen (SIGSTOP)
// server whose accept backlog is full would otherwise hold a blocking connect for minutes.
UniqueFd connectLoopback(int port, int timeoutMs);

// Sends a ZooKeeper four-letter word (e.g. "srvr", "mntr", "ruok") to 127.0.0.1:port and returns
// everything the server writes before it closes, or nullopt when it can't connect or doesn't
// finish within `timeoutMs` in total (a frozen server accepts in the kernel but never answers).
std::optional<std::string> fourLetterWord(int port, const std::string& cmd, int timeoutMs);

}  // namespace fencekeeper::devzk
