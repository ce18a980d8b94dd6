// A waiter stopped (SIGSTOP) while queued, granted during the stop, its TTL gone by the time it
// runs again: that grant was never the caller's. acquire drops it without a loss callback and
// queues again within what is left of its wait.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "fencekeeper/client.h"
#include "tests/support/sidecar_cluster.h"
#include "tests/support/wait.h"

namespace fencekeeper::testing {
namespace {

using std::chrono::milliseconds;

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  return text;
}

class StoppedWaiter : public ::testing::Test {
 protected:
  void SetUp() override {
    SidecarOptions options;
    options.sessionTimeout = "4s";
    cluster.startSidecar(options);
    client = cluster.connect(0);
    probeDir = cluster.dir() + "/probe";
    std::filesystem::create_directories(probeDir);
  }

  // Holds the lock, starts a waiter for it (TTL 500 ms), stops the waiter, hands it the lock and
  // waits until that grant has expired at the sidecar. Returns the expired token.
  uint64_t grantWhileStopped(const std::function<std::unique_ptr<ChildProcess>()>& startWaiter) {
    auto held = client->acquire("stopped", acquireOptions(milliseconds(0), milliseconds(30000)));
    EXPECT_TRUE(held);
    if (!held) return 0;
    waiter = startWaiter();
    EXPECT_TRUE(waitUntil([&] { return holderOf(*client, "stopped").waiters == 1; }));
    // Its acquire call began before this: its wait ends before queuedAt + the wait.
    queuedAt = std::chrono::steady_clock::now();
    waiter->freeze();
    EXPECT_TRUE(held->release().ok());
    HolderInfo granted;
    EXPECT_TRUE(waitUntil([&] {
      granted = holderOf(*client, "stopped");
      return granted.held && granted.token > held->token();
    }));
    // Its TTL passes while it is stopped: the sidecar lets go of it.
    EXPECT_TRUE(waitUntil([&] { return !holderOf(*client, "stopped").held; }));
    return granted.token;
  }

  // A holder-probe waiting `wait` for the lock.
  uint64_t probeGrantedWhileStopped(const std::string& wait, bool exitOnLoss) {
    return grantWhileStopped([&] {
      return std::make_unique<ChildProcess>(
          std::vector<std::string>{HOLDER_PROBE_BIN, "--socket", cluster.socket(0), "--lock",
                                   "stopped", "--ttl", "500ms", "--wait", wait, "--store-port", "1",
                                   "--dir", probeDir, "--exit-on-loss", exitOnLoss ? "1" : "0"},
          cluster.newLogPath("probe"));
    });
  }

  SidecarCluster cluster;
  std::unique_ptr<Client> client;
  std::string probeDir;
  std::unique_ptr<ChildProcess> waiter;
  std::chrono::steady_clock::time_point queuedAt;
};

TEST_F(StoppedWaiter, GrantExpiredWhileStoppedIsDroppedAndQueuedAgain) {
  uint64_t expiredToken = probeGrantedWhileStopped("20s", false);
  ASSERT_FALSE(HasFailure());
  waiter->signal(SIGCONT);
  ASSERT_TRUE(waitUntil([&] {
    return !readFile(probeDir + "/granted").empty() || !readFile(probeDir + "/failed").empty();
  }));
  EXPECT_EQ(readFile(probeDir + "/failed"), "") << waiter->log();
  ASSERT_NE(readFile(probeDir + "/granted"), "") << waiter->log();
  EXPECT_GT(std::stoull(readFile(probeDir + "/granted")), expiredToken) << "not a fresh grant";
  EXPECT_GT(std::stoll(readFile(probeDir + "/valid")), 0);
  EXPECT_EQ(holderOf(*client, "stopped").token, std::stoull(readFile(probeDir + "/granted")));

  // The fresh lease works, and the dropped one never called the loss callback.
  std::ofstream(probeDir + "/go") << "go\n";
  ASSERT_TRUE(waitUntil([&] { return !readFile(probeDir + "/result").empty(); }));
  EXPECT_NE(readFile(probeDir + "/result").find("renew=ok lost=0"), std::string::npos)
      << readFile(probeDir + "/result");
  EXPECT_EQ(waiter->wait(milliseconds(5000)), 0);
  EXPECT_EQ(readFile(probeDir + "/lost"), "") << "a dropped grant fired the loss callback";
}

// With exit-on-loss too: the dropped grant does not end the process (status 70).
TEST_F(StoppedWaiter, GrantExpiredWhileStoppedPastItsWaitTimesOutWithoutLossCallbackOrExit) {
  probeGrantedWhileStopped("1500ms", true);
  ASSERT_FALSE(HasFailure());
  // Resumed only once its whole wait is over: no time is left to queue again.
  ASSERT_TRUE(waitUntil([&] { return msSince(queuedAt) > 1500; }));
  waiter->signal(SIGCONT);
  EXPECT_EQ(waiter->wait(milliseconds(5000)), 1) << waiter->log();
  EXPECT_EQ(readFile(probeDir + "/failed"), errorCodeName(ErrorCode::kTimedOut)) << waiter->log();
  EXPECT_EQ(readFile(probeDir + "/lost"), "") << "a dropped grant fired the loss callback";
  EXPECT_FALSE(holderOf(*client, "stopped").held);
}

// fencectl queued, stopped, granted and expired meanwhile: it queues again and runs CMD on the
// fresh lease (it used to give up with 75, "not acquired", with most of its wait left).
TEST_F(StoppedWaiter, FencectlStoppedWhileQueuedRunsItsCommandOnAFreshGrant) {
  uint64_t expiredToken = grantWhileStopped([&] {
    return cluster.fencectl(0, {"lock", "stopped", "--ttl", "500ms", "--wait", "20s", "--", "sh",
                                "-c", "echo $FENCE_TOKEN > " + probeDir + "/token"});
  });
  ASSERT_FALSE(HasFailure());
  waiter->signal(SIGCONT);
  EXPECT_EQ(waiter->wait(milliseconds(10000)), 0) << waiter->log();
  ASSERT_NE(readFile(probeDir + "/token"), "") << waiter->log();
  EXPECT_GT(std::stoull(readFile(probeDir + "/token")), expiredToken);
}

}  // namespace
}  // namespace fencekeeper::testing
