// Holder watches of the lock engine against the in-memory ZooKeeper, time driven by hand: the
// first report, each change with rising tokens, "unknown" while not vouched for, one ZooKeeper
// watch per lock whatever the number of watchers, re-armed after a session expiry, no node made.
#include <gtest/gtest.h>

#include <vector>

#include "sidecar/engine/lock_engine.h"
#include "sidecar/zk/fake_zk.h"
#include "tests/support/engine_request.h"
#include "tests/support/manual_executor.h"
#include "tests/support/spied_engine.h"

namespace fencekeeper::engine {
namespace {

using zk::FakeZkServer;

using Sidecar = testing::SpiedEngine;

// What one watcher was told, in order.
struct Seen {
  std::vector<HolderChange> changes;
  LockEngine::HolderChangeCallback callback() {
    return [this](const HolderChange& c) { changes.push_back(c); };
  }
  const HolderChange& last() const { return changes.back(); }
};

class HolderWatchTest : public ::testing::Test {
 protected:
  // Grants need two answered heartbeats a quarter of the session timeout (4 s) apart.
  HolderWatchTest() { passTime(Millis(1000)); }
  void settle() {
    do {
      timer.runDue();
    } while (ex.runAll() > 0);
  }
  void passTime(Millis by) {
    settle();
    timer.advance(by);
    settle();
  }
  HolderWatchId watch(Sidecar& s, const std::string& name, Seen& seen) {
    LeaseError error;
    HolderWatchId id = s.engine.watchHolder(name, seen.callback(), error);
    EXPECT_EQ(error, LeaseError::kOk);
    settle();
    return id;
  }
  std::unique_ptr<testing::EngineRequest> acquire(Sidecar& s, const std::string& name) {
    auto p = testing::startRequest(s.engine, name, Millis(60000), Millis(10000));
    settle();
    return p;
  }
  void release(Sidecar& s, testing::EngineRequest& p) {
    s.engine.release(p.outcome->id, [](ReleaseOutcome) {});
    settle();
    s.engine.withdraw(p.outcome->id);
    settle();
  }

  testing::ManualExecutor ex;
  ManualTimer timer;
  FakeZkServer server;
  Sidecar a{server, ex, timer, "aaaa"};
  Sidecar b{server, ex, timer, "bbbb"};
};

TEST_F(HolderWatchTest, TellsNoHolderThenEachHolderWithRisingTokensThenNoHolder) {
  Seen seen;
  watch(a, "jobs/x", seen);
  ASSERT_EQ(seen.changes.size(), 1u);
  EXPECT_EQ(seen.last().state, HolderState::kFree);
  EXPECT_FALSE(server.exists("/fencekeeper/locks/jobs")) << "watching creates no node";

  auto first = acquire(a, "jobs/x");
  auto second = acquire(b, "jobs/x");
  ASSERT_TRUE(first->granted());
  ASSERT_EQ(seen.changes.size(), 2u);
  EXPECT_EQ(seen.last().state, HolderState::kHeld);
  EXPECT_EQ(seen.last().info.token, first->outcome->token);
  EXPECT_EQ(seen.last().info.ownerLabel, "worker");
  EXPECT_TRUE(seen.last().info.thisSidecar);

  release(a, *first);
  ASSERT_TRUE(second->granted());
  ASSERT_EQ(seen.changes.size(), 3u) << "one change per hand-over, no 'free' in between";
  EXPECT_EQ(seen.last().state, HolderState::kHeld);
  EXPECT_EQ(seen.last().info.token, second->outcome->token);
  EXPECT_GT(seen.last().info.token, first->outcome->token);
  EXPECT_FALSE(seen.last().info.thisSidecar);

  release(b, *second);
  ASSERT_EQ(seen.changes.size(), 4u);
  EXPECT_EQ(seen.last().state, HolderState::kFree);
}

TEST_F(HolderWatchTest, OneZooKeeperWatchPerLockHoweverManyWatch) {
  std::vector<Seen> seen(5);
  std::vector<HolderWatchId> ids;
  for (auto& s : seen) ids.push_back(watch(a, "x", s));
  const std::string path = "/fencekeeper/locks/x";
  // Asked on the missing node (which leaves none; an exists watch waits for the node): one.
  EXPECT_EQ(a.spy.childrenWatches[path], 1);
  for (int round = 0; round < 3; ++round) {
    auto held = acquire(b, "x");
    release(b, *held);
  }
  // Each change fired the one watch, which was set again once: 1 + 6 changes (a create, a
  // delete per round; the node's own creation came with the first); five watchers did not make
  // it five times that.
  EXPECT_EQ(a.spy.childrenWatches[path], 7);
  for (auto& s : seen) {
    ASSERT_EQ(s.changes.size(), 7u);  // free, then held and free three times
    for (size_t i = 0; i < s.changes.size(); ++i) {
      EXPECT_EQ(s.changes[i].state, seen[0].changes[i].state);
      EXPECT_EQ(s.changes[i].info.token, seen[0].changes[i].info.token);
    }
  }
  for (auto id : ids) a.engine.unwatchHolder(id);
  auto after = acquire(b, "x");
  EXPECT_EQ(seen[0].changes.size(), 7u) << "no call after unwatchHolder";
}

TEST_F(HolderWatchTest, ALateWatcherIsToldTheCurrentHolderOnlyOnTheNextTurn) {
  Seen early, late;
  watch(a, "x", early);
  auto held = acquire(b, "x");
  LeaseError error;
  a.engine.watchHolder("x", late.callback(), error);
  EXPECT_TRUE(late.changes.empty()) << "called from within watchHolder()";
  settle();
  ASSERT_EQ(late.changes.size(), 1u);
  EXPECT_EQ(late.last().state, HolderState::kHeld);
  EXPECT_EQ(late.last().info.token, held->outcome->token);
  // On the missing node, then once the acquire made it: none for the newcomer.
  EXPECT_EQ(a.spy.childrenWatches["/fencekeeper/locks/x"], 2);
}

TEST_F(HolderWatchTest, AnInvalidNameIsRefused) {
  Seen seen;
  LeaseError error;
  EXPECT_EQ(a.engine.watchHolder("../x", seen.callback(), error), 0u);
  EXPECT_EQ(error, LeaseError::kInvalidName);
  settle();
  EXPECT_TRUE(seen.changes.empty());
}

TEST_F(HolderWatchTest, UnknownWhileNotVouchedForThenTheHolderAgain) {
  Seen seen;
  watch(a, "x", seen);
  auto held = acquire(b, "x");
  ASSERT_EQ(seen.last().state, HolderState::kHeld);
  // No heartbeat answered past safeUntil: a cannot vouch for its session (nor can b, whose lease
  // is lost with it: one clock).
  timer.skip(a.engine.safeFor() + Millis(1));
  EXPECT_FALSE(a.engine.vouched());
  EXPECT_EQ(seen.last().state, HolderState::kUnknown) << "told at the lapse itself";
  EXPECT_NE(seen.last().detail.find("not vouched for"), std::string::npos) << seen.last().detail;
  // Answered heartbeats vouch for it again: the holder is read afresh (b's lease is gone).
  passTime(Millis(1000));
  ASSERT_TRUE(a.engine.vouched());
  EXPECT_EQ(seen.last().state, HolderState::kFree);
  auto next = acquire(b, "x");
  ASSERT_TRUE(next->granted());
  EXPECT_EQ(seen.last().state, HolderState::kHeld);
  EXPECT_GT(seen.last().info.token, held->outcome->token);
}

TEST_F(HolderWatchTest, TheWatchIsSetAgainInTheSessionAfterAnExpiry) {
  Seen seen;
  watch(a, "x", seen);
  server.expireSession(a.zk);
  for (int i = 0; i < 4; ++i) passTime(Millis(1000));
  ASSERT_TRUE(a.engine.vouched());
  auto held = acquire(b, "x");
  ASSERT_TRUE(held->granted());
  EXPECT_EQ(seen.last().state, HolderState::kHeld) << "the old session's watch died with it";
  EXPECT_EQ(seen.last().info.token, held->outcome->token);
}

}  // namespace
}  // namespace fencekeeper::engine
