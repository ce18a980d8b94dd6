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

#include "tests/support/fake_sidecar.h"
#include "tests/support/sidecar_cluster.h"
#include "tests/support/wait.h"

namespace fencekeeper::testing {
namespace {

using std::chrono::milliseconds;

uid_t ownerOf(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 ? st.st_uid : static_cast<uid_t>(-1);
}

// Runs the shell `script` as kImpostorUid; its exit status.
int asImpostor(SidecarCluster& cluster, const std::string& script) {
  std::string uid = std::to_string(kImpostorUid);
  ChildProcess sh(
      {"setpriv", "--reuid=" + uid, "--regid=" + uid, "--clear-groups", "sh", "-c", script},
      cluster.newLogPath("impostor"));
  return sh.wait(milliseconds(10'000));
}

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

  // Sidecar i grants a lease to a new client.
  void expectALease(size_t i) {
    auto client = cluster.connect(i);
    Status status;
    auto lease =
        client->acquire("jobs", acquireOptions(milliseconds(5'000), milliseconds(10'000)), &status);
    EXPECT_TRUE(lease) << status.message;
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

// Issue 24: in a directory anyone may write that has no sticky bit (an emptyDir: 0777, 2777 with
// an fsGroup), another uid renamed NAME.d away and made its own: the sidecar was unreachable until
// restarted, and the restart refused that directory. The sidecar now renames its directory back
// within a second or two, and the impostor's ends up beside it.
TEST_F(SharedSocketDirectory, ADirectoryAnotherUidRenamesAwayIsPutBackAndClientsGetLeases) {
  ASSERT_EQ(chmod(cluster.dir().c_str(), 0711), 0) << "the impostor reaches the directory";
  for (mode_t mode : {mode_t{0777}, mode_t{02777}}) {
    SCOPED_TRACE(mode);
    std::string dir = makeDirectory(cluster.dir() + "/r" + std::to_string(mode), mode);
    size_t i = startWithDefaults(dir + "/fk.sock");
    std::string own = dir + "/fk.sock.d";
    ASSERT_EQ(asImpostor(cluster, "mv " + own + " " + dir + "/away && mkdir " + own), 0);
    ASSERT_EQ(ownerOf(own), kImpostorUid) << "the rename took";
    EXPECT_TRUE(waitUntil([&] { return ownerOf(own) == geteuid(); }, milliseconds(5'000)))
        << "the sidecar's directory is back under its name";
    EXPECT_EQ(ownerOf(dir + "/away"), kImpostorUid) << "and the impostor's where it put ours";
    EXPECT_NE(cluster.sidecar(i).log().find("socket directory " + own +
                                            " had been renamed to away and uid 65534's put in "
                                            "its place (now at away): renamed it back"),
              std::string::npos)
        << cluster.sidecar(i).log();
    expectServedWithDefaults(i, own + "/fk.sock.status");
    expectALease(i);
  }
}

// A sidecar killed without cleaning up leaves its own directory and stale socket: the next start
// uses them. One whose directory another uid then renamed away and replaced (with nothing serving
// in it) used to refuse to start until someone removed it by hand: now it moves it aside.
TEST_F(SharedSocketDirectory, ARestartOverALeftoverDirectoryStarts) {
  ASSERT_EQ(chmod(cluster.dir().c_str(), 0711), 0) << "the impostor reaches the directory";
  std::string dir = makeDirectory(cluster.dir() + "/left", 0777);
  size_t i = startWithDefaults(dir + "/fk.sock");
  std::string own = dir + "/fk.sock.d";
  cluster.restartSidecar(i);  // SIGKILL: its directory, sockets and table stay behind
  expectServedWithDefaults(i, own + "/fk.sock.status");

  cluster.sidecar(i).freeze();  // its guard would put the directory back at once
  ASSERT_EQ(asImpostor(cluster, "mv " + own + " " + dir + "/away && mkdir " + own), 0);
  cluster.restartSidecar(i);
  EXPECT_EQ(ownerOf(own), geteuid());
  std::string aside = dir + "/fk.sock.d.uid65534-";
  bool movedAside = false;
  for (auto& e : std::filesystem::directory_iterator(dir)) {
    movedAside |= e.path().string().rfind(aside, 0) == 0 && ownerOf(e.path()) == kImpostorUid;
  }
  EXPECT_TRUE(movedAside) << "the impostor's directory is kept, renamed";
  EXPECT_NE(cluster.sidecar(i).log().find("was uid 65534's and nothing served in it: moved it to"),
            std::string::npos)
      << cluster.sidecar(i).log();
  expectServedWithDefaults(i, own + "/fk.sock.status");
  expectALease(i);
}

}  // namespace
}  // namespace fencekeeper::testing
