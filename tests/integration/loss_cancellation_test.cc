// Loss as cancellation in the C++ client: a lease's stop_token is requested, and its loss fd turns
// readable, when its node is deleted behind its back; neither when it is released. And jeopardy:
// a frozen ZooKeeper puts the lease at risk before it is lost, and a short freeze is safe again.
// Against a real ZooKeeper and sidecar; the C ABI's fds are in tests/c_abi, Python's in
// tests/python/test_loss_cancellation.py.
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fencekeeper/client.h"
#include "tests/support/sidecar_cluster.h"
#include "tests/support/wait.h"
#include "tests/support/zk_inspector.h"

namespace fencekeeper::testing {
namespace {

using std::chrono::milliseconds;

bool readable(int fd, int timeoutMs) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, timeoutMs) == 1 && (p.revents & POLLIN);
}

void deleteBehindItsBack(SidecarCluster& cluster, const std::string& name) {
  ZkInspector zk(cluster.zk().connectString());
  std::string lock = "/fencekeeper/locks/" + name;
  for (const auto& child : zk.children(lock)) zk.remove(lock + "/" + child);
}

TEST(LossCancellationTest, ALossRequestsStopOnTheWorkItCoversAndMakesTheFdReadable) {
  SidecarCluster cluster;
  cluster.startSidecar();
  auto client = cluster.connect(0);
  auto lease = client->acquire("cancel/work", acquireOptions(milliseconds(0), milliseconds(30000)));
  ASSERT_TRUE(lease);
  std::atomic<int> steps{0};
  std::atomic<bool> stoppedByLoss{false};
  // The work the lease covers, as a jthread would run it: it stops when the lease is lost.
  std::jthread work([&](std::stop_token) {
    std::stop_token lost = lease->stopToken();
    while (!lost.stop_requested()) {
      ++steps;
      std::this_thread::sleep_for(milliseconds(1));
    }
    stoppedByLoss = true;
  });
  int fd = lease->lossFd();
  ASSERT_GE(fd, 0);
  EXPECT_TRUE(waitUntil([&] { return steps.load() > 10; }, milliseconds(10000)));
  EXPECT_FALSE(readable(fd, 0));
  EXPECT_FALSE(lease->stopToken().stop_requested());

  deleteBehindItsBack(cluster, "cancel/work");
  auto deleted = std::chrono::steady_clock::now();
  EXPECT_TRUE(readable(fd, 10000));
  std::printf("loss fd readable %lld us after the node's deletion returned\n",
              static_cast<long long>(std::chrono::duration_cast<std::chrono::microseconds>(
                                         std::chrono::steady_clock::now() - deleted)
                                         .count()));
  EXPECT_TRUE(waitUntil([&] { return stoppedByLoss.load(); }, milliseconds(10000)));
  EXPECT_TRUE(lease->lost());
  EXPECT_EQ(lease->lossReason(), LossReason::kReleasedElsewhere);
  EXPECT_TRUE(readable(fd, 0));  // and stays so
}

TEST(LossCancellationTest, AReleaseRequestsNoStopAndLeavesTheFdQuiet) {
  SidecarCluster cluster;
  cluster.startSidecar();
  auto client = cluster.connect(0);
  auto lease = client->acquire("cancel/release", acquireOptions(milliseconds(0), milliseconds(30000)));
  ASSERT_TRUE(lease);
  std::atomic<bool> called{false};
  std::stop_callback onStop(lease->stopToken(), [&] { called = true; });
  int fd = lease->lossFd();
  ASSERT_TRUE(lease->release().ok());
  // Another holder takes it: the release is through, and nothing told the first of a loss.
  auto next = client->acquire("cancel/release", acquireOptions(milliseconds(5000), milliseconds(30000)));
  ASSERT_TRUE(next);
  EXPECT_FALSE(readable(fd, 0));
  EXPECT_FALSE(called.load());
  EXPECT_FALSE(lease->stopToken().stop_requested());
}

// What a holder heard, in order: "risk", "safe" or "lost", with the time left at a risk.
struct Heard {
  std::mutex mutex;
  std::vector<std::pair<std::string, Millis>> events;
  void add(std::string what, Millis left = Millis(0)) {
    std::lock_guard<std::mutex> lock(mutex);
    events.emplace_back(std::move(what), left);
  }
  std::vector<std::pair<std::string, Millis>> get() {
    std::lock_guard<std::mutex> lock(mutex);
    return events;
  }
  bool has(const std::string& what) {
    for (auto& e : get()) {
      if (e.first == what) return true;
    }
    return false;
  }
};

// Thaws the cluster's ZooKeeper whatever the test's outcome.
struct Frozen {
  explicit Frozen(SidecarCluster& c) : cluster(c) { cluster.zk().freeze(0); }
  ~Frozen() { thaw(); }
  void thaw() {
    if (std::exchange(frozen, false)) cluster.zk().thaw(0);
  }
  SidecarCluster& cluster;
  bool frozen = true;
};

// A sidecar with a 4 s session, a client, and what its lease heard.
class LeaseJeopardyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SidecarOptions options;
    options.sessionTimeout = "4s";
    cluster.startSidecar(options);
    client = cluster.connect(0);
  }
  std::unique_ptr<Lease> acquireHeard(const std::string& name) {
    AcquireOptions options = acquireOptions(milliseconds(0), milliseconds(30000));
    options.onRisk = [this](uint64_t, bool atRisk, Millis left) {
      heard.add(atRisk ? "risk" : "safe", left);
    };
    options.onLost = [this](uint64_t, LossReason) { heard.add("lost"); };
    return client->acquire(name, options);
  }

  SidecarCluster cluster;
  std::unique_ptr<Client> client;
  Heard heard;
};

TEST_F(LeaseJeopardyTest, AFrozenZooKeeperPutsTheLeaseAtRiskBeforeItIsLost) {
  auto lease = acquireHeard("jeopardy/frozen");
  ASSERT_TRUE(lease);
  {
    Frozen frozen(cluster);
    EXPECT_TRUE(waitUntil([&] { return heard.has("lost"); }, milliseconds(15000)));
    EXPECT_TRUE(lease->lost());
  }
  auto events = heard.get();
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[0].first, "risk");
  EXPECT_GT(events[0].second.count(), 0);
  EXPECT_LT(events[0].second, milliseconds(4000));
  EXPECT_EQ(events.back().first, "lost");
  std::printf("heard at risk with %lld ms left, then lost\n",
              static_cast<long long>(events[0].second.count()));
}

TEST_F(LeaseJeopardyTest, AShortFreezeIsAtRiskThenSafeAgainAndTheLeaseHolds) {
  auto lease = acquireHeard("jeopardy/short");
  ASSERT_TRUE(lease);
  {
    Frozen frozen(cluster);
    ASSERT_TRUE(waitUntil([&] { return heard.has("risk"); }, milliseconds(15000)));
    EXPECT_TRUE(lease->atRisk());
    frozen.thaw();  // at once: well within what the warning said was left
    EXPECT_TRUE(waitUntil([&] { return heard.has("safe"); }, milliseconds(15000)));
  }
  EXPECT_FALSE(heard.has("lost"));
  EXPECT_FALSE(lease->lost());
  EXPECT_FALSE(lease->atRisk());
  EXPECT_TRUE(lease->check().ok());
}

}  // namespace
}  // namespace fencekeeper::testing
