#include "sidecar/zk/socket_drop.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>

namespace fencekeeper::zk {

std::string formatEndpoint(const sockaddr_storage& addr) {
  char ip[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
    return std::string(ip) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (addr.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
    return "[" + std::string(ip) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return "";
}

namespace {

std::string peerOf(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "";
  return formatEndpoint(addr);
}

}  // namespace

int shutdownSocketsTo(const std::string& endpoint) {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return 0;
  int count = 0;
  while (dirent* entry = readdir(dir)) {
    char* end = nullptr;
    long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    if (peerOf(static_cast<int>(fd)) != endpoint) continue;
    if (shutdown(static_cast<int>(fd), SHUT_RDWR) == 0) ++count;
  }
  closedir(dir);
  return count;
}

}  // namespace fencekeeper::zk
