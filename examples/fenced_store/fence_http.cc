#include "examples/fenced_store/fence_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

namespace fencekeeper {

FenceReply fencedRequest(int port, const std::string& method, const std::string& key,
                         const std::string& lock, uint64_t token, const std::string& body) {
  FenceReply reply;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return reply;
  }
  std::string req = method + " /objects/" + key + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                    "Fence-Lock: " + lock + "\r\nFence-Token: " + std::to_string(token) +
                    "\r\nContent-Length: " + std::to_string(body.size()) +
                    "\r\nConnection: close\r\n\r\n" + body;
  if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return reply;
  }
  std::string raw;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) raw.append(buf, static_cast<size_t>(n));
  close(fd);
  if (raw.size() > 12) reply.status = std::atoi(raw.c_str() + 9);
  auto split = raw.find("\r\n\r\n");
  if (split != std::string::npos) reply.body = raw.substr(split + 4);
  while (!reply.body.empty() && reply.body.back() == '\n') reply.body.pop_back();
  return reply;
}

}  // namespace fencekeeper
