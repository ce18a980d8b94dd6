// shutdownSocketsTo ends this process's TCP connections to one endpoint, and only those.
#include "sidecar/zk/socket_drop.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace fencekeeper::zk {
namespace {

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

int listenOnLoopback(int* port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd, 4) != 0) return -1;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  return fd;
}

int connectTo(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 ? fd : -1;
}

TEST(SocketDrop, ShutsDownTheConnectionToTheEndpointAndNoOther) {
  int portA = 0, portB = 0;
  Fd listenA{listenOnLoopback(&portA)}, listenB{listenOnLoopback(&portB)};
  ASSERT_GE(listenA.fd, 0);
  ASSERT_GE(listenB.fd, 0);
  Fd toA{connectTo(portA)}, toB{connectTo(portB)};
  Fd atA{accept(listenA.fd, nullptr, nullptr)}, atB{accept(listenB.fd, nullptr, nullptr)};
  ASSERT_GE(atA.fd, 0);
  ASSERT_GE(atB.fd, 0);

  EXPECT_EQ(shutdownSocketsTo("127.0.0.1:" + std::to_string(portA)), 1);
  char byte;
  EXPECT_EQ(recv(atA.fd, &byte, 1, 0), 0) << "the server side sees the end of the stream";
  EXPECT_EQ(recv(toA.fd, &byte, 1, 0), 0) << "a reader of the dropped socket wakes up";
  // The other connection still carries data; the descriptor stays open (no reuse race).
  ASSERT_EQ(send(toB.fd, "x", 1, 0), 1);
  EXPECT_EQ(recv(atB.fd, &byte, 1, 0), 1);
  EXPECT_EQ(shutdownSocketsTo("127.0.0.1:1"), 0);
}

}  // namespace
}  // namespace fencekeeper::zk
