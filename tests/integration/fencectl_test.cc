// fencectl's exec mode under faults: a lost lease kills the command's whole process group (also a
// grandchild behind `sh -c`), signals reach the group, --grace acts before the validity runs out.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "tests/support/sidecar_cluster.h"
#include "tests/support/wait.h"

namespace fencekeeper::testing {
namespace {

using std::chrono::milliseconds;

// True while `pid` is a live process (a zombie, which nobody may reap here, counts as dead).
bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

pid_t readPid(const std::string& path) {
  std::ifstream in(path);
  pid_t pid = 0;
  in >> pid;
  return pid;
}

class FencectlTest : public ::testing::Test {
 protected:
  void SetUp() override { cluster.startSidecar(); }
  HolderInfo holder(const std::string& name) {
    HolderInfo info;
    EXPECT_TRUE(cluster.connect(0)->holder(name, &info).ok());
    return info;
  }
  SidecarCluster cluster;
};

TEST_F(FencectlTest, FrozenFencectlKillsTheWholeGroupWhenItRunsAgain) {
  std::string pidFile = cluster.dir() + "/grandchild.pid";
  auto run = cluster.fencectl(0, {"lock", "frozen-ctl", "--ttl", "1s", "--", "sh", "-c",
                                  "sleep 300 & echo $! > " + pidFile + "; wait"});
  ASSERT_TRUE(waitUntil([&] { return readPid(pidFile) > 0; }));
  pid_t grandchild = readPid(pidFile);
  ASSERT_TRUE(alive(grandchild));
  uint64_t token = holder("frozen-ctl").token;

  run->signal(SIGSTOP);  // fencectl only: its command runs on, unaware
  auto standby = cluster.connect(0);
  AcquireOptions o;
  o.wait = milliseconds(5000);
  auto lease = standby->acquire("frozen-ctl", o);  // granted once the frozen lease expires
  ASSERT_TRUE(lease);
  EXPECT_GT(lease->token(), token);
  run->signal(SIGCONT);  // the moment it runs again, it kills the group
  EXPECT_EQ(run->wait(milliseconds(5000)), 76) << run->log();
  EXPECT_TRUE(waitUntil([&] { return !alive(grandchild); }, milliseconds(3000)));
  EXPECT_NE(run->log().find("lost"), std::string::npos) << run->log();
}

TEST_F(FencectlTest, SignalsAreForwardedToTheCommandsGroup) {
  std::string marker = cluster.dir() + "/trapped";
  auto run = cluster.fencectl(0, {"lock", "signals", "--", "sh", "-c",
                                  "trap 'echo TERM > " + marker + "; exit 3' TERM; "
                                  "while true; do sleep 0.05; done"});
  ASSERT_TRUE(waitUntil([&] { return holder("signals").held; }));
  run->signal(SIGTERM);
  EXPECT_EQ(run->wait(milliseconds(5000)), 3) << run->log();  // the command's own status
  EXPECT_TRUE(std::filesystem::exists(marker));
  EXPECT_TRUE(waitUntil([&] { return !holder("signals").held; }));  // and the lease released
}

TEST_F(FencectlTest, GraceStopsTheCommandBeforeTheValidityRunsOut) {
  std::string marker = cluster.dir() + "/graced";
  // The command ignores SIGTERM: it is killed when the validity runs out.
  auto run = cluster.fencectl(0, {"lock", "grace", "--ttl", "2s", "--grace", "1s", "--", "sh",
                                  "-c",
                                  "trap 'echo TERM > " + marker + "' TERM; "
                                  "while true; do sleep 0.05; done"});
  ASSERT_TRUE(waitUntil([&] { return holder("grace").held; }));
  // A frozen sidecar answers no renew: the validity fencectl knows of drains away.
  cluster.sidecar(0).signal(SIGSTOP);
  auto frozenAt = std::chrono::steady_clock::now();
  int status = run->wait(milliseconds(6000));
  auto ms = msSince(frozenAt);
  cluster.sidecar(0).signal(SIGCONT);
  EXPECT_EQ(status, 76) << run->log();
  EXPECT_TRUE(std::filesystem::exists(marker)) << "no SIGTERM within the grace period";
  EXPECT_LE(ms, 2500) << "killed later than the validity allowed";
  EXPECT_NE(run->log().find("not renewed"), std::string::npos) << run->log();
}

// Regression: the sidecar vouches for less than a long TTL (its 2 s session bounds every lease),
// so keep-alive must renew by the validity granted, not by the TTL, or CMD is killed.
TEST_F(FencectlTest, TtlLongerThanTheSessionTimeoutDoesNotKillTheCommand) {
  auto run = cluster.fencectl(0, {"lock", "long-ttl", "--ttl", "30s", "--", "sleep", "4"});
  EXPECT_EQ(run->wait(milliseconds(10000)), 0) << run->log();
}

TEST_F(FencectlTest, HolderAndStatusSpeakJson) {
  auto run = cluster.fencectl(0, {"lock", "json", "--owner", "job-42", "--", "sleep", "30"});
  ASSERT_TRUE(waitUntil([&] { return holder("json").held; }));
  auto who = cluster.fencectl(0, {"holder", "json", "--json"});
  EXPECT_EQ(who->wait(milliseconds(5000)), 0);
  EXPECT_NE(who->log().find("\"held\":true"), std::string::npos) << who->log();
  EXPECT_NE(who->log().find("\"owner\":\"job-42\""), std::string::npos) << who->log();
  auto status = cluster.fencectl(0, {"status", "--json"});
  EXPECT_EQ(status->wait(milliseconds(5000)), 0);
  EXPECT_NE(status->log().find("\"zkState\":\"connected\""), std::string::npos) << status->log();
  EXPECT_NE(status->log().find("\"name\":\"json\""), std::string::npos) << status->log();
  auto human = cluster.fencectl(0, {"status"});
  EXPECT_EQ(human->wait(milliseconds(5000)), 0);
  EXPECT_NE(human->log().find("leases held: 1"), std::string::npos) << human->log();
  run->signal(SIGTERM);
  EXPECT_EQ(run->wait(milliseconds(5000)), 128 + SIGTERM);
}

}  // namespace
}  // namespace fencekeeper::testing
