// The client's validity deadlines run on CLOCK_BOOTTIME: a suspend (here a jump of the clock,
// injected) spends a lease's validity instead of pausing it.
#include "client_lib/src/boot_clock.h"

#include <gtest/gtest.h>
#include <time.h>

#include "fencekeeper/client.h"
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

TEST(ClientBootClock, ReadsClockBoottime) {
  for (int i = 0; i < 100; ++i) {
    auto before = readClock(CLOCK_BOOTTIME);
    auto now = BootClock::now().time_since_epoch();
    auto after = readClock(CLOCK_BOOTTIME);
    ASSERT_LE(before, now);
    ASSERT_LE(now, after);
  }
  // CLOCK_MONOTONIC stops during a suspend; once the machine has slept they differ.
  std::printf("CLOCK_BOOTTIME - CLOCK_MONOTONIC here: %lld ms\n",
              static_cast<long long>(std::chrono::duration_cast<milliseconds>(
                                         readClock(CLOCK_BOOTTIME) - readClock(CLOCK_MONOTONIC))
                                         .count()));
}

// An offset added for one test is taken back when it ends.
class ClockJump {
 public:
  explicit ClockJump(milliseconds by) : by_(by) { advanceBootClockForTesting(by_); }
  ~ClockJump() { advanceBootClockForTesting(-by_); }

 private:
  milliseconds by_;
};

TEST(ClientBootClock, ASuspendLongerThanTheValidityLeavesNoneOfIt) {
  SidecarCluster cluster;
  cluster.startSidecar();
  auto client = cluster.connect(0);
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

}  // namespace
}  // namespace fencekeeper::testing
