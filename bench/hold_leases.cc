// fk_hold_leases SOCKET LEASES CONNECTIONS: opens CONNECTIONS clients, prints "connected" and
// waits for a line on stdin; then holds LEASES leases (one lock each, spread over the clients),
// prints "held" and waits for stdin to close. The client side of bench/profile_memory.sh, which
// snapshots the sidecar's heap at each pause.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "fencekeeper/client.h"

int main(int argc, char** argv) {
  using fencekeeper::Millis;
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s SOCKET LEASES CONNECTIONS\n", argv[0]);
    return 2;
  }
  const int leases = std::atoi(argv[2]);
  const int connections = std::max(1, std::atoi(argv[3]));
  fencekeeper::Status status;
  std::vector<std::unique_ptr<fencekeeper::Client>> clients;
  for (int i = 0; i < connections; ++i) {
    std::unique_ptr<fencekeeper::Client> client;
    // Connecting many in a row can fill the socket's listen backlog (EAGAIN): retry, bounded.
    for (int attempt = 0; attempt < 1000 && !client; ++attempt) {
      if (!(client = fencekeeper::Client::connect(argv[1], &status))) usleep(10'000);
    }
    if (!client) {
      std::fprintf(stderr, "connect: %s\n", status.message.c_str());
      return 1;
    }
    clients.push_back(std::move(client));
  }
  std::printf("connected\n");
  std::fflush(stdout);
  std::string line;
  std::getline(std::cin, line);
  fencekeeper::AcquireOptions options;
  options.ttl = Millis(3'600'000);
  options.wait = Millis(100'000);
  options.keepAlive = false;  // nothing but the leases themselves
  std::vector<std::unique_ptr<fencekeeper::Lease>> held;
  for (int i = 0; i < leases; ++i) {
    auto lease = clients[i % connections]->acquire("hold-" + std::to_string(i), options, &status);
    if (!lease) {
      std::fprintf(stderr, "acquire: %s\n", status.message.c_str());
      return 1;
    }
    held.push_back(std::move(lease));
  }
  std::printf("held\n");
  std::fflush(stdout);
  while (std::getline(std::cin, line)) {
  }
  return 0;
}
