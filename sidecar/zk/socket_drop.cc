#include "sidecar/zk/socket_drop.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace fencekeeper::zk {

namespace {

// "ip:port" or "[ip6]:port"; empty for anything but TCP over IP.
std::string endpoint(const sockaddr_storage& addr, int* port) {
  char ip[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
    *port = ntohs(in->sin_port);
    return std::string(ip) + ":" + std::to_string(*port);
  }
  if (addr.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
    *port = ntohs(in6->sin6_port);
    return "[" + std::string(ip) + "]:" + std::to_string(*port);
  }
  return "";
}

// "local>peer" of a TCP socket whose peer port is in `ports`, else "".
std::string connectionOf(int fd, const std::vector<int>& ports) {
  int type = 0;
  socklen_t typeLen = sizeof type;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &typeLen) != 0 || type != SOCK_STREAM) return "";
  sockaddr_storage local{}, peer{};
  socklen_t localLen = sizeof local, peerLen = sizeof peer;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peerLen) != 0) return "";
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &localLen) != 0) return "";
  int peerPort = 0, localPort = 0;
  std::string to = endpoint(peer, &peerPort);
  if (to.empty() || std::find(ports.begin(), ports.end(), peerPort) == ports.end()) return "";
  return endpoint(local, &localPort) + ">" + to;
}

}  // namespace

std::vector<int> portsOf(const std::string& hosts) {
  std::vector<int> ports;
  std::istringstream list(hosts.substr(0, hosts.find('/')));
  for (std::string server; std::getline(list, server, ',');) {
    auto colon = server.rfind(':');
    if (colon == std::string::npos) continue;
    int port = std::atoi(server.c_str() + colon + 1);
    if (port > 0) ports.push_back(port);
  }
  return ports;
}

std::string tcpConnectionsTo(const std::vector<int>& ports) {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return "";
  std::string out;
  while (dirent* entry = readdir(dir)) {
    char* end = nullptr;
    long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    std::string connection = connectionOf(static_cast<int>(fd), ports);
    if (!connection.empty()) out += std::to_string(fd) + " " + connection + "\n";
  }
  closedir(dir);
  return out;
}

int shutdownConnections(const std::string& connections) {
  std::istringstream lines(connections);
  int count = 0;
  for (std::string line; std::getline(lines, line);) {
    auto space = line.find(' ');
    int fd = std::atoi(line.c_str());
    std::string connection = line.substr(space + 1);
    // Only if the descriptor still is that connection (the client may have closed and reused it).
    std::vector<int> anyPort{std::atoi(connection.c_str() + connection.rfind(':') + 1)};
    if (connectionOf(fd, anyPort) != connection) continue;
    if (shutdown(fd, SHUT_RDWR) == 0) ++count;
  }
  return count;
}

}  // namespace fencekeeper::zk
