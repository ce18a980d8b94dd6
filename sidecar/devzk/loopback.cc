#include "sidecar/devzk/loopback.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

namespace fencekeeper::devzk {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void throwErrno(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

sockaddr_in loopbackAddress(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

UniqueFd newSocket() {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) throwErrno("socket");
  return fd;
}

UniqueFd bindLoopback(int port) {
  UniqueFd fd = newSocket();
  sockaddr_in addr = loopbackAddress(port);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    throwErrno("bind 127.0.0.1:" + std::to_string(port));
  }
  return fd;
}

int remainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// Waits for `events` on `fd` until the deadline; false on timeout or poll failure.
bool waitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, remainingMs(deadline));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return false;
  }
}

}  // namespace

int freeLoopbackPort() { return freeLoopbackPorts(1).front(); }

std::vector<int> freeLoopbackPorts(size_t n) {
  std::vector<UniqueFd> held;
  std::vector<int> ports;
  for (size_t i = 0; i < n; ++i) {
    held.push_back(bindLoopback(0));
    ports.push_back(boundPort(held.back().get()));
  }
  return ports;
}

UniqueFd listenLoopback(int port, int backlog) {
  UniqueFd fd = newSocket();
  int one = 1;
  // A restarted proxy or server must be able to reuse a port whose old connections linger in
  // TIME_WAIT.
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr = loopbackAddress(port);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    throwErrno("bind 127.0.0.1:" + std::to_string(port));
  }
  if (::listen(fd.get(), backlog) != 0) throwErrno("listen");
  return fd;
}

int boundPort(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) throwErrno("getsockname");
  return ntohs(addr.sin_port);
}

UniqueFd connectLoopback(int port, int timeoutMs) {
  auto deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
  UniqueFd fd = newSocket();
  sockaddr_in addr = loopbackAddress(port);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno != EINPROGRESS) return {};
    if (!waitFor(fd.get(), POLLOUT, deadline)) return {};
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) return {};
  }
  int flags = ::fcntl(fd.get(), F_GETFL);
  ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

std::optional<std::string> fourLetterWord(int port, const std::string& cmd, int timeoutMs) {
  auto deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
  UniqueFd fd = connectLoopback(port, timeoutMs);
  if (!fd.valid()) return std::nullopt;
  // The word is four bytes: one send on a fresh loopback socket takes it whole. MSG_NOSIGNAL: a
  // server closing early must not kill the caller with SIGPIPE.
  if (::send(fd.get(), cmd.data(), cmd.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(cmd.size())) {
    return std::nullopt;
  }
  std::string reply;
  char buf[4096];
  for (;;) {
    if (!waitFor(fd.get(), POLLIN, deadline)) return std::nullopt;
    ssize_t n = ::recv(fd.get(), buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0) return reply;  // the server closes after answering
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return std::nullopt;
    }
    reply.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace fencekeeper::devzk
