#include "tests/support/raw_rpc_socket.h"

#include <capnp/rpc.capnp.h>
#include <capnp/serialize.h>
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

#include "ipc/fencekeeper.capnp.h"

namespace fencekeeper::rpcframes {

namespace {
constexpr std::chrono::seconds kCallTimeout{10};
}

int dial(const std::string& path, bool nonBlocking) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (nonBlocking ? SOCK_NONBLOCK : 0), 0);
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

bool writeAll(int fd, const void* bytes, size_t size,
              std::chrono::steady_clock::time_point deadline) {
  auto* p = static_cast<const char*>(bytes);
  while (size > 0) {
    ssize_t n = send(fd, p, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) return false;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    pollfd pfd{fd, POLLOUT, 0};
    poll(&pfd, 1, 100);
  }
  return true;
}

bool writeFrame(int fd, const Frame& frame, std::chrono::steady_clock::time_point deadline) {
  return writeAll(fd, frame.begin(), frame.size() * sizeof(capnp::word), deadline);
}

RawStatusReader::RawStatusReader(const std::string& socket) : fd_(dial(socket)) {
  if (fd_ < 0) throw std::runtime_error("cannot connect to " + socket);
  if (!writeFrame(fd_, bootstrap(0), std::chrono::steady_clock::now() + kCallTimeout)) {
    close(fd_);
    throw std::runtime_error("bootstrap not sent");
  }
}

RawStatusReader::~RawStatusReader() { close(fd_); }

RawStatusReader::Accepting RawStatusReader::read() {
  uint32_t q = nextQuestion_++;
  auto deadline = std::chrono::steady_clock::now() + kCallTimeout;
  if (!writeFrame(fd_, status(q, 0), deadline)) throw std::runtime_error("status not sent");
  timeval timeout{kCallTimeout.count(), 0};
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  while (true) {
    capnp::StreamFdMessageReader message(fd_);  // throws on a timeout or a closed connection
    if (classify(message).answerId != q) continue;
    auto results = message.getRoot<capnp::rpc::Message>().getReturn().getResults();
    auto s = results.getContent().getAs<ipc::Sidecar::StatusResults>().getStatus();
    Accepting out{s.getAccepting(), s.getAcceptFailures()};
    writeFrame(fd_, finish(q), deadline);
    return out;
  }
}

}  // namespace fencekeeper::rpcframes
