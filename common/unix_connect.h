// Connecting to a local server's Unix socket when a burst of connections fills its backlog: the
// kernel then refuses a connect at once with EAGAIN (it does not queue it, as TCP would), until
// the server has accepted some. A probe must not fail for that.
#pragma once

#include <chrono>
#include <string>

namespace fencekeeper {

// A stream socket connected to the Unix socket `path` (close-on-exec, non-blocking), trying again
// every 5 ms while the listener's backlog is full, until `deadline`. -1 with errno set otherwise.
int connectUnixSocket(const std::string& path, std::chrono::steady_clock::time_point deadline);

}  // namespace fencekeeper
