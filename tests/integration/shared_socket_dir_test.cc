// Issue 23: sidecars whose lease sockets share a directory. The default status socket was
// status.sock in that directory, so the second sidecar failed to start, and it failed after it had
// bound its lease socket, which it left behind for clients to get "Connection refused" from. Now
// the default is named after the lease socket ("<bound lease socket>.status"), fencectl finds it
// as clients find the lease socket (in NAME.d/ where the directory is writable by others), and a
// failed start removes what it made and logs one line naming what failed.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "tests/support/sidecar_cluster.h"
#include "tests/support/wait.h"

namespace fencekeeper::testing {
namespace {

using std::chrono::milliseconds;

bool isSocket(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

// Every path under `dir`, recursively: what a failed start must leave as it found it.
std::set<std::string> entriesUnder(const std::string& dir) {
  std::set<std::string> out;
  for (auto& e : std::filesystem::recursive_directory_iterator(dir)) out.insert(e.path().string());
  return out;
}

std::string makeDirectory(const std::string& path, mode_t mode) {
  EXPECT_EQ(mkdir(path.c_str(), 0700), 0) << path;
  EXPECT_EQ(chmod(path.c_str(), mode), 0) << path;  // the umask notwithstanding
  return path;
}

class SharedSocketDirectory : public ::testing::Test {
 protected:
  // The test's fencectl runs must find the status socket by the lease socket alone.
  void SetUp() override { unsetenv("FENCEKEEPER_STATUS_SOCKET"); }

  size_t startWithDefaults(const std::string& socket) {
    SidecarOptions options;
    options.socket = socket;
    options.defaultStatusSocket = true;
    return cluster.startSidecar(options);
  }

  // `fencectl --socket <sidecar i's> ARGS`: its exit status and output (stdout and stderr).
  std::pair<int, std::string> fencectl(size_t i, std::vector<std::string> args) {
    auto run = cluster.fencectl(i, std::move(args));
    int code = run->wait(milliseconds(15'000));
    return {code, run->log()};
  }

  // Sidecar i answers `fencectl health` and `fencectl get /metrics`, neither naming the status
  // socket, from the status socket at `expected`.
  void expectServedWithDefaults(size_t i, const std::string& expected) {
    SCOPED_TRACE(cluster.socket(i));
    EXPECT_TRUE(isSocket(expected)) << expected;
    EXPECT_NE(cluster.sidecar(i).log().find("status socket=" + expected + " "), std::string::npos)
        << "the sidecar names where it serves it";
    auto [code, out] = fencectl(i, {"health"});
    EXPECT_EQ(code, 0) << out;
    EXPECT_EQ(out, "ok\n");
    std::tie(code, out) = fencectl(i, {"get", "/metrics"});
    EXPECT_EQ(code, 0) << out;
    EXPECT_NE(out.find("\nfencekeeper_build_info{"), std::string::npos) << out;
  }

  SidecarCluster cluster;
};

TEST_F(SharedSocketDirectory, TwoSidecarsServeWithDefaultStatusSocketsInAPrivateDirectory) {
  std::string dir = makeDirectory(cluster.dir() + "/run", 0750);
  size_t a = startWithDefaults(dir + "/a.sock");
  size_t b = startWithDefaults(dir + "/b.sock");
  EXPECT_TRUE(cluster.sidecar(a).running());
  expectServedWithDefaults(a, dir + "/a.sock.status");
  expectServedWithDefaults(b, dir + "/b.sock.status");
  EXPECT_FALSE(std::filesystem::exists(dir + "/status.sock"));
}

// A Kubernetes emptyDir (0777, or 2777 with an fsGroup) and /tmp (1777): each sidecar binds in a
// subdirectory of its own, and its status socket goes there too.
TEST_F(SharedSocketDirectory, TwoSidecarsServeWithDefaultStatusSocketsInWorldWritableDirectories) {
  for (mode_t mode : {mode_t{01777}, mode_t{02777}}) {
    SCOPED_TRACE(mode);
    std::string dir = makeDirectory(cluster.dir() + "/w" + std::to_string(mode), mode);
    size_t a = startWithDefaults(dir + "/a.sock");
    size_t b = startWithDefaults(dir + "/b.sock");
    expectServedWithDefaults(a, dir + "/a.sock.d/a.sock.status");
    expectServedWithDefaults(b, dir + "/b.sock.d/b.sock.status");
    EXPECT_FALSE(std::filesystem::exists(dir + "/a.sock.status"));
    EXPECT_FALSE(std::filesystem::exists(dir + "/a.sock.d/status.sock"));
  }
}

// A start that fails (its status socket is another sidecar's; its lease table cannot be opened)
// exits non-zero, leaves its directory as it found it, and logs one line naming what failed; the
// live sidecar keeps serving on both its sockets.
TEST_F(SharedSocketDirectory, AFailedStartLeavesNoFileBehindAndTheLiveSidecarKeepsServing) {
  for (mode_t mode : {mode_t{0750}, mode_t{01777}}) {
    SCOPED_TRACE(mode);
    std::string dir = makeDirectory(cluster.dir() + "/f" + std::to_string(mode), mode);
    size_t a = startWithDefaults(dir + "/a.sock");
    std::string aStatus = mode == 0750 ? dir + "/a.sock.status" : dir + "/a.sock.d/a.sock.status";
    std::string notATable = makeDirectory(dir + "/not-a-table", 0750);
    struct Case {
      std::vector<std::string> args;
      std::string failed;  // what the one line names
    };
    for (const Case& c :
         {Case{{"--status-socket", aStatus},
               "status socket (--status-socket " + aStatus + "): another sidecar"},
          Case{{"--lease-table", notATable}, "lease table: lease table " + notATable + ": "}}) {
      SCOPED_TRACE(c.failed);
      auto before = entriesUnder(dir);
      std::vector<std::string> argv{fencekeeperBinary(), "--zk", cluster.zk().connectString(),
                                    "--socket", dir + "/c.sock"};
      argv.insert(argv.end(), c.args.begin(), c.args.end());
      ChildProcess failing(argv, cluster.newLogPath("failed-start"));
      int status = failing.wait(milliseconds(15'000));
      EXPECT_NE(status, 0);
      EXPECT_NE(status, -1) << "still running";
      EXPECT_EQ(entriesUnder(dir), before) << "what the failed start made is gone";
      std::string log = failing.log();
      std::istringstream lines(log);
      std::string line;
      int named = 0;
      while (std::getline(lines, line)) named += line.find("cannot start") != std::string::npos;
      EXPECT_EQ(named, 1) << log;
      EXPECT_NE(log.find("critical fencekeeper: cannot start: " + c.failed), std::string::npos)
          << log;
    }
    EXPECT_TRUE(cluster.sidecar(a).running());
    EXPECT_TRUE(cluster.waitReady(a)) << "the lease socket";
    expectServedWithDefaults(a, aStatus);
  }
}

}  // namespace
}  // namespace fencekeeper::testing
