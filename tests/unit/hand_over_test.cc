// The hand-over: a waiter next in line takes the lock on its predecessor's deletion without
// listing its queue again, and never on a node of its own that is gone or while a lease of its
// sidecar still counts as held. On the in-memory ZooKeeper, one callback at a time where the
// order matters.
#include <gtest/gtest.h>

#include <algorithm>

#include "sidecar/engine/lock_engine.h"
#include "sidecar/engine/lock_name.h"
#include "sidecar/zk/fake_zk.h"
#include "tests/support/engine_request.h"
#include "tests/support/manual_executor.h"
#include "tests/support/spied_engine.h"

namespace fencekeeper::engine {
namespace {

using zk::FakeZkServer;

constexpr const char* kLock = "/fencekeeper/locks/x";

using Sidecar = testing::SpiedEngine;

class HandOverTest : public ::testing::Test {
 protected:
  // Grants need two answered heartbeats a quarter of the session timeout (4 s) apart.
  HandOverTest() {
    settle();
    timer.advance(Millis(1000));
    settle();
  }
  void settle() {
    while (ex.runAll() > 0) {
    }
  }
  std::unique_ptr<testing::EngineRequest> acquire(Sidecar& s) {
    auto p = testing::startRequest(s.engine, "x", Millis(60000), Millis(10000));
    settle();
    return p;
  }
  void startRelease(Sidecar& s, testing::EngineRequest& p) {
    s.engine.release(p.outcome->id, [](ReleaseOutcome) {});
  }
  // The queue's node names, lowest sequence first.
  std::vector<std::string> queue() {
    auto names = server.childrenOf(kLock);
    std::sort(names.begin(), names.end(), [](auto& l, auto& r) {
      return parseQueueNode(l)->sequence < parseQueueNode(r)->sequence;
    });
    return names;
  }
  uint64_t czxidOf(const std::string& name) {
    return static_cast<uint64_t>(server.statOf(std::string(kLock) + "/" + name).czxid);
  }
  // Runs every callback one at a time; after each, no two leases of `sidecars` are held.
  void settleCheckingOneHolder(std::initializer_list<Sidecar*> sidecars) {
    do {
      uint32_t held = 0;
      for (Sidecar* s : sidecars) held += s->engine.counts().held;
      ASSERT_LE(held, 1u) << "two holders of one lock";
    } while (ex.runOne());
  }

  testing::ManualExecutor ex;
  ManualTimer timer;
  FakeZkServer server;
  Sidecar a{server, ex, timer, "aaaa"};
  Sidecar b{server, ex, timer, "bbbb"};
};

TEST_F(HandOverTest, TheWaiterNextInLineTakesTheLockWithoutListingItsQueueAgain) {
  auto holder = acquire(a);
  auto waiter = acquire(b);
  ASSERT_TRUE(holder->granted());
  ASSERT_FALSE(waiter->outcome);
  int listed = b.spy.listings[kLock];
  startRelease(a, *holder);
  settle();
  ASSERT_TRUE(waiter->granted());
  EXPECT_EQ(b.spy.listings[kLock], listed) << "its predecessor was the only node ahead of it";
  auto names = queue();
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(waiter->outcome->token, czxidOf(names[0]));
  EXPECT_GT(waiter->outcome->token, holder->outcome->token);
}

TEST_F(HandOverTest, AWaiterFurtherBackListsAgainWhenTheNodeAheadOfItGoes) {
  auto holder = acquire(a);
  auto second = acquire(b);
  auto third = acquire(b);
  int listed = b.spy.listings[kLock];
  // The second's node goes (it queues again, behind the third).
  server.removeExternally(std::string(kLock) + "/" + queue()[1]);
  settle();
  EXPECT_FALSE(third->outcome) << "the holder is still ahead of it";
  EXPECT_GT(b.spy.listings[kLock], listed) << "two were ahead of it: it must look again";
  listed = b.spy.listings[kLock];
  startRelease(a, *holder);
  settle();
  ASSERT_TRUE(third->granted());
  EXPECT_EQ(b.spy.listings[kLock], listed) << "now only the holder was ahead of it";
}

TEST_F(HandOverTest, AWaiterWhoseNodeWasDeletedQueuesAgainAndIsGrantedOnlyOnItsNewNode) {
  auto holder = acquire(a);
  auto waiter = acquire(b);
  std::string gone = queue()[1];
  // Its node and then its predecessor go before the waiter's sidecar hears of either: the first
  // deletion must win, though the second alone would make it next in line.
  server.removeExternally(std::string(kLock) + "/" + gone);
  startRelease(a, *holder);
  settleCheckingOneHolder({&a, &b});
  ASSERT_TRUE(waiter->granted());
  auto names = queue();
  ASSERT_EQ(names.size(), 1u);
  EXPECT_NE(names[0], gone);
  EXPECT_EQ(waiter->outcome->token, czxidOf(names[0])) << "its token is its new node's";
  EXPECT_TRUE(waiter->losses.empty());
}

TEST_F(HandOverTest, AHeldNodeDeletedBehindItsSidecarsBackIsLostBeforeTheNextLocalWaiterHolds) {
  auto holder = acquire(a);
  auto waiter = acquire(a);
  ASSERT_TRUE(holder->granted());
  // One deletion fires the holder's own watch and the waiter's watch on its predecessor, in
  // either order: at no step may both count as held.
  server.removeExternally(std::string(kLock) + "/" + queue()[0]);
  settleCheckingOneHolder({&a});
  EXPECT_EQ(holder->losses, std::vector<LossReason>{LossReason::kReleasedElsewhere});
  ASSERT_TRUE(waiter->granted());
  EXPECT_EQ(a.engine.counts().held, 1u);
}

// A lone holder relies on its lock's children watch, which the next create fires; the node's own
// read that follows answers after the new waiter's listing. A listing that lacks the holder's
// node (deleted between the create and the listing) loses the lease before it grants anyone.
TEST_F(HandOverTest, AListingThatLacksAHeldNodeLosesItsLeaseBeforeItGrantsTheNextLocalWaiter) {
  auto holder = acquire(a);
  ASSERT_TRUE(holder->granted());
  std::string held = std::string(kLock) + "/" + queue()[0];
  a.spy.beforeListing = [&](const std::string&) {
    a.spy.beforeListing = nullptr;
    server.removeExternally(held);
  };
  auto waiter = testing::startRequest(a.engine, "x", Millis(60000), Millis(10000));
  settleCheckingOneHolder({&a});
  EXPECT_EQ(holder->losses, std::vector<LossReason>{LossReason::kReleasedElsewhere});
  ASSERT_TRUE(waiter->granted());
  EXPECT_EQ(a.engine.counts().held, 1u);
}

}  // namespace
}  // namespace fencekeeper::engine
