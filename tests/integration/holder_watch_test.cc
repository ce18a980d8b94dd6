// Holder watches against real sidecars and a real ZooKeeper: pushed changes with rising tokens
// across sidecars, one ZooKeeper watch per lock per sidecar however many watch, "unknown" while
// ZooKeeper is down and while the sidecar restarts (the watch resumes by itself), and
// `fencectl holder --watch`.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <mutex>
#include <regex>
#include <vector>

#include "fencekeeper/client.h"
#include "sidecar/devzk/loopback.h"
#include "tests/support/sidecar_cluster.h"
#include "tests/support/wait.h"

namespace fencekeeper::testing {
namespace {

using std::chrono::milliseconds;
constexpr milliseconds kTtl{10000};

// What one watch was told, read from the test's thread.
class Recorder {
 public:
  HolderChangeCallback callback() {
    return [this](const HolderChange& c) {
      std::lock_guard<std::mutex> lock(mutex_);
      changes_.push_back(c);
    };
  }
  std::vector<HolderChange> changes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return changes_;
  }
  std::optional<HolderChange> last() const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (changes_.empty()) return std::nullopt;
    return changes_.back();
  }
  bool lastIs(HolderState state, uint64_t token = 0) const {
    auto l = last();
    return l && l->state == state && (token == 0 || l->info.token == token);
  }

 private:
  mutable std::mutex mutex_;
  std::vector<HolderChange> changes_;
};

class HolderWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster.startSidecar();
    cluster.startSidecar();
  }
  // The ZooKeeper server's watches, data and children (`mntr`; `wchs` counts data watches only).
  int serverWatches() {
    auto text = devzk::fourLetterWord(cluster.zk().clientPort(0), "mntr", 2000);
    std::smatch m;
    if (!text || !std::regex_search(*text, m, std::regex("zk_watch_count\\s+(\\d+)"))) return -1;
    return std::stoi(m[1]);
  }
  SidecarCluster cluster;
};

TEST_F(HolderWatchTest, EachHolderIsPushedWithRisingTokensAcrossSidecars) {
  auto watcherClient = cluster.connect(0);
  Recorder seen;
  Status s;
  auto watch = watcherClient->watchHolder("elect/x", seen.callback(), &s);
  ASSERT_TRUE(watch) << s.message;
  ASSERT_TRUE(waitUntil([&] { return seen.lastIs(HolderState::kFree); }));

  auto other = cluster.connect(1);
  auto options = acquireOptions(milliseconds(0), kTtl);
  options.ownerLabel = "leader-b";
  auto first = other->acquire("elect/x", options, &s);
  ASSERT_TRUE(first) << s.message;
  ASSERT_TRUE(waitUntil([&] { return seen.lastIs(HolderState::kHeld, first->token()); }));
  EXPECT_EQ(seen.last()->info.ownerLabel, "leader-b");
  EXPECT_FALSE(seen.last()->info.thisSidecar);

  auto mine = cluster.connect(0);
  options.ownerLabel = "leader-a";
  options.wait = milliseconds(20000);
  auto request = mine->acquireAsync("elect/x", options);
  ASSERT_TRUE(first->release().ok());
  auto second = request->wait(milliseconds(20000), &s);
  ASSERT_TRUE(second) << s.message;
  ASSERT_TRUE(waitUntil([&] { return seen.lastIs(HolderState::kHeld, second->token()); }));
  EXPECT_EQ(seen.last()->info.ownerLabel, "leader-a");
  EXPECT_TRUE(seen.last()->info.thisSidecar);
  ASSERT_TRUE(second->release().ok());
  ASSERT_TRUE(waitUntil([&] { return seen.lastIs(HolderState::kFree); }));

  uint64_t highest = 0;
  for (auto& c : seen.changes()) {
    ASSERT_NE(c.state, HolderState::kUnknown) << c.detail;
    if (c.state != HolderState::kHeld) continue;
    EXPECT_GT(c.info.token, highest) << "tokens strictly rise";
    highest = c.info.token;
  }
}

TEST_F(HolderWatchTest, OneZooKeeperWatchPerLockPerSidecarHoweverManyWatch) {
  auto c1 = cluster.connect(0);
  Recorder first;
  auto firstWatch = c1->watchHolder("many", first.callback());
  ASSERT_TRUE(firstWatch);
  // Told "free" first; the watch is set once the lock's node was made for it.
  int one = 0;
  ASSERT_TRUE(waitUntil([&] {
    one = serverWatches();
    return first.last().has_value() && one > 0;
  })) << devzk::fourLetterWord(cluster.zk().clientPort(0), "mntr", 2000).value_or("no answer");

  std::vector<std::unique_ptr<Client>> clients;
  std::vector<std::unique_ptr<Recorder>> recorders;
  std::vector<std::unique_ptr<HolderWatch>> watches;
  for (int i = 0; i < 12; ++i) {
    if (i % 4 == 0) clients.push_back(cluster.connect(0));
    recorders.push_back(std::make_unique<Recorder>());
    watches.push_back(clients.back()->watchHolder("many", recorders.back()->callback()));
    ASSERT_TRUE(watches.back());
  }
  ASSERT_TRUE(waitUntil([&] {
    for (auto& r : recorders) {
      if (!r->last()) return false;
    }
    return true;
  })) << [&] {
    std::string told;
    for (auto& r : recorders) told += std::to_string(r->changes().size()) + " ";
    return "changes per watcher: " + told;
  }();
  EXPECT_EQ(serverWatches(), one) << "thirteen local watchers, one ZooKeeper watch";

  auto holderClient = cluster.connect(1);
  auto holder = holderClient->acquire("many", acquireOptions(milliseconds(0), kTtl));
  ASSERT_TRUE(holder);
  for (auto& r : recorders) {
    EXPECT_TRUE(waitUntil([&] { return r->lastIs(HolderState::kHeld, holder->token()); }));
  }
}

TEST_F(HolderWatchTest, UnknownWhileZooKeeperIsDownThenTheHolderAgain) {
  auto holderClient = cluster.connect(1);
  auto held = holderClient->acquire("zk-down", acquireOptions(milliseconds(0), kTtl));
  ASSERT_TRUE(held);
  auto client = cluster.connect(0);
  Recorder seen;
  auto watch = client->watchHolder("zk-down", seen.callback());
  ASSERT_TRUE(watch);
  ASSERT_TRUE(waitUntil([&] { return seen.lastIs(HolderState::kHeld, held->token()); }));

  cluster.zk().stop(0);
  // Vouching lapses within the session timeout (2 s) of the last answered heartbeat.
  ASSERT_TRUE(waitUntil([&] { return seen.lastIs(HolderState::kUnknown); }, milliseconds(10000)));
  EXPECT_NE(seen.last()->detail.find("not vouched for"), std::string::npos)
      << seen.last()->detail;

  cluster.zk().restart(0);
  EXPECT_TRUE(waitUntil([&] { return !seen.lastIs(HolderState::kUnknown); }, milliseconds(30000)))
      << "the holder is read again once the session is vouched for";
}

TEST_F(HolderWatchTest, ASidecarRestartIsUnknownThenTheWatchResumesByItself) {
  auto client = cluster.connect(0);
  Recorder seen;
  auto watch = client->watchHolder("restart", seen.callback());
  ASSERT_TRUE(watch);
  ASSERT_TRUE(waitUntil([&] { return seen.lastIs(HolderState::kFree); }));

  cluster.restartSidecar(0);
  ASSERT_TRUE(waitUntil([&] {
    for (auto& c : seen.changes()) {
      if (c.state == HolderState::kUnknown) return true;
    }
    return false;
  }));
  auto holderClient = cluster.connect(1);
  auto held = holderClient->acquire("restart", acquireOptions(milliseconds(0), kTtl));
  ASSERT_TRUE(held);
  EXPECT_TRUE(waitUntil([&] { return seen.lastIs(HolderState::kHeld, held->token()); },
                        milliseconds(10000)))
      << "the watch resumed on the new connection";
}

TEST_F(HolderWatchTest, ElectionCampaignsResignsAndObserversSeeTheLeader) {
  auto clientA = cluster.connect(0);
  auto clientB = cluster.connect(1);
  Election a(*clientA, "elect/cpp", "node-a", kTtl);
  Election b(*clientB, "elect/cpp", "node-b", kTtl);
  Recorder seen;
  auto observer = b.observe(seen.callback());
  ASSERT_TRUE(observer);
  Status s;
  auto leadingA = a.campaign(kWaitForever, &s);
  ASSERT_TRUE(leadingA) << s.message;
  ASSERT_TRUE(waitUntil([&] { return seen.lastIs(HolderState::kHeld, leadingA->token()); }));
  EXPECT_EQ(seen.last()->info.ownerLabel, "node-a");

  auto standby = b.campaignAsync();  // no deadline: stands by until a resigns
  HolderInfo leader;
  ASSERT_TRUE(waitUntil([&] { return a.leader(&leader).ok() && leader.waiters == 1; }));
  EXPECT_EQ(leader.ownerLabel, "node-a");
  EXPECT_EQ(standby->wait(milliseconds(0), &s), nullptr);
  EXPECT_EQ(s.code, ErrorCode::kInProgress);

  ASSERT_TRUE(leadingA->release().ok());  // a resigns
  auto leadingB = standby->wait(milliseconds(20000), &s);
  ASSERT_TRUE(leadingB) << s.message;
  EXPECT_GT(leadingB->token(), leadingA->token());
  ASSERT_TRUE(waitUntil([&] { return seen.lastIs(HolderState::kHeld, leadingB->token()); }));
  EXPECT_EQ(seen.last()->info.ownerLabel, "node-b");
}

TEST_F(HolderWatchTest, AnInvalidNameIsRefusedWithWhy) {
  auto client = cluster.connect(0);
  Recorder seen;
  Status s;
  EXPECT_EQ(client->watchHolder("../etc", seen.callback(), &s), nullptr);
  EXPECT_EQ(s.code, ErrorCode::kInvalidName);
  EXPECT_NE(s.message.find(":"), std::string::npos) << "the sidecar says why: " << s.message;
}

TEST_F(HolderWatchTest, FencectlHolderWatchPrintsOneJsonLinePerChange) {
  auto watcher = cluster.fencectl(0, {"holder", "cli/x", "--watch", "--json"});
  ASSERT_TRUE(waitUntil([&] { return watcher->log().find("\"state\":\"free\"") != std::string::npos; }))
      << watcher->log();
  auto holderClient = cluster.connect(1);
  auto held = holderClient->acquire("cli/x", acquireOptions(milliseconds(0), kTtl));
  ASSERT_TRUE(held);
  std::string token = "\"token\":" + std::to_string(held->token());
  ASSERT_TRUE(waitUntil([&] {
    auto log = watcher->log();
    return log.find("\"state\":\"held\"") != std::string::npos &&
           log.find(token) != std::string::npos;
  })) << watcher->log();
  ASSERT_TRUE(held->release().ok());
  ASSERT_TRUE(waitUntil([&] {
    auto log = watcher->log();
    return log.rfind("\"state\":\"free\"") > log.find(token);
  })) << watcher->log();
  watcher->signal(SIGTERM);
  EXPECT_EQ(watcher->wait(milliseconds(5000)), 0) << watcher->log();
}

}  // namespace
}  // namespace fencekeeper::testing
