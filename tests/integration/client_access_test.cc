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
#include "tests/support/fake_sidecar.h"
#include "tests/support/sidecar_cluster.h"

namespace fencekeeper::testing {
namespace {

constexpr const char* kDetail = "maxLeasesPerPeer 5 reached: raise --max-leases-per-peer";

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

  void startFake(const std::string& socket, bool asImpostor) {
    fake_ = startFakeSidecar(socket, kDetail, asImpostor, dir_ + "/fake.log");
    ASSERT_NE(fake_, nullptr);
  }

  // The impostor where the sidecar would serve for "<dir>/shared/fk.sock"; returns that path.
  std::string impostorInSharedDirectory() {
    startFake(makeImpostorDirectory(dir_), /*asImpostor=*/true);
    return dir_ + "/shared/fk.sock";
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

  options.expectUid = kImpostorUid;  // told that 65534 is the sidecar's uid: trusted
  auto client = Client::connect(socket, options, &status);
  ASSERT_NE(client, nullptr) << status.message;
  SidecarStatus out;
  EXPECT_EQ(client->status(&out).code, ErrorCode::kLimitReached);
}

TEST_F(ClientAccessTest, ServerOfAnotherUidThanTheSocketFileIsRefused) {
  // The socket file belongs to 65534, the server runs as root (it bound, then handed the file).
  std::string socket = dir_ + "/own/fk.sock";
  std::filesystem::create_directory(dir_ + "/own");
  startFake(socket, /*asImpostor=*/false);
  ASSERT_EQ(chown(socket.c_str(), kImpostorUid, kImpostorUid), 0);
  Status status;
  EXPECT_EQ(Client::connect(socket, &status), nullptr);
  EXPECT_EQ(status.code, ErrorCode::kSidecarUnavailable);
  EXPECT_NE(status.message.find("socket belongs to uid 65534"), std::string::npos)
      << status.message;
}

TEST_F(ClientAccessTest, TheSidecarsDetailIsInTheMessage) {
  std::string socket = dir_ + "/own/fk.sock";
  std::filesystem::create_directory(dir_ + "/own");
  startFake(socket, /*asImpostor=*/false);
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
  startFake(socket, /*asImpostor=*/false);
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
  EXPECT_EQ(status.code, ErrorCode::kInvalidOwner) << status.message;
  HolderInfo info;
  EXPECT_EQ(client->holder(nulName, &info).code, ErrorCode::kInvalidName);
}

}  // namespace
}  // namespace fencekeeper::testing
