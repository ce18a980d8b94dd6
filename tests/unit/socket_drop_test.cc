// tcpConnectionsTo finds this process's TCP connections to ZooKeeper's ports; shutdownConnections
// ends them, and only them.
#include "sidecar/zk/socket_drop.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

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

TEST(SocketDrop, PortsComeFromTheConnectString) {
  EXPECT_EQ(portsOf("zk-0.zk:2181,10.0.0.2:2182,[::1]:2183/app/locks"),
            (std::vector<int>{2181, 2182, 2183}));
  EXPECT_TRUE(portsOf("nonsense").empty());
}

TEST(SocketDrop, ShutsDownTheConnectionToThosePortsAndNoOther) {
  int portA = 0, portB = 0;
  Fd listenA{listenOnLoopback(&portA)}, listenB{listenOnLoopback(&portB)};
  ASSERT_GE(listenA.fd, 0);
  ASSERT_GE(listenB.fd, 0);
  Fd toA{connectTo(portA)}, toB{connectTo(portB)};
  Fd atA{accept(listenA.fd, nullptr, nullptr)}, atB{accept(listenB.fd, nullptr, nullptr)};
  ASSERT_GE(atA.fd, 0);
  ASSERT_GE(atB.fd, 0);

  std::string connections = tcpConnectionsTo({portA});
  EXPECT_NE(connections.find(std::to_string(toA.fd) + " 127.0.0.1:"), std::string::npos)
      << connections;
  EXPECT_EQ(std::count(connections.begin(), connections.end(), '\n'), 1) << connections;
  EXPECT_EQ(tcpConnectionsTo({portA}), connections) << "the same connection, the same text";
  EXPECT_EQ(shutdownConnections(connections), 1);
  char byte;
  EXPECT_EQ(recv(atA.fd, &byte, 1, 0), 0) << "the server side sees the end of the stream";
  EXPECT_EQ(recv(toA.fd, &byte, 1, 0), 0) << "a reader of the dropped socket wakes up";
  // The other connection still carries data; the descriptor stays open (no reuse race).
  ASSERT_EQ(send(toB.fd, "x", 1, 0), 1);
  EXPECT_EQ(recv(atB.fd, &byte, 1, 0), 1);
  EXPECT_TRUE(tcpConnectionsTo({1}).empty());
}

TEST(SocketDrop, ADescriptorThatIsAnotherConnectionNowIsLeftAlone) {
  int port = 0;
  Fd listener{listenOnLoopback(&port)};
  ASSERT_GE(listener.fd, 0);
  Fd first{connectTo(port)};
  std::string connections = tcpConnectionsTo({port});
  ::close(first.fd);
  first.fd = -1;
  Fd second{connectTo(port)};  // likely the same descriptor number, another local port
  EXPECT_EQ(shutdownConnections(connections), 0);
}

}  // namespace
}  // namespace fencekeeper::zk
