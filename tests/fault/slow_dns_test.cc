// A DNS server that answers late must not stall the sidecar (issue 25): the single-threaded
// ZooKeeper client, driven from the sidecar's loop, resolves its host list itself at every
// connection attempt and every 10 s, blocking. The sidecar gives it addresses and resolves the
// names on a thread of its own (sidecar/zk/host_resolver.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

#include "tests/support/loss_recorder.h"
#include "tests/support/sidecar_cluster.h"

namespace fencekeeper::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Every resolution of a name takes 3 s: longer than a quarter of the session timeout (4 s), so a
// loop that waits for one lets a heartbeat's answer anchor nothing and stops vouching.
constexpr int kSlowDnsMs = 3000;

TEST(SlowDns, ANameResolvedLateNeverHoldsBackTheLoopOrTheHoldersLease) {
  SidecarCluster cluster;
  SidecarOptions options;
  options.zk = "localhost:" + std::to_string(cluster.zk().clientPort(0));
  options.sessionTimeout = "4s";
  // Under ASan the preloaded shim comes before ASan's runtime, which ASan refuses by default.
  const char* asan = std::getenv("ASAN_OPTIONS");
  options.env = {std::string("LD_PRELOAD=") + FK_SLOW_DNS_SHIM,
                 "FK_SLOW_DNS_MS=" + std::to_string(kSlowDnsMs),
                 std::string("ASAN_OPTIONS=") + (asan ? asan : "") +
                     (asan && *asan ? ":" : "") + "verify_asan_link_order=0"};
  cluster.startSidecar(options);  // its first resolution, before it serves, takes 3 s
  auto holder = cluster.connect(0);
  auto observer = cluster.connect(0);
  LossRecorder loss;
  AcquireOptions acquire = acquireOptions(milliseconds(5000), milliseconds(3000));
  acquire.onLost = loss.callback();
  Status status;
  auto lease = holder->acquire("dns/held", acquire, &status);
  ASSERT_TRUE(lease) << status.message;

  // 25 s: two of the sidecar's own resolutions (every 10 s), each 3 s long.
  long slowestUs = 0;
  uint32_t minSafeForMs = UINT32_MAX;
  int invalid = 0, samples = 0;
  for (auto end = Clock::now() + std::chrono::seconds(25); Clock::now() < end; ++samples) {
    auto t0 = Clock::now();
    SidecarStatus s;
    ASSERT_TRUE(observer->status(&s).ok());
    slowestUs = std::max<long>(
        slowestUs,
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count());
    minSafeForMs = std::min(minSafeForMs, s.safeForMs);
    Millis valid{0};
    if (!lease->check(&valid).ok() || valid.count() == 0) ++invalid;
    std::this_thread::sleep_for(milliseconds(100));
  }
  std::printf("slow DNS (%d ms a name): %d samples, slowest status() %ld us, min safeFor %u ms\n",
              kSlowDnsMs, samples, slowestUs, minSafeForMs);
  EXPECT_LT(slowestUs, 1'000'000) << "the loop waited for a resolution";
  EXPECT_GT(minSafeForMs, 0u) << "the sidecar stopped vouching for its session";
  EXPECT_EQ(invalid, 0) << "the holder's lease stopped checking valid";
  EXPECT_FALSE(loss.lost) << "the holder was told its lease was lost";
  EXPECT_NE(cluster.sidecar(0).log().find("127.0.0.1"), std::string::npos)
      << "the name was resolved to an address for the client";
}

}  // namespace
}  // namespace fencekeeper::testing
