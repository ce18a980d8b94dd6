// Leases end to end: real ZooKeeper, real fencekeeper daemons, the C++ client and fencectl.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "fencekeeper/client.h"
#include "sidecar/engine/lock_name.h"
#include "tests/support/sidecar_cluster.h"
#include "tests/support/tcp_proxy.h"
#include "tests/support/wait.h"
#include "tests/support/zk_inspector.h"

namespace fencekeeper::testing {
namespace {

using std::chrono::milliseconds;

AcquireOptions waitFor(milliseconds wait, milliseconds ttl = milliseconds(10000)) {
  return acquireOptions(wait, ttl);
}

class LeaseTest : public ::testing::Test {
 protected:
  // A sidecar that reaches ZooKeeper only through `proxy`.
  void startSidecarBehind(TcpProxy& proxy) {
    SidecarOptions options;
    options.zk = proxy.address();
    options.sessionTimeout = "4s";
    cluster.startSidecar(options);
  }
  SidecarCluster cluster;
};

TEST_F(LeaseTest, TwoSidecarsHandOverOneLockWithRisingTokens) {
  cluster.startSidecar();
  cluster.startSidecar();
  constexpr int kRoundsPerWorker = 60;  // 120 hand-overs in all
  std::atomic<int> holders{0};
  std::atomic<int> overlaps{0};
  std::mutex mu;
  uint64_t lastToken = 0;
  int grants = 0;
  int nonRising = 0;
  std::vector<std::string> failures;

  auto worker = [&](size_t sidecar) {
    auto client = cluster.connect(sidecar);
    for (int i = 0; i < kRoundsPerWorker; ++i) {
      Status s;
      auto lease = client->acquire("handover", waitFor(milliseconds(20000)), &s);
      if (!lease) {
        std::lock_guard<std::mutex> lock(mu);
        failures.push_back(s.message);
        return;
      }
      if (holders.fetch_add(1) != 0) overlaps++;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (lease->token() <= lastToken) nonRising++;
        lastToken = lease->token();
        grants++;
      }
      std::this_thread::yield();
      holders.fetch_sub(1);
      if (!lease->release().ok()) {
        std::lock_guard<std::mutex> lock(mu);
        failures.push_back("release failed");
      }
    }
  };
  std::thread a(worker, 0), b(worker, 1);
  a.join();
  b.join();
  EXPECT_TRUE(failures.empty()) << failures.front();
  EXPECT_EQ(grants, 2 * kRoundsPerWorker);
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(nonRising, 0);
}

TEST_F(LeaseTest, WaitersAreServedFirstInFirstOutAcrossSidecars) {
  cluster.startSidecar();
  cluster.startSidecar();
  auto c0 = cluster.connect(0);
  auto c1 = cluster.connect(1);
  auto first = c0->acquire("fifo", waitFor(milliseconds(0)));
  ASSERT_TRUE(first);

  std::mutex mu;
  std::vector<std::string> order;
  std::unique_ptr<Lease> second, third;
  std::thread t2([&] {
    second = c1->acquire("fifo", waitFor(milliseconds(20000)));
    std::lock_guard<std::mutex> lock(mu);
    order.push_back("second");
  });
  ASSERT_TRUE(waitUntil([&] { return holderOf(*c0, "fifo").waiters == 1; }));
  std::thread t3([&] {
    third = c0->acquire("fifo", waitFor(milliseconds(20000)));
    std::lock_guard<std::mutex> lock(mu);
    order.push_back("third");
  });
  ASSERT_TRUE(waitUntil([&] { return holderOf(*c0, "fifo").waiters == 2; }));

  ASSERT_TRUE(first->release().ok());
  t2.join();
  ASSERT_TRUE(second);
  EXPECT_GT(second->token(), first->token());
  EXPECT_EQ(holderOf(*c0, "fifo").token, second->token());
  ASSERT_TRUE(second->release().ok());
  t3.join();
  ASSERT_TRUE(third);
  EXPECT_GT(third->token(), second->token());
  EXPECT_EQ(order, (std::vector<std::string>{"second", "third"}));
}

TEST_F(LeaseTest, TokenKeepsRisingWhenTheLockParentIsReapedAndRecreated) {
  cluster.startSidecar();
  auto client = cluster.connect(0);
  ZkInspector zk(cluster.zk().connectString());
  auto first = client->acquire("reaped", waitFor(milliseconds(0)));
  ASSERT_TRUE(first);
  auto before = zk.children("/fencekeeper/locks/reaped");
  ASSERT_EQ(before.size(), 1u);
  ASSERT_TRUE(first->release().ok());
  // The CONTAINER parent is reaped once empty (check interval 1 s in the test server).
  ASSERT_TRUE(waitUntil([&] { return !zk.exists("/fencekeeper/locks/reaped"); }));

  auto second = client->acquire("reaped", waitFor(milliseconds(0)));
  ASSERT_TRUE(second);
  auto after = zk.children("/fencekeeper/locks/reaped");
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(engine::parseQueueNode(after[0])->sequence, 0);  // sequence numbers restarted...
  EXPECT_GT(second->token(), first->token());                // ...the token did not
}

TEST_F(LeaseTest, TokenKeepsRisingWhenAnOperatorDeletesTheWholeTree) {
  cluster.startSidecar();
  auto client = cluster.connect(0);
  ZkInspector zk(cluster.zk().connectString());
  auto first = client->acquire("wiped", waitFor(milliseconds(0)));
  ASSERT_TRUE(first);
  ASSERT_TRUE(first->release().ok());
  zk.remove("/fencekeeper", true);
  auto second = client->acquire("wiped", waitFor(milliseconds(0)));
  ASSERT_TRUE(second);
  EXPECT_GT(second->token(), first->token());
}

TEST_F(LeaseTest, KilledHolderProcessLosesItsLeaseAtOnce) {
  cluster.startSidecar();
  auto client = cluster.connect(0);
  // The command ends by itself once its fencectl is gone (it runs in a group of its own).
  auto holder = cluster.fencectl(0, {"lock", "killed", "--ttl", "30s", "--", "sh", "-c",
                                     "while kill -0 $PPID 2>/dev/null; do sleep 0.1; done"});
  ASSERT_TRUE(waitUntil([&] { return holderOf(*client, "killed").held; }));
  auto start = std::chrono::steady_clock::now();
  holder->signal(SIGKILL);
  auto lease = client->acquire("killed", waitFor(milliseconds(5000)));
  ASSERT_TRUE(lease) << "not granted within 5 s of the holder's death";
  auto ms = msSince(start);
  EXPECT_LT(ms, 5000);
  std::printf("hand-over after SIGKILL of a 30 s lease holder: %lld ms\n", ms);
}

TEST_F(LeaseTest, KilledWaiterIsDequeuedAtOnce) {
  cluster.startSidecar();
  auto client = cluster.connect(0);
  ZkInspector zk(cluster.zk().connectString());
  auto held = client->acquire("waiter", waitFor(milliseconds(0)));
  ASSERT_TRUE(held);
  auto waiter = cluster.fencectl(0, {"lock", "waiter", "--wait", "60s", "--", "true"});
  ASSERT_TRUE(waitUntil([&] { return holderOf(*client, "waiter").waiters == 1; }));
  EXPECT_EQ(zk.children("/fencekeeper/locks/waiter").size(), 2u);
  waiter->signal(SIGKILL);
  EXPECT_TRUE(waitUntil([&] { return zk.children("/fencekeeper/locks/waiter").size() == 1; },
                        milliseconds(3000)));
  EXPECT_EQ(holderOf(*client, "waiter").waiters, 0u);
}

TEST_F(LeaseTest, AmbiguousCreateThroughAProxyLeavesNoOrphan) {
  TcpProxy proxy(cluster.zk().clientPort(0));
  startSidecarBehind(proxy);
  auto client = cluster.connect(0);
  ZkInspector zk(cluster.zk().connectString());
  auto warmup = client->acquire("ambiguous", waitFor(milliseconds(0)));  // parents exist now
  ASSERT_TRUE(warmup);
  ASSERT_TRUE(warmup->release().ok());

  proxy.cutAfterClientSends("__lock__");
  auto lease = client->acquire("ambiguous", waitFor(milliseconds(15000)));
  ASSERT_TRUE(proxy.triggered());
  ASSERT_TRUE(lease);
  auto nodes = zk.children("/fencekeeper/locks/ambiguous");
  EXPECT_EQ(nodes.size(), 1u) << "one request, one node";
  EXPECT_EQ(zk.czxid("/fencekeeper/locks/ambiguous/" + nodes[0]).value_or(0),
            static_cast<int64_t>(lease->token()));
  ASSERT_TRUE(lease->release().ok());
  EXPECT_TRUE(zk.children("/fencekeeper/locks/ambiguous").empty()) << "no orphan";
  auto next = client->acquire("ambiguous", waitFor(milliseconds(0)));
  EXPECT_TRUE(next) << "the lock is not blocked";
}

TEST_F(LeaseTest, AmbiguousCreateOfAnAbandonedRequestLeavesNoOrphan) {
  TcpProxy proxy(cluster.zk().clientPort(0));
  startSidecarBehind(proxy);
  auto client = cluster.connect(0);
  ZkInspector zk(cluster.zk().connectString());
  auto holder = client->acquire("abandoned", waitFor(milliseconds(0)));
  ASSERT_TRUE(holder);
  // A waiter whose create is cut in flight, and which is killed before it is found again.
  proxy.cutAfterClientSends("__lock__");
  auto waiter = cluster.fencectl(0, {"lock", "abandoned", "--wait", "60s", "--", "true"});
  ASSERT_TRUE(waitUntil([&] { return proxy.triggered(); }));
  waiter->signal(SIGKILL);
  ASSERT_TRUE(holder->release().ok());
  // The create may be applied only now (the node then appears after the release): the next
  // acquire queues behind whatever is there, and is granted once the sidecar has found the
  // abandoned node by its guid (or swept it) and deleted it. A node left behind would block it.
  auto next = client->acquire("abandoned", waitFor(milliseconds(10000)));
  ASSERT_TRUE(next) << "the lock is blocked";
  // The pass that grants it also sends the orphan's delete, without waiting for it (failed once
  // in CI, under load, when the listing below came before ZooKeeper applied that delete).
  EXPECT_TRUE(waitUntil([&] { return zk.children("/fencekeeper/locks/abandoned").size() == 1u; },
                        milliseconds(5000)))
      << "only the new holder's node is left";
}

// Holds `lock`, sends the sidecar `sig`: it must tell the holder, delete the node, remove its
// socket and exit 0, and log the signal by name.
void expectShutdownBySignal(SidecarCluster& cluster, int sig, const std::string& lock) {
  auto client = cluster.connect(0);
  ZkInspector zk(cluster.zk().connectString());
  std::atomic<int> lostReason{-1};
  auto options = waitFor(milliseconds(0));
  options.onLost = [&](uint64_t, LossReason r) { lostReason = static_cast<int>(r); };
  auto lease = client->acquire(lock, options);
  ASSERT_TRUE(lease);
  cluster.sidecar(0).signal(sig);
  EXPECT_EQ(cluster.sidecar(0).wait(milliseconds(8000)), 0);
  EXPECT_EQ(lostReason.load(), static_cast<int>(LossReason::kSidecarShutdown));
  EXPECT_TRUE(lease->lost());
  EXPECT_TRUE(zk.children("/fencekeeper/locks/" + lock).empty());
  EXPECT_FALSE(std::filesystem::exists(cluster.socket(0)));
  std::string logged =
      "signal " + std::to_string(sig) + " (" + sigabbrev_np(sig) + "): shutting down";
  EXPECT_NE(cluster.sidecar(0).log().find(logged), std::string::npos) << cluster.sidecar(0).log();
}

TEST_F(LeaseTest, SigtermReleasesEveryLeaseTellsHoldersAndRemovesTheSocket) {
  cluster.startSidecar();
  expectShutdownBySignal(cluster, SIGTERM, "shutdown");
}

// SIGHUP's default action killed the sidecar with no log, its nodes left until the session expired
// (issue 24): it shuts down as SIGTERM does, and says so.
TEST_F(LeaseTest, SighupShutsDownAsSigtermDoesAndIsLogged) {
  cluster.startSidecar();
  expectShutdownBySignal(cluster, SIGHUP, "hangup");
}

TEST_F(LeaseTest, StaleSocketIsReplacedAndALiveOneRefused) {
  // A socket file left by a dead sidecar: bound, never listened on.
  std::string path = cluster.socket(0);
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  close(fd);
  cluster.startSidecar();  // replaces it

  ChildProcess second({fencekeeperBinary(), "--zk", cluster.zk().connectString(), "--socket", path},
                      cluster.newLogPath("second"));
  EXPECT_EQ(second.wait(milliseconds(10000)), 1);
  EXPECT_NE(second.log().find("another sidecar is serving"), std::string::npos) << second.log();
  EXPECT_TRUE(cluster.waitReady(0));
}

TEST_F(LeaseTest, BadInputGetsTypedErrorsAndTheSidecarKeepsServing) {
  cluster.startSidecar();
  auto client = cluster.connect(0);
  Status s;
  EXPECT_FALSE(client->acquire("../etc/passwd", waitFor(milliseconds(0)), &s));
  EXPECT_EQ(s.code, ErrorCode::kInvalidName);
  EXPECT_FALSE(client->acquire(std::string(201, 'a'), waitFor(milliseconds(0)), &s));
  EXPECT_EQ(s.code, ErrorCode::kInvalidName);
  EXPECT_FALSE(client->acquire("ok", waitFor(milliseconds(0), milliseconds(1)), &s));
  EXPECT_EQ(s.code, ErrorCode::kInvalidArgument);
  EXPECT_FALSE(client->acquire("ok", waitFor(milliseconds(0), milliseconds(1LL << 31)), &s));
  EXPECT_EQ(s.code, ErrorCode::kInvalidArgument);
  HolderInfo info;
  EXPECT_EQ(client->holder("a//b", &info).code, ErrorCode::kInvalidName);

  // Garbage on the socket: the sidecar drops that connection and serves the others.
  for (const std::string& garbage :
       {std::string("GET / HTTP/1.1\r\n\r\n"), std::string(4096, '\xff'),
        std::string("\x00\x00\x00\x00\xff\xff\xff\x7f", 8)}) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    strncpy(addr.sun_path, cluster.socket(0).c_str(), sizeof addr.sun_path - 1);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_GT(write(fd, garbage.data(), garbage.size()), 0);
    close(fd);
  }
  auto lease = client->acquire("ok", waitFor(milliseconds(0)), &s);
  EXPECT_TRUE(lease) << s.message;
  EXPECT_TRUE(cluster.sidecar(0).running());
}

TEST_F(LeaseTest, DeadZooKeeperGetsTypedErrorsAndTheSidecarKeepsServing) {
  std::string socket = cluster.dir() + "/dead.sock";
  ChildProcess sidecar(
      {fencekeeperBinary(), "--zk", "127.0.0.1:1", "--socket", socket, "--session-timeout", "2s"},
      cluster.newLogPath("dead-zk"));
  std::unique_ptr<Client> client;
  ASSERT_TRUE(waitUntil([&] { return (client = Client::connect(socket)) != nullptr; }));
  SidecarStatus status;
  ASSERT_TRUE(client->status(&status).ok());
  EXPECT_EQ(status.zkState, "connecting");
  EXPECT_EQ(status.safeForMs, 0u);
  auto start = std::chrono::steady_clock::now();
  Status s;
  EXPECT_FALSE(client->acquire("x", waitFor(milliseconds(0)), &s));
  EXPECT_EQ(s.code, ErrorCode::kZkUnavailable) << s.message;
  EXPECT_LT(msSince(start), 1000);
  EXPECT_FALSE(client->acquire("x", waitFor(milliseconds(500)), &s));
  EXPECT_EQ(s.code, ErrorCode::kZkUnavailable) << s.message;
  HolderInfo info;
  EXPECT_EQ(client->holder("x", &info).code, ErrorCode::kZkUnavailable);
  EXPECT_TRUE(sidecar.running());
  EXPECT_EQ(sidecar.stop(milliseconds(8000)), 0);
}

TEST_F(LeaseTest, FencectlRunsTheCommandWithTheTokenAndExitsWithItsStatus) {
  cluster.startSidecar();
  auto run = cluster.fencectl(0, {"lock", "cli", "--ttl", "3s", "--", "sh", "-c",
                                  "echo \"token=$FENCE_TOKEN lock=$FENCE_LOCK ttl=$FENCE_TTL_MS\"; "
                                  "exit 7"});
  EXPECT_EQ(run->wait(milliseconds(10000)), 7);
  EXPECT_NE(run->log().find("lock=cli ttl=3000"), std::string::npos) << run->log();
  EXPECT_NE(run->log().find("token="), std::string::npos);

  auto client = cluster.connect(0);
  auto held = client->acquire("cli", waitFor(milliseconds(0)));
  ASSERT_TRUE(held);
  auto busy = cluster.fencectl(0, {"lock", "cli", "--wait", "300ms", "--", "true"});
  EXPECT_EQ(busy->wait(milliseconds(10000)), 75);
  auto bad = cluster.fencectl(0, {"lock", "no such", "--", "true"});
  EXPECT_EQ(bad->wait(milliseconds(10000)), 64);
  auto unreachable = std::make_unique<ChildProcess>(
      std::vector<std::string>{fencectlBinary(), "--socket", cluster.dir() + "/none.sock", "lock",
                               "x", "--", "true"},
      cluster.newLogPath("fencectl"));
  EXPECT_EQ(unreachable->wait(milliseconds(10000)), 69);
}

TEST_F(LeaseTest, FencectlKeepsALeaseAliveLongerThanItsTtl) {
  cluster.startSidecar();
  auto client = cluster.connect(0);
  auto run = cluster.fencectl(0, {"lock", "long", "--ttl", "600ms", "--", "sleep", "2"});
  ASSERT_TRUE(waitUntil([&] { return holderOf(*client, "long").held; }));
  uint64_t token = holderOf(*client, "long").token;
  EXPECT_EQ(run->wait(milliseconds(10000)), 0) << run->log();
  // Never handed over while it ran: a standby would have seen another token.
  EXPECT_FALSE(holderOf(*client, "long").held);
  EXPECT_GT(token, 0u);
}

TEST_F(LeaseTest, KeepAliveRenewsOnlyWhileTheApplicationChecksIn) {
  cluster.startSidecar();
  auto client = cluster.connect(0);
  std::atomic<int> reason{-1};
  auto o = waitFor(milliseconds(0), milliseconds(600));
  o.renewOnlyIfCheckedIn = true;
  o.onLost = [&](uint64_t, LossReason r) { reason = static_cast<int>(r); };
  auto lease = client->acquire("checkin", o);
  ASSERT_TRUE(lease);
  // A live application checks in: the lease outlives several TTLs.
  auto until = std::chrono::steady_clock::now() + milliseconds(2000);
  while (std::chrono::steady_clock::now() < until) {
    lease->checkIn();
    std::this_thread::sleep_for(milliseconds(50));  // the application's own pace
  }
  EXPECT_FALSE(lease->lost());
  EXPECT_EQ(reason.load(), -1);
  // A hung application stops checking in: the keep-alive thread does not cover for it.
  ASSERT_TRUE(waitUntil([&] { return lease->lost(); }, milliseconds(3000)));
  EXPECT_EQ(reason.load(), static_cast<int>(LossReason::kTtlExpired));
  EXPECT_EQ(lease->validFor(), milliseconds(0));
  EXPECT_EQ(lease->renew().code, ErrorCode::kExpired);
}

// Regression: a TTL of 0 (the sidecar's default) once made keep-alive renew every millisecond.
TEST_F(LeaseTest, DefaultTtlKeepsALeaseAliveWithoutSpinning) {
  cluster.startSidecar();
  auto client = cluster.connect(0);
  auto lease = client->acquire("default-ttl", waitFor(milliseconds(0), milliseconds(0)));
  ASSERT_TRUE(lease);
  std::this_thread::sleep_for(milliseconds(1000));  // the span being observed
  EXPECT_FALSE(lease->lost());
  EXPECT_GT(lease->validFor(), milliseconds(0));
  // The sidecar logs each renew (at debug): about three per validity (~1.4 s here), not hundreds.
  std::string log = cluster.sidecar(0).log();
  size_t renews = 0;
  for (size_t at = log.find("renew lock=default-ttl"); at != std::string::npos;
       at = log.find("renew lock=default-ttl", at + 1)) {
    ++renews;
  }
  EXPECT_GE(renews, 1u);
  EXPECT_LE(renews, 10u);
}

TEST_F(LeaseTest, LocalValidityTracksTheSidecarsAnswer) {
  cluster.startSidecar();
  auto client = cluster.connect(0);
  auto lease = client->acquire("validity", waitFor(milliseconds(0), milliseconds(5000)));
  ASSERT_TRUE(lease);
  // Bounded by the TTL and by how long the sidecar can vouch for its session (< 2 s here).
  EXPECT_GT(lease->validFor(), milliseconds(0));
  EXPECT_LE(lease->validFor(), milliseconds(2000));
  Millis remote{0};
  ASSERT_TRUE(lease->check(&remote).ok());
  EXPECT_GT(remote, milliseconds(0));
  EXPECT_LE(remote, milliseconds(2000));
  ASSERT_TRUE(lease->release().ok());
  EXPECT_EQ(lease->validFor(), milliseconds(0));
  EXPECT_EQ(lease->check().code, ErrorCode::kNotHeld);
}

}  // namespace
}  // namespace fencekeeper::testing
