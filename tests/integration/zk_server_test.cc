// The development ZooKeeper (standalone and a three-node ensemble with a leader fail-over) and the
// fault proxy, driven with the real ZooKeeper C client. Waits are bounded polls of a condition.
#include "sidecar/devzk/zk_server.h"

#include <gtest/gtest.h>
#include <zookeeper/zookeeper.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "sidecar/devzk/loopback.h"
#include "tests/support/tcp_proxy.h"

namespace fencekeeper {
namespace {

using devzk::fourLetterWord;
using devzk::ZkServerOptions;
using devzk::ZkServerProcess;
using std::chrono::milliseconds;
using std::chrono::steady_clock;
using testing::TcpProxy;

constexpr milliseconds kWait{15000};

// Polls `done` every 10 ms until it holds or `timeout` passes.
template <typename Pred>
bool waitUntil(Pred done, milliseconds timeout = kWait) {
  auto deadline = steady_clock::now() + timeout;
  while (!done()) {
    if (steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return true;
}

long long msSince(steady_clock::time_point start) {
  return std::chrono::duration_cast<milliseconds>(steady_clock::now() - start).count();
}

// The C client's log, kept in memory and shown only when a test fails: the connection losses
// these tests cause on purpose would otherwise fill stderr with errors.
std::mutex clientLogMu;
std::string clientLog;
void collectClientLog(const char* line) {
  std::lock_guard<std::mutex> lock(clientLogMu);
  clientLog += line;
  clientLog += "\n";
}
std::string takeClientLog() {
  std::lock_guard<std::mutex> lock(clientLogMu);
  return std::exchange(clientLog, {});
}

// One ZooKeeper C client session, counting the session events its watcher sees (on the client's
// own thread, hence atomics).
class Session {
 public:
  explicit Session(const std::string& hosts, int timeoutMs = 6000) {
    zh_ = zookeeper_init2(hosts.c_str(), &Session::watch, timeoutMs, nullptr, this, 0,
                          &collectClientLog);
  }
  ~Session() {
    if (zh_ != nullptr) zookeeper_close(zh_);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  zhandle_t* zh() const { return zh_; }
  bool connected() const { return zh_ != nullptr && zoo_state(zh_) == ZOO_CONNECTED_STATE; }
  int64_t sessionId() const { return zoo_client_id(zh_)->client_id; }
  int connects() const { return connects_.load(); }
  int disconnects() const { return disconnects_.load(); }

 private:
  static void watch(zhandle_t*, int type, int state, const char*, void* ctx) {
    auto* self = static_cast<Session*>(ctx);
    if (type != ZOO_SESSION_EVENT) return;
    if (state == ZOO_CONNECTED_STATE) self->connects_.fetch_add(1);
    if (state == ZOO_CONNECTING_STATE) self->disconnects_.fetch_add(1);
  }

  zhandle_t* zh_ = nullptr;
  std::atomic<int> connects_{0};
  std::atomic<int> disconnects_{0};
};

int createNode(zhandle_t* zh, const std::string& path, const std::string& data) {
  return zoo_create(zh, path.c_str(), data.data(), static_cast<int>(data.size()),
                    &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, nullptr, 0);
}

// Servers that die with the test (the harness and --dev mode leave this off).
ZkServerOptions testServers(size_t ensembleSize = 1) {
  ZkServerOptions options;
  options.ensembleSize = ensembleSize;
  options.dieWithParent = true;
  return options;
}

TEST(ZkServerProcessTest, StandaloneServesAndRestartsOnItsPort) {
  auto begin = steady_clock::now();
  ZkServerProcess zk(testServers());
  zk.start();
  std::printf("standalone start: %lld ms\n", msSince(begin));

  ASSERT_EQ(zk.size(), 1u);
  EXPECT_EQ(zk.connectString(), "127.0.0.1:" + std::to_string(zk.clientPort(0)));
  EXPECT_GT(zk.pid(0), 0);
  auto srvr = fourLetterWord(zk.clientPort(0), "srvr", 2000);
  ASSERT_TRUE(srvr.has_value());
  EXPECT_NE(srvr->find("Mode: standalone"), std::string::npos) << *srvr;
  EXPECT_EQ(zk.mode(0), "standalone");
  EXPECT_EQ(zk.leaderIndex(), -1);

  // A killed server leaves a transaction log behind; it must come back on the same port.
  const int port = zk.clientPort(0);
  zk.kill(0);
  EXPECT_EQ(zk.pid(0), -1);
  EXPECT_FALSE(fourLetterWord(port, "srvr", 500).has_value());
  begin = steady_clock::now();
  zk.restart(0);
  std::printf("standalone restart: %lld ms\n", msSince(begin));
  EXPECT_EQ(zk.clientPort(0), port);
  EXPECT_EQ(zk.mode(0), "standalone");
  if (HasFailure()) zk.keepLogs(true);
}

TEST(ZkServerProcessTest, EnsembleElectsNewLeaderAfterLeaderIsKilled) {
  auto begin = steady_clock::now();
  ZkServerProcess zk(testServers(3));
  zk.start();
  std::printf("ensemble start: %lld ms\n", msSince(begin));
  ASSERT_EQ(zk.size(), 3u);

  int leader = -1;
  ASSERT_TRUE(waitUntil([&] { return (leader = zk.leaderIndex()) >= 0; }));
  for (size_t i = 0; i < zk.size(); ++i) {
    EXPECT_EQ(zk.mode(i), static_cast<int>(i) == leader ? "leader" : "follower") << i;
  }

  // A frozen follower answers nothing, and serves again once thawed.
  const size_t follower = (static_cast<size_t>(leader) + 1) % zk.size();
  zk.freeze(follower);
  EXPECT_TRUE(zk.frozen(follower));
  EXPECT_FALSE(fourLetterWord(zk.clientPort(follower), "srvr", 300).has_value());
  zk.thaw(follower);
  EXPECT_TRUE(zk.waitServing(follower, kWait));

  begin = steady_clock::now();
  zk.kill(static_cast<size_t>(leader));
  int newLeader = -1;
  ASSERT_TRUE(waitUntil([&] {
    newLeader = zk.leaderIndex();
    return newLeader >= 0 && newLeader != leader;
  })) << "old leader: node "
      << leader;
  std::printf("new leader (node %d) after %lld ms\n", newLeader, msSince(begin));
  // The survivors serve, and the old leader rejoins as a follower.
  for (size_t i = 0; i < zk.size(); ++i) {
    if (static_cast<int>(i) != leader) {
      EXPECT_TRUE(zk.waitServing(i, kWait)) << i;
    }
  }
  zk.restart(static_cast<size_t>(leader));
  EXPECT_EQ(zk.mode(static_cast<size_t>(leader)), "follower");
  if (HasFailure()) zk.keepLogs(true);
}

// One standalone server for all the proxy tests; its logs are kept if any of them fails.
class TcpProxyTest : public ::testing::Test {
 protected:
  // WARN, not INFO: the C client formats endpoints for its INFO lines in one static buffer
  // shared by all handles, a data race ThreadSanitizer reports once two sessions run.
  static void SetUpTestSuite() { zoo_set_debug_level(ZOO_LOG_LEVEL_WARN); }
  static void TearDownTestSuite() { server_.reset(); }

  void SetUp() override {
    takeClientLog();
    if (!server_) {
      server_ = std::make_unique<ZkServerProcess>(testServers());
      server_->start();
    }
    proxy_ = std::make_unique<TcpProxy>(server_->clientPort(0));
  }
  void TearDown() override {
    proxy_.reset();
    if (HasFailure()) {
      server_->keepLogs(true);
      std::fprintf(stderr, "ZooKeeper C client log:\n%s", takeClientLog().c_str());
    }
  }

  static std::unique_ptr<ZkServerProcess> server_;
  std::unique_ptr<TcpProxy> proxy_;
};
std::unique_ptr<ZkServerProcess> TcpProxyTest::server_;

TEST_F(TcpProxyTest, ForwardsCreateAndGet) {
  Session s(proxy_->address());
  ASSERT_TRUE(waitUntil([&] { return s.connected(); }));
  EXPECT_GE(proxy_->connectionsAccepted(), 1u);

  ASSERT_EQ(createNode(s.zh(), "/proxy-forwards", "hello"), ZOK);
  char buf[64];
  int len = sizeof buf;
  Stat stat;
  ASSERT_EQ(zoo_get(s.zh(), "/proxy-forwards", 0, buf, &len, &stat), ZOK);
  EXPECT_EQ(std::string(buf, static_cast<size_t>(len)), "hello");
}

TEST_F(TcpProxyTest, CutAllDisconnectsAndClientReconnects) {
  Session s(proxy_->address());
  ASSERT_TRUE(waitUntil([&] { return s.connected(); }));
  const int64_t session = s.sessionId();
  const int connects = s.connects();

  proxy_->cutAll();
  ASSERT_TRUE(waitUntil([&] { return s.disconnects() >= 1; })) << "no disconnect seen";
  ASSERT_TRUE(waitUntil([&] { return s.connects() > connects && s.connected(); }))
      << "no reconnect";
  // Same session: a cut connection is not an expiry.
  EXPECT_EQ(s.sessionId(), session);
  EXPECT_GE(proxy_->connectionsAccepted(), 2u);
  Stat stat;
  EXPECT_EQ(zoo_exists(s.zh(), "/", 0, &stat), ZOK);
}

TEST_F(TcpProxyTest, CutAfterCreateLeavesAnAppliedCreateWithConnectionLoss) {
  Session s(proxy_->address());
  ASSERT_TRUE(waitUntil([&] { return s.connected(); }));

  const std::string path = "/proxy-ambiguous-create";
  proxy_->cutAfterClientSends(path);
  EXPECT_FALSE(proxy_->triggered());
  EXPECT_EQ(createNode(s.zh(), path, "x"), ZCONNECTIONLOSS);
  EXPECT_TRUE(proxy_->triggered());

  // The server applied it: a session of its own, straight to the server, sees the node.
  Session direct(server_->connectString());
  ASSERT_TRUE(waitUntil([&] { return direct.connected(); }));
  Stat stat;
  EXPECT_TRUE(waitUntil([&] { return zoo_exists(direct.zh(), path.c_str(), 0, &stat) == ZOK; }));
  // And the cut client reconnects and finds it too.
  ASSERT_TRUE(waitUntil([&] { return s.connected(); }));
  EXPECT_EQ(zoo_exists(s.zh(), path.c_str(), 0, &stat), ZOK);
  EXPECT_EQ(createNode(s.zh(), path, "x"), ZNODEEXISTS);
}

TEST_F(TcpProxyTest, StallHoldsBytesAndRefuseClosesNewConnections) {
  auto srvr = fourLetterWord(proxy_->port(), "srvr", 2000);
  ASSERT_TRUE(srvr.has_value());
  EXPECT_NE(srvr->find("Mode:"), std::string::npos);

  proxy_->setStalled(true);
  EXPECT_FALSE(fourLetterWord(proxy_->port(), "srvr", 300).has_value());
  proxy_->setStalled(false);
  srvr = fourLetterWord(proxy_->port(), "srvr", 2000);
  ASSERT_TRUE(srvr.has_value());
  EXPECT_NE(srvr->find("Mode:"), std::string::npos);

  proxy_->setRefuse(true);
  const size_t before = proxy_->connectionsAccepted();
  auto refused = fourLetterWord(proxy_->port(), "srvr", 2000);
  EXPECT_TRUE(!refused || refused->empty()) << *refused;
  EXPECT_EQ(proxy_->connectionsAccepted(), before + 1);
  proxy_->setRefuse(false);
  EXPECT_TRUE(fourLetterWord(proxy_->port(), "srvr", 2000).has_value());
}

TEST_F(TcpProxyTest, StalledSessionLosesItsConnectionAndRecoversAfterwards) {
  Session s(proxy_->address(), 2000);
  ASSERT_TRUE(waitUntil([&] { return s.connected(); }));
  const int64_t session = s.sessionId();

  // Silence, not a closed socket: the client notices only by its own timeout (2/3 of the
  // session timeout without a reply), then keeps trying through the stalled proxy.
  proxy_->setStalled(true);
  ASSERT_TRUE(waitUntil([&] { return s.disconnects() >= 1; })) << "no disconnect seen";
  proxy_->setStalled(false);
  // The session may or may not have expired meanwhile; the client must get back either way.
  ASSERT_TRUE(waitUntil([&] {
    int state = zoo_state(s.zh());
    return state == ZOO_CONNECTED_STATE || state == ZOO_EXPIRED_SESSION_STATE;
  }));
  if (s.connected()) {
    EXPECT_EQ(s.sessionId(), session);
  }
}

}  // namespace
}  // namespace fencekeeper
