// Client::acquireAsync: an acquire that can be waited on, polled and cancelled, against a real
// ZooKeeper and sidecar.
#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "fencekeeper/client.h"
#include "tests/support/sidecar_cluster.h"
#include "tests/support/wait.h"
#include "tests/support/zk_inspector.h"

namespace fencekeeper::testing {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// A cancel takes effect within this long, its queue node gone from ZooKeeper by then (issue 12).
constexpr milliseconds kCancelBound{100};
constexpr milliseconds kTtl{10000};

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

class AcquireAsyncTest : public ::testing::Test {
 protected:
  void SetUp() override { cluster.startSidecar(); }
  SidecarCluster cluster;
};

TEST_F(AcquireAsyncTest, ACancelEndsTheWaitAndRemovesTheQueueNodeWithin100Ms) {
  auto holderClient = cluster.connect(0);
  auto client = cluster.connect(0);
  ZkInspector zk(cluster.zk().connectString());
  const std::string dir = "/fencekeeper/locks/async-cancel";
  auto held = holderClient->acquire("async-cancel", acquireOptions(milliseconds(0), kTtl));
  ASSERT_TRUE(held);

  auto request = client->acquireAsync("async-cancel", acquireOptions(milliseconds(60000), kTtl));
  Status s;
  EXPECT_EQ(request->wait(milliseconds(0), &s), nullptr);
  EXPECT_EQ(s.code, ErrorCode::kInProgress) << s.message;
  EXPECT_FALSE(request->done());
  EXPECT_FALSE(readable(request->fd()));
  ASSERT_TRUE(waitUntil([&] { return zk.children(dir).size() == 2; }));

  auto cancelledAt = Clock::now();
  std::thread canceller([&] { request->cancel(); });
  auto lease = request->wait(milliseconds(-1), &s);
  auto waited = Clock::now() - cancelledAt;
  canceller.join();
  EXPECT_EQ(lease, nullptr);
  EXPECT_EQ(s.code, ErrorCode::kCancelled) << s.message;
  EXPECT_LE(waited, kCancelBound);
  EXPECT_TRUE(request->done());
  EXPECT_TRUE(readable(request->fd()));
  while (zk.children(dir).size() != 1 && Clock::now() < cancelledAt + kCancelBound) {
    std::this_thread::sleep_for(milliseconds(2));
  }
  auto gone = Clock::now() - cancelledAt;
  EXPECT_EQ(zk.children(dir).size(), 1u) << "the cancelled request's node is still queued";
  std::printf("cancel: wait returned after %.2f ms, node gone from ZooKeeper after %.2f ms\n",
              std::chrono::duration<double, std::milli>(waited).count(),
              std::chrono::duration<double, std::milli>(gone).count());
  EXPECT_GT(held->validFor(), milliseconds(0));
}

TEST_F(AcquireAsyncTest, TheFirstWaitTakesTheGrantAndADroppedRequestReleasesIt) {
  auto holderClient = cluster.connect(0);
  auto client = cluster.connect(0);
  auto held = holderClient->acquire("async-grant", acquireOptions(milliseconds(0), kTtl));
  ASSERT_TRUE(held);
  auto first = client->acquireAsync("async-grant", acquireOptions(milliseconds(20000), kTtl));
  ASSERT_TRUE(waitUntil([&] { return holderOf(*holderClient, "async-grant").waiters == 1; }));
  ASSERT_TRUE(held->release().ok());
  Status s;
  auto lease = first->wait(milliseconds(20000), &s);
  ASSERT_TRUE(lease) << s.message;
  EXPECT_GT(lease->token(), held->token());
  EXPECT_EQ(first->wait(milliseconds(0), &s), nullptr);
  EXPECT_EQ(s.code, ErrorCode::kNotHeld) << s.message;
  first->cancel();  // done already: nothing changes
  EXPECT_GT(lease->validFor(), milliseconds(0));

  // A grant nobody waited for goes with its request.
  auto second = client->acquireAsync("async-grant", acquireOptions(milliseconds(20000), kTtl));
  ASSERT_TRUE(waitUntil([&] { return holderOf(*holderClient, "async-grant").waiters == 1; }));
  lease.reset();  // released: the second request is granted
  ASSERT_TRUE(waitUntil([&] { return second->done(); }));
  EXPECT_TRUE(holderOf(*holderClient, "async-grant").held);
  second.reset();
  EXPECT_TRUE(waitUntil([&] { return !holderOf(*holderClient, "async-grant").held; }));
}

TEST_F(AcquireAsyncTest, RefusalsComeBackAsDoneRequests) {
  auto client = cluster.connect(0);
  auto request =
      client->acquireAsync(std::string("bad\0name", 8), acquireOptions(milliseconds(0), kTtl));
  EXPECT_TRUE(request->done());
  Status s;
  EXPECT_EQ(request->wait(milliseconds(0), &s), nullptr);
  EXPECT_EQ(s.code, ErrorCode::kInvalidName) << s.message;
  request = client->acquireAsync("../bad", acquireOptions(milliseconds(0), kTtl));
  EXPECT_EQ(request->wait(milliseconds(10000), &s), nullptr);
  EXPECT_EQ(s.code, ErrorCode::kInvalidName) << s.message;
}

}  // namespace
}  // namespace fencekeeper::testing
