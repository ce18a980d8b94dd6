// A renew or token answer that says "lost" carries the sidecar's reason: the client reports the
// same loss whether that answer or the LeaseWatcher.lost call runs first (docs/protocol.md, "Order
// against a renew in flight"). Against fk-fake-sidecar --grant-then-lose, whose answers overtake a
// lost call it never makes.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "fencekeeper/client.h"
#include "tests/support/child_process.h"
#include "tests/support/fake_sidecar.h"
#include "tests/support/loss_recorder.h"
#include "tests/support/wait.h"

namespace fencekeeper::testing {
namespace {

class LossAnswerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/fk-loss-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    socket_ = dir_ + "/fk.sock";
    fake_ = startFakeSidecar(socket_, "unused", /*asImpostor=*/false, dir_ + "/fake.log",
                             /*grantThenLose=*/true);
    ASSERT_NE(fake_, nullptr);
    Status status;
    client_ = Client::connect(socket_, &status);
    ASSERT_NE(client_, nullptr) << status.message;
  }
  void TearDown() override {
    client_.reset();
    fake_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::unique_ptr<Lease> acquire(bool keepAlive) {
    AcquireOptions o;
    o.keepAlive = keepAlive;
    o.onLost = loss_.callback();
    Status status;
    auto lease = client_->acquire("jobs", o, &status);
    EXPECT_NE(lease, nullptr) << status.message;
    return lease;
  }

  std::string dir_;
  std::string socket_;
  std::unique_ptr<ChildProcess> fake_;
  std::unique_ptr<Client> client_;
  LossRecorder loss_;
};

TEST_F(LossAnswerTest, KeepAliveReportsTheReasonTheRenewAnswerCarries) {
  auto lease = acquire(/*keepAlive=*/true);
  ASSERT_NE(lease, nullptr);
  ASSERT_TRUE(waitUntil([&] { return loss_.lost.load(); }));
  EXPECT_EQ(loss_.reason.load(), static_cast<int>(LossReason::kSessionUncertain));
}

TEST_F(LossAnswerTest, AnExplicitRenewOrCheckReportsTheReasonTheAnswerCarries) {
  auto lease = acquire(/*keepAlive=*/false);
  ASSERT_NE(lease, nullptr);
  Status status = lease->renew();
  EXPECT_EQ(status.code, ErrorCode::kLost);
  ASSERT_TRUE(loss_.lost.load());
  EXPECT_EQ(loss_.reason.load(), static_cast<int>(LossReason::kSessionUncertain));

  LossRecorder checked;
  AcquireOptions o;
  o.keepAlive = false;
  o.onLost = checked.callback();
  auto second = client_->acquire("jobs", o, &status);
  ASSERT_NE(second, nullptr) << status.message;
  EXPECT_EQ(second->check().code, ErrorCode::kLost);
  ASSERT_TRUE(checked.lost.load());
  EXPECT_EQ(checked.reason.load(), static_cast<int>(LossReason::kSessionUncertain));
}

}  // namespace
}  // namespace fencekeeper::testing
