// The ZooKeeper side of real sidecars: --zk-auth-file (a bad file stops the start; nodes owned by
// the credentials' identity, also after a session expiry), the open-ACL warnings at start, the
// chroot of --zk, planted queue entries through holder and status, and ACL errors as
// permissionDenied. A ZkInspector plays the ZooKeeper client without the credentials.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <thread>

#include "fencekeeper/client.h"
#include "tests/support/sidecar_cluster.h"
#include "tests/support/tcp_proxy.h"
#include "tests/support/wait.h"
#include "tests/support/zk_inspector.h"

namespace fencekeeper::testing {
namespace {

using std::chrono::milliseconds;

std::string writeFile(const std::string& path, const std::string& text, mode_t mode) {
  std::ofstream(path) << text;
  chmod(path.c_str(), mode);
  return path;
}

std::string authFile(SidecarCluster& cluster) {
  return writeFile(cluster.dir() + "/zk-auth", "app:s3cret\n", 0600);
}

SidecarOptions withAuth(const std::string& file, std::string zk = {}) {
  SidecarOptions o;
  o.zk = std::move(zk);
  o.extraArgs = {"--zk-auth-file", file};
  return o;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The one node in the queue of `lock` (under `base`), as a path.
std::string onlyNode(ZkInspector& zk, const std::string& lock,
                     const std::string& base = "/fencekeeper") {
  auto nodes = zk.children(base + "/locks/" + lock);
  return nodes.size() == 1 ? base + "/locks/" + lock + "/" + nodes[0] : std::string();
}

TEST(ZkAuth, ABadAuthFileStopsTheStartSayingWhy) {
  SidecarCluster cluster;
  struct Case {
    std::string text;
    mode_t mode;
    std::string says;
  };
  for (const Case& c : {Case{"app:s3cret\n", 0644, "mode 0644 lets every user read it"},
                        Case{"app\n", 0600, "expected one line user:password"},
                        Case{":s3cret\n", 0600, "expected one line user:password"},
                        Case{"app:s3cret\nmore\n", 0600, "expected one line user:password"}}) {
    std::string file = writeFile(cluster.dir() + "/bad-auth", c.text, c.mode);
    ChildProcess sidecar({fencekeeperBinary(), "--zk", cluster.zk().connectString(), "--socket",
                          cluster.dir() + "/bad.sock", "--zk-auth-file", file},
                         cluster.newLogPath("bad-auth"));
    EXPECT_EQ(sidecar.wait(milliseconds(10'000)), 1) << c.text;
    EXPECT_NE(sidecar.log().find("--zk-auth-file " + file + ": " + c.says), std::string::npos)
        << sidecar.log();
  }
  ChildProcess missing({fencekeeperBinary(), "--zk", cluster.zk().connectString(), "--socket",
                        cluster.dir() + "/bad.sock", "--zk-auth-file", cluster.dir() + "/none"},
                       cluster.newLogPath("no-auth-file"));
  EXPECT_EQ(missing.wait(milliseconds(10'000)), 1);
  EXPECT_NE(missing.log().find("No such file"), std::string::npos) << missing.log();
}

// A client without the credentials cannot force a hand-over by deleting the holder's node, nor
// plant a node in the queue, also after the sidecar's session expired and a new one began.
TEST(ZkAuth, NodesAreOwnedByTheCredentialsAlsoAfterASessionExpiry) {
  SidecarCluster cluster;
  TcpProxy proxy(cluster.zk().clientPort(0));
  size_t i = cluster.startSidecar(withAuth(authFile(cluster), proxy.address()));
  auto client = cluster.connect(i);
  auto lease = client->acquire("owned", acquireOptions(milliseconds(5000), milliseconds(60000)));
  ASSERT_TRUE(lease);
  ZkInspector stranger(cluster.zk().connectString());
  std::string node = onlyNode(stranger, "owned");
  ASSERT_FALSE(node.empty());
  EXPECT_FALSE(stranger.remove(node)) << "deleted a live holder's node";
  EXPECT_FALSE(stranger.create("/fencekeeper/locks/owned/evil__lock__0000000000"));
  EXPECT_FALSE(stranger.create("/fencekeeper/locks/squat"));
  EXPECT_EQ(stranger.children("/fencekeeper/locks/owned").size(), 1u) << "but it can read";
  Millis valid{0};
  EXPECT_TRUE(lease->check(&valid).ok());

  // The session expires behind a stalled proxy; the new handle must authenticate again.
  proxy.setStalled(true);
  ASSERT_TRUE(waitUntil([&] { return !stranger.exists(node); }, milliseconds(10'000)));
  proxy.setStalled(false);
  ASSERT_TRUE(cluster.waitReady(i));
  auto again = cluster.connect(i);
  // A new lock: its node is created in /fencekeeper/locks, which only the identity may write.
  auto fresh =
      again->acquire("after-expiry", acquireOptions(milliseconds(5000), milliseconds(60000)));
  ASSERT_TRUE(fresh) << cluster.sidecar(i).log();
  std::string freshNode = onlyNode(stranger, "after-expiry");
  ASSERT_FALSE(freshNode.empty());
  EXPECT_FALSE(stranger.remove(freshNode));
  EXPECT_GE(count(cluster.sidecar(i).log(), "zookeeper: authenticated as app"), 2u)
      << "every handle authenticates";
}

TEST(ZkAuth, OpenAclsAreWarnedAboutAtStart) {
  SidecarCluster cluster;
  {
    ZkInspector before(cluster.zk().connectString());  // as the sidecar made them without auth
    ASSERT_TRUE(before.create("/fencekeeper"));
    ASSERT_TRUE(before.create("/fencekeeper/locks"));
    ASSERT_TRUE(before.create("/fencekeeper/locks/old"));
  }
  size_t open = cluster.startSidecar();
  EXPECT_NE(cluster.sidecar(open).log().find("no --zk-auth-file: lock nodes get the open ACL"),
            std::string::npos);
  size_t i = cluster.startSidecar(withAuth(authFile(cluster)));
  ASSERT_TRUE(waitUntil([&] {
    return cluster.sidecar(i).log().find("have an open ACL") != std::string::npos;
  })) << cluster.sidecar(i).log();
  auto log = cluster.sidecar(i).log();
  auto line = log.substr(log.find("3 existing ZooKeeper node(s) have an open ACL"));
  line = line.substr(0, line.find('\n'));
  EXPECT_NE(line.find("/fencekeeper, /fencekeeper/locks, /fencekeeper/locks/old"),
            std::string::npos)
      << line;
  EXPECT_NE(line.find("docs/security.md"), std::string::npos);
  EXPECT_EQ(log.find("no --zk-auth-file"), std::string::npos);
}

TEST(ZkAuth, TheChrootOfTheConnectStringIsHonoured) {
  SidecarCluster cluster;
  ZkInspector zk(cluster.zk().connectString());
  ASSERT_TRUE(zk.create("/app"));
  size_t i =
      cluster.startSidecar(withAuth(authFile(cluster), cluster.zk().connectString() + "/app"));
  auto client = cluster.connect(i);
  auto lease = client->acquire("jobs/c", acquireOptions(milliseconds(5000), milliseconds(60000)));
  ASSERT_TRUE(lease);
  std::string node = onlyNode(zk, "jobs/c", "/app/fencekeeper");
  ASSERT_FALSE(node.empty());
  EXPECT_EQ(zk.czxid(node), static_cast<int64_t>(lease->token()));
  EXPECT_FALSE(zk.exists("/fencekeeper"));
  auto info = holderOf(*client, "jobs/c");
  EXPECT_TRUE(info.held && info.thisSidecar);
  EXPECT_EQ(info.token, lease->token());
  EXPECT_FALSE(zk.remove(node));

  // A chroot that does not exist is said at start: the sidecar cannot create it.
  size_t missing =
      cluster.startSidecar(withAuth(authFile(cluster), cluster.zk().connectString() + "/nowhere"));
  ASSERT_TRUE(waitUntil([&] {
    return cluster.sidecar(missing).log().find("the chroot /nowhere of --zk does not exist") !=
           std::string::npos;
  }));
}

// Without credentials (open ACLs), a persistent node planted in a queue blocks the lock: holder
// and status name it, the log says so once, the waiter waits until an operator deletes it.
TEST(ZkAuth, APlantedNodeIsReportedAndTheWaiterIsGrantedOnceItIsDeleted) {
  SidecarCluster cluster;
  ZkInspector zk(cluster.zk().connectString());
  for (auto path : {"/fencekeeper", "/fencekeeper/locks", "/fencekeeper/locks/p"}) {
    ASSERT_TRUE(zk.create(path));
  }
  std::string planted = "/fencekeeper/locks/p/evil__lock__0000000000";
  ASSERT_TRUE(zk.create(planted, "attacker"));
  size_t i = cluster.startSidecar();
  auto client = cluster.connect(i);
  std::unique_ptr<Lease> lease;
  auto waiting = cluster.connect(i);
  std::thread waiter([&] {
    lease = waiting->acquire("p", acquireOptions(milliseconds(30'000), milliseconds(60000)));
  });
  struct Join {
    std::thread& t;
    ~Join() {
      if (t.joinable()) t.join();  // (also when an assertion ends the test early)
    }
  } join{waiter};
  ASSERT_TRUE(waitUntil([&] { return zk.children("/fencekeeper/locks/p").size() == 2u; }));
  SidecarStatus status;
  ASSERT_TRUE(
      waitUntil([&] { return client->status(&status).ok() && !status.foreignNodes.empty(); }));
  EXPECT_EQ(status.foreignNodes, std::vector<std::string>{planted});
  HolderInfo info;
  for (int n = 0; n < 5; ++n) info = holderOf(*client, "p");
  EXPECT_TRUE(info.foreign);
  EXPECT_EQ(info.foreignNode, planted);
  EXPECT_FALSE(info.thisSidecar);
  EXPECT_EQ(info.waiters, 1u);
  EXPECT_EQ(count(cluster.sidecar(i).log(), "queue entry " + planted + " is a persistent node"), 1u)
      << "logged once per node";
  EXPECT_FALSE(lease);

  ASSERT_TRUE(zk.remove(planted));  // the operator
  waiter.join();
  ASSERT_TRUE(lease) << cluster.sidecar(i).log();
  EXPECT_FALSE(holderOf(*client, "p").foreign);
  ASSERT_TRUE(client->status(&status).ok());
  EXPECT_TRUE(status.foreignNodes.empty());
}

// A sidecar without the credentials, on a tree owned by them: a typed permissionDenied.
TEST(ZkAuth, AnAclErrorIsPermissionDeniedNotZooKeeperUnavailable) {
  SidecarCluster cluster;
  size_t owner = cluster.startSidecar(withAuth(authFile(cluster)));
  auto holder = cluster.connect(owner);
  auto lease = holder->acquire("x", acquireOptions(milliseconds(5000), milliseconds(60000)));
  ASSERT_TRUE(lease);
  size_t other = cluster.startSidecar();
  auto client = cluster.connect(other);
  // In the queue of an existing lock, and a new lock under /fencekeeper/locks.
  for (auto [lock, says] : {std::pair{"x", "create a node in /fencekeeper/locks/x"},
                            std::pair{"y", "create /fencekeeper/locks/y in /fencekeeper/locks"}}) {
    Status s;
    auto refused =
        client->acquire(lock, acquireOptions(milliseconds(2000), milliseconds(60000)), &s);
    EXPECT_FALSE(refused);
    EXPECT_EQ(s.code, ErrorCode::kPermissionDenied) << s.message;
    EXPECT_NE(cluster.sidecar(other).log().find(std::string("ZooKeeper refused to ") + says),
              std::string::npos);
  }
}

}  // namespace
}  // namespace fencekeeper::testing
