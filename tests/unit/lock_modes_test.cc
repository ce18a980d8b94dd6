// Shared locks and semaphores in the lock engine, against the in-memory ZooKeeper: who holds
// together, who waits behind whom, tokens, refusals and holder listings. The policy's table is in
// lock_queue_test.cc; kazoo interop and a real server in tests/python/test_lock_modes.py.
#include <gtest/gtest.h>

#include <optional>

#include "sidecar/engine/lock_engine.h"
#include "sidecar/zk/fake_zk.h"
#include "tests/support/engine_request.h"
#include "tests/support/manual_executor.h"

namespace fencekeeper::engine {
namespace {

using Pending = testing::EngineRequest;

class LockModesTest : public ::testing::Test {
 protected:
  LockModesTest() {
    settle();
    timer.advance(Millis(1000));
    settle();
  }
  void settle() {
    while (ex.runAll() > 0) {
    }
  }
  static EngineConfig config(std::string id) {
    EngineConfig c;
    c.instanceId = std::move(id);
    return c;
  }
  std::unique_ptr<Pending> acquire(LockEngine& e, LockMode mode, uint32_t permits = 0,
                                   Millis wait = Millis(60000)) {
    auto p = testing::startRequest(e, "m", wait, Millis(10000), mode, permits);
    settle();
    return p;
  }
  void release(LockEngine& e, Pending& p) {
    std::optional<ReleaseOutcome> result;
    e.release(p.outcome->id, [&](ReleaseOutcome o) { result = o; });
    settle();
    ASSERT_TRUE(result);
    e.withdraw(p.outcome->id);
    settle();
  }
  std::optional<HolderInfo> holder() {
    std::optional<HolderInfo> out;
    a.holder("m", [&](LeaseError e, HolderInfo info, std::string) {
      ASSERT_EQ(e, LeaseError::kOk);
      out = info;
    });
    settle();
    timer.advance(Millis(0));  // (the ReadPacer starts reads on a later turn)
    settle();
    return out;
  }
  std::vector<std::string> queue() { return server.childrenOf("/fencekeeper/locks/m"); }

  testing::ManualExecutor ex;
  ManualTimer timer;
  zk::FakeZkServer server;
  zk::FakeZkClient zkA{server, ex};
  zk::FakeZkClient zkB{server, ex};
  LockEngine a{zkA, timer, config("aaaa")};
  LockEngine b{zkB, timer, config("bbbb")};
};

TEST_F(LockModesTest, ReadersShareAndAWriterWaitsForAllOfThemThenReadersWaitForTheWriter) {
  auto r1 = acquire(a, LockMode::kShared);
  auto r2 = acquire(b, LockMode::kShared);
  ASSERT_TRUE(r1->granted());
  ASSERT_TRUE(r2->granted());
  auto w = acquire(a, LockMode::kExclusive);
  auto r3 = acquire(b, LockMode::kShared);
  EXPECT_FALSE(w->outcome);
  EXPECT_FALSE(r3->outcome);  // behind the writer: readers never starve it
  auto info = holder();
  ASSERT_TRUE(info && info->held);
  ASSERT_EQ(info->holders.size(), 2u);
  EXPECT_EQ(info->holders[0].token, r1->outcome->token);
  EXPECT_EQ(info->holders[1].token, r2->outcome->token);
  EXPECT_EQ(info->holders[0].mode, LockMode::kShared);
  EXPECT_EQ(info->waiters, 2u);
  release(a, *r1);
  EXPECT_FALSE(w->outcome);
  release(b, *r2);
  ASSERT_TRUE(w->granted());
  // The writer's token is above every reader's before it: the fence of a reader turned writer.
  EXPECT_GT(w->outcome->token, r2->outcome->token);
  EXPECT_FALSE(r3->outcome);
  release(a, *w);
  ASSERT_TRUE(r3->granted());
  EXPECT_GT(r3->outcome->token, w->outcome->token);
  release(b, *r3);
  EXPECT_TRUE(queue().empty());
}

TEST_F(LockModesTest, NodesCarryKazoosMarkersAndTheSemaphoresN) {
  auto r = acquire(a, LockMode::kShared);
  ASSERT_TRUE(r->granted());
  ASSERT_EQ(queue().size(), 1u);
  EXPECT_NE(queue()[0].find("__rlock__0000000000"), std::string::npos) << queue()[0];
  release(a, *r);
  auto s = acquire(a, LockMode::kPermits, 3);
  ASSERT_TRUE(s->granted());
  EXPECT_NE(queue()[0].find("__sem3__0000000001"), std::string::npos) << queue()[0];
  release(a, *s);
}

TEST_F(LockModesTest, TheFirstNPermitsHoldAndEachDepartureAdmitsTheNextInLine) {
  std::vector<std::unique_ptr<Pending>> p;
  for (int i = 0; i < 5; ++i) p.push_back(acquire(i % 2 ? b : a, LockMode::kPermits, 2));
  ASSERT_TRUE(p[0]->granted());
  ASSERT_TRUE(p[1]->granted());
  EXPECT_FALSE(p[2]->outcome);
  auto info = holder();
  ASSERT_TRUE(info);
  ASSERT_EQ(info->holders.size(), 2u);
  EXPECT_EQ(info->holders[1].permits, 2u);
  EXPECT_EQ(info->waiters, 3u);
  // The second holder leaves first: the first waiter is admitted though the oldest stays.
  release(b, *p[1]);
  ASSERT_TRUE(p[2]->granted());
  EXPECT_FALSE(p[3]->outcome);
  release(a, *p[0]);
  ASSERT_TRUE(p[3]->granted());
  EXPECT_FALSE(p[4]->outcome);
  release(a, *p[2]);
  ASSERT_TRUE(p[4]->granted());
  EXPECT_NE(p[3]->outcome->token, p[4]->outcome->token);
  release(b, *p[3]);
  release(a, *p[4]);
  EXPECT_TRUE(queue().empty());
}

// A waiter behind the N nodes just ahead is admitted when a holder further ahead leaves too, once
// it is next in line: departures it does not watch move it up without a listing of its own.
TEST_F(LockModesTest, AWaiterFarBackIsAdmittedWhateverOrderTheHoldersLeaveIn) {
  std::vector<std::unique_ptr<Pending>> p;
  for (int i = 0; i < 4; ++i) p.push_back(acquire(a, LockMode::kPermits, 2));
  // p3 watches p1 and p2; p0 leaving moves it up (p2 is admitted), then p1 leaving admits it.
  release(a, *p[0]);
  ASSERT_TRUE(p[2]->granted());
  EXPECT_FALSE(p[3]->outcome);
  release(a, *p[1]);
  ASSERT_TRUE(p[3]->granted());
  release(a, *p[2]);
  release(a, *p[3]);
}

TEST_F(LockModesTest, AnotherNOrAnotherModeIsRefusedNamingBoth) {
  auto s2 = acquire(a, LockMode::kPermits, 2);
  ASSERT_TRUE(s2->granted());
  auto s3 = acquire(b, LockMode::kPermits, 3);
  ASSERT_TRUE(s3->outcome);
  EXPECT_EQ(s3->outcome->error, LeaseError::kModeConflict);
  EXPECT_NE(s3->outcome->detail.find("3 permits"), std::string::npos) << s3->outcome->detail;
  EXPECT_NE(s3->outcome->detail.find("2 permits"), std::string::npos) << s3->outcome->detail;
  auto w = acquire(b, LockMode::kExclusive);
  ASSERT_TRUE(w->outcome);
  EXPECT_EQ(w->outcome->error, LeaseError::kModeConflict);
  EXPECT_EQ(queue().size(), 1u);  // the refused requests' nodes are gone
  release(a, *s2);
  auto bad = acquire(a, LockMode::kPermits, 0);
  ASSERT_TRUE(bad->outcome);
  EXPECT_EQ(bad->outcome->error, LeaseError::kInvalidArgument);
  EXPECT_NE(bad->outcome->detail.find("permits 0"), std::string::npos) << bad->outcome->detail;
}

TEST_F(LockModesTest, TryOnceReadersShareAndATryOnceWriterIsTurnedAway) {
  auto r1 = acquire(a, LockMode::kShared, 0, Millis(0));
  auto r2 = acquire(b, LockMode::kShared, 0, Millis(0));
  ASSERT_TRUE(r1->granted());
  ASSERT_TRUE(r2->granted());
  auto w = acquire(a, LockMode::kExclusive, 0, Millis(0));
  ASSERT_TRUE(w->outcome);
  EXPECT_EQ(w->outcome->error, LeaseError::kTimedOut);
  release(a, *r1);
  release(b, *r2);
}

// Each permit is a lease of its own: a lapse of one holder's TTL loses that permit alone.
TEST_F(LockModesTest, APermitsTtlRunsOutAloneAndAdmitsTheNext) {
  auto p1 = testing::startRequest(a, "m", Millis(60000), Millis(1000), LockMode::kPermits, 2);
  auto p2 = testing::startRequest(a, "m", Millis(60000), Millis(60000), LockMode::kPermits, 2);
  auto p3 = testing::startRequest(b, "m", Millis(60000), Millis(60000), LockMode::kPermits, 2);
  settle();
  ASSERT_TRUE(p1->granted());
  ASSERT_TRUE(p2->granted());
  EXPECT_FALSE(p3->outcome);
  timer.advance(Millis(1500));
  settle();
  ASSERT_EQ(p1->losses, (std::vector<LossReason>{LossReason::kTtlExpired}));
  EXPECT_TRUE(p2->losses.empty());
  ASSERT_TRUE(p3->granted());
  release(a, *p2);
  release(b, *p3);
}

// A holder watch of a shared lock is told each change of the set of holders, not only of the
// first one: a reader joining and one leaving are both news.
TEST_F(LockModesTest, AHolderWatchIsToldEveryChangeOfASharedLocksHolders) {
  std::vector<HolderChange> told;
  LeaseError error;
  auto watch = a.watchHolder("m", [&](const HolderChange& c) { told.push_back(c); }, error);
  ASSERT_EQ(error, LeaseError::kOk);
  auto turn = [&] {
    for (int i = 0; i < 3; ++i) {
      timer.advance(Millis(0));
      settle();
    }
  };
  turn();
  auto r1 = acquire(a, LockMode::kShared);
  turn();
  ASSERT_FALSE(told.empty());
  EXPECT_EQ(told.back().info.holders.size(), 1u);
  auto r2 = acquire(b, LockMode::kShared);
  turn();
  ASSERT_EQ(told.back().state, HolderState::kHeld);
  ASSERT_EQ(told.back().info.holders.size(), 2u);
  EXPECT_EQ(told.back().info.holders[1].token, r2->outcome->token);
  release(a, *r1);
  turn();
  ASSERT_EQ(told.back().info.holders.size(), 1u);
  EXPECT_EQ(told.back().info.token, r2->outcome->token);
  release(b, *r2);
  turn();
  EXPECT_EQ(told.back().state, HolderState::kFree);
  a.unwatchHolder(watch);
}

}  // namespace
}  // namespace fencekeeper::engine
