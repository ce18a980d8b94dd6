// The client's validity deadlines run on CLOCK_BOOTTIME: a suspend (here a jump of the clock,
// injected) spends a lease's validity instead of pausing it.
#include "client_lib/src/boot_clock.h"

#include <gtest/gtest.h>
#include <time.h>

#include <filesystem>

#include "fencekeeper/client.h"
#include "tests/support/child_process.h"
#include "tests/support/sidecar_cluster.h"

namespace fencekeeper::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

nanoseconds readClock(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return std::chrono::seconds(ts.tv_sec) + nanoseconds(ts.tv_nsec);
}

// On a machine that has slept, this alone tells CLOCK_BOOTTIME from CLOCK_MONOTONIC.
TEST(ClientBootClock, ReadsClockBoottime) {
  for (int i = 0; i < 100; ++i) {
    auto before = readClock(CLOCK_BOOTTIME);
    auto now = BootClock::now().time_since_epoch();
    auto after = readClock(CLOCK_BOOTTIME);
    ASSERT_LE(before, now);
    ASSERT_LE(now, after);
  }
}

// CLOCK_BOOTTIME and CLOCK_MONOTONIC agree until the machine first sleeps; a time namespace with
// CLOCK_BOOTTIME moved a day ahead tells them apart.
TEST(ClientBootClock, IsNotClockMonotonic) {
  constexpr long long kAheadMs = 86'400'000;
  std::string log = ::testing::TempDir() + "boot-clock-probe.log";
  std::filesystem::remove(log);  // the child appends to it
  ChildProcess probe(
      {"unshare", "--time", "--boottime", std::to_string(kAheadMs / 1000), BOOT_CLOCK_PROBE_BIN},
      log);
  int status = probe.wait(milliseconds(10000));
  if (status != 0 && probe.log().find("unshare failed") != std::string::npos) {
    GTEST_SKIP() << "no time namespace here: " << probe.log();
  }
  ASSERT_EQ(status, 0) << probe.log();
  EXPECT_GE(std::stoll(probe.log()), kAheadMs) << probe.log();
}

// An offset added for one test is taken back when it ends.
class ClockJump {
 public:
  explicit ClockJump(milliseconds by) : by_(by) { advanceBootClockForTesting(by_); }
  ~ClockJump() { advanceBootClockForTesting(-by_); }

 private:
  milliseconds by_;
};

// The client's own count (no lease table): a jump of the client's clock alone is what a test can
// inject, and only this count follows it.
TEST(ClientBootClock, ASuspendLongerThanTheValidityLeavesNoneOfIt) {
  SidecarCluster cluster;
  cluster.startSidecar({.extraArgs = {"--lease-table", "none"}});
  auto client = cluster.connect(0);
  ASSERT_FALSE(client->usesLeaseTable());
  auto options = acquireOptions(milliseconds(0), milliseconds(10000));
  options.keepAlive = false;
  auto lease = client->acquire("suspended", options);
  ASSERT_TRUE(lease);
  // The TTL bounds the validity (the session's vouching may bound it further).
  ASSERT_GT(lease->validFor(), milliseconds(0));
  {
    ClockJump suspend(milliseconds(11000));
    EXPECT_EQ(lease->validFor(), milliseconds(0));
    EXPECT_FALSE(lease->lost()) << "only the sidecar says lost";
    // The sidecar (whose clock did not jump here) still vouches: an answer counts from the
    // jumped clock's now, like every deadline of the client.
    Millis fresh{0};
    ASSERT_TRUE(lease->check(&fresh).ok());
    EXPECT_GT(fresh, milliseconds(0));
    EXPECT_GT(lease->validFor(), milliseconds(0));
    EXPECT_LE(lease->validFor(), milliseconds(10000));
  }
  EXPECT_TRUE(lease->release().ok());
}

// Through the lease table the deadlines are the sidecar's, on the same CLOCK_BOOTTIME: after a
// suspend longer than the validity the lease reads invalid, and an answer of a sidecar that did not
// see the suspend cannot make it valid again (in a real suspend the sidecar sleeps too).
TEST(ClientBootClock, ThroughTheLeaseTableASuspendLeavesNoneOfItEither) {
  SidecarCluster cluster;
  cluster.startSidecar();
  auto client = cluster.connect(0);
  std::string why;
  ASSERT_TRUE(client->usesLeaseTable(&why)) << why;
  auto options = acquireOptions(milliseconds(0), milliseconds(10000));
  options.keepAlive = false;
  auto lease = client->acquire("suspended", options);
  ASSERT_TRUE(lease);
  ASSERT_GT(lease->validFor(), milliseconds(0));
  {
    ClockJump suspend(milliseconds(11000));
    EXPECT_EQ(lease->validFor(), milliseconds(0));
    EXPECT_FALSE(lease->lost()) << "only the sidecar says lost";
    ASSERT_TRUE(lease->check().ok());
    EXPECT_EQ(lease->validFor(), milliseconds(0));
  }
  EXPECT_GT(lease->validFor(), milliseconds(0));
  EXPECT_TRUE(lease->release().ok());
}

}  // namespace
}  // namespace fencekeeper::testing
