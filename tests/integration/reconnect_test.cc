// A client outlives a sidecar restart: the old connection's leases are reported lost, and the
// same client reconnects by itself, so new calls work without a new client.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>

#include "fencekeeper/client.h"
#include "tests/support/sidecar_cluster.h"
#include "tests/support/wait.h"

namespace fencekeeper::testing {
namespace {

using std::chrono::milliseconds;

TEST(ReconnectTest, LeasesAreLostAcrossASidecarRestartAndTheClientReconnects) {
  SidecarCluster cluster;
  cluster.startSidecar();
  auto client = cluster.connect(0);
  std::atomic<int> losses{0};
  std::atomic<int> lossReason{-1};
  auto options = acquireOptions(milliseconds(0), milliseconds(30000));
  options.onLost = [&](uint64_t, LossReason reason) {
    lossReason = static_cast<int>(reason);
    ++losses;
  };
  auto lease = client->acquire("reconnect", options);
  ASSERT_TRUE(lease);
  std::string tableBefore;
  ASSERT_TRUE(client->usesLeaseTable(&tableBefore)) << tableBefore;

  cluster.restartSidecar(0);
  ASSERT_TRUE(waitUntil([&] { return losses.load() == 1; }));
  EXPECT_EQ(lossReason.load(), static_cast<int>(LossReason::kConnectionLost));
  EXPECT_TRUE(lease->lost());
  EXPECT_EQ(lease->validFor(), milliseconds(0));
  EXPECT_EQ(lease->release().code, ErrorCode::kLost);

  // The same client, without being told: connected again, and every call works.
  ASSERT_TRUE(waitUntil([&] { return client->connected(); }, milliseconds(10000)));
  Status s;
  auto again =
      client->acquire("reconnect", acquireOptions(milliseconds(10000), milliseconds(30000)), &s);
  ASSERT_TRUE(again) << s.message;
  EXPECT_GT(again->token(), lease->token());
  std::string tableAfter;
  EXPECT_TRUE(client->usesLeaseTable(&tableAfter)) << tableAfter;  // the new instance's table
  EXPECT_GT(again->validFor(), milliseconds(0));
  EXPECT_TRUE(holderOf(*client, "reconnect").held);
  EXPECT_EQ(losses.load(), 1);
  EXPECT_TRUE(again->release().ok());
}

TEST(ReconnectTest, CallsWhileTheSidecarIsDownSayWhyAndTheClientComesBackWhenItDoes) {
  SidecarCluster cluster;
  cluster.startSidecar();
  auto client = cluster.connect(0);
  cluster.sidecar(0).signal(SIGKILL);
  ASSERT_TRUE(waitUntil([&] { return !client->connected(); }));
  HolderInfo info;
  Status s = client->holder("down", &info);
  EXPECT_EQ(s.code, ErrorCode::kSidecarUnavailable);
  EXPECT_NE(s.message.find("not connected to the sidecar"), std::string::npos) << s.message;
  auto request = client->acquireAsync("down", acquireOptions(milliseconds(0), milliseconds(5000)));
  EXPECT_EQ(request->wait(milliseconds(1000), &s), nullptr);
  EXPECT_EQ(s.code, ErrorCode::kSidecarUnavailable) << s.message;

  cluster.restartSidecar(0);
  ASSERT_TRUE(waitUntil([&] { return client->connected(); }, milliseconds(10000)));
  EXPECT_TRUE(client->holder("down", &info).ok());
  EXPECT_FALSE(info.held);
}

}  // namespace
}  // namespace fencekeeper::testing
