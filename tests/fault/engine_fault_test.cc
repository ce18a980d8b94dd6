// The lock engine's fault scenarios, each run twice through FaultyZkClient: over the in-memory
// fake (manual time) and over the real client on a real ZooKeeper server (real time, sessions
// expired for real). What passes on the fake alone proves nothing about ZooKeeper.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include "sidecar/engine/lock_engine.h"
#include "sidecar/engine/lock_name.h"
#include "sidecar/zk/faulty_zk_client.h"
#include "tests/support/engine_request.h"
#include "tests/support/zk_backends.h"

namespace fencekeeper::engine {
namespace {

using zk::FaultyZkClient;

using Pending = testing::EngineRequest;

template <typename Backend>
class EngineFaultTest : public ::testing::Test {
 protected:
  // One sidecar: its own session, faults injected around it (a cut longer than the session
  // timeout expires the session, as a server does), its engine.
  struct Side {
    Side(Backend& env, const std::string& id, size_t maxPendingDeletes = 1'000)
        : zk(env.newClient()),
          faults(*zk, env.executor(), env.timer(), [&env, this] { env.expire(*zk); }),
          engine(faults, env.timer(), config(env, id, maxPendingDeletes)) {}
    static EngineConfig config(Backend& env, const std::string& id, size_t maxPendingDeletes) {
      EngineConfig c;
      c.root = env.base() + "/fk";
      c.instanceId = id;
      c.maxPendingDeletes = maxPendingDeletes;
      return c;
    }
    std::unique_ptr<zk::Client> zk;
    FaultyZkClient faults;
    LockEngine engine;
  };

  static void SetUpTestSuite() { Backend::startServer(); }
  static void TearDownTestSuite() { Backend::stopServer(); }

  std::unique_ptr<Pending> request(Side& s, const std::string& name, Millis wait = Millis(60000),
                                   Millis ttl = Millis(10000)) {
    auto p = testing::startRequest(s.engine, name, wait, ttl);
    return p;
  }
  // A request that is granted (asserted by the caller with granted()).
  std::unique_ptr<Pending> grant(Side& s, const std::string& name, Millis ttl = Millis(10000)) {
    auto p = request(s, name, Millis(60000), ttl);
    EXPECT_TRUE(env.until([&] { return p->outcome.has_value(); }));
    return p;
  }
  // Starts a release; the answer lands in the returned slot (kept alive by the fixture).
  std::optional<ReleaseOutcome>& release(Side& s, Pending& p) {
    auto& slot = *released_.emplace_back(std::make_unique<std::optional<ReleaseOutcome>>());
    s.engine.release(p.outcome->id, [&slot](ReleaseOutcome o) { slot = o; });
    return slot;
  }
  std::string lock(const std::string& name) { return env.base() + "/fk/locks/" + name; }
  std::vector<std::string> queue(const std::string& name) { return env.children(lock(name)); }
  void makeParents(const std::string& name) {
    env.create(env.base() + "/fk", "", zk::CreateMode::kPersistent);
    env.create(env.base() + "/fk/locks", "", zk::CreateMode::kPersistent);
    env.create(lock(name), "", zk::CreateMode::kPersistent);
  }
  Millis sessionTimeout(Side& s) { return Millis(s.zk->negotiatedTimeoutMs()); }
  // Deletes the lowest node of `name`'s queue as an operator would: `holder`, held on it by
  // `s`, is lost for it.
  void deleteLowestAndExpectLost(Side& s, Pending& holder, const std::string& name) {
    auto nodes = queue(name);
    ASSERT_FALSE(nodes.empty());
    auto lowest = std::min_element(nodes.begin(), nodes.end(), [](auto& l, auto& r) {
      return parseQueueNode(l)->sequence < parseQueueNode(r)->sequence;
    });
    env.remove(lock(name) + "/" + *lowest);
    ASSERT_TRUE(env.until([&] { return !holder.losses.empty(); }));
    EXPECT_EQ(holder.losses[0], LossReason::kReleasedElsewhere);
    EXPECT_EQ(s.engine.token(holder.outcome->id).error, LeaseError::kLost);
  }
  // Until the side can vouch for its session no longer. (safeFor() rounds down to whole ms: it
  // reads 0 up to 1 ms before the guard stops vouching.)
  bool untilUnvouched(Side& s) {
    if (!env.until([&] { return s.engine.safeFor() == Millis(0); }, sessionTimeout(s)))
      return false;
    env.pass(Millis(1));
    return true;
  }
  // Until the side's own client has been told its session expired and has a new one.
  bool untilNewSession(Side& s, int64_t old) {
    return env.until(
        [&] {
          return s.zk->sessionId() != old && s.zk->sessionState() == zk::SessionState::kConnected;
        },
        sessionTimeout(s) + Millis(10'000));
  }

  Backend env;
  std::vector<std::unique_ptr<std::optional<ReleaseOutcome>>> released_;
  Side a{env, "aaaa"};
  Side b{env, "bbbb"};
};

TYPED_TEST_SUITE(EngineFaultTest, testing::ZkBackends, testing::ZkBackendNames);

TYPED_TEST(EngineFaultTest, AmbiguousCreateThatWasAppliedIsFoundAgain) {
  this->makeParents("x");
  this->a.faults.failNextCreateAfterApply(zk::Code::kConnectionLoss);
  auto p = this->request(this->a, "x");
  ASSERT_TRUE(this->env.until([&] { return p->granted(); }));
  EXPECT_EQ(this->queue("x").size(), 1u);  // never two nodes for one request
  auto& released = this->release(this->a, *p);
  ASSERT_TRUE(this->env.until([&] { return released.has_value(); }));
  this->a.engine.withdraw(p->outcome->id);
  ASSERT_TRUE(this->env.until([&] { return this->queue("x").empty(); }));  // and no orphan
  auto next = this->grant(this->b, "x");
  EXPECT_TRUE(next->granted());
}

// The queue is listed right behind the create, before its answer: ZooKeeper answers a session's
// requests in order, so the grant waits for two answers back to back, not two round trips.
TYPED_TEST(EngineFaultTest, TheQueueIsListedBehindTheCreateNotAfterItsAnswer) {
  this->makeParents("x");
  ASSERT_TRUE(this->grant(this->a, "warm")->granted());  // vouched for: no grant held back
  constexpr unsigned kLockOps = FaultyZkClient::kAllOps & ~FaultyZkClient::kSync;  // no heartbeats
  uint64_t creates = this->a.faults.sent(FaultyZkClient::kCreate);
  uint64_t listings = this->a.faults.sent(FaultyZkClient::kGetChildren);
  uint64_t requests = this->a.faults.sent(kLockOps);
  uint64_t gets = this->a.faults.sent(FaultyZkClient::kGet);
  auto p = this->request(this->a, "x");  // no answer has been taken in yet
  EXPECT_EQ(this->a.faults.sent(FaultyZkClient::kCreate) - creates, 1u);
  EXPECT_EQ(this->a.faults.sent(FaultyZkClient::kGetChildren) - listings, 1u);
  ASSERT_TRUE(this->env.until([&] { return p->granted(); }));
  EXPECT_EQ(this->a.faults.sent(FaultyZkClient::kGetChildren) - listings, 1u) << "listed again";
  // Two before the grant is answered, the create and the listing, and none after: the listing's
  // children watch covers the held node, which asks for no watch of its own.
  EXPECT_EQ(this->a.faults.sent(kLockOps) - requests, 2u);
  this->env.settle();
  EXPECT_EQ(this->a.faults.sent(FaultyZkClient::kGet) - gets, 0u);
}

// Held back, the create is overtaken by its listing, which cannot show the node: the engine
// lists again once the create answers, and grants.
TYPED_TEST(EngineFaultTest, AListingThatOvertookItsCreateIsSentAgain) {
  this->makeParents("x");
  ASSERT_TRUE(this->grant(this->a, "warm")->granted());  // vouched for: no grant held back
  uint64_t listings = this->a.faults.sent(FaultyZkClient::kGetChildren);
  this->a.faults.stall(FaultyZkClient::kCreate);
  auto p = this->request(this->a, "x");
  this->env.pass(Millis(200));
  EXPECT_FALSE(p->outcome);
  this->a.faults.unstall();
  ASSERT_TRUE(this->env.until([&] { return p->granted(); }));
  EXPECT_EQ(this->a.faults.sent(FaultyZkClient::kGetChildren) - listings, 2u);
  EXPECT_EQ(this->queue("x").size(), 1u);
}

TYPED_TEST(EngineFaultTest, AmbiguousCreateThatWasNotAppliedIsCreatedOnce) {
  this->a.faults.failNextCreateBeforeApply(zk::Code::kOperationTimeout);
  auto p = this->grant(this->a, "x");
  ASSERT_TRUE(p->granted());
  EXPECT_EQ(this->queue("x").size(), 1u);
}

TYPED_TEST(EngineFaultTest, WithdrawDuringAmbiguousCreateLeavesNoOrphan) {
  auto holder = this->grant(this->b, "x");
  ASSERT_TRUE(holder->granted());
  this->a.faults.failNextCreateAfterApply(zk::Code::kConnectionLoss);
  bool answered = false;
  AcquireSpec spec;
  spec.name = "x";
  spec.wait = Millis(10000);
  LeaseId id = this->a.engine.acquire(spec, [&](AcquireOutcome) { answered = true; });
  this->a.engine.withdraw(id);  // before the create's answer arrives
  this->env.settle();
  this->env.pass(Millis(200));
  EXPECT_FALSE(answered);
  ASSERT_TRUE(this->env.until([&] { return this->queue("x").size() == 1u; }));
  this->b.engine.withdraw(holder->outcome->id);
  ASSERT_TRUE(this->env.until([&] { return this->queue("x").empty(); }));
}

// Regression: a request that times out while its ambiguous create is still being recovered must
// not leave the applied node behind to block the lock.
TYPED_TEST(EngineFaultTest, TimeoutDuringAmbiguousCreateRecoveryLeavesNoOrphan) {
  this->makeParents("x");
  this->a.faults.failNextCreateAfterApply(zk::Code::kConnectionLoss);
  auto p = this->request(this->a, "x", Millis(500));
  ASSERT_TRUE(this->env.until([&] { return this->queue("x").size() == 1u; }));
  this->a.faults.disconnect();  // recovery cannot run before the wait runs out
  ASSERT_TRUE(this->env.until([&] { return p->outcome.has_value(); }));
  EXPECT_EQ(p->outcome->error, LeaseError::kZkUnavailable);
  EXPECT_EQ(this->queue("x").size(), 1u);  // the applied node, still there
  this->a.faults.reconnect();
  ASSERT_TRUE(this->env.until([&] { return this->queue("x").empty(); }));
  auto next = this->request(this->b, "x", Millis(0));
  ASSERT_TRUE(this->env.until([&] { return next->outcome.has_value(); }));
  EXPECT_TRUE(next->granted());
}

// Regression: the watch on a held lease's own node is armed again after a reconnect.
TYPED_TEST(EngineFaultTest, NodeDeletedAfterAReconnectIsNoticed) {
  auto holder = this->grant(this->a, "x");
  ASSERT_TRUE(holder->granted());
  this->a.faults.disconnect();
  this->env.settle();
  this->a.faults.reconnect();
  this->env.settle();
  ASSERT_EQ(this->queue("x").size(), 1u);
  this->deleteLowestAndExpectLost(this->a, *holder, "x");
}

// A lone holder has no watch of its own node: its lock's children watch, armed by the listing
// that granted it, tells of the deletion, and the node's own read confirms it.
TYPED_TEST(EngineFaultTest, ALoneHoldersNodeDeletedBehindItsBackIsNoticed) {
  this->makeParents("x");
  ASSERT_TRUE(this->grant(this->a, "warm")->granted());  // vouched for: no grant held back
  uint64_t gets = this->a.faults.sent(FaultyZkClient::kGet);
  auto holder = this->grant(this->a, "x");
  ASSERT_TRUE(holder->granted());
  this->env.settle();
  EXPECT_EQ(this->a.faults.sent(FaultyZkClient::kGet) - gets, 0u) << "an own-node watch";
  ASSERT_EQ(this->queue("x").size(), 1u);
  this->deleteLowestAndExpectLost(this->a, *holder, "x");
}

// Once another node joins the queue, the covered holder watches its own node (the children
// watch has fired and is not set again for it), and a deletion behind its back is still noticed.
TYPED_TEST(EngineFaultTest, ACoveredHolderWatchesItsOwnNodeOnceItsQueueChanges) {
  this->makeParents("x");
  ASSERT_TRUE(this->grant(this->a, "warm")->granted());
  auto holder = this->grant(this->a, "x");
  ASSERT_TRUE(holder->granted());
  this->env.settle();
  uint64_t gets = this->a.faults.sent(FaultyZkClient::kGet);
  auto waiter = this->request(this->b, "x");
  ASSERT_TRUE(this->env.until([&] { return this->queue("x").size() == 2u; }));
  ASSERT_TRUE(
      this->env.until([&] { return this->a.faults.sent(FaultyZkClient::kGet) - gets == 1u; }));
  this->env.settle();
  EXPECT_FALSE(waiter->outcome.has_value());
  this->deleteLowestAndExpectLost(this->a, *holder, "x");
  ASSERT_TRUE(this->env.until([&] { return waiter->granted(); }));
  EXPECT_GT(waiter->outcome->token, holder->outcome->token);
}

// A session expires while its client is away (a connected client keeps it alive), and the
// client learns it on reconnecting. Expired without the cut, a real session is closed by a second
// handle while the first may be connected again, and its own node's deletion arrives first: that
// is a deletion by someone else (kReleasedElsewhere), not the expiry tested here.
TYPED_TEST(EngineFaultTest, SessionExpiryLosesHeldLeasesAndRequeuesWaiters) {
  auto held = this->grant(this->a, "x");
  auto holderB = this->grant(this->b, "y");
  auto waiting = this->request(this->a, "y");
  ASSERT_TRUE(this->env.until([&] { return this->queue("y").size() == 2u; }));
  const int64_t expired = this->a.zk->sessionId();
  this->a.faults.disconnect();
  this->env.expire(*this->a.zk);
  // Back once the client itself has heard of the expiry: it has a new session.
  ASSERT_TRUE(this->env.until([&] { return this->a.zk->sessionId() != expired; }));
  this->a.faults.reconnect();
  ASSERT_TRUE(this->env.until([&] { return !held->losses.empty(); }));
  EXPECT_EQ(held->losses[0], LossReason::kSessionLost);
  EXPECT_EQ(this->a.engine.token(held->outcome->id).error, LeaseError::kLost);
  // The waiter queues again in the new session.
  ASSERT_TRUE(this->env.until([&] {
    return this->queue("y").size() == 2u &&
           this->a.zk->sessionState() == zk::SessionState::kConnected;
  }));
  this->b.engine.withdraw(holderB->outcome->id);
  ASSERT_TRUE(this->env.until([&] { return waiting->granted(); }));
  EXPECT_GT(waiting->outcome->token, holderB->outcome->token);
}

TYPED_TEST(EngineFaultTest, CutOffSidecarGivesUpItsLeasesAndDeletesTheNodeWhenBack) {
  auto holder = this->grant(this->a, "x", Millis(3'600'000));
  ASSERT_TRUE(holder->granted());
  auto standby = this->request(this->b, "x");
  this->a.faults.disconnect();
  ASSERT_TRUE(
      this->env.until([&] { return !holder->losses.empty(); }, this->sessionTimeout(this->a)));
  EXPECT_EQ(holder->losses[0], LossReason::kSessionUncertain);
  EXPECT_EQ(this->a.engine.renew(holder->outcome->id, Millis(0)).error, LeaseError::kLost);
  EXPECT_EQ(this->queue("x").size(), 2u);  // the node lives on while cut off...
  EXPECT_FALSE(standby->outcome);
  this->a.faults.reconnect();
  ASSERT_TRUE(this->env.until([&] { return standby->granted(); }));  // ...and goes once back
  EXPECT_EQ(this->queue("x").size(), 1u);
  EXPECT_GT(standby->outcome->token, holder->outcome->token);
}

// Honest reconnect timing: a cut longer than the session timeout ends the session at the server;
// the held lease was given up before that, the waiter queues again in the new session.
TYPED_TEST(EngineFaultTest, CutLongerThanTheSessionTimeoutExpiresItAndTheWaiterQueuesAgain) {
  auto holder = this->grant(this->a, "x", Millis(3'600'000));
  auto other = this->grant(this->b, "y");
  auto waiting = this->request(this->a, "y");
  ASSERT_TRUE(this->env.until([&] { return this->queue("y").size() == 2u; }));
  int64_t old = this->a.zk->sessionId();
  this->a.faults.disconnect();
  ASSERT_TRUE(this->untilNewSession(this->a, old)) << "the session outlived its timeout";
  EXPECT_TRUE(this->queue("x").empty());
  ASSERT_EQ(holder->losses.size(), 1u);
  EXPECT_EQ(holder->losses[0], LossReason::kSessionUncertain);  // told before the expiry
  EXPECT_EQ(this->queue("y").size(), 1u);
  this->a.faults.reconnect();
  ASSERT_TRUE(this->env.until([&] { return this->queue("y").size() == 2u; }));
  this->b.engine.withdraw(other->outcome->id);
  ASSERT_TRUE(this->env.until([&] { return waiting->granted(); }));
  EXPECT_GT(waiting->outcome->token, other->outcome->token);
}

TYPED_TEST(EngineFaultTest, NoGrantWhileTheSessionCannotBeVouchedFor) {
  auto holder = this->grant(this->b, "x");
  auto waiter = this->request(this->a, "x");
  ASSERT_TRUE(this->env.until([&] { return this->queue("x").size() == 2u; }));
  this->a.faults.disconnect();
  ASSERT_TRUE(this->untilUnvouched(this->a));
  EXPECT_GT(this->b.engine.safeFor(), Millis(0));
  this->a.faults.reconnect();
  // b releases while a has reconnected but has not yet had its heartbeats answered.
  auto& released = this->release(this->b, *holder);
  ASSERT_TRUE(this->env.until([&] { return waiter->granted(); }));
  EXPECT_TRUE(released && released->error == LeaseError::kOk);
  EXPECT_GT(this->a.engine.safeFor(), Millis(0)) << "granted before the guard vouched";
}

TYPED_TEST(EngineFaultTest, ReadsAnsweredWithoutTheLeaderAreNotEnoughToGrant) {
  auto holder = this->grant(this->b, "x");
  auto waiter = this->request(this->a, "x");
  ASSERT_TRUE(this->env.until([&] { return this->queue("x").size() == 2u; }));
  this->a.faults.stall(FaultyZkClient::kSync);  // a's follower answers reads; its leader is frozen
  ASSERT_TRUE(this->untilUnvouched(this->a));
  this->b.engine.withdraw(holder->outcome->id);  // a's waiter is now lowest, and a can read that...
  ASSERT_TRUE(this->env.until([&] { return this->queue("x").size() == 1u; }));
  this->env.settle();
  EXPECT_FALSE(waiter->outcome) << "...but must not be granted";
  this->a.faults.unstall();
  ASSERT_TRUE(this->env.until([&] { return waiter->granted(); }));
}

// Observed on a 3-server ensemble: a grant with 5 ms of vouching left, lost 5-14 ms later.
TYPED_TEST(EngineFaultTest, NoGrantWhileVouchingIsBelowTheFloor) {
  auto holder = this->grant(this->b, "x");
  auto waiter = this->request(this->a, "x");
  ASSERT_TRUE(this->env.until([&] { return this->queue("x").size() == 2u; }));
  Millis floor = this->sessionTimeout(this->a) / 4;  // --min-grant-vouch's default
  this->a.faults.stall(FaultyZkClient::kSync);       // a's vouching runs down, b's does not
  ASSERT_TRUE(this->env.until([&] { return this->a.engine.safeFor() < floor; },
                              this->sessionTimeout(this->a)));
  this->b.engine.withdraw(holder->outcome->id);
  ASSERT_TRUE(this->env.until([&] { return this->queue("x").size() == 1u; }));
  this->env.settle();
  EXPECT_FALSE(waiter->outcome) << "granted with " << this->a.engine.safeFor().count()
                                << " ms of vouching left";
  this->a.faults.unstall();
  ASSERT_TRUE(this->env.until([&] { return waiter->granted(); }));
  EXPECT_GE(waiter->outcome->valid, floor);
}

TYPED_TEST(EngineFaultTest, HeldLeaseIsLostWhenOnlyTheLeaderIsUnreachable) {
  auto holder = this->grant(this->a, "x", Millis(3'600'000));
  this->a.faults.stall(FaultyZkClient::kSync);
  ASSERT_TRUE(
      this->env.until([&] { return !holder->losses.empty(); }, this->sessionTimeout(this->a)));
  EXPECT_EQ(holder->losses[0], LossReason::kSessionUncertain);
  ASSERT_TRUE(this->env.until([&] { return this->queue("x").empty(); }))
      << "the connection works: its node goes at once";
}

TYPED_TEST(EngineFaultTest, TryOnceWithZooKeeperOutOfReachFailsAtOnce) {
  this->a.faults.disconnect();
  ASSERT_TRUE(this->untilUnvouched(this->a));
  auto attempt = this->request(this->a, "x", Millis(0));
  ASSERT_TRUE(attempt->outcome) << "answered at once";
  EXPECT_EQ(attempt->outcome->error, LeaseError::kZkUnavailable);
  auto waiter = this->request(this->a, "y", Millis(1000));  // a wait rides it out, to its deadline
  this->env.pass(Millis(300));
  EXPECT_FALSE(waiter->outcome);
  ASSERT_TRUE(this->env.until([&] { return waiter->outcome.has_value(); }));
  EXPECT_EQ(waiter->outcome->error, LeaseError::kZkUnavailable);
}

// ---- release and the deletes ZooKeeper leaves unanswered --------------------------------------

TYPED_TEST(EngineFaultTest, ReleaseOnAFrozenServerAnswersUnconfirmedAtTheBound) {
  auto holder = this->grant(this->a, "x");
  auto waiter = this->request(this->b, "x");
  ASSERT_TRUE(this->env.until([&] { return this->queue("x").size() == 2u; }));
  this->a.faults.stall(FaultyZkClient::kRemove);  // neither applied nor answered
  TimePoint start = this->env.timer().now();
  auto& released = this->release(this->a, *holder);
  EXPECT_EQ(this->a.engine.token(holder->outcome->id).error, LeaseError::kNotHeld)
      << "still valid after release was called";
  ASSERT_TRUE(this->env.until([&] { return released.has_value(); }, Millis(1000)));
  auto took = std::chrono::duration_cast<Millis>(this->env.timer().now() - start);
  EXPECT_GE(took, Millis(100)) << "answered unconfirmed before the bound";
  EXPECT_EQ(released->error, LeaseError::kOk);
  EXPECT_FALSE(released->confirmed);
  EXPECT_EQ(this->a.engine.status().pendingDeletes, 1u);
  EXPECT_EQ(this->queue("x").size(), 2u);
  this->a.faults.unstall();
  ASSERT_TRUE(this->env.until([&] { return this->a.engine.status().pendingDeletes == 0; }));
  ASSERT_TRUE(this->env.until([&] { return waiter->granted(); }));
}

TYPED_TEST(EngineFaultTest, ReleaseSaysConfirmedWhenTheAnswerComesWithinTheBound) {
  auto holder = this->grant(this->a, "x");
  this->a.faults.setLatency(Millis(30));
  auto& released = this->release(this->a, *holder);
  ASSERT_TRUE(this->env.until([&] { return released.has_value(); }));
  EXPECT_TRUE(released->confirmed);
  EXPECT_EQ(this->a.engine.status().pendingDeletes, 0u);
}

TYPED_TEST(EngineFaultTest, DroppedDeleteIsSentAgainAfterTheReconnect) {
  auto holder = this->grant(this->a, "x");
  auto waiter = this->request(this->b, "x");
  ASSERT_TRUE(this->env.until([&] { return this->queue("x").size() == 2u; }));
  this->a.faults.stall(FaultyZkClient::kRemove);
  auto& released = this->release(this->a, *holder);
  this->a.faults.disconnect();  // the delete in flight fails with connection loss
  ASSERT_TRUE(this->env.until([&] { return released.has_value(); }));
  EXPECT_FALSE(released->confirmed);
  this->env.pass(Millis(300));  // retries wait for the reconnect
  EXPECT_EQ(this->a.engine.status().pendingDeletes, 1u);
  EXPECT_EQ(this->queue("x").size(), 2u);
  this->a.faults.unstall();
  this->a.faults.reconnect();
  ASSERT_TRUE(this->env.until([&] { return this->a.engine.status().pendingDeletes == 0; }));
  ASSERT_TRUE(this->env.until([&] { return waiter->granted(); }));
}

TYPED_TEST(EngineFaultTest, WithdrawnLeasesDeleteIsQueuedTheSameWay) {
  auto holder = this->grant(this->a, "x");
  this->a.faults.disconnect();
  this->env.settle();
  this->a.engine.withdraw(holder->outcome->id);  // the connection to the holder closed
  this->env.settle();
  EXPECT_EQ(this->a.engine.status().pendingDeletes, 1u);
  EXPECT_EQ(this->a.engine.status().held, 0u);
  this->a.faults.reconnect();
  ASSERT_TRUE(this->env.until([&] { return this->a.engine.status().pendingDeletes == 0; }));
  EXPECT_TRUE(this->queue("x").empty());
}

TYPED_TEST(EngineFaultTest, SessionExpiryEmptiesTheDeleteQueue) {
  auto holder = this->grant(this->a, "x");
  this->a.faults.disconnect();
  this->env.settle();
  auto& released = this->release(this->a, *holder);
  ASSERT_TRUE(this->env.until([&] { return released.has_value(); }));
  EXPECT_FALSE(released->confirmed);
  EXPECT_EQ(this->a.engine.status().pendingDeletes, 1u);
  // The cut outlasts the session: the node goes with it, and so does the queued delete.
  int64_t old = this->a.zk->sessionId();
  ASSERT_TRUE(this->untilNewSession(this->a, old));
  EXPECT_TRUE(this->queue("x").empty());
  this->a.faults.reconnect();
  ASSERT_TRUE(this->env.until([&] { return this->a.engine.status().pendingDeletes == 0; }));
  EXPECT_EQ(this->a.engine.status().droppedDeletes, 0u);
}

TYPED_TEST(EngineFaultTest, AtTheBoundAcquireIsRefusedAndTheExtraDeleteIsLeftToTheSweep) {
  typename TestFixture::Side c(this->env, "cccc", 1);
  auto x = this->grant(c, "x");
  auto y = this->grant(c, "y");
  ASSERT_TRUE(x->granted() && y->granted());
  c.faults.disconnect();
  this->env.settle();
  c.engine.withdraw(x->outcome->id);
  c.engine.withdraw(y->outcome->id);
  this->env.settle();
  EXPECT_EQ(c.engine.status().pendingDeletes, 1u);
  EXPECT_EQ(c.engine.status().droppedDeletes, 1u);
  auto refused = this->request(c, "z", Millis(1000));
  ASSERT_TRUE(refused->outcome);
  EXPECT_EQ(refused->outcome->error, LeaseError::kLimitReached);
  c.faults.reconnect();
  ASSERT_TRUE(this->env.until([&] { return c.engine.status().pendingDeletes == 0; }));
  EXPECT_EQ(this->queue("x").size() + this->queue("y").size(), 1u) << "one left for the sweep";
  // The next request of this sidecar on that lock sweeps it away.
  auto again = this->request(c, this->queue("x").empty() ? "y" : "x");
  ASSERT_TRUE(this->env.until([&] { return again->granted(); }));
}

}  // namespace
}  // namespace fencekeeper::engine
