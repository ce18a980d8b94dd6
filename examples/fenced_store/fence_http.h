// A tiny HTTP/1.1 client for the fenced store's objects (see routes.h): one fenced request per
// connection to 127.0.0.1, with the Fence-Lock and Fence-Token headers. For the examples' workers
// and tests; no TLS, no keep-alive, no redirects.
#pragma once

#include <cstdint>
#include <string>

namespace fencekeeper {

struct FenceReply {
  int status = 0;    // the HTTP status; 0 when the store could not be reached or answered nothing
  std::string body;  // without its trailing newlines
};

// `method` /objects/`key` with `lock` and `token`, `body` as the request body (empty for GET).
FenceReply fencedRequest(int port, const std::string& method, const std::string& key,
                         const std::string& lock, uint64_t token, const std::string& body);

}  // namespace fencekeeper
