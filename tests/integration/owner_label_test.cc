// Owner labels (issue 24 item 7): the sidecar refuses a label that is not UTF-8 or holds a control
// character with invalidOwner, naming the byte and the rule; a label written into ZooKeeper by
// another client reaches holder, /status and fencectl repaired (U+FFFD), never as raw bytes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fencekeeper/client.h"
#include "tests/support/http_get.h"
#include "tests/support/sidecar_cluster.h"
#include "tests/support/strict_json.h"
#include "tests/support/zk_inspector.h"

namespace fencekeeper::testing {
namespace {

using std::chrono::milliseconds;

// Bytes a terminal acts on: C0 controls but the line feed, DEL, C1 controls (as UTF-8), and the
// invalid byte the garbage holds.
bool hasTerminalControl(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    bool c1 = c == 0xc2 && i + 1 < text.size() &&
              (static_cast<unsigned char>(text[i + 1]) & 0xe0) == 0x80;
    if ((c < 0x20 && c != '\n') || c == 0x7f || c == 0xff || c1) return true;
  }
  return false;
}

std::string run(SidecarCluster& cluster, std::vector<std::string> args, int* status) {
  auto child = cluster.fencectl(0, std::move(args));
  *status = child->wait(milliseconds(20'000));
  return child->log();
}

TEST(OwnerLabel, ALabelThatIsNotUtf8OrHoldsAControlCharacterIsInvalidOwner) {
  SidecarCluster cluster;
  cluster.startSidecar();
  auto client = cluster.connect(0);
  struct Case {
    std::string label, says;
  };
  for (const Case& c : {Case{"\xff", "byte 0 (\\xff) is not valid UTF-8"},
                        Case{"ok\xc0\xaf", "byte 2 (\\xc0) is not valid UTF-8"},    // overlong '/'
                        Case{"\xed\xa0\x80", "byte 0 (\\xed) is not valid UTF-8"},  // surrogate
                        Case{"\xf4\x90\x80\x80", "byte 0 (\\xf4)"},  // above U+10FFFF
                        Case{"cut\xe2\x82", "byte 3 (\\xe2)"},
                        Case{"red\x1b[31m", "byte 3 is the control character U+001B"},
                        Case{"two\nlines", "byte 3 is the control character U+000A"},
                        Case{"del\x7f", "byte 3 is the control character U+007F"},
                        Case{"c1\xc2\x9b", "byte 2 is the control character U+009B"},
                        Case{std::string(257, 'x'), "257 bytes, above the maximum 256"}}) {
    AcquireOptions options = acquireOptions(milliseconds(0), milliseconds(20'000));
    options.ownerLabel = c.label;
    Status status;
    EXPECT_EQ(client->acquire("labelled", options, &status), nullptr) << c.says;
    EXPECT_EQ(status.code, ErrorCode::kInvalidOwner) << status.message;
    EXPECT_EQ(status.message.rfind("invalid owner: ", 0), 0u) << status.message;
    EXPECT_NE(status.message.find(c.says), std::string::npos) << status.message;
  }
  AcquireOptions fine = acquireOptions(milliseconds(0), milliseconds(20'000));
  fine.ownerLabel = "caf\xc3\xa9 \xf0\x9f\x94\x92 worker-1";  // any UTF-8 without controls
  Status status;
  auto lease = client->acquire("labelled", fine, &status);
  ASSERT_TRUE(lease) << status.message;
  EXPECT_EQ(holderOf(*client, "labelled").ownerLabel, fine.ownerLabel);

  // fencectl: a usage error (64), saying so.
  int exit = 0;
  std::string out = run(cluster, {"lock", "other", "--owner", "red\x1b[31m", "--", "true"}, &exit);
  EXPECT_EQ(exit, 64) << out;
  EXPECT_NE(out.find("invalid owner: "), std::string::npos) << out;
}

// What another ZooKeeper client (kazoo, a future version) wrote as node data is not checked by
// anyone: holder, /status and fencectl show it repaired.
TEST(OwnerLabel, AForeignHoldersGarbageLabelComesOutRepaired) {
  SidecarCluster cluster;
  cluster.startSidecar();
  ZkInspector zk(cluster.zk().connectString());
  for (auto path : {"/fencekeeper", "/fencekeeper/locks", "/fencekeeper/locks/foreign"}) {
    ASSERT_TRUE(zk.create(path) || zk.exists(path));
  }
  const std::string garbage = "k\xff\x1b]0;pwned\x07\xc2\x9b\xed\xa0\x80!";
  const std::string repaired =
      "k\xef\xbf\xbd\xef\xbf\xbd]0;pwned\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
      "\xef\xbf\xbd!";  // each invalid subpart and each control: one U+FFFD
  ASSERT_TRUE(zk.createEphemeral("/fencekeeper/locks/foreign/kazoo__lock__0000000000", garbage));

  auto client = cluster.connect(0);
  HolderInfo info = holderOf(*client, "foreign");
  EXPECT_TRUE(info.held);
  EXPECT_FALSE(info.foreign);
  EXPECT_EQ(info.ownerLabel, repaired);

  int exit = 0;
  std::string json = run(cluster, {"holder", "foreign", "--json"}, &exit);
  ASSERT_EQ(exit, 0) << json;
  std::string error;
  auto parsed = parseStrictJson(json.substr(0, json.find_last_not_of('\n') + 1), &error);
  ASSERT_TRUE(parsed) << error << " in " << json;
  ASSERT_NE(parsed->find("owner"), nullptr);
  EXPECT_EQ(parsed->find("owner")->text, repaired);

  std::string text = run(cluster, {"holder", "foreign"}, &exit);
  ASSERT_EQ(exit, 0) << text;
  EXPECT_FALSE(hasTerminalControl(text)) << text;
  EXPECT_NE(text.find(repaired), std::string::npos) << text;

  // The status documents, with the foreign holder in the lock's queue, stay strict JSON.
  auto status = httpGet(cluster.statusSocket(0), "/status");
  ASSERT_TRUE(status);
  EXPECT_TRUE(parseStrictJson(status->body, &error)) << error << " in " << status->body;
  std::string statusJson = run(cluster, {"status", "--json"}, &exit);
  ASSERT_EQ(exit, 0) << statusJson;
  EXPECT_TRUE(parseStrictJson(statusJson.substr(0, statusJson.find_last_not_of('\n') + 1), &error))
      << error << " in " << statusJson;
}

}  // namespace
}  // namespace fencekeeper::testing
