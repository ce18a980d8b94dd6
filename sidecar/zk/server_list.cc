#include "sidecar/zk/server_list.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>

namespace fencekeeper::zk {

ConnectString parseConnectString(const std::string& hosts) {
  ConnectString out;
  std::string list = hosts;
  if (auto slash = hosts.find('/'); slash != std::string::npos) {
    list = hosts.substr(0, slash);
    out.chroot = hosts.substr(slash);
  }
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    std::string server = list.substr(start, comma - start);
    if (!server.empty()) out.servers.push_back(server);
    start = comma + 1;
  }
  return out;
}

std::vector<std::string> resolveServer(const std::string& server) {
  auto colon = server.rfind(':');
  if (colon == std::string::npos) return {};
  std::string host = server.substr(0, colon), port = server.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) return {};
  std::vector<std::string> out;
  for (addrinfo* a = found; a; a = a->ai_next) {
    char ip[INET6_ADDRSTRLEN] = {};
    if (a->ai_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr, ip, sizeof ip);
      out.push_back(std::string(ip) + ":" + port);
    } else if (a->ai_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr, ip, sizeof ip);
      out.push_back("[" + std::string(ip) + "]:" + port);
    }
  }
  freeaddrinfo(found);
  return out;
}

std::string serversOtherThan(
    const std::vector<std::string>& servers, const std::string& current,
    const std::function<std::vector<std::string>(const std::string&)>& resolve) {
  std::string out;
  for (const auto& server : servers) {
    auto addresses = resolve(server);
    bool isCurrent = server == current ||
                     std::find(addresses.begin(), addresses.end(), current) != addresses.end();
    if (isCurrent) continue;
    if (!out.empty()) out += ",";
    out += server;
  }
  return out;
}

}  // namespace fencekeeper::zk
