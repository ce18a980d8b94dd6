// fk_check_loop SOCKET COUNT: acquires one lease and makes COUNT Lease::check() calls on it,
// after 200 of warm-up; prints the time per call. The client side of bench/profile_check.sh.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fencekeeper/client.h"

int main(int argc, char** argv) {
  using fencekeeper::Millis;
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s SOCKET COUNT\n", argv[0]);
    return 2;
  }
  const int count = std::atoi(argv[2]);
  fencekeeper::Status status;
  auto client = fencekeeper::Client::connect(argv[1], &status);
  if (!client) {
    std::fprintf(stderr, "connect: %s\n", status.message.c_str());
    return 1;
  }
  fencekeeper::AcquireOptions options;
  options.ttl = Millis(600'000);
  options.wait = Millis(10'000);
  options.keepAlive = false;  // only the checks on the wire
  auto lease = client->acquire("profile-check", options, &status);
  if (!lease) {
    std::fprintf(stderr, "acquire: %s\n", status.message.c_str());
    return 1;
  }
  for (int i = 0; i < 200; ++i) lease->check();
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < count; ++i) {
    if (fencekeeper::Status s = lease->check(); !s.ok()) {
      std::fprintf(stderr, "check: %s\n", s.message.c_str());
      return 1;
    }
  }
  std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
  std::printf("%d checks, %.1f us each\n", count, count ? took.count() / count : 0.0);
  return 0;
}
