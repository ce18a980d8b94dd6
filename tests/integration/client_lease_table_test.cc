// The C++ client's validity checks through the sidecar's shared-memory lease table: it maps the
// table at connect, a loss the sidecar decides shows in validFor() while the loss message still
// waits behind a busy I/O thread, the check costs no syscall but the clock (counted with
// strace-free means: the answer needs no round trip), and fencectl valid answers for the shell.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "tests/support/sidecar_cluster.h"
#include "tests/support/wait.h"
#include "tests/support/zk_inspector.h"

namespace fencekeeper::testing {
namespace {

using std::chrono::milliseconds;

// A latch the test opens: while closed, a loss callback waiting on it keeps the client's I/O
// thread busy, so no further message from the sidecar is read.
struct Latch {
  void open() {
    std::lock_guard<std::mutex> lock(mutex);
    opened = true;
    changed.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait_for(lock, std::chrono::seconds(20), [&] { return opened; });
  }
  std::mutex mutex;
  std::condition_variable changed;
  bool opened = false;
};

std::string ownNode(ZkInspector& zk, const std::string& lock) {
  auto children = zk.children("/fencekeeper/locks/" + lock);
  return children.size() == 1 ? "/fencekeeper/locks/" + lock + "/" + children[0] : "";
}

TEST(ClientLeaseTableTest, ALossTheSidecarDecidesShowsInValidForBeforeItsMessageIsRead) {
  SidecarCluster cluster;
  cluster.startSidecar();
  auto client = cluster.connect(0);
  ASSERT_TRUE(client);
  std::string where;
  ASSERT_TRUE(client->usesLeaseTable(&where)) << where;
  EXPECT_NE(where.find(".leases"), std::string::npos) << where;
  ZkInspector zk(cluster.zk().connectString());

  Latch latch;
  std::atomic<bool> firstLost{false};
  AcquireOptions blocking = acquireOptions(milliseconds(0), milliseconds(60'000));
  blocking.onLost = [&](uint64_t, LossReason) {
    firstLost = true;
    latch.wait();  // the I/O thread stays here until the test opens the latch
  };
  auto first = client->acquire("table-a", blocking);
  ASSERT_TRUE(first);
  auto second = client->acquire("table-b", acquireOptions(milliseconds(0), milliseconds(60'000)));
  ASSERT_TRUE(second);
  EXPECT_GT(second->validFor(), milliseconds(1000));

  // An operator deletes the first lease's node: the sidecar tells the client, whose I/O thread
  // then waits in the loss callback.
  ASSERT_TRUE(zk.remove(ownNode(zk, "table-a")));
  ASSERT_TRUE(waitUntil([&] { return firstLost.load(); }));
  // Then the second's: its loss message cannot be read now, but the table says it at once.
  ASSERT_TRUE(zk.remove(ownNode(zk, "table-b")));
  auto deleted = std::chrono::steady_clock::now();
  EXPECT_TRUE(waitUntil([&] { return second->validFor() == milliseconds(0); }, milliseconds(5000)));
  std::printf("validFor() 0 through the table %lld ms after the node was deleted\n",
              msSince(deleted));
  EXPECT_FALSE(second->lost()) << "the loss message was read: the I/O thread was not held";
  latch.open();
  EXPECT_TRUE(waitUntil([&] { return second->lost(); }));
  EXPECT_EQ(second->validFor(), milliseconds(0));
}

TEST(ClientLeaseTableTest, WithoutATableValidForCountsFromTheSidecarsLastAnswer) {
  SidecarCluster cluster;
  cluster.startSidecar({.extraArgs = {"--lease-table", "none"}});
  auto client = cluster.connect(0);
  ASSERT_TRUE(client);
  std::string why;
  EXPECT_FALSE(client->usesLeaseTable(&why));
  EXPECT_NE(why.find("--lease-table none"), std::string::npos) << why;
  auto lease = client->acquire("no-table", acquireOptions(milliseconds(0), milliseconds(30'000)));
  ASSERT_TRUE(lease);
  EXPECT_GT(lease->validFor(), milliseconds(500));
  bool valid = true;
  Status s = client->tableShowsValid("no-table", lease->token(), &valid);
  EXPECT_EQ(s.code, ErrorCode::kNotHeld) << s.message;
  EXPECT_FALSE(valid);
  ASSERT_TRUE(lease->release().ok());
  EXPECT_EQ(lease->validFor(), milliseconds(0));
}

TEST(ClientLeaseTableTest, FencectlValidAnswersFromTheTable) {
  SidecarCluster cluster;
  cluster.startSidecar();
  auto client = cluster.connect(0);
  ASSERT_TRUE(client);
  auto lease = client->acquire("shell", acquireOptions(milliseconds(0), milliseconds(30'000)));
  ASSERT_TRUE(lease);
  std::string token = std::to_string(lease->token());
  auto exitOf = [&](std::vector<std::string> args) {
    auto p = cluster.fencectl(0, std::move(args));
    return p->wait(milliseconds(10000));
  };
  EXPECT_EQ(exitOf({"valid", "shell", token}), 0);
  EXPECT_EQ(exitOf({"valid", "shell", std::to_string(lease->token() - 1)}), 1);
  EXPECT_EQ(exitOf({"valid", "shel", token}), 1);
  EXPECT_EQ(exitOf({"valid", "shell", "x12"}), 64);
  EXPECT_EQ(exitOf({"valid", "shell"}), 64);
  bool valid = false;
  ASSERT_TRUE(client->tableShowsValid("shell", lease->token(), &valid).ok());
  EXPECT_TRUE(valid);
  ASSERT_TRUE(lease->release().ok());
  EXPECT_EQ(exitOf({"valid", "shell", token}), 1);
}

}  // namespace
}  // namespace fencekeeper::testing
