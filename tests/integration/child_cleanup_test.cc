// Nothing a test started outlives it: a test killed outright (here a harness standing in for
// it, SIGKILLed) takes its ZooKeeper, sidecars and stores with it (PR_SET_PDEATHSIG).
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "sidecar/devzk/proc_state.h"
#include "tests/support/child_process.h"
#include "tests/support/wait.h"

namespace fencekeeper::testing {
namespace {

using std::chrono::milliseconds;

std::vector<pid_t> readPids(const std::string& path) {
  std::ifstream in(path);
  std::vector<pid_t> pids;
  for (pid_t pid; in >> pid;) pids.push_back(pid);
  return pids;
}

TEST(ChildCleanup, KilledTestTakesItsZooKeeperSidecarAndStoreWithIt) {
  char tmpl[] = "/tmp/fk-cc-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  std::string dir = tmpl;
  ChildProcess harness({CLUSTER_HARNESS_BIN, dir}, dir + "/harness.log");
  std::vector<pid_t> pids;
  ASSERT_TRUE(
      waitUntil([&] { return (pids = readPids(dir + "/pids")).size() == 3; }, milliseconds(60000)))
      << harness.log();
  for (pid_t pid : pids) EXPECT_FALSE(devzk::processGone(pid)) << pid;

  harness.signal(SIGKILL);
  EXPECT_EQ(harness.wait(milliseconds(5000)), 128 + SIGKILL);
  auto killedAt = std::chrono::steady_clock::now();
  // Gone or a zombie: the reaper (init or a subreaper) is not ours to wait for.
  for (pid_t pid : pids) {
    EXPECT_TRUE(waitUntil([&] { return devzk::processGone(pid); }, milliseconds(2000)))
        << "pid " << pid << " outlived its test";
  }
  std::printf("children of a SIGKILLed test gone %lld ms after it\n", msSince(killedAt));
  for (pid_t pid : pids) ::kill(pid, SIGKILL);  // whatever a failure left behind
  std::string clusterDir;
  std::ifstream(dir + "/cluster") >> clusterDir;
  std::error_code ec;
  if (!HasFailure() && !clusterDir.empty()) std::filesystem::remove_all(clusterDir, ec);
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace fencekeeper::testing
