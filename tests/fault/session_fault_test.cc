// Faults against real ZooKeeper servers: frozen holders, killed sidecars, frozen or cut-off
// ZooKeeper, leader fail-over. Each test is bounded in time and stops what it started.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "examples/fenced_store/fence_http.h"
#include "fencekeeper/client.h"
#include "tests/support/fenced_store_process.h"
#include "tests/support/loss_recorder.h"
#include "tests/support/sidecar_cluster.h"
#include "tests/support/tcp_proxy.h"
#include "tests/support/wait.h"

namespace fencekeeper::testing {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr milliseconds kSessionTimeout{4000};

AcquireOptions options(milliseconds wait, milliseconds ttl = milliseconds(30000)) {
  return acquireOptions(wait, ttl);
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  return text;
}

long long msBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<milliseconds>(b - a).count();
}

SidecarOptions sessionTimeout(std::string zk = {}) {
  SidecarOptions o;
  o.zk = std::move(zk);
  o.sessionTimeout = "4s";
  return o;
}

// 1. A holder frozen past its TTL: the standby takes over with a larger token within TTL + 2 s;
// the frozen holder's later write is rejected by the store, and its renew fails.
TEST(SessionFault, FrozenHolderIsReplacedAndItsLateWriteRejected) {
  SidecarCluster cluster;
  cluster.startSidecar(sessionTimeout());
  cluster.startSidecar(sessionTimeout());
  FencedStoreProcess store(FENCED_STORE_BIN, cluster.dir());
  std::string probeDir = cluster.dir() + "/probe";
  std::filesystem::create_directories(probeDir);
  ChildProcess probe({HOLDER_PROBE_BIN, "--socket", cluster.socket(0), "--lock", "frozen", "--ttl",
                      "1s", "--store-port", std::to_string(store.port()), "--dir", probeDir},
                     cluster.newLogPath("probe"));
  ASSERT_TRUE(waitUntil([&] { return !readFile(probeDir + "/granted").empty(); }));
  uint64_t frozenToken = std::stoull(readFile(probeDir + "/granted"));
  probe.signal(SIGSTOP);
  auto frozenAt = Clock::now();

  auto standby = cluster.connect(1);
  auto lease = standby->acquire("frozen", options(milliseconds(10000)));
  ASSERT_TRUE(lease);
  auto tookOver = msBetween(frozenAt, Clock::now());
  EXPECT_LT(tookOver, 1000 + 2000);
  EXPECT_GT(lease->token(), frozenToken);
  std::printf("standby granted %lld ms after the holder froze (TTL 1000 ms)\n", tookOver);
  // The new holder reads with its token: the store's fence is now above the frozen holder's.
  auto read = fencedRequest(store.port(), "GET", "frozen", "frozen", lease->token(), "");
  EXPECT_TRUE(read.status == 200 || read.status == 404) << read.status;

  probe.signal(SIGCONT);
  std::ofstream(probeDir + "/go") << "go\n";
  ASSERT_TRUE(waitUntil([&] { return !readFile(probeDir + "/result").empty(); }));
  std::string result = readFile(probeDir + "/result");
  EXPECT_NE(result.find("write=412"), std::string::npos) << result;
  EXPECT_TRUE(result.find("renew=lease expired") != std::string::npos ||
              result.find("renew=lease lost") != std::string::npos)
      << result;
  EXPECT_EQ(probe.wait(milliseconds(5000)), 0);
}

// With exitOnLoss, a holder that was frozen past its lease exits (status 70) as soon as it runs
// again, before it can do anything with the stale token.
TEST(SessionFault, ExitOnLossEndsAThawedHolder) {
  SidecarCluster cluster;
  cluster.startSidecar(sessionTimeout());
  std::string probeDir = cluster.dir() + "/probe";
  std::filesystem::create_directories(probeDir);
  ChildProcess probe(
      {HOLDER_PROBE_BIN, "--socket", cluster.socket(0), "--lock", "exit-on-loss", "--ttl", "600ms",
       "--store-port", "1", "--dir", probeDir, "--exit-on-loss", "1"},
      cluster.newLogPath("probe"));
  ASSERT_TRUE(waitUntil([&] { return !readFile(probeDir + "/granted").empty(); }));
  probe.signal(SIGSTOP);
  auto standby = cluster.connect(0);
  ASSERT_TRUE(standby->acquire("exit-on-loss", options(milliseconds(5000))));
  probe.signal(SIGCONT);
  EXPECT_EQ(probe.wait(milliseconds(3000)), 70) << probe.log();
  EXPECT_TRUE(readFile(probeDir + "/result").empty()) << "it went on working";
  EXPECT_NE(probe.log().find("lost"), std::string::npos) << probe.log();
}

// 3. A whole sidecar killed: the standby on the other sidecar gets the lock once ZooKeeper
// expires the dead sidecar's session; the killed sidecar's client knows its lease is gone.
TEST(SessionFault, KilledSidecarsLocksPassOnWhenItsSessionExpires) {
  SidecarCluster cluster;
  cluster.startSidecar(sessionTimeout());
  cluster.startSidecar(sessionTimeout());
  auto c0 = cluster.connect(0);
  LossRecorder loss;
  auto o = options(milliseconds(0));
  o.onLost = loss.callback();
  auto held = c0->acquire("sidecar-killed", o);
  ASSERT_TRUE(held);

  auto c1 = cluster.connect(1);
  cluster.sidecar(0).signal(SIGKILL);
  auto killedAt = Clock::now();
  ASSERT_TRUE(waitUntil([&] { return loss.lost.load(); }, milliseconds(2000)));
  EXPECT_EQ(loss.reason.load(), static_cast<int>(LossReason::kConnectionLost));
  auto lease = c1->acquire("sidecar-killed", options(milliseconds(20000)));
  ASSERT_TRUE(lease);
  auto ms = msBetween(killedAt, Clock::now());
  EXPECT_GT(lease->token(), held->token());
  EXPECT_LT(ms, kSessionTimeout.count() + 5000);
  std::printf("standby granted %lld ms after the holder's sidecar was killed (session %lld ms)\n",
              ms, static_cast<long long>(kSessionTimeout.count()));
}

// 4a. ZooKeeper frozen for less than a quarter of the session timeout: nothing is lost.
TEST(SessionFault, ShortZooKeeperFreezeKeepsLeases) {
  SidecarCluster cluster;
  cluster.startSidecar(sessionTimeout());
  auto client = cluster.connect(0);
  LossRecorder loss;
  auto o = options(milliseconds(0), milliseconds(10000));
  o.onLost = loss.callback();
  auto lease = client->acquire("short-freeze", o);
  ASSERT_TRUE(lease);
  cluster.zk().freeze(0);
  std::this_thread::sleep_for(kSessionTimeout / 4 - milliseconds(100));  // the fault's length
  cluster.zk().thaw(0);
  Millis valid{0};
  ASSERT_TRUE(waitUntil([&] { return lease->check(&valid).ok() && valid > Millis(1000); }));
  EXPECT_FALSE(loss.lost.load());
  HolderInfo info;
  ASSERT_TRUE(client->holder("short-freeze", &info).ok());
  EXPECT_EQ(info.token, lease->token());
}

// 4b/4c. ZooKeeper frozen past the session timeout, or the holder's sidecar cut off from it:
// the holder is told "lost" no later than the session timeout after the fault began, and before
// any standby is granted; tokens granted afterwards are larger.
void longOutage(bool cutOffByProxy) {
  SidecarCluster cluster;
  std::unique_ptr<TcpProxy> proxy;
  if (cutOffByProxy) proxy = std::make_unique<TcpProxy>(cluster.zk().clientPort(0));
  cluster.startSidecar(sessionTimeout(proxy ? proxy->address() : std::string()));
  cluster.startSidecar(sessionTimeout());
  auto c0 = cluster.connect(0);
  auto c1 = cluster.connect(1);
  LossRecorder loss;
  auto o = options(milliseconds(0), milliseconds(60000));
  o.onLost = loss.callback();
  auto held = c0->acquire("outage", o);
  ASSERT_TRUE(held);

  std::atomic<bool> granted{false};
  Clock::time_point grantedAt{};
  std::unique_ptr<Lease> standbyLease;
  std::thread standby([&] {
    // Queued before the outage: it must not be granted while the holder may still work.
    standbyLease = c1->acquire("outage", options(milliseconds(30000)));
    grantedAt = Clock::now();
    granted = true;
  });
  HolderInfo info;
  ASSERT_TRUE(waitUntil([&] { return c0->holder("outage", &info).ok() && info.waiters == 1; }));

  auto faultAt = Clock::now();
  if (cutOffByProxy) {
    proxy->setStalled(true);
  } else {
    cluster.zk().freeze(0);
  }
  ASSERT_TRUE(waitUntil([&] { return loss.lost.load(); }, kSessionTimeout + milliseconds(2000)));
  auto lostAfter = msBetween(faultAt, loss.when());
  EXPECT_LE(lostAfter, kSessionTimeout.count()) << "told too late";
  EXPECT_EQ(loss.reason.load(), static_cast<int>(LossReason::kSessionUncertain));
  EXPECT_FALSE(granted.load()) << "a standby was granted before the holder was told";
  std::this_thread::sleep_for(kSessionTimeout);  // the fault lasts past the session timeout
  if (cutOffByProxy) {
    proxy->setStalled(false);
  } else {
    cluster.zk().thaw(0);
  }
  standby.join();
  ASSERT_TRUE(granted.load());
  ASSERT_TRUE(standbyLease);
  EXPECT_GT(standbyLease->token(), held->token());
  EXPECT_LT(loss.when(), grantedAt);
  std::printf("%s: holder told after %lld ms; standby granted %lld ms after the fault began\n",
              cutOffByProxy ? "sidecar cut off" : "zookeeper frozen", lostAfter,
              msBetween(faultAt, grantedAt));
  ASSERT_TRUE(standbyLease->release().ok());
  // Both sidecars serve again, with tokens above every earlier one.
  ASSERT_TRUE(cluster.waitReady(0));
  auto again = c0->acquire("outage", options(milliseconds(10000)));
  if (!again) again = cluster.connect(0)->acquire("outage", options(milliseconds(10000)));
  ASSERT_TRUE(again);
  EXPECT_GT(again->token(), standbyLease->token());
}

TEST(SessionFault, LongZooKeeperFreezeLosesLeasesBeforeAnyStandbyIsGranted) { longOutage(false); }

TEST(SessionFault, CutOffSidecarLosesLeasesBeforeAnyStandbyIsGranted) { longOutage(true); }

devzk::ZkServerOptions ensemble() {
  devzk::ZkServerOptions o;
  o.ensembleSize = 3;
  return o;
}

// 5. Three-node ensemble, the leader killed during a stream of acquire/release: tokens keep
// rising and no two holders overlap.
TEST(SessionFault, LeaderKilledDuringHandOversKeepsTokensRising) {
  SidecarCluster cluster(ensemble());
  cluster.startSidecar(sessionTimeout());
  cluster.startSidecar(sessionTimeout());
  std::atomic<int> holders{0}, overlaps{0}, grants{0}, grantsAfterKill{0};
  std::atomic<bool> killed{false}, stop{false};
  std::mutex mu;
  uint64_t lastToken = 0;
  int nonRising = 0;
  auto worker = [&](size_t sidecar) {
    auto client = cluster.connect(sidecar);
    while (!stop) {
      auto lease = client->acquire("failover", options(milliseconds(2000), milliseconds(5000)));
      if (!lease) continue;  // ZooKeeper unavailable for a moment during the election
      if (holders.fetch_add(1) != 0) overlaps++;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (lease->token() <= lastToken) nonRising++;
        lastToken = lease->token();
      }
      grants++;
      if (killed) grantsAfterKill++;
      holders.fetch_sub(1);
      lease->release();
    }
  };
  std::thread a(worker, 0), b(worker, 1);
  ASSERT_TRUE(waitUntil([&] { return grants.load() >= 30; }));
  uint64_t tokenBefore;
  {
    std::lock_guard<std::mutex> lock(mu);
    tokenBefore = lastToken;
  }
  int leader = cluster.zk().leaderIndex();
  ASSERT_GE(leader, 0);
  cluster.zk().kill(static_cast<size_t>(leader));
  killed = true;
  bool progressed = waitUntil([&] { return grantsAfterKill.load() >= 30; }, milliseconds(30000));
  stop = true;
  a.join();
  b.join();
  EXPECT_TRUE(progressed) << "hand-overs did not resume after the leader was killed";
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(nonRising, 0);
  // The new leader's epoch is in the high 32 bits of every zxid, hence of every token.
  EXPECT_GT(lastToken >> 32, tokenBefore >> 32);
  std::printf("%d grants, %d after the leader was killed; epoch %llu -> %llu\n", grants.load(),
              grantsAfterKill.load(), static_cast<unsigned long long>(tokenBefore >> 32),
              static_cast<unsigned long long>(lastToken >> 32));
}

// 6. Three-node ensemble, the leader frozen while the sidecar stays connected to a follower cut
// off from it (syncLimit x tickTime, 5 s, above the session timeout: the follower keeps its
// clients): the heartbeat (a sync, through the leader) does not come back, so the lease stops
// being valid within the session timeout. Once the followers elect a new leader, its grants are
// worth something: not lost a moment after they are made.
TEST(SessionFault, FrozenLeaderBehindALiveFollowerInvalidatesLeases) {
  auto zkOptions = ensemble();
  zkOptions.syncLimitTicks = 25;
  SidecarCluster cluster(zkOptions);
  int leader = cluster.zk().leaderIndex();
  ASSERT_GE(leader, 0);
  size_t follower = (static_cast<size_t>(leader) + 1) % 3;
  size_t other = (static_cast<size_t>(leader) + 2) % 3;
  std::string followerOnly = "127.0.0.1:" + std::to_string(cluster.zk().clientPort(follower));
  std::string otherOnly = "127.0.0.1:" + std::to_string(cluster.zk().clientPort(other));
  cluster.startSidecar(sessionTimeout(followerOnly));
  cluster.startSidecar(sessionTimeout(otherOnly));
  auto c0 = cluster.connect(0);
  LossRecorder loss;
  auto o = options(milliseconds(0), milliseconds(60000));
  o.onLost = loss.callback();
  auto held = c0->acquire("frozen-leader", o);
  ASSERT_TRUE(held);

  cluster.zk().freeze(static_cast<size_t>(leader));
  auto frozenAt = Clock::now();
  ASSERT_TRUE(waitUntil([&] { return loss.lost.load(); }, kSessionTimeout + milliseconds(2000)));
  auto lostAfter = msBetween(frozenAt, loss.when());
  EXPECT_LE(lostAfter, kSessionTimeout.count());
  EXPECT_EQ(held->validFor(), Millis(0));

  // The two live nodes elect a new leader; tokens it grants are larger.
  auto c1 = cluster.connect(1);
  LossRecorder nextLoss;
  auto no = options(milliseconds(30000));
  no.onLost = nextLoss.callback();
  auto next = c1->acquire("frozen-leader", no);
  ASSERT_TRUE(next);
  EXPECT_GT(next->token(), held->token());
  EXPECT_GT(next->token() >> 32, held->token() >> 32);
  EXPECT_GE(next->validFor(), Millis(kSessionTimeout.count() / 4)) << "granted into a lapse";
  std::this_thread::sleep_for(milliseconds(1000));  // the moment after the grant
  EXPECT_FALSE(nextLoss.lost.load()) << "the new leader's grant was lost at once";
  Millis valid{0};
  EXPECT_TRUE(next->check(&valid).ok());
  std::printf("lease invalid %lld ms after the leader froze; new token %llu (epoch %llu)\n",
              lostAfter, static_cast<unsigned long long>(next->token()),
              static_cast<unsigned long long>(next->token() >> 32));
  cluster.zk().thaw(static_cast<size_t>(leader));
}

}  // namespace
}  // namespace fencekeeper::testing
