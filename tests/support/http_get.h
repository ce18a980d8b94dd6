// A blocking HTTP/1.1 exchange over a Unix (or TCP loopback) socket, bounded by a deadline, for
// the status socket's tests: what a probe or curl would see.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace fencekeeper::testing {

struct HttpAnswer {
  int code = 0;
  std::string head;  // status line and headers
  std::string body;
};

// A connected (blocking) stream socket to the Unix socket `path`, or to 127.0.0.1:`port`; -1 when
// it cannot connect.
int connectUnix(const std::string& path);
int connectTcp(int port);
// Sends `request` (a whole HTTP request) to the Unix socket `path` and reads one answer (its
// Content-Length, or until the server closes); nullopt when it cannot connect, closes without an
// answer, or `timeout` passes.
std::optional<HttpAnswer> httpExchange(const std::string& path, const std::string& request,
                                       std::chrono::milliseconds timeout);
// The same over TCP to 127.0.0.1:`port` (--status-listen).
std::optional<HttpAnswer> httpExchangeTcp(int port, const std::string& request,
                                          std::chrono::milliseconds timeout);
// GET `target` with Connection: close.
std::optional<HttpAnswer> httpGet(const std::string& path, const std::string& target,
                                  std::chrono::milliseconds timeout = std::chrono::seconds(10));
// Parses a raw answer (status line, headers, body); nullopt when it is not HTTP.
std::optional<HttpAnswer> parseHttpAnswer(const std::string& raw);

// The value of the sample `series` (name and labels exactly as exposed) in a Prometheus text
// exposition, or -1.
double metricSample(const std::string& metrics, const std::string& series);

}  // namespace fencekeeper::testing
