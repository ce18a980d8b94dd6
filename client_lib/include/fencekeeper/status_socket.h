// The sidecar's status socket (HTTP/1.1 on a Unix socket, read-only): what probes ask it.
#pragma once

#include <string>

#include "fencekeeper/client.h"

// What the installed C++ library (libfencekeeper++.so) exports: everything declared here; the rest
// of it (KJ, Cap'n Proto, the internals) is built hidden.
#pragma GCC visibility push(default)

namespace fencekeeper {

// One answer of the status socket.
struct HttpAnswer {
  int code = 0;      // the HTTP status code
  std::string body;  // at most the limit asked for (a longer body fails the request)
};
constexpr size_t kMaxProbeBody = 64 * 1024;  // the limit of a probe (/healthz, /readyz)

// GETs `target` (e.g. "/healthz") from the status socket at `socketPath` (in its subdirectory
// "<name>.d/" where its directory is writable by others, as the sidecar binds it), within
// `timeout` from connect to the body's end. kSidecarUnavailable, saying why, when it cannot
// connect, the answer is not HTTP, or the time runs out. Any thread; blocks the caller (its own
// short-lived event loop runs on a thread of its own).
Status getFromStatusSocket(const std::string& socketPath, const std::string& target, Millis timeout,
                           HttpAnswer* out);
// The same with a body of up to `maxBody` bytes instead of kMaxProbeBody: /status and /metrics of
// a busy sidecar run to megabytes.
Status getFromStatusSocket(const std::string& socketPath, const std::string& target, Millis timeout,
                           size_t maxBody, HttpAnswer* out);

// The status socket the sidecar serves by default beside the lease socket `leaseSocket` (as
// configured; see defaultSocketPath): $FENCEKEEPER_STATUS_SOCKET if set, else "<path>.status"
// where <path> is where the sidecar binds the lease socket: "/run/fk/fk.sock.status" for
// /run/fk/fk.sock, "/tmp/fk.sock.d/fk.sock.status" for /tmp/fk.sock (a directory others may
// write, where the sidecar binds in its subdirectory "<name>.d/").
std::string defaultStatusSocketPath(const std::string& leaseSocket);

}  // namespace fencekeeper

#pragma GCC visibility pop
