#include "sidecar/rpc/unix_socket.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace fencekeeper::rpc {

namespace {

sockaddr_un addressOf(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    throw std::runtime_error("socket path '" + path + "' is empty or longer than " +
                             std::to_string(sizeof addr.sun_path - 1) + " bytes");
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

// True when a server accepts connections on `path` now.
bool someoneListens(const sockaddr_un& addr) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  bool live = connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return live;
}

}  // namespace

int bindUnixSocket(const std::string& path, bool worldAccessible) {
  sockaddr_un addr = addressOf(path);
  std::error_code ec;
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);

  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      throw std::runtime_error("'" + path + "' exists and is not a socket: refusing to replace it");
    }
    if (someoneListens(addr)) {
      throw std::runtime_error("another sidecar is serving on '" + path + "'");
    }
    unlink(path.c_str());  // stale: its sidecar died without cleaning up
  }

  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket(): ") + std::strerror(errno));
  mode_t old = umask(worldAccessible ? 0 : 0117);  // 0660 or 0777
  int rc = bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  int bindErrno = errno;
  umask(old);
  if (rc != 0 || listen(fd, 128) != 0) {
    close(fd);
    throw std::runtime_error("cannot listen on '" + path +
                             "': " + std::strerror(rc != 0 ? bindErrno : errno));
  }
  return fd;
}

}  // namespace fencekeeper::rpc
