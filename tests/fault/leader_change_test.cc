// ZooKeeper leader changes on a 3-server ensemble, against the vouching rule of
// sidecar/engine/session_guard.cc (docs/failure-modes.md, "Session safety"): a healthy sidecar
// keeps its leases through a leader change it can ride out, and never vouches for a session past
// the moment the leader expires it. Each test is bounded in time and stops what it started.
#include <gtest/gtest.h>

#include <atomic>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "fencekeeper/client.h"
#include "sidecar/devzk/loopback.h"
#include "tests/support/loss_recorder.h"
#include "tests/support/sidecar_cluster.h"
#include "tests/support/wait.h"

namespace fencekeeper::testing {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

devzk::ZkServerOptions ensemble(int syncLimitTicks) {
  devzk::ZkServerOptions o;
  o.ensembleSize = 3;
  o.tickTimeMs = 200;
  o.syncLimitTicks = syncLimitTicks;
  return o;
}

std::string only(SidecarCluster& cluster, size_t node) {
  return "127.0.0.1:" + std::to_string(cluster.zk().clientPort(node));
}

SidecarOptions sidecarOn(std::string zk, const std::string& sessionTimeout) {
  SidecarOptions o;
  o.zk = std::move(zk);
  o.sessionTimeout = sessionTimeout;
  return o;
}

int64_t wallMs() {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

uint64_t parseSession(const std::string& hex) { return std::stoull(hex, nullptr, 16); }

// Waits until the sidecar's vouching moves on from where it stands: a heartbeat answered on its
// current connection anchored. Right after a reconnect it still vouches from the last heartbeat
// before the outage (rule 2), so an outage that starts then extends the one just ended
// (docs/failure-modes.md, "The survival bound"). A new anchor moves safeUntil by at least the
// outage (over 1 s) after a reconnect and by Q (2 s) otherwise, far above 500 ms.
bool vouchingMovesOn(Client& client) {
  SidecarStatus st;
  auto vouchedUntil = [&](Clock::time_point& until) {
    auto asked = Clock::now();
    if (!client.status(&st).ok()) return false;
    until = asked + milliseconds(st.safeForMs);
    return true;
  };
  Clock::time_point first, now;
  if (!vouchedUntil(first)) return false;
  return waitUntil([&] { return vouchedUntil(now) && now > first + milliseconds(500); },
                   milliseconds(10000));
}

// Waits until every node serves and one of them leads; returns the leader.
int healthyLeader(SidecarCluster& cluster) {
  int leader = -1;
  bool ok = waitUntil(
      [&] {
        for (size_t i = 0; i < cluster.zk().size(); ++i) {
          if (cluster.zk().mode(i).empty()) return false;
        }
        return (leader = cluster.zk().leaderIndex()) >= 0;
      },
      milliseconds(30000));
  return ok ? leader : -1;
}

// Starts sidecar 0 on one follower and sidecar 1 on the other, each given that server alone;
// returns the leader, or -1.
int sidecarsOnTheFollowers(SidecarCluster& cluster, const std::string& sessionTimeout) {
  int leader = healthyLeader(cluster);
  if (leader < 0) return -1;
  for (size_t k = 1; k <= 2; ++k) {
    cluster.startSidecar(
        sidecarOn(only(cluster, (static_cast<size_t>(leader) + k) % 3), sessionTimeout));
  }
  return leader;
}

// The node that serves `session` (by its `cons` listing), or -1.
int serverOf(SidecarCluster& cluster, const std::string& session) {
  for (size_t i = 0; i < cluster.zk().size(); ++i) {
    if (!cluster.zk().running(i) || cluster.zk().frozen(i)) continue;
    auto cons = devzk::fourLetterWord(cluster.zk().clientPort(i), "cons", 2000);
    if (cons && cons->find("sid=" + session + ",") != std::string::npos) return static_cast<int>(i);
  }
  return -1;
}

// When ZooKeeper node `node` expired `session` (its "Expiring session 0x..." log line, in UTC wall
// clock ms), or nothing.
std::optional<int64_t> expiredAt(SidecarCluster& cluster, size_t node, uint64_t session) {
  std::ifstream log(cluster.zk().logPath(node));
  char tag[64];
  std::snprintf(tag, sizeof tag, "Expiring session 0x%llx,",
                static_cast<unsigned long long>(session));
  for (std::string line; std::getline(log, line);) {
    if (line.find(tag) == std::string::npos) continue;
    std::tm tm{};
    int ms = 0;
    std::istringstream in(line);
    char comma;
    in >> std::get_time(&tm, "%Y-%m-%d %H:%M:%S") >> comma >> ms;
    if (in.fail()) return std::nullopt;
    return static_cast<int64_t>(timegm(&tm)) * 1000 + ms;
  }
  return std::nullopt;
}

// 1. The leader frozen while each sidecar's follower keeps serving: the followers drop their
// clients after syncLimit x tickTime (1 s), elect a new leader, and the sidecars reconnect; the
// reconnect revalidates each session with the new leader. Grants resume within about syncLimit x
// tickTime + election, a waiting acquire waits on instead of failing, and no grant is made into a
// lapse (observed before: granted with 5 ms of vouching left, lost 5-14 ms later). Whether a lease
// held through the change survives depends on where in the heartbeat cycle the freeze fell (the
// bound D of test 3 is about 1.4 s here); the survival test below checks it with room.
TEST(LeaderChange, FrozenLeaderCostsAHealthySidecarNothing) {
  SidecarCluster cluster(ensemble(5));
  int leader = sidecarsOnTheFollowers(cluster, "3s");
  ASSERT_GE(leader, 0);
  auto c0 = cluster.connect(0);
  LossRecorder loss;
  auto o = acquireOptions(milliseconds(0), milliseconds(60000));
  o.onLost = loss.callback();
  auto held = c0->acquire("kept", o);
  ASSERT_TRUE(held);

  // Sidecar 1 hands a lock over again and again; the longest gap between grants is the stretch
  // without progress.
  std::atomic<bool> stop{false};
  std::atomic<int> grants{0}, lostAfterGrant{0}, failed{0};
  std::mutex mu;
  std::vector<Clock::time_point> grantTimes;
  std::thread flow([&] {
    auto c1 = cluster.connect(1);
    while (!stop) {
      LossRecorder flowLoss;
      auto fo = acquireOptions(milliseconds(20000), milliseconds(5000));
      fo.onLost = flowLoss.callback();
      Status why;
      auto lease = c1->acquire("flow", fo, &why);
      if (!lease) {
        std::fprintf(stderr, "acquire failed: %s\n", why.message.c_str());
        failed++;
        continue;
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        grantTimes.push_back(Clock::now());
      }
      grants++;
      // A grant is worth something: it is not lost while it is held for a moment.
      std::this_thread::sleep_for(milliseconds(50));
      if (flowLoss.lost) lostAfterGrant++;
      lease->release();
    }
  });
  ASSERT_TRUE(waitUntil([&] { return grants.load() >= 10; }));

  auto frozenAt = Clock::now();
  cluster.zk().freeze(static_cast<size_t>(leader));
  int grantsAtFreeze = grants.load();
  bool resumed =
      waitUntil([&] { return grants.load() >= grantsAtFreeze + 10; }, milliseconds(20000));
  cluster.zk().thaw(static_cast<size_t>(leader));
  ASSERT_GE(healthyLeader(cluster), 0);
  // Held across the whole change and the old leader's return.
  std::this_thread::sleep_for(milliseconds(3000));  // the fault's aftermath, 1 session timeout
  stop = true;
  flow.join();
  EXPECT_TRUE(resumed) << "hand-overs did not resume after the leader froze";

  EXPECT_EQ(failed.load(), 0) << "a waiting acquire failed with its wait left";
  EXPECT_EQ(lostAfterGrant.load(), 0) << "a lease was granted that was lost within 50 ms";
  if (loss.lost) {
    EXPECT_EQ(loss.reason.load(), static_cast<int>(LossReason::kSessionUncertain));
  } else {
    EXPECT_EQ(holderOf(*c0, "kept").token, held->token());
  }
  std::printf("the lease held through the change %s\n", loss.lost ? "was lost" : "survived");

  long long longest = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (size_t i = 1; i < grantTimes.size(); ++i) {
      if (grantTimes[i] < frozenAt) continue;
      auto from = std::max(grantTimes[i - 1], frozenAt);
      longest = std::max<long long>(
          longest, std::chrono::duration_cast<milliseconds>(grantTimes[i] - from).count());
    }
  }
  std::printf(
      "longest stretch without a grant after the leader froze: %lld ms (syncLimit x "
      "tickTime 1000 ms, T 3000 ms)\n",
      longest);
  // The goal is syncLimit x tickTime + election + T/4 (about 2 s); a session timeout means the
  // sidecars did not ride the change out.
  EXPECT_LT(longest, 3000);
}

// 2. The leader frozen for 2.6 s right after one of sidecar 0's heartbeats, with syncLimit x
// tickTime above the session timeout (the followers keep their clients). Sidecar 0's client times
// out its connection first and asks its follower to revalidate the session, which waits at the
// frozen leader. On waking, the leader either revalidates it (a touch: the session lives on) or
// expires it, and may answer the revalidation as valid while it does (its tracker's race: seen
// here, "connected" 11 ms after "Expiring session"). Either way: the lease sidecar 0 held is no
// longer called valid once the standby on sidecar 1 is granted, and nothing sidecar 0 said about
// its session reaches past the leader's expiry of it. Of the model's other hole (a slow answer
// anchoring its predecessor) the client's own 2/3 T timeout leaves nothing to see here.
TEST(LeaderChange, AWokenLeaderThatExpiresTheSessionFindsNothingVouchedPastIt) {
  SidecarCluster cluster(ensemble(25));  // 5 s: the followers keep their clients through it
  int leader = sidecarsOnTheFollowers(cluster, "3s");
  ASSERT_GE(leader, 0);
  auto c0 = cluster.connect(0);
  auto c1 = cluster.connect(1);
  int expiredRounds = 0;
  for (int round = 0; round < 4; ++round) {
    ASSERT_TRUE(cluster.waitReady(0));
    ASSERT_TRUE(cluster.waitReady(1));
    std::string lock = "woken-" + std::to_string(round);
    auto held = c0->acquire(lock, acquireOptions(milliseconds(10000), milliseconds(60000)));
    ASSERT_TRUE(held);
    std::atomic<int64_t> grantedAtWall{0};
    std::thread standby([&] {
      auto lease = c1->acquire(lock, acquireOptions(milliseconds(30000), milliseconds(5000)));
      if (lease) grantedAtWall = wallMs();
    });
    ASSERT_TRUE(waitUntil([&] { return holderOf(*c0, lock).waiters == 1; }));

    // Freeze the leader the moment sidecar 0's vouching jumps: a heartbeat was just answered.
    SidecarStatus st;
    ASSERT_TRUE(c0->status(&st).ok());
    uint64_t session = parseSession(st.sessionId);
    int64_t vouched = wallMs() + st.safeForMs;
    int64_t answeredAt = 0;
    auto give = Clock::now() + milliseconds(5000);
    while (Clock::now() < give) {
      int64_t t = wallMs();
      if (!c0->status(&st).ok()) continue;
      if (t + st.safeForMs > vouched + 500) {
        answeredAt = t;
        break;
      }
      vouched = std::max<int64_t>(vouched, t + st.safeForMs);
    }
    ASSERT_GT(answeredAt, 0) << "no heartbeat answered in 5 s";
    cluster.zk().freeze(static_cast<size_t>(leader));
    int64_t wakeAt = answeredAt + 2600;

    // Sample what sidecar 0 vouches for: the session (while it is the same one) and the lease,
    // until the standby is granted.
    int64_t sessionClaim = 0, leaseClaim = 0;
    bool thawed = false, sameSession = true;
    auto until = Clock::now() + milliseconds(15000);
    while (Clock::now() < until && !grantedAtWall) {
      int64_t t = wallMs();
      if (!thawed && t >= wakeAt) {
        cluster.zk().thaw(static_cast<size_t>(leader));
        thawed = true;
      }
      if (!c0->status(&st).ok()) continue;
      sameSession = sameSession && parseSession(st.sessionId) == session;
      if (sameSession && st.safeForMs > 0) sessionClaim = std::max(sessionClaim, t + st.safeForMs);
      for (auto& l : st.leases) {
        if (l.name == lock && l.validMs > 0)
          leaseClaim = std::max<int64_t>(leaseClaim, t + l.validMs);
      }
      std::this_thread::sleep_for(milliseconds(2));
    }
    if (!thawed) cluster.zk().thaw(static_cast<size_t>(leader));
    standby.join();
    ASSERT_GT(grantedAtWall.load(), 0) << "the standby was never granted";
    EXPECT_LT(leaseClaim, grantedAtWall.load())
        << "two valid holders, for " << leaseClaim - grantedAtWall << " ms";
    auto expiry = expiredAt(cluster, static_cast<size_t>(leader), session);
    if (expiry) {
      ++expiredRounds;
      EXPECT_LE(sessionClaim, *expiry)
          << "sidecar 0 vouched for its session " << sessionClaim - *expiry
          << " ms past the leader's expiry of it";
    }
    std::printf(
        "round %d: session 0x%llx %s; last claim on it %lld ms from the expiry; lease "
        "claimed until %lld ms before the standby's grant\n",
        round, static_cast<unsigned long long>(session), expiry ? "expired" : "lived on",
        static_cast<long long>(expiry ? sessionClaim - *expiry : 0),
        static_cast<long long>(grantedAtWall - leaseClaim));
    // Frozen for less than syncLimit x tickTime, the leader kept its role.
    ASSERT_EQ(healthyLeader(cluster), leader);
  }
  std::printf("%d of 4 rounds expired the session\n", expiredRounds);
}

// 3. The survival bound (docs/failure-modes.md): a lease survives any outage that ends with an
// answered heartbeat within D = T - 2 x heartbeat interval - margin - 2 x round trip. T = 8 s:
// D is about 3.8 s. Ten faults in all, while a sidecar on a follower (the leader serves no
// clients here) holds two leases longer than the session timeout (one through fencectl) and
// another sidecar waits for one of them: the leader killed, or frozen for 2 s (its loss detected
// after 1 s), in turn, each once the sidecar anchored again after the one before (back to back,
// two faults are one outage).
TEST(LeaderChange, LeasesSurviveLeaderLossesWithinTheBound) {
  auto options = ensemble(5);
  options.leaderServes = false;
  SidecarCluster cluster(options);
  ASSERT_GE(healthyLeader(cluster), 0);
  cluster.startSidecar(sidecarOn(cluster.zk().connectString(), "8s"));
  cluster.startSidecar(sidecarOn(cluster.zk().connectString(), "8s"));
  auto c0 = cluster.connect(0);
  LossRecorder loss;
  auto o = acquireOptions(milliseconds(0), milliseconds(30000));
  o.onLost = loss.callback();
  auto held = c0->acquire("survive", o);
  ASSERT_TRUE(held);
  std::string tokenFile = cluster.dir() + "/cmd-token";
  // fencectl stops CMD once the validity left falls below --grace (default a third of what was
  // granted, about 2 s here): CMD lives through outages up to D - grace.
  auto cmd =
      cluster.fencectl(0, {"lock", "survive-cmd", "--ttl", "30s", "--grace", "1s", "--", "sh", "-c",
                           "echo $FENCE_TOKEN >> " + tokenFile + "; exec sleep 600"});
  ASSERT_TRUE(waitUntil([&] { return holderOf(*c0, "survive-cmd").held; }));
  uint64_t cmdToken = holderOf(*c0, "survive-cmd").token;

  std::atomic<bool> standbyGranted{false};
  std::thread standby([&] {
    auto c1 = cluster.connect(1);
    auto lease = c1->acquire("survive", acquireOptions(milliseconds(180000), milliseconds(5000)));
    if (lease) standbyGranted = true;
  });
  ASSERT_TRUE(waitUntil([&] { return holderOf(*c0, "survive").waiters == 1; }));

  for (int fault = 0; fault < 10; ++fault) {
    int leader = healthyLeader(cluster);
    ASSERT_GE(leader, 0);
    ASSERT_TRUE(cluster.waitReady(0));
    // Each fault starts from a sidecar that anchored on its connection: the bound is per outage.
    ASSERT_TRUE(vouchingMovesOn(*c0)) << "no heartbeat anchored within 10 s before fault " << fault;
    SidecarStatus st;
    ASSERT_TRUE(c0->status(&st).ok());
    int server = serverOf(cluster, st.sessionId);
    ASSERT_NE(server, leader) << "the sidecar must sit on a follower";
    bool freeze = fault % 2 == 1;
    auto at = Clock::now();
    if (!freeze) {
      cluster.zk().kill(static_cast<size_t>(leader));
      ASSERT_TRUE(waitUntil([&] { return cluster.zk().leaderIndex() >= 0; }, milliseconds(20000)));
      ASSERT_TRUE(cluster.waitReady(0));
      cluster.zk().restart(static_cast<size_t>(leader));
    } else {
      cluster.zk().freeze(static_cast<size_t>(leader));
      std::this_thread::sleep_for(milliseconds(2000));  // the fault's length
      cluster.zk().thaw(static_cast<size_t>(leader));
    }
    std::printf("fault %d (%s leader %d, sidecar on %d): %lld ms\n", fault,
                freeze ? "froze" : "killed", leader, server, static_cast<long long>(msSince(at)));
    EXPECT_FALSE(loss.lost.load()) << "lost after fault " << fault;
    EXPECT_FALSE(standbyGranted.load()) << "the standby got the lock after fault " << fault;
    if (loss.lost || standbyGranted) break;
  }
  ASSERT_GE(healthyLeader(cluster), 0);
  ASSERT_TRUE(cluster.waitReady(0));
  Millis valid{0};
  EXPECT_TRUE(held->check(&valid).ok());
  EXPECT_EQ(holderOf(*c0, "survive").token, held->token());
  EXPECT_TRUE(cmd->running()) << "fencectl stopped its command:\n" << cmd->log();
  EXPECT_EQ(holderOf(*c0, "survive-cmd").token, cmdToken);
  std::ifstream tokens(tokenFile);
  std::string first, second;
  std::getline(tokens, first);
  EXPECT_EQ(first, std::to_string(cmdToken));
  EXPECT_FALSE(std::getline(tokens, second)) << "CMD was started twice";

  // The standby was alive all along: it gets the lock once it is let go.
  ASSERT_TRUE(held->release().ok());
  standby.join();
  EXPECT_TRUE(standbyGranted.load());
  cmd->stop(milliseconds(5000));
}

}  // namespace
}  // namespace fencekeeper::testing
