// The C ABI (libfencekeeper.so) from plain C: the scenarios in c_abi_scenarios.c, each against a
// real ZooKeeper and sidecar of its own.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>

#include "tests/c_abi/c_abi_scenarios.h"
#include "tests/support/fake_sidecar.h"
#include "tests/support/sidecar_cluster.h"
#include "tests/support/zk_inspector.h"

namespace fencekeeper::testing {
namespace {

class CAbiTest : public ::testing::Test {
 protected:
  void SetUp() override { cluster.startSidecar(); }
  std::string socket() const { return cluster.socket(0); }

  SidecarCluster cluster;
};

// A scenario's result is the line of its first failed check (0: all passed).
TEST_F(CAbiTest, AcquireTokenRenewRelease) {
  EXPECT_EQ(fk_scenario_lifecycle(socket().c_str()), 0);
}

TEST_F(CAbiTest, TryAcquireOnABusyLockTimesOut) {
  EXPECT_EQ(fk_scenario_try_acquire_busy(socket().c_str()), 0);
}

TEST_F(CAbiTest, InvalidNamesAndArgumentsAreRefused) {
  EXPECT_EQ(fk_scenario_invalid_arguments(socket().c_str()), 0);
}

TEST_F(CAbiTest, LostCallbackOnTtlExpiryWithoutCheckIn) {
  EXPECT_EQ(fk_scenario_lost_without_check_in(socket().c_str()), 0);
}

TEST_F(CAbiTest, CheckInKeepsTheLease) {
  EXPECT_EQ(fk_scenario_check_in_keeps_lease(socket().c_str()), 0);
}

TEST_F(CAbiTest, KeepAliveTurnsOnAndOff) {
  EXPECT_EQ(fk_scenario_keep_alive_toggle(socket().c_str()), 0);
}

TEST_F(CAbiTest, HolderInfo) { EXPECT_EQ(fk_scenario_holder(socket().c_str()), 0); }

TEST_F(CAbiTest, SharedLocksAndSemaphoresListEveryHolderAndRefuseAnotherN) {
  EXPECT_EQ(fk_scenario_lock_modes(socket().c_str()), 0);
}

TEST_F(CAbiTest, HolderWatchTellsEachChangeUntilFreed) {
  EXPECT_EQ(fk_scenario_holder_watch(socket().c_str()), 0);
}

TEST_F(CAbiTest, StatusNumbersAndTheStatusSocketsJson) {
  EXPECT_EQ(fk_scenario_status(socket().c_str()), 0);
}

TEST_F(CAbiTest, CallsFromManyThreads) {
  EXPECT_EQ(fk_scenario_calls_from_threads(socket().c_str()), 0);
}

TEST_F(CAbiTest, LeaseOutlivesItsClient) {
  EXPECT_EQ(fk_scenario_lease_outlives_client(socket().c_str()), 0);
}

TEST_F(CAbiTest, CallbackFreesItsLeaseAndClosesTheClientWhenTheConnectionDrops) {
  auto kill = [](void* ctx) { static_cast<SidecarCluster*>(ctx)->sidecar(0).signal(SIGKILL); };
  EXPECT_EQ(fk_scenario_free_in_callback(socket().c_str(), kill, &cluster), 0);
}

// Its own cluster: a sidecar with a 4 s session, whose ZooKeeper the scenario freezes a moment.
TEST(CAbiJeopardyTest, AMomentaryFreezeIsAtRiskThenSafeAgain) {
  SidecarCluster cluster;
  SidecarOptions options;
  options.sessionTimeout = "4s";
  cluster.startSidecar(options);
  auto freeze = [](void* ctx) { static_cast<SidecarCluster*>(ctx)->zk().freeze(0); };
  auto thaw = [](void* ctx) { static_cast<SidecarCluster*>(ctx)->zk().thaw(0); };
  int failedAt = fk_scenario_at_risk(cluster.socket(0).c_str(), freeze, thaw, &cluster);
  cluster.zk().thaw(0);  // (a failed check returns before its thaw)
  EXPECT_EQ(failedAt, 0);
}

// The restarted sidecar comes back on the same socket, and the client reconnects by itself.
TEST_F(CAbiTest, LossFdsTurnReadableOnALossAndOnADrop) {
  auto remove = [](void* ctx, const char* name) {
    auto& cluster = *static_cast<SidecarCluster*>(ctx);
    ZkInspector zk(cluster.zk().connectString());
    std::string lock = std::string("/fencekeeper/locks/") + name;
    for (const auto& child : zk.children(lock)) zk.remove(lock + "/" + child);
  };
  auto kill = [](void* ctx) { static_cast<SidecarCluster*>(ctx)->sidecar(0).signal(SIGKILL); };
  auto restart = [](void* ctx) { static_cast<SidecarCluster*>(ctx)->restartSidecar(0); };
  EXPECT_EQ(fk_scenario_loss_fds(socket().c_str(), remove, kill, restart, &cluster), 0);
}

TEST_F(CAbiTest, ADroppedConnectionIsReportedAsTheSidecarClosingIt) {
  auto kill = [](void* ctx) { static_cast<SidecarCluster*>(ctx)->sidecar(0).signal(SIGKILL); };
  EXPECT_EQ(fk_scenario_connection_drop(socket().c_str(), kill, &cluster), 0);
}

TEST_F(CAbiTest, ConnectOptionsExpectTheSidecarsUid) {
  EXPECT_EQ(fk_scenario_connect_options(socket().c_str()), 0);
}

TEST_F(CAbiTest, AWaitingAcquireIsCancelledWithin100Ms) {
  EXPECT_EQ(fk_scenario_cancel_waiting_acquire(socket().c_str()), 0);
}

TEST_F(CAbiTest, ASignalHandlerCancelsAWaitingAcquire) {
  EXPECT_EQ(fk_scenario_cancel_from_signal_handler(socket().c_str()), 0);
}

TEST_F(CAbiTest, AGrantNobodyTookIsReleasedNeverOrphaned) {
  EXPECT_EQ(fk_scenario_untaken_grant_is_released(socket().c_str()), 0);
}

TEST(CAbiAccessTest, ImpostorIsRefusedAndDetailIsInTheMessage) {
  char tmpl[] = "/tmp/fk-cabi-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  chmod(dir.c_str(), 0755);  // the impostor's uid must reach the shared directory inside
  const char* detail = "maxWaitingPerPeer 3 reached: raise --max-waiting-per-peer";
  auto fake = startFakeSidecar(makeImpostorDirectory(dir), detail, true, dir + "/fake.log");
  ASSERT_NE(fake, nullptr);
  EXPECT_EQ(fk_scenario_impostor((dir + "/shared/fk.sock").c_str(), kImpostorUid, detail), 0);
  fake.reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fencekeeper::testing
