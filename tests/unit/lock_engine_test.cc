// The lock engine against the in-memory ZooKeeper: ordering, predecessor watches, ambiguous
// creates, release, TTL and session loss, all with time driven by a manual timer.
#include "sidecar/engine/lock_engine.h"

#include <gtest/gtest.h>

#include <optional>

#include "sidecar/engine/lock_name.h"
#include "sidecar/zk/fake_zk.h"
#include "sidecar/zk/faulty_zk_client.h"
#include "tests/support/manual_executor.h"

namespace fencekeeper::engine {
namespace {

using zk::FakeZkClient;
using zk::FakeZkServer;
using zk::FaultyZkClient;

// One sidecar: its own session on the shared fake server, faults injected around it, its engine.
struct Sidecar {
  Sidecar(FakeZkServer& server, testing::ManualExecutor& ex, ManualTimer& timer, std::string id)
      : zk(server, ex), faults(zk, ex, timer), engine(faults, timer, config(std::move(id))) {}
  static EngineConfig config(std::string id) {
    EngineConfig c;
    c.instanceId = std::move(id);
    return c;
  }
  FakeZkClient zk;
  FaultyZkClient faults;
  LockEngine engine;
};

// The outcome of one acquire, filled in when the engine answers.
struct Pending {
  std::optional<AcquireOutcome> outcome;
  std::vector<LossReason> losses;
  bool granted() const { return outcome && outcome->error == LeaseError::kOk; }
};

class LockEngineTest : public ::testing::Test {
 protected:
  void settle() {
    while (ex.runAll() > 0) {
    }
  }
  std::unique_ptr<Pending> acquire(Sidecar& s, const std::string& name, Millis wait = Millis(60000),
                                   Millis ttl = Millis(10000)) {
    auto p = std::make_unique<Pending>();
    AcquireSpec spec;
    spec.name = name;
    spec.ownerLabel = "worker";
    spec.client = "test";
    spec.ttl = ttl;
    spec.wait = wait;
    Pending* raw = p.get();
    spec.onLost = [raw](uint64_t, LossReason reason, std::function<void()> told) {
      raw->losses.push_back(reason);
      told();
    };
    s.engine.acquire(std::move(spec), [raw](AcquireOutcome o) { raw->outcome = o; });
    settle();
    return p;
  }
  void release(Sidecar& s, Pending& p) {
    std::optional<ReleaseOutcome> result;
    s.engine.release(p.outcome->id, [&](ReleaseOutcome o) { result = o; });
    settle();
    ASSERT_TRUE(result);
    ASSERT_EQ(result->error, LeaseError::kOk);
    EXPECT_TRUE(result->confirmed);
    s.engine.withdraw(p.outcome->id);
    settle();
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
  ASSERT_TRUE(first->granted());
  EXPECT_FALSE(second->outcome);
  EXPECT_FALSE(third->outcome);
  release(a, *first);
  ASSERT_TRUE(second->granted());
  EXPECT_FALSE(third->outcome);
  EXPECT_GT(second->outcome->token, first->outcome->token);
  release(b, *second);
  ASSERT_TRUE(third->granted());
  EXPECT_GT(third->outcome->token, second->outcome->token);
  release(a, *third);
  EXPECT_TRUE(queue("x").empty());
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
  // whose node it was, notices when its own predecessor goes, and queues again at the back.
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

TEST_F(LockEngineTest, AmbiguousCreateThatWasAppliedIsFoundAgain) {
  server.createExternally("/fencekeeper", "", zk::CreateMode::kPersistent);
  server.createExternally("/fencekeeper/locks", "", zk::CreateMode::kPersistent);
  server.createExternally("/fencekeeper/locks/x", "", zk::CreateMode::kPersistent);
  a.faults.failNextCreateAfterApply(zk::Code::kConnectionLoss);
  auto p = acquire(a, "x");
  EXPECT_FALSE(p->outcome);
  EXPECT_EQ(queue("x").size(), 1u);  // applied, answer lost
  timer.advance(Millis(100));
  settle();
  ASSERT_TRUE(p->granted());
  EXPECT_EQ(queue("x").size(), 1u);  // never two nodes for one request
  release(a, *p);
  EXPECT_TRUE(queue("x").empty());  // and no orphan
  auto next = acquire(b, "x");
  EXPECT_TRUE(next->granted());
}

TEST_F(LockEngineTest, AmbiguousCreateThatWasNotAppliedIsCreatedOnce) {
  a.faults.failNextCreateBeforeApply(zk::Code::kOperationTimeout);
  auto p = acquire(a, "x");
  timer.advance(Millis(100));
  settle();
  ASSERT_TRUE(p->granted());
  EXPECT_EQ(queue("x").size(), 1u);
}

TEST_F(LockEngineTest, WithdrawDuringAmbiguousCreateLeavesNoOrphan) {
  acquire(a, "warmup");
  auto holder = acquire(b, "x");
  a.faults.failNextCreateAfterApply(zk::Code::kConnectionLoss);
  AcquireSpec spec;
  spec.name = "x";
  spec.wait = Millis(10000);
  bool answered = false;
  a.engine.acquire(spec, [&](AcquireOutcome) { answered = true; });
  // The id is the engine's next: withdraw before the create's answer arrives.
  a.engine.withdraw(2);
  settle();
  timer.advance(Millis(200));
  settle();
  EXPECT_FALSE(answered);
  EXPECT_EQ(queue("x").size(), 1u);
  release(b, *holder);
  EXPECT_TRUE(queue("x").empty());
}

// Regression: a request that times out while its ambiguous create is still being recovered must
// not leave the applied node behind to block the lock.
TEST_F(LockEngineTest, TimeoutDuringAmbiguousCreateRecoveryLeavesNoOrphan) {
  server.createExternally("/fencekeeper", "", zk::CreateMode::kPersistent);
  server.createExternally("/fencekeeper/locks", "", zk::CreateMode::kPersistent);
  server.createExternally("/fencekeeper/locks/x", "", zk::CreateMode::kPersistent);
  a.faults.failNextCreateAfterApply(zk::Code::kConnectionLoss);
  AcquireSpec spec;
  spec.name = "x";
  spec.wait = Millis(500);
  std::optional<AcquireOutcome> outcome;
  a.engine.acquire(spec, [&](AcquireOutcome o) { outcome = o; });
  a.faults.disconnect();  // recovery cannot run...
  settle();
  timer.advance(Millis(500));  // ...before the wait runs out
  settle();
  ASSERT_TRUE(outcome);
  EXPECT_EQ(outcome->error, LeaseError::kZkUnavailable);
  EXPECT_EQ(queue("x").size(), 1u);  // the applied node, still there
  a.faults.reconnect();
  settle();
  timer.advance(Millis(100));
  settle();
  EXPECT_TRUE(queue("x").empty());
  EXPECT_TRUE(acquire(b, "x", Millis(0))->granted());
}

// Regression: the watch on a held lease's own node is armed again after a reconnect.
TEST_F(LockEngineTest, NodeDeletedAfterAReconnectIsNoticed) {
  auto holder = acquire(a, "x");
  a.faults.disconnect();
  settle();
  a.faults.reconnect();
  settle();
  server.removeExternally(server.childrenOf("/fencekeeper/locks/x").size() == 1
                              ? "/fencekeeper/locks/x/" + queue("x")[0]
                              : "");
  settle();
  ASSERT_EQ(holder->losses.size(), 1u);
  EXPECT_EQ(holder->losses[0], LossReason::kReleasedElsewhere);
  EXPECT_EQ(a.engine.token(holder->outcome->id).error, LeaseError::kLost);
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

TEST_F(LockEngineTest, SessionExpiryLosesHeldLeasesAndRequeuesWaiters) {
  auto held = acquire(a, "x");
  auto holderB = acquire(b, "y");
  auto waiting = acquire(a, "y");
  server.expireSession(a.zk);
  settle();
  ASSERT_EQ(held->losses.size(), 1u);
  EXPECT_EQ(held->losses[0], LossReason::kSessionLost);
  EXPECT_EQ(a.engine.token(held->outcome->id).error, LeaseError::kLost);
  EXPECT_EQ(queue("y").size(), 2u);  // the waiter queued again in the new session
  release(b, *holderB);
  ASSERT_TRUE(waiting->granted());
  EXPECT_GT(waiting->outcome->token, holderB->outcome->token);
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

TEST_F(LockEngineTest, CutOffSidecarGivesUpItsLeasesAndDeletesTheNodeWhenBack) {
  auto holder = acquire(a, "x", Millis(60000), Millis(3'600'000));
  auto standby = acquire(b, "x");
  a.faults.disconnect();
  settle();
  for (int i = 0; i < 40 && holder->losses.empty(); ++i) {
    timer.advance(Millis(100));
    settle();
  }
  ASSERT_EQ(holder->losses.size(), 1u);
  EXPECT_EQ(holder->losses[0], LossReason::kSessionUncertain);
  EXPECT_EQ(a.engine.renew(holder->outcome->id, Millis(0)).error, LeaseError::kLost);
  EXPECT_EQ(queue("x").size(), 2u);  // the node lives on while cut off...
  EXPECT_FALSE(standby->outcome);
  a.faults.reconnect();
  settle();
  timer.advance(Millis(100));  // the deletion's retry
  settle();
  EXPECT_EQ(queue("x").size(), 1u);  // ...and goes as soon as the connection is back
  ASSERT_TRUE(standby->granted());
  EXPECT_GT(standby->outcome->token, holder->outcome->token);
}

TEST_F(LockEngineTest, NoGrantWhileTheSessionCannotBeVouchedFor) {
  auto holder = acquire(b, "x");
  auto waiter = acquire(a, "x");
  a.faults.disconnect();
  settle();
  for (int i = 0; i < 40; ++i) {  // a's vouching runs out; b keeps its heartbeats answered
    timer.advance(Millis(100));
    settle();
  }
  EXPECT_EQ(a.engine.safeFor(), Millis(0));
  EXPECT_GT(b.engine.safeFor(), Millis(0));
  a.faults.reconnect();
  // b releases while a has reconnected but has not yet had its heartbeats answered.
  std::optional<ReleaseOutcome> released;
  b.engine.release(holder->outcome->id, [&](ReleaseOutcome o) { released = o; });
  settle();
  ASSERT_TRUE(released && released->error == LeaseError::kOk);
  ASSERT_TRUE(waiter->granted());  // granted only after the guard's heartbeats came back
  EXPECT_GT(a.engine.safeFor(), Millis(0));
}

TEST_F(LockEngineTest, ReadsAnsweredWithoutTheLeaderAreNotEnoughToGrant) {
  auto holder = acquire(b, "x");
  auto waiter = acquire(a, "x");
  a.faults.stall(FaultyZkClient::kSync);  // a's follower answers reads; its leader is frozen
  for (int i = 0; i < 40; ++i) {
    timer.advance(Millis(100));
    settle();
  }
  EXPECT_EQ(a.engine.safeFor(), Millis(0));
  release(b, *holder);  // a's waiter is now the lowest node, and a can read that...
  EXPECT_EQ(queue("x").size(), 1u);
  EXPECT_FALSE(waiter->outcome) << "...but must not be granted";
  a.faults.unstall();
  settle();
  ASSERT_TRUE(waiter->granted());
}

TEST_F(LockEngineTest, HeldLeaseIsLostWhenOnlyTheLeaderIsUnreachable) {
  auto holder = acquire(a, "x", Millis(60000), Millis(3'600'000));
  a.faults.stall(FaultyZkClient::kSync);
  for (int i = 0; i < 40 && holder->losses.empty(); ++i) {
    timer.advance(Millis(100));
    settle();
  }
  ASSERT_EQ(holder->losses.size(), 1u);
  EXPECT_EQ(holder->losses[0], LossReason::kSessionUncertain);
  EXPECT_TRUE(queue("x").empty());  // the connection works: its node went at once
}

TEST_F(LockEngineTest, TryOnceWithZooKeeperOutOfReachFailsAtOnce) {
  a.faults.disconnect();
  for (int i = 0; i < 40; ++i) {
    timer.advance(Millis(100));
    settle();
  }
  auto attempt = acquire(a, "x", Millis(0));
  ASSERT_TRUE(attempt->outcome);
  EXPECT_EQ(attempt->outcome->error, LeaseError::kZkUnavailable);
  auto waiter = acquire(a, "y", Millis(300));  // a wait rides the outage out, up to its deadline
  EXPECT_FALSE(waiter->outcome);
  timer.advance(Millis(300));
  settle();
  ASSERT_TRUE(waiter->outcome);
  EXPECT_EQ(waiter->outcome->error, LeaseError::kZkUnavailable);
}

TEST_F(LockEngineTest, RefusesBadInputBeforeZooKeeper) {
  EXPECT_EQ(acquire(a, "../etc")->outcome->error, LeaseError::kInvalidName);
  EXPECT_EQ(acquire(a, "x", Millis(0), Millis(5))->outcome->error, LeaseError::kInvalidArgument);
  EXPECT_EQ(acquire(a, "x", Millis(0), Millis(100'000'000))->outcome->error,
            LeaseError::kInvalidArgument);
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

namespace fencekeeper::engine {
namespace {

// Release and the deletes ZooKeeper leaves unanswered: a stalled or dropped answer never holds
// the caller, and the node goes once ZooKeeper answers again.
class PendingDeleteTest : public LockEngineTest {};

TEST_F(PendingDeleteTest, ReleaseAnswersUnconfirmedWhenZooKeeperDoesNotAnswer) {
  auto holder = acquire(a, "x");
  auto waiter = acquire(b, "x");
  a.faults.stall(
      FaultyZkClient::kRemove);  // a frozen server: the delete is neither applied nor answered
  std::optional<ReleaseOutcome> result;
  a.engine.release(holder->outcome->id, [&](ReleaseOutcome o) { result = o; });
  settle();
  EXPECT_EQ(a.engine.token(holder->outcome->id).error, LeaseError::kNotHeld)
      << "still valid after release was called";
  timer.advance(Millis(99));
  settle();
  EXPECT_FALSE(result) << "answered before the bound with nothing confirmed";
  timer.advance(Millis(1));
  settle();
  ASSERT_TRUE(result);
  EXPECT_EQ(result->error, LeaseError::kOk);
  EXPECT_FALSE(result->confirmed);
  EXPECT_EQ(a.engine.status().pendingDeletes, 1u);
  EXPECT_EQ(queue("x").size(), 2u);
  EXPECT_FALSE(waiter->outcome);
  a.faults.unstall();
  settle();
  EXPECT_EQ(a.engine.status().pendingDeletes, 0u);
  EXPECT_TRUE(waiter->granted());
}

TEST_F(PendingDeleteTest, ReleaseSaysConfirmedWhenTheAnswerComesWithinTheBound) {
  auto holder = acquire(a, "x");
  a.faults.setLatency(Millis(60));
  std::optional<ReleaseOutcome> result;
  a.engine.release(holder->outcome->id, [&](ReleaseOutcome o) { result = o; });
  settle();
  EXPECT_FALSE(result);
  timer.advance(Millis(60));
  settle();
  ASSERT_TRUE(result);
  EXPECT_TRUE(result->confirmed);
  EXPECT_EQ(a.engine.status().pendingDeletes, 0u);
}

TEST_F(PendingDeleteTest, DroppedDeleteIsSentAgainAfterTheReconnect) {
  auto holder = acquire(a, "x");
  auto waiter = acquire(b, "x");
  a.faults.stall(FaultyZkClient::kRemove);
  std::optional<ReleaseOutcome> result;
  a.engine.release(holder->outcome->id, [&](ReleaseOutcome o) { result = o; });
  settle();
  a.faults.disconnect();  // the delete in flight fails with connection loss
  settle();
  timer.advance(Millis(100));
  settle();
  ASSERT_TRUE(result);
  EXPECT_FALSE(result->confirmed);
  for (int i = 0; i < 5; ++i) {  // retries wait for the reconnect
    timer.advance(Millis(100));
    settle();
  }
  EXPECT_EQ(a.engine.status().pendingDeletes, 1u);
  EXPECT_EQ(queue("x").size(), 2u);
  a.faults.unstall();
  a.faults.reconnect();
  settle();
  EXPECT_EQ(a.engine.status().pendingDeletes, 0u);
  EXPECT_EQ(queue("x").size(), 1u);
  EXPECT_TRUE(waiter->granted());
}

TEST_F(PendingDeleteTest, WithdrawnLeasesDeleteIsQueuedTheSameWay) {
  auto holder = acquire(a, "x");
  a.faults.disconnect();
  settle();
  a.engine.withdraw(holder->outcome->id);  // the connection to the holder closed
  settle();
  EXPECT_EQ(a.engine.status().pendingDeletes, 1u);
  EXPECT_EQ(a.engine.status().held, 0u);
  a.faults.reconnect();
  settle();
  EXPECT_EQ(a.engine.status().pendingDeletes, 0u);
  EXPECT_TRUE(queue("x").empty());
}

TEST_F(PendingDeleteTest, SessionExpiryEmptiesTheQueue) {
  auto holder = acquire(a, "x");
  a.faults.disconnect();
  settle();
  std::optional<ReleaseOutcome> result;
  a.engine.release(holder->outcome->id, [&](ReleaseOutcome o) { result = o; });
  timer.advance(Millis(100));
  settle();
  ASSERT_TRUE(result);
  EXPECT_FALSE(result->confirmed);
  EXPECT_EQ(a.engine.status().pendingDeletes, 1u);
  server.expireSession(a.zk);  // the node goes with the session
  a.faults.reconnect();
  settle();
  EXPECT_EQ(a.engine.status().pendingDeletes, 0u);
  EXPECT_EQ(a.engine.status().droppedDeletes, 0u);
  EXPECT_TRUE(queue("x").empty());
}

TEST_F(PendingDeleteTest, AtTheBoundAcquireIsRefusedAndTheExtraDeleteIsLeftToTheSweep) {
  EngineConfig config = Sidecar::config("cccc");
  config.maxPendingDeletes = 1;
  FakeZkClient zk(server, ex);
  FaultyZkClient faults(zk, ex, timer);
  LockEngine engine(faults, timer, config);
  std::vector<LeaseId> ids;
  for (const char* name : {"x", "y"}) {
    AcquireSpec spec;
    spec.name = name;
    spec.wait = Millis(1000);
    engine.acquire(spec, [&ids](AcquireOutcome o) { ids.push_back(o.id); });
    settle();
  }
  ASSERT_EQ(ids.size(), 2u);
  faults.disconnect();
  settle();
  for (LeaseId id : ids) engine.withdraw(id);
  settle();
  EXPECT_EQ(engine.status().pendingDeletes, 1u);
  EXPECT_EQ(engine.status().droppedDeletes, 1u);
  AcquireSpec spec;
  spec.name = "z";
  spec.wait = Millis(1000);
  std::optional<AcquireOutcome> refused;
  engine.acquire(spec, [&](AcquireOutcome o) { refused = o; });
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->error, LeaseError::kLimitReached);
  faults.reconnect();
  settle();
  EXPECT_EQ(engine.status().pendingDeletes, 0u);
  EXPECT_EQ(queue("x").size() + queue("y").size(), 1u) << "one node left for the sweep";
  // The next request of this sidecar on that lock sweeps it away.
  for (const char* name : {"x", "y"}) {
    AcquireSpec again;
    again.name = name;
    again.wait = Millis(1000);
    std::optional<AcquireOutcome> o;
    engine.acquire(again, [&](AcquireOutcome got) { o = got; });
    settle();
    ASSERT_TRUE(o);
    EXPECT_EQ(o->error, LeaseError::kOk);
  }
}

}  // namespace
}  // namespace fencekeeper::engine
