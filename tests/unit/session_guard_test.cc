// The vouching rule of SessionGuard, with every heartbeat answered by hand at a chosen time: the
// round trips and reconnects are the thing under test (docs/failure-modes.md, "Session safety").
#include "sidecar/engine/session_guard.h"

#include <gtest/gtest.h>

#include <deque>

namespace fencekeeper::engine {
namespace {

using zk::Code;
using zk::SessionState;

// A zk::Client whose syncs wait until the test answers them; nothing else is used.
class ScriptedZk final : public zk::Client {
 public:
  void create(const std::string&, const std::string&, zk::CreateMode, CreateCallback) override {
    ADD_FAILURE() << "create";
  }
  void getChildren(const std::string&, ChildrenCallback) override { ADD_FAILURE(); }
  void getChildrenAndWatch(const std::string&, ChildrenCallback, WatchCallback) override {
    ADD_FAILURE();
  }
  void getAndWatch(const std::string&, GetCallback, WatchCallback) override { ADD_FAILURE(); }
  void existsAndWatch(const std::string&, CodeCallback, WatchCallback) override { ADD_FAILURE(); }
  void get(const std::string&, GetCallback) override { ADD_FAILURE() << "get"; }
  void remove(const std::string&, CodeCallback) override { ADD_FAILURE() << "remove"; }
  void sync(const std::string&, CodeCallback done) override { syncs.push_back(std::move(done)); }
  void getAcl(const std::string&, AclCallback) override { ADD_FAILURE() << "getAcl"; }
  void leaveServer() override { ++left; }
  SessionState sessionState() const override { return state; }
  int64_t sessionId() const override { return 0x42; }
  int32_t negotiatedTimeoutMs() const override { return 4000; }
  void setSessionListener(std::function<void(SessionState)>) override {}

  void answerSync(Code code = Code::kOk) {
    ASSERT_FALSE(syncs.empty()) << "no heartbeat in flight";
    auto done = std::move(syncs.front());
    syncs.pop_front();
    done(code);
  }

  SessionState state = SessionState::kConnected;
  std::deque<CodeCallback> syncs;
  int left = 0;
};

constexpr Millis kQ{1000};  // a quarter of the 4 s session
// What one anchor vouches for: T x (1 - 0.002) - margin.
constexpr auto kVouched = std::chrono::microseconds(3'992'000 - 100'000);

class SessionGuardTest : public ::testing::Test {
 protected:
  SessionGuardTest() {
    guard = std::make_unique<SessionGuard>(
        zk, timer, Millis(100), Millis(0), [this] { ++unsafe; }, [this] { ++grantable; });
  }
  void setState(SessionState s) {
    zk.state = s;
    guard->onSessionState(s);
  }
  // Answers the heartbeat in flight after `rtt`, then lets the next one go out when due.
  void beat(Millis rtt = Millis(5)) {
    timer.advance(rtt);
    zk.answerSync();
    timer.runDue();
  }
  // From a fresh connection to a steady state: heartbeats every Q, answered in 5 ms.
  void steady(int beats = 3) {
    for (int i = 0; i < beats; ++i) {
      beat();
      timer.advance(kQ - Millis(5));
    }
  }
  TimePoint now() const { return timer.now(); }

  ManualTimer timer;
  ScriptedZk zk;
  int unsafe = 0, grantable = 0;
  std::unique_ptr<SessionGuard> guard;
};

TEST_F(SessionGuardTest, TwoAnswersAQuarterApartAnchorTheFirst) {
  TimePoint first = now();
  ASSERT_EQ(zk.syncs.size(), 1u) << "a heartbeat goes out on connect";
  beat();
  EXPECT_FALSE(guard->safe()) << "one answer proves nothing";
  EXPECT_TRUE(zk.syncs.empty()) << "no back-to-back heartbeat: it would prove nothing either";
  timer.advance(kQ - Millis(6));
  EXPECT_TRUE(zk.syncs.empty());
  timer.advance(Millis(1));
  ASSERT_EQ(zk.syncs.size(), 1u) << "the next one goes out a quarter after the first";
  beat();
  EXPECT_EQ(guard->safeUntil(), first + kVouched);
  EXPECT_TRUE(guard->grantable());
  EXPECT_EQ(grantable, 1);
}

TEST_F(SessionGuardTest, AnAnswerSlowerThanAQuarterAnchorsNothing) {
  steady();
  TimePoint before = guard->safeUntil();
  TimePoint slowSent = now();
  ASSERT_EQ(zk.syncs.size(), 1u);
  // A leader waking from a freeze answers the queued sync before collecting the previous touch.
  beat(kQ + Millis(1));
  EXPECT_EQ(guard->safeUntil(), before) << "a slow answer must not anchor its predecessor";
  ASSERT_EQ(zk.syncs.size(), 1u) << "the spacing has passed: the next heartbeat goes at once";
  beat();
  EXPECT_EQ(guard->safeUntil(), slowSent + kVouched) << "a fast answer anchors the slow one";
}

TEST_F(SessionGuardTest, AnAnswerWithinAQuarterStillAnchors) {
  steady();
  TimePoint previous = now() - kQ;
  beat(kQ);
  EXPECT_EQ(guard->safeUntil(), previous + kVouched);
}

TEST_F(SessionGuardTest, AReconnectAnchorsTheHeartbeatThatFailedOnTheOldConnection) {
  steady();
  TimePoint lostSent = now();
  ASSERT_EQ(zk.syncs.size(), 1u);
  timer.advance(Millis(700));
  zk.answerSync(Code::kConnectionLoss);
  setState(SessionState::kConnecting);
  timer.advance(Millis(900));  // back before the rule-1 anchor ran out
  TimePoint before = guard->safeUntil();
  setState(SessionState::kConnected);
  // The server revalidated the session with the leader after that heartbeat was sent.
  EXPECT_EQ(guard->safeUntil(), lostSent + kVouched);
  EXPECT_GT(guard->safeUntil(), before);
  EXPECT_TRUE(guard->safe());
  EXPECT_EQ(unsafe, 0);
}

TEST_F(SessionGuardTest, AReconnectAnchorsTheLastAnsweredHeartbeatWhenNoneWasInFlight) {
  steady();
  TimePoint lastSent = now();
  beat();  // answered; the next one is due a quarter later
  setState(SessionState::kConnecting);
  timer.advance(kQ);
  EXPECT_EQ(zk.syncs.size(), 0u) << "no heartbeat while disconnected";
  timer.advance(Millis(200));
  setState(SessionState::kConnected);
  EXPECT_EQ(guard->safeUntil(), lastSent + kVouched);
  ASSERT_EQ(zk.syncs.size(), 1u) << "a heartbeat goes out on the new connection at once";
}

// Seen on a 3-server ensemble: the follower's reconnect was revalidated 11 ms after the woken
// leader had begun to expire the session; the session was gone 60 ms later.
TEST_F(SessionGuardTest, AReconnectAfterALapseAnchorsNothing) {
  steady();
  zk.answerSync(Code::kOperationTimeout);
  setState(SessionState::kConnecting);
  timer.advance(Millis(2000));
  ASSERT_FALSE(guard->safe());
  EXPECT_EQ(unsafe, 1);
  setState(SessionState::kConnected);
  EXPECT_FALSE(guard->safe()) << "a revalidation of a session due for expiry proves nothing";
}

TEST_F(SessionGuardTest, HeartbeatsOfTheNewConnectionPairOnlyWithEachOther) {
  steady();
  setState(SessionState::kConnecting);
  zk.answerSync(Code::kConnectionLoss);
  timer.advance(Millis(2500));
  setState(SessionState::kConnected);
  TimePoint reconnectAnchor = guard->safeUntil();
  TimePoint firstOnNew = now();
  beat();
  EXPECT_EQ(guard->safeUntil(), reconnectAnchor) << "one answer on a connection anchors nothing";
  timer.advance(kQ - Millis(5));
  beat();
  EXPECT_EQ(guard->safeUntil(), firstOnNew + kVouched);
}

TEST_F(SessionGuardTest, AHeartbeatSentJustBeforeAReconnectPairsWithNothing) {
  steady();
  // Sent while the client was already reconnecting (it queues it for the new connection):
  // answered only after the new connection's kConnected.
  setState(SessionState::kConnecting);
  setState(SessionState::kConnected);
  TimePoint afterReconnect = guard->safeUntil();
  timer.advance(Millis(5));
  zk.answerSync();  // the one sent before the reconnect
  EXPECT_EQ(guard->safeUntil(), afterReconnect);
  timer.advance(kQ);
  timer.runDue();
  beat();
  EXPECT_EQ(guard->safeUntil(), afterReconnect) << "paired with the pre-reconnect heartbeat";
}

TEST_F(SessionGuardTest, LapseIsReportedAndExpiryForgetsTheOldSession) {
  steady();
  ASSERT_TRUE(guard->safe());
  setState(SessionState::kConnecting);
  zk.answerSync(Code::kConnectionLoss);
  timer.advance(Millis(4000));
  EXPECT_FALSE(guard->safe());
  EXPECT_EQ(unsafe, 1);
  setState(SessionState::kExpired);
  setState(SessionState::kConnected);
  EXPECT_FALSE(guard->safe()) << "a new session is not vouched for by the old one's heartbeats";
  EXPECT_EQ(unsafe, 1);
}

// A pause past safeUntil (the sidecar's loop frozen: no timer ran, no answer was read) ends
// with the answer of a heartbeat sent before it. Anchored by the next answer, it vouched again
// for a moment (10-277 ms in the fault campaign) and lapsed a second time: two lapses counted
// and logged for one outage.
TEST_F(SessionGuardTest, APausePastTheVouchedTimeIsOneLapse) {
  steady();
  ASSERT_TRUE(guard->safe());
  ASSERT_EQ(zk.syncs.size(), 1u) << "a heartbeat in flight when the pause begins";
  timer.skip(std::chrono::duration_cast<Millis>(guard->safeUntil() - now()) + Millis(50));
  timer.runDue();
  EXPECT_EQ(unsafe, 1);
  zk.answerSync();  // answered during the pause: slow, anchors nothing
  timer.runDue();
  ASSERT_EQ(zk.syncs.size(), 1u) << "the next heartbeat goes at once";
  TimePoint afterPause = now();
  beat();
  EXPECT_FALSE(guard->safe()) << "a heartbeat sent before the lapse vouches for nothing after it";
  timer.advance(kQ - Millis(5));
  beat();
  EXPECT_EQ(guard->safeUntil(), afterPause + kVouched) << "vouched again from after the pause";
  timer.advance(kQ);
  EXPECT_EQ(unsafe, 1) << "one outage, one lapse";
}

TEST_F(SessionGuardTest, NoGrantWithLessThanTheFloorLeft) {
  steady();
  EXPECT_EQ(guard->grantFloor(), kQ);
  // The follower answers nothing for a while: vouching runs down towards the floor.
  timer.advance(Millis(1000));
  EXPECT_TRUE(guard->safe());
  EXPECT_LT(guard->safeFor(), kQ);
  EXPECT_FALSE(guard->grantable()) << "a lease would start with less than the floor";
  int before = grantable;
  beat();
  EXPECT_EQ(grantable, before) << "a slow answer anchors nothing";
  beat();
  EXPECT_TRUE(guard->grantable());
  EXPECT_EQ(grantable, before + 1);
}

TEST_F(SessionGuardTest, AServerSilentForHalfTheSessionTimeoutIsLeft) {
  steady();
  ASSERT_EQ(zk.syncs.size(), 1u);
  timer.advance(2 * kQ - Millis(1));
  EXPECT_EQ(zk.left, 0);
  timer.advance(Millis(1));
  EXPECT_EQ(zk.left, 1) << "a heartbeat unanswered for T/2: leave the server";
  timer.advance(2 * kQ);
  EXPECT_EQ(zk.left, 1) << "once per heartbeat";
}

TEST_F(SessionGuardTest, AServerThatAnswersInTimeIsNotLeft) {
  steady();
  beat(2 * kQ - Millis(1));
  steady();
  EXPECT_EQ(zk.left, 0);
}

TEST_F(SessionGuardTest, AFloorAboveHalfTheNegotiatedTimeoutIsCutToHalf) {
  guard.reset();
  zk.syncs.clear();
  SessionGuard high(
      zk, timer, Millis(100), Millis(60000), [] {}, [] {});
  EXPECT_EQ(high.grantFloor(), Millis(2000)) << "nothing could ever be granted above it";
}

TEST_F(SessionGuardTest, AnAnswerAfterTheGuardIsGoneIsIgnored) {
  ASSERT_EQ(zk.syncs.size(), 1u);
  guard.reset();  // the engine goes first; its client may still answer (ASan sees any use)
  zk.answerSync();
  timer.advance(kQ * 4);
  EXPECT_EQ(unsafe, 0);
}

}  // namespace
}  // namespace fencekeeper::engine
