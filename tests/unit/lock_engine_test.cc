// The lock engine against the in-memory ZooKeeper: ordering, predecessor watches, orphans,
// release, TTL and shutdown, all with time driven by a manual timer. The fault scenarios (lost
// connections, frozen servers, expiry, ambiguous creates) are in tests/fault/engine_fault_test.cc,
// run on the fake and on a real server.
#include "sidecar/engine/lock_engine.h"

#include <gtest/gtest.h>

#include <climits>
#include <optional>

#include "sidecar/engine/lock_name.h"
#include "sidecar/zk/fake_zk.h"
#include "tests/support/engine_request.h"
#include "tests/support/manual_executor.h"
#include "tests/support/spied_engine.h"

namespace fencekeeper::engine {
namespace {

using zk::FakeZkClient;
using zk::FakeZkServer;

// One sidecar: its own session on the shared fake server, its own engine.
struct Sidecar {
  Sidecar(FakeZkServer& server, testing::ManualExecutor& ex, ManualTimer& timer, std::string id)
      : zk(server, ex), engine(zk, timer, config(std::move(id))) {}
  static EngineConfig config(std::string id) {
    EngineConfig c;
    c.instanceId = std::move(id);
    return c;
  }
  FakeZkClient zk;
  LockEngine engine;
};

using Pending = testing::EngineRequest;

class LockEngineTest : public ::testing::Test {
 protected:
  // Grants need two answered heartbeats a quarter of the session timeout (4 s) apart.
  LockEngineTest() { warmUp(); }
  void warmUp() {
    settle();
    timer.advance(Millis(1000));
    settle();
  }
  void settle() {
    while (ex.runAll() > 0) {
    }
  }
  std::unique_ptr<Pending> acquire(Sidecar& s, const std::string& name, Millis wait = Millis(60000),
                                   Millis ttl = Millis(10000)) {
    return acquire(s.engine, name, wait, ttl);
  }
  std::unique_ptr<Pending> acquire(LockEngine& engine, const std::string& name,
                                   Millis wait = Millis(60000), Millis ttl = Millis(10000)) {
    auto p = testing::startRequest(engine, name, wait, ttl);
    settle();
    return p;
  }
  void release(Sidecar& s, Pending& p) { release(s.engine, p); }
  void release(LockEngine& engine, Pending& p) {
    std::optional<ReleaseOutcome> result;
    engine.release(p.outcome->id, [&](ReleaseOutcome o) { result = o; });
    settle();
    ASSERT_TRUE(result);
    ASSERT_EQ(result->error, LeaseError::kOk);
    EXPECT_TRUE(result->confirmed);
    engine.withdraw(p.outcome->id);
    settle();
  }
  // Three contenders queued on one lock by a, b and a: each is granted only once the one before
  // it is released, with rising tokens. Releases all three.
  void grantedInTurn(Pending& first, Pending& second, Pending& third) {
    ASSERT_TRUE(first.granted());
    EXPECT_FALSE(second.outcome);
    EXPECT_FALSE(third.outcome);
    release(a, first);
    ASSERT_TRUE(second.granted());
    EXPECT_FALSE(third.outcome);
    EXPECT_GT(second.outcome->token, first.outcome->token);
    release(b, second);
    ASSERT_TRUE(third.granted());
    EXPECT_GT(third.outcome->token, second.outcome->token);
    release(a, third);
  }
  std::vector<std::string> queue(const std::string& name) {
    return server.childrenOf("/fencekeeper/locks/" + name);
  }

  testing::ManualExecutor ex;
  ManualTimer timer;
  FakeZkServer server;
  Sidecar a{server, ex, timer, "aaaa"};
  Sidecar b{server, ex, timer, "bbbb"};
};

TEST_F(LockEngineTest, GrantsWithTheNodesCzxidAsToken) {
  auto p = acquire(a, "jobs/nightly");
  ASSERT_TRUE(p->granted());
  auto nodes = queue("jobs/nightly");
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_NE(nodes[0].find("__lock__0000000000"), std::string::npos);
  auto stat = server.statOf("/fencekeeper/locks/jobs/nightly/" + nodes[0]);
  EXPECT_EQ(p->outcome->token, static_cast<uint64_t>(stat.czxid));
  EXPECT_EQ(server.dataOf("/fencekeeper/locks/jobs/nightly/" + nodes[0]), "worker");
}

TEST_F(LockEngineTest, ContendersAreGrantedInFifoOrderWithRisingTokens) {
  auto first = acquire(a, "x");
  auto second = acquire(b, "x");
  auto third = acquire(a, "x");
  grantedInTurn(*first, *second, *third);
  EXPECT_TRUE(queue("x").empty());
}

// ZooKeeper's counter wraps past 2147483647 to -2147483648: a node made after the wrap still
// queues behind the ones made before it (compared as plain numbers, it was granted at once while
// the holder held: two holders).
TEST_F(LockEngineTest, QueueOrderHoldsAcrossTheSequenceCountersWrap) {
  auto once = acquire(a, "wrap");  // makes the lock's node
  ASSERT_TRUE(once->granted());
  release(a, *once);
  server.setNextSequence("/fencekeeper/locks/wrap", INT32_MAX);
  auto first = acquire(a, "wrap");
  auto second = acquire(b, "wrap");
  auto third = acquire(a, "wrap");
  ASSERT_TRUE(first->granted());
  auto names = queue("wrap");
  ASSERT_EQ(names.size(), 3u);
  int wrapped = 0;
  for (auto& n : names) wrapped += n.find("__lock__-214748364") != std::string::npos;
  EXPECT_EQ(wrapped, 2) << "the second and third nodes are made after the wrap";
  grantedInTurn(*first, *second, *third);
}

TEST_F(LockEngineTest, WaiterWakesOnlyWhenItsPredecessorGoes) {
  auto first = acquire(a, "x");
  auto second = acquire(b, "x");
  auto third = acquire(a, "x");
  auto names = queue("x");
  ASSERT_EQ(names.size(), 3u);
  std::sort(names.begin(), names.end(), [](auto& l, auto& r) {
    return parseQueueNode(l)->sequence < parseQueueNode(r)->sequence;
  });
  // The middle node vanishes: the third now waits on the first and is not granted. The second,
  // whose node it was, notices at once (its own node's watch) and queues again at the back.
  server.removeExternally("/fencekeeper/locks/x/" + names[1]);
  settle();
  EXPECT_FALSE(third->outcome);
  EXPECT_FALSE(second->outcome);
  release(a, *first);
  EXPECT_TRUE(third->granted());
  EXPECT_FALSE(second->outcome);
  release(a, *third);
  EXPECT_TRUE(second->granted());
}

TEST_F(LockEngineTest, AWaitersPositionIsReportedOnlyOnceItsQueueWasListed) {
  auto holder = acquire(a, "jobs/pos");
  ASSERT_TRUE(holder->granted());
  auto waiter = testing::startRequest(b.engine, "jobs/pos", Millis(60000), Millis(10000));
  // Step one callback at a time: between its create and its first listing, the waiter's node
  // exists but its place is unknown, so status must not call it queued at position 0.
  int queuedSteps = 0;
  do {
    auto s = b.engine.status(10);
    ASSERT_EQ(s.waiters.size(), 1u);
    if (s.waiters[0].queued) {
      ++queuedSteps;
      EXPECT_EQ(s.waiters[0].position, 1u) << "the holder's node is ahead of it";
    }
  } while (ex.runOne());
  EXPECT_GT(queuedSteps, 0) << "it ends queued behind the holder";
  EXPECT_FALSE(waiter->outcome.has_value());
}

// Waiters arriving at once share their queue's listings: one out at a time per lock, each
// answering every waiter whose node was made before it was sent. Before, each of n waiters listed
// the queue (n listings of up to n names in flight: +30 MB for 1,000 waiters, issue 24).
TEST_F(LockEngineTest, WaitersArrivingAtOnceShareOneListingOfTheirQueueAtATime) {
  testing::SpiedEngine c(server, ex, timer, "cccc");
  warmUp();
  auto holder = acquire(c.engine, "crowded");
  ASSERT_TRUE(holder->granted());
  const std::string path = "/fencekeeper/locks/crowded";
  const int listedBefore = c.spy.listings[path];
  std::vector<std::unique_ptr<Pending>> waiters;
  for (int i = 0; i < 200; ++i) {
    waiters.push_back(testing::startRequest(c.engine, "crowded", Millis(60000), Millis(10000)));
  }
  settle();
  EXPECT_EQ(c.spy.mostListingsOut[path], 1);
  EXPECT_LE(c.spy.listings[path] - listedBefore, 3) << "listings for 200 waiters";
  auto status = c.engine.status(1000);
  ASSERT_EQ(status.waiters.size(), 200u);
  for (auto& w : status.waiters) EXPECT_TRUE(w.queued) << "every waiter was placed in its queue";
  // Each waits behind the one before it: released in turn, they are granted in order.
  uint64_t lastToken = holder->outcome->token;
  release(c.engine, *holder);
  for (auto& w : waiters) {
    ASSERT_TRUE(w->granted());
    EXPECT_GT(w->outcome->token, lastToken);
    lastToken = w->outcome->token;
    release(c.engine, *w);
  }
}

TEST_F(LockEngineTest, TryOnceFailsWithoutLeavingANode) {
  auto holder = acquire(a, "x");
  auto attempt = acquire(b, "x", Millis(0));
  ASSERT_TRUE(attempt->outcome);
  EXPECT_EQ(attempt->outcome->error, LeaseError::kTimedOut);
  EXPECT_EQ(queue("x").size(), 1u);
}

TEST_F(LockEngineTest, WaitTimeoutDeletesTheWaitersNode) {
  auto holder = acquire(a, "x");
  auto waiter = acquire(b, "x", Millis(500));
  EXPECT_EQ(queue("x").size(), 2u);
  timer.advance(Millis(499));
  settle();
  EXPECT_FALSE(waiter->outcome);
  timer.advance(Millis(1));
  settle();
  ASSERT_TRUE(waiter->outcome);
  EXPECT_EQ(waiter->outcome->error, LeaseError::kTimedOut);
  EXPECT_EQ(queue("x").size(), 1u);
}

TEST_F(LockEngineTest, OrphanWithThisSidecarsPrefixIsSwept) {
  auto holder = acquire(b, "x");
  server.createExternally("/fencekeeper/locks/x/fkaaaa-99__lock__", "",
                          zk::CreateMode::kEphemeralSequential);
  EXPECT_EQ(queue("x").size(), 2u);
  auto waiter = acquire(a, "x");
  EXPECT_EQ(queue("x").size(), 2u);  // the orphan went, the waiter came
  release(b, *holder);
  EXPECT_TRUE(waiter->granted());
}

// This sidecar's orphan is deleted, and never waited behind: a try-once acquire that lists the
// queue before the orphan's delete is applied is granted all the same.
TEST_F(LockEngineTest, TryOnceIsNotHeldBackByThisSidecarsOwnOrphan) {
  server.createExternally("/fencekeeper", "", zk::CreateMode::kPersistent);
  server.createExternally("/fencekeeper/locks", "", zk::CreateMode::kPersistent);
  server.createExternally("/fencekeeper/locks/x", "", zk::CreateMode::kContainer);
  server.createExternally("/fencekeeper/locks/x/fkaaaa-99__lock__", "",
                          zk::CreateMode::kEphemeralSequential);
  auto attempt = acquire(a, "x", Millis(0));
  ASSERT_TRUE(attempt->outcome);
  EXPECT_TRUE(attempt->granted());
  EXPECT_EQ(queue("x").size(), 1u);  // the orphan went
  // Another sidecar's node is still waited behind.
  release(a, *attempt);
  auto holder = acquire(b, "x");
  EXPECT_EQ(acquire(a, "x", Millis(0))->outcome->error, LeaseError::kTimedOut);
}

TEST_F(LockEngineTest, ForeignContenderNodeIsRespected) {
  // A kazoo Lock's node: a uuid4 guid, same marker, same queue.
  server.createExternally("/fencekeeper", "", zk::CreateMode::kPersistent);
  server.createExternally("/fencekeeper/locks", "", zk::CreateMode::kPersistent);
  server.createExternally("/fencekeeper/locks/x", "", zk::CreateMode::kContainer);
  auto kazoo =
      server.createExternally("/fencekeeper/locks/x/0123456789abcdef0123456789abcdef__lock__",
                              "kazoo", zk::CreateMode::kEphemeralSequential);
  auto p = acquire(a, "x");
  EXPECT_FALSE(p->outcome);
  server.removeExternally(kazoo);
  settle();
  EXPECT_TRUE(p->granted());
}

TEST_F(LockEngineTest, TtlExpiryLosesTheLeaseAndHandsOver) {
  auto holder = acquire(a, "x", Millis(60000), Millis(1000));
  auto standby = acquire(b, "x");
  timer.advance(Millis(999));
  settle();
  EXPECT_TRUE(holder->losses.empty());
  EXPECT_EQ(a.engine.token(holder->outcome->id).error, LeaseError::kOk);
  timer.advance(Millis(1));
  settle();
  ASSERT_EQ(holder->losses.size(), 1u);
  EXPECT_EQ(holder->losses[0], LossReason::kTtlExpired);
  EXPECT_EQ(a.engine.renew(holder->outcome->id, Millis(0)).error, LeaseError::kExpired);
  EXPECT_EQ(a.engine.token(holder->outcome->id).error, LeaseError::kExpired);
  ASSERT_TRUE(standby->granted());
  EXPECT_GT(standby->outcome->token, holder->outcome->token);
}

TEST_F(LockEngineTest, RenewExtendsTheDeadline) {
  auto holder = acquire(a, "x", Millis(60000), Millis(1000));
  for (int i = 0; i < 5; ++i) {
    timer.advance(Millis(600));
    settle();
    auto v = a.engine.renew(holder->outcome->id, Millis(0));
    ASSERT_EQ(v.error, LeaseError::kOk);
    EXPECT_EQ(v.valid, Millis(1000));
  }
  EXPECT_TRUE(holder->losses.empty());
  EXPECT_EQ(a.engine.renew(holder->outcome->id, Millis(1)).error, LeaseError::kInvalidArgument);
}

TEST_F(LockEngineTest, TokenRisesAfterTheParentIsReapedAndRecreated) {
  auto first = acquire(a, "x");
  release(a, *first);
  server.reapEmptyContainers();
  EXPECT_FALSE(server.exists("/fencekeeper/locks/x"));
  auto second = acquire(b, "x");
  ASSERT_TRUE(second->granted());
  EXPECT_NE(queue("x")[0].find("__lock__0000000000"), std::string::npos);  // sequence restarted
  EXPECT_GT(second->outcome->token, first->outcome->token);
}

TEST_F(LockEngineTest, ValidityNeverOutrunsWhatTheSessionCanVouchFor) {
  auto holder = acquire(a, "x", Millis(60000), Millis(3'600'000));
  auto v = a.engine.token(holder->outcome->id);
  ASSERT_EQ(v.error, LeaseError::kOk);
  // The fake's session timeout is 4 s: an hour-long lease is still only vouched for < 4 s.
  EXPECT_LT(v.valid, Millis(4000));
  EXPECT_GT(v.valid, Millis(0));
  EXPECT_EQ(v.valid, a.engine.safeFor());
  EXPECT_LE(holder->outcome->valid, v.valid) << "the grant itself said more";
}

TEST_F(LockEngineTest, ALapseDueButNotYetRunRunsBeforeAnyoneIsToldVouchingIsOver) {
  auto holder = acquire(a, "x");
  ASSERT_TRUE(holder->granted());
  // Past safeUntil with nothing run meanwhile: no heartbeat answered, the lapse's timer is due.
  timer.skip(a.engine.safeFor() + Millis(1));
  EXPECT_FALSE(a.engine.vouched());
  EXPECT_EQ(a.engine.counts().held, 0u) << "told 'not vouched' while a lease still counts as held";
  settle();
  ASSERT_EQ(holder->losses.size(), 1u);
  EXPECT_EQ(holder->losses[0], LossReason::kSessionUncertain);
}

TEST_F(LockEngineTest, RefusesBadInputBeforeZooKeeper) {
  EXPECT_EQ(acquire(a, "../etc")->outcome->error, LeaseError::kInvalidName);
  EXPECT_EQ(acquire(a, "x", Millis(0), Millis(5))->outcome->error, LeaseError::kInvalidArgument);
  auto tooLong = acquire(a, "x", Millis(0), Millis(100'000'000));
  EXPECT_EQ(tooLong->outcome->error, LeaseError::kInvalidArgument);
  EXPECT_EQ(tooLong->outcome->detail,
            "ttlMs 100000000 outside [100 ms, 3600000 ms] (--max-ttl)");
  EXPECT_NE(acquire(a, "../etc")->outcome->detail.find("'..'"), std::string::npos);
  EXPECT_FALSE(server.exists("/fencekeeper"));
}

TEST_F(LockEngineTest, ShutdownKeepsANodeUntilItsHolderTookTheNoticeIn) {
  AcquireSpec spec;
  spec.name = "x";
  spec.ttl = Millis(10000);
  std::function<void()> acknowledge;
  spec.onLost = [&](uint64_t, LossReason, std::function<void()> told) { acknowledge = told; };
  std::optional<AcquireOutcome> outcome;
  a.engine.acquire(spec, [&](AcquireOutcome o) { outcome = o; });
  settle();
  ASSERT_TRUE(outcome && outcome->error == LeaseError::kOk);
  bool done = false;
  a.engine.shutdown([&] { done = true; });
  settle();
  ASSERT_TRUE(acknowledge);
  EXPECT_EQ(queue("x").size(), 1u) << "deleted before the holder knew";
  acknowledge();
  settle();
  EXPECT_TRUE(queue("x").empty());
  EXPECT_TRUE(done);
}

TEST_F(LockEngineTest, ShutdownDeletesAnUnacknowledgedNodeWhenItsValidityEnds) {
  AcquireSpec spec;
  spec.name = "x";
  spec.ttl = Millis(10000);
  spec.onLost = [](uint64_t, LossReason, std::function<void()>) {};  // never answers
  std::optional<AcquireOutcome> outcome;
  a.engine.acquire(spec, [&](AcquireOutcome o) { outcome = o; });
  settle();
  ASSERT_TRUE(outcome && outcome->error == LeaseError::kOk);
  a.engine.shutdown([] {});
  settle();
  EXPECT_EQ(queue("x").size(), 1u);
  timer.advance(outcome->valid);
  settle();
  EXPECT_TRUE(queue("x").empty());
}

TEST_F(LockEngineTest, ShutdownTellsHoldersAndDeletesEverything) {
  auto held = acquire(a, "x");
  auto other = acquire(b, "y");
  auto waiting = acquire(a, "y");
  bool done = false;
  a.engine.shutdown([&] { done = true; });
  settle();
  EXPECT_TRUE(done);
  ASSERT_EQ(held->losses.size(), 1u);
  EXPECT_EQ(held->losses[0], LossReason::kSidecarShutdown);
  EXPECT_TRUE(queue("x").empty());
  ASSERT_TRUE(waiting->outcome);
  EXPECT_EQ(waiting->outcome->error, LeaseError::kShuttingDown);
  EXPECT_EQ(queue("y").size(), 1u);  // b's lease only
  EXPECT_EQ(acquire(a, "z")->outcome->error, LeaseError::kShuttingDown);
}

}  // namespace
}  // namespace fencekeeper::engine
