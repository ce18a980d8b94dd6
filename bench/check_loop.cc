// fk_check_loop SOCKET COUNT [cycle]: acquires one lease and makes COUNT Lease::check() calls on
// it, or with `cycle` makes COUNT acquire+release cycles on one lock, after 200 of warm-up; prints
// the time per call. The client side of bench/profile_check.sh.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#include "fencekeeper/client.h"

int main(int argc, char** argv) {
  using fencekeeper::Millis;
  if (argc != 3 && !(argc == 4 && std::strcmp(argv[3], "cycle") == 0)) {
    std::fprintf(stderr, "usage: %s SOCKET COUNT [cycle]\n", argv[0]);
    return 2;
  }
  const int count = std::atoi(argv[2]);
  const bool cycles = argc == 4;
  fencekeeper::Status status;
  auto client = fencekeeper::Client::connect(argv[1], &status);
  if (!client) {
    std::fprintf(stderr, "connect: %s\n", status.message.c_str());
    return 1;
  }
  fencekeeper::AcquireOptions options;
  options.ttl = Millis(600'000);
  options.wait = Millis(10'000);  // the sidecar may still be connecting to ZooKeeper
  options.keepAlive = false;  // only the calls measured on the wire
  auto acquire = [&]() -> std::unique_ptr<fencekeeper::Lease> {
    auto lease = client->acquire("profile-check", options, &status);
    if (!lease) std::fprintf(stderr, "acquire: %s\n", status.message.c_str());
    return lease;
  };
  std::unique_ptr<fencekeeper::Lease> held;
  std::function<bool()> call;
  if (cycles) {
    call = [&] {
      auto lease = acquire();
      // Then try once, as the bench's 6b row: the lock is free whenever the last release answered.
      options.wait = Millis(0);
      if (!lease) return false;
      fencekeeper::Status s = lease->release();
      if (!s.ok()) std::fprintf(stderr, "release: %s\n", s.message.c_str());
      return s.ok();
    };
  } else {
    if (!(held = acquire())) return 1;
    call = [&] {
      fencekeeper::Status s = held->check();
      if (!s.ok()) std::fprintf(stderr, "check: %s\n", s.message.c_str());
      return s.ok();
    };
  }
  for (int i = 0; i < 200; ++i) {
    if (!call()) return 1;
  }
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < count; ++i) {
    if (!call()) return 1;
  }
  std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
  std::printf("%d %s, %.1f us each\n", count, cycles ? "acquire+release cycles" : "checks",
              count ? took.count() / count : 0.0);
  return 0;
}
