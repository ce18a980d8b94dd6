// Release against a frozen ZooKeeper (SIGSTOP): the call answers at its bound instead of waiting
// on the delete, says the delete is unconfirmed, and the sidecar deletes the node once ZooKeeper
// thaws.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "fencekeeper/client.h"
#include "tests/support/sidecar_cluster.h"
#include "tests/support/wait.h"
#include "tests/support/zk_inspector.h"

namespace fencekeeper::testing {
namespace {

using std::chrono::milliseconds;

uint32_t pendingDeletes(Client& client) {
  SidecarStatus status;
  EXPECT_TRUE(client.status(&status).ok());
  return status.pendingDeletes;
}

TEST(ReleaseTest, ReleaseOnAFrozenZooKeeperAnswersUnconfirmedAndTheNodeGoesAfterTheThaw) {
  SidecarCluster cluster;
  SidecarOptions options;
  options.sessionTimeout = "4s";  // the freeze below stays well inside it
  cluster.startSidecar(options);
  auto client = cluster.connect(0);
  auto lease =
      client->acquire("frozen-release", acquireOptions(milliseconds(0), milliseconds(30000)));
  ASSERT_TRUE(lease);

  cluster.zk().freeze(0);
  auto start = std::chrono::steady_clock::now();
  bool confirmed = true;
  Status released = lease->release(&confirmed);
  auto ms = msSince(start);
  std::printf("release on a frozen ZooKeeper answered after %lld ms (confirmed: %s)\n", ms,
              confirmed ? "yes" : "no");
  EXPECT_TRUE(released.ok()) << released.message;
  EXPECT_FALSE(confirmed);
  EXPECT_LT(ms, 1000);
  EXPECT_EQ(lease->validFor(), milliseconds(0));
  EXPECT_EQ(pendingDeletes(*client), 1u);

  cluster.zk().thaw(0);
  EXPECT_TRUE(waitUntil([&] { return pendingDeletes(*client) == 0; }, milliseconds(10000)));
  ZkInspector zk(cluster.zk().connectString());
  EXPECT_TRUE(zk.children("/fencekeeper/locks/frozen-release").empty());
}

}  // namespace
}  // namespace fencekeeper::testing
