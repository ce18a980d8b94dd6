// The C++ client's side of "who may connect" (docs/security.md): it checks who serves the socket
// before sending anything, shows the sidecar's detail, and refuses text the wire would cut at a
// NUL. Against fk-fake-sidecar, whose every answer is limitReached with a known detail.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "fencekeeper/client.h"
#include "tests/support/child_process.h"
#include "tests/support/sidecar_cluster.h"
#include "tests/support/wait.h"

namespace fencekeeper::testing {
namespace {

constexpr const char* kDetail = "maxLeasesPerPeer 5 reached: raise --max-leases-per-peer";
constexpr uid_t kOtherUid = 65534;

class ClientAccessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/fk-acc-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    chmod(dir_.c_str(), 0755);  // the other uid must reach the shared directory inside
  }
  void TearDown() override {
    fake_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Starts the fake sidecar at `socket`, as root or (`asOther`) as kOtherUid.
  void startFake(const std::string& socket, bool asOther) {
    std::vector<std::string> argv{fakeSidecarBinary(), socket, kDetail};
    if (asOther) {
      argv.insert(argv.begin(), {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"});
    }
    fake_ = std::make_unique<ChildProcess>(argv, dir_ + "/fake.log");
    ASSERT_TRUE(waitUntil([&] { return fake_->log().find("ready") != std::string::npos; }))
        << fake_->log();
  }

  // A directory that everyone may write (an emptyDir), holding the impostor's socket directory,
  // as the sidecar would have made it: "<shared>/fk.sock.d/fk.sock". Returns the configured path.
  std::string impostorInSharedDirectory() {
    std::string shared = dir_ + "/shared";
    std::filesystem::create_directory(shared);
    chmod(shared.c_str(), 0777);
    std::filesystem::create_directory(shared + "/fk.sock.d");
    chown((shared + "/fk.sock.d").c_str(), kOtherUid, kOtherUid);
    startFake(shared + "/fk.sock.d/fk.sock", /*asOther=*/true);
    return shared + "/fk.sock";
  }

  std::string dir_;
  std::unique_ptr<ChildProcess> fake_;
};

TEST_F(ClientAccessTest, ImpostorUnderAnotherUidIsRefusedNamingBothUids) {
  std::string socket = impostorInSharedDirectory();
  Status status;
  EXPECT_EQ(Client::connect(socket, &status), nullptr);
  EXPECT_EQ(status.code, ErrorCode::kSidecarUnavailable);
  EXPECT_NE(status.message.find("uid 65534"), std::string::npos) << status.message;
  EXPECT_NE(status.message.find("uid 0"), std::string::npos) << status.message;
}

TEST_F(ClientAccessTest, ExpectUidDecidesWhoIsTrusted) {
  std::string socket = impostorInSharedDirectory();
  ConnectOptions options;
  options.expectUid = 0;
  Status status;
  EXPECT_EQ(Client::connect(socket, options, &status), nullptr);
  EXPECT_EQ(status.code, ErrorCode::kSidecarUnavailable);
  EXPECT_NE(status.message.find("runs as uid 65534, expected uid 0"), std::string::npos)
      << status.message;

  options.expectUid = kOtherUid;  // told that 65534 is the sidecar's uid: trusted
  auto client = Client::connect(socket, options, &status);
  ASSERT_NE(client, nullptr) << status.message;
  SidecarStatus out;
  EXPECT_EQ(client->status(&out).code, ErrorCode::kLimitReached);
}

TEST_F(ClientAccessTest, ServerOfAnotherUidThanTheSocketFileIsRefused) {
  // The socket file belongs to 65534, the server runs as root (it bound, then handed the file).
  std::string socket = dir_ + "/own/fk.sock";
  std::filesystem::create_directory(dir_ + "/own");
  startFake(socket, /*asOther=*/false);
  ASSERT_EQ(chown(socket.c_str(), kOtherUid, kOtherUid), 0);
  Status status;
  EXPECT_EQ(Client::connect(socket, &status), nullptr);
  EXPECT_EQ(status.code, ErrorCode::kSidecarUnavailable);
  EXPECT_NE(status.message.find("socket belongs to uid 65534"), std::string::npos)
      << status.message;
}

TEST_F(ClientAccessTest, TheSidecarsDetailIsInTheMessage) {
  std::string socket = dir_ + "/own/fk.sock";
  std::filesystem::create_directory(dir_ + "/own");
  startFake(socket, /*asOther=*/false);
  Status status;
  auto client = Client::connect(socket, &status);
  ASSERT_NE(client, nullptr) << status.message;
  std::string expected = std::string("limit reached: ") + kDetail;

  EXPECT_EQ(client->acquire("jobs", AcquireOptions{}, &status), nullptr);
  EXPECT_EQ(status.code, ErrorCode::kLimitReached);
  EXPECT_EQ(status.message, expected);
  HolderInfo info;
  status = client->holder("jobs", &info);
  EXPECT_EQ(status.code, ErrorCode::kLimitReached);
  EXPECT_EQ(status.message, expected);
  SidecarStatus out;
  status = client->status(&out);
  EXPECT_EQ(status.code, ErrorCode::kLimitReached);
  EXPECT_EQ(status.message, expected);
}

TEST_F(ClientAccessTest, NulInANameOrOwnerLabelIsRefusedBeforeSending) {
  std::string socket = dir_ + "/own/fk.sock";
  std::filesystem::create_directory(dir_ + "/own");
  startFake(socket, /*asOther=*/false);
  auto client = Client::connect(socket);
  ASSERT_NE(client, nullptr);
  const std::string nulName("jobs\0-tenant-b", 14);
  Status status;
  // Sent, the fake would answer limitReached: a refusal here was not sent.
  EXPECT_EQ(client->acquire(nulName, AcquireOptions{}, &status), nullptr);
  EXPECT_EQ(status.code, ErrorCode::kInvalidName) << status.message;
  AcquireOptions labelled;
  labelled.ownerLabel = std::string("me\0you", 6);
  EXPECT_EQ(client->acquire("jobs", labelled, &status), nullptr);
  EXPECT_EQ(status.code, ErrorCode::kInvalidArgument) << status.message;
  HolderInfo info;
  EXPECT_EQ(client->holder(nulName, &info).code, ErrorCode::kInvalidName);
}

}  // namespace
}  // namespace fencekeeper::testing
