#include "tests/support/http_get.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace fencekeeper::testing {

std::optional<HttpAnswer> parseHttpAnswer(const std::string& raw) {
  auto end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || end == std::string::npos || raw.size() < 12) {
    return std::nullopt;
  }
  HttpAnswer a;
  a.code = std::atoi(raw.c_str() + 9);
  a.head = raw.substr(0, end);
  a.body = raw.substr(end + 4);
  std::string lower = a.head;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.find("\r\ntransfer-encoding: chunked") != std::string::npos) {
    std::string body;
    size_t at = 0;
    while (true) {  // size in hex, CRLF, data, CRLF; a zero size ends it
      auto line = a.body.find("\r\n", at);
      if (line == std::string::npos) return std::nullopt;
      size_t size = std::strtoul(a.body.c_str() + at, nullptr, 16);
      if (size == 0) break;
      if (line + 2 + size > a.body.size()) return std::nullopt;
      body.append(a.body, line + 2, size);
      at = line + 2 + size + 2;
    }
    a.body = std::move(body);
  }
  return a;
}

namespace {
// A whole answer: its headers, and as many body bytes as its Content-Length says (none for HEAD).
bool complete(const std::string& raw, bool head) {
  auto end = raw.find("\r\n\r\n");
  if (end == std::string::npos) return false;
  if (head) return true;
  std::string lower = raw.substr(0, end);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower.find("\r\ntransfer-encoding: chunked") != std::string::npos) {
    return raw.size() >= end + 9 && raw.compare(raw.size() - 5, 5, "0\r\n\r\n") == 0;
  }
  auto at = lower.find("\r\ncontent-length:");
  if (at == std::string::npos) return false;  // until the server closes
  size_t length = std::strtoul(lower.c_str() + at + 17, nullptr, 10);
  return raw.size() >= end + 4 + length;
}
}  // namespace

// Sends `request` on the connected `fd` and reads one answer; closes `fd`.
std::optional<HttpAnswer> exchangeOn(int fd, const std::string& request,
                                     std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    close(fd);
    return std::nullopt;
  }
  bool head = request.rfind("HEAD ", 0) == 0;
  std::string raw;
  char buf[65536];
  while (true) {
    if (complete(raw, head)) {
      close(fd);
      return parseHttpAnswer(raw);
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd pfd{fd, POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(left.count())) <= 0) break;
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) {
      close(fd);
      return parseHttpAnswer(raw);
    }
    raw.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return std::nullopt;  // timed out
}

int connectUnix(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int connectTcp(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

std::optional<HttpAnswer> httpExchange(const std::string& path, const std::string& request,
                                       std::chrono::milliseconds timeout) {
  int fd = connectUnix(path);
  if (fd < 0) return std::nullopt;
  return exchangeOn(fd, request, timeout);
}

std::optional<HttpAnswer> httpExchangeTcp(int port, const std::string& request,
                                          std::chrono::milliseconds timeout) {
  int fd = connectTcp(port);
  if (fd < 0) return std::nullopt;
  return exchangeOn(fd, request, timeout);
}

std::optional<HttpAnswer> httpGet(const std::string& path, const std::string& target,
                                  std::chrono::milliseconds timeout) {
  return httpExchange(
      path, "GET " + target + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", timeout);
}

double metricSample(const std::string& metrics, const std::string& series) {
  std::istringstream in(metrics);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

}  // namespace fencekeeper::testing
