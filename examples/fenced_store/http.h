// Just enough of HTTP/1.1's server side for the fenced store: one request per connection (every
// reply closes it), bodies only with Content-Length, hard limits on size and time. Anything
// malformed becomes a 4xx reply, never a crash.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fencekeeper::store {

struct HttpLimits {
  size_t maxHeadBytes = 16 * 1024;
  size_t maxBodyBytes = 1024 * 1024;
  // For the whole request, not per read: a client trickling one byte at a time must not hold
  // its connection (and thread) for longer than this.
  std::chrono::milliseconds readTime{10'000};
  std::chrono::milliseconds writeTime{10'000};
};

struct HttpRequest {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  // Every value of header `name` (matched case-insensitively), in order.
  std::vector<std::string_view> headerValues(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string body;
  std::string contentType = "text/plain; charset=utf-8";
};

// What arrived on a connection: a request, or the reply that refuses it (malformed: 400, head too
// large: 431, body too large: 413, too slow: 408). Neither when the peer left without sending
// anything or the connection failed.
struct Incoming {
  std::optional<HttpRequest> request;
  std::optional<HttpResponse> refusal;
};

Incoming readRequest(int fd, const HttpLimits& limits);

// Sends the whole response with `Connection: close`. False if the peer is gone or too slow.
bool writeResponse(int fd, const HttpResponse& response, std::chrono::milliseconds timeout);

// After a refusal the peer may still be sending its request. Closing a socket with unread data
// resets the connection, and the reset can reach the peer before it reads the refusal; so this
// ends our side and drops what still arrives until the peer closes or `timeout` passes.
void drainBeforeClose(int fd, std::chrono::milliseconds timeout);

}  // namespace fencekeeper::store
