// The daemon's flags as --check-config reports them: the status socket's default and `none`, the
// shutdown bound, and the new flags' validation.
#include "sidecar/config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace fencekeeper {
namespace {

ParsedFlags parse(std::vector<std::string> args) {
  unsetenv("FENCEKEEPER_ZK");
  unsetenv("FENCEKEEPER_SOCKET");
  unsetenv("FENCEKEEPER_ROOT");
  args.insert(args.begin(), "fencekeeper");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return parseFlags(static_cast<int>(args.size()), argv.data());
}

// describeConfig's lines as a map; every line must be key=value.
std::map<std::string, std::string> described(const SidecarConfig& config) {
  std::map<std::string, std::string> out;
  std::istringstream lines(describeConfig(config));
  for (std::string line; std::getline(lines, line);) {
    auto eq = line.find('=');
    EXPECT_NE(eq, std::string::npos) << line;
    EXPECT_TRUE(out.emplace(line.substr(0, eq), line.substr(eq + 1)).second) << line;
  }
  return out;
}

// Named after the lease socket, as the lease table is: sidecars whose lease sockets share a
// directory each get one of their own (issue 23).
TEST(CheckConfig, StatusSocketDefaultsToTheLeaseSocketsPathDotStatus) {
  auto parsed = parse({"--zk", "zk:2181", "--socket", "/run/fk/lease.sock", "--check-config"});
  ASSERT_TRUE(parsed.config) << parsed.message;
  EXPECT_TRUE(parsed.config->checkConfig);
  auto keys = described(*parsed.config);
  EXPECT_EQ(keys["socket"], "/run/fk/lease.sock");
  EXPECT_EQ(keys["status-socket"], "/run/fk/lease.sock.status");
  EXPECT_EQ(keys["status-listen"], "");
  EXPECT_EQ(keys["log-format"], "text");
  EXPECT_EQ(keys["metrics-lock-labels"], "false");

  parsed = parse({"--zk", "zk:2181", "--socket", "lease.sock"});
  ASSERT_TRUE(parsed.config);
  EXPECT_EQ(described(*parsed.config)["status-socket"], "lease.sock.status");
}

// As in a Kubernetes emptyDir: the lease socket goes to a subdirectory of its own, and the
// default status socket with it.
TEST(CheckConfig, StatusSocketFollowsTheLeaseSocketIntoItsSubdirectory) {
  char dir[] = "/tmp/fk-config-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  ASSERT_EQ(chmod(dir, 0777), 0);
  std::string socket = std::string(dir) + "/lease.sock";
  auto parsed = parse({"--zk", "zk:2181", "--socket", socket});
  ASSERT_TRUE(parsed.config);
  auto keys = described(*parsed.config);
  EXPECT_EQ(keys["socket"], socket);
  EXPECT_EQ(keys["status-socket"], std::string(dir) + "/lease.sock.d/lease.sock.status");
  EXPECT_EQ(rmdir(dir), 0);  // and --check-config created nothing there
}

TEST(CheckConfig, StatusSocketNoneDisablesAndAPathIsKept) {
  auto parsed = parse({"--zk", "zk:2181", "--status-socket", "none"});
  ASSERT_TRUE(parsed.config);
  EXPECT_EQ(described(*parsed.config)["status-socket"], "none");

  parsed = parse({"--zk", "zk:2181", "--status-socket", "/var/run/s.sock", "--status-listen",
                  "0.0.0.0:9464", "--metrics-lock-labels", "--log-format", "json"});
  ASSERT_TRUE(parsed.config) << parsed.message;
  auto keys = described(*parsed.config);
  EXPECT_EQ(keys["status-socket"], "/var/run/s.sock");
  EXPECT_EQ(keys["status-listen"], "0.0.0.0:9464");
  EXPECT_EQ(keys["metrics-lock-labels"], "true");
  EXPECT_EQ(keys["log-format"], "json");
}

// The lease table goes beside the socket the sidecar binds (into its subdirectory with it).
TEST(CheckConfig, LeaseTableDefaultsBesideTheBoundSocketAndNoneDisables) {
  auto parsed = parse({"--zk", "zk:2181", "--socket", "/run/fk/lease.sock"});
  ASSERT_TRUE(parsed.config);
  EXPECT_EQ(described(*parsed.config)["lease-table"], "/run/fk/lease.sock.leases");

  char dir[] = "/tmp/fk-config-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  ASSERT_EQ(chmod(dir, 0777), 0);
  parsed = parse({"--zk", "zk:2181", "--socket", std::string(dir) + "/lease.sock"});
  ASSERT_TRUE(parsed.config);
  EXPECT_EQ(described(*parsed.config)["lease-table"],
            std::string(dir) + "/lease.sock.d/lease.sock.leases");
  EXPECT_EQ(rmdir(dir), 0);

  parsed = parse({"--zk", "zk:2181", "--lease-table", "none"});
  ASSERT_TRUE(parsed.config);
  EXPECT_EQ(described(*parsed.config)["lease-table"], "none");
  parsed = parse({"--zk", "zk:2181", "--lease-table", "/run/fk/t"});
  ASSERT_TRUE(parsed.config);
  EXPECT_EQ(described(*parsed.config)["lease-table"], "/run/fk/t");
}

TEST(CheckConfig, ShutdownWaitIsTheSessionTimeoutPlusFiveSeconds) {
  auto parsed = parse({"--zk", "zk:2181", "--session-timeout", "12s"});
  ASSERT_TRUE(parsed.config);
  EXPECT_EQ(shutdownWait(*parsed.config), Millis(17'000));
  auto keys = described(*parsed.config);
  EXPECT_EQ(keys["session-timeout-ms"], "12000");
  EXPECT_EQ(keys["shutdown-wait-ms"], "17000");
}

TEST(CheckConfig, ReportsEveryFlagsValue) {
  auto parsed = parse({"--dev", "--root", "/apps/fk", "--default-ttl", "20s", "--max-ttl", "5m",
                       "--allow-uid", "65533,65534", "--allow-gid", "7", "--max-leases", "0",
                       "--persistent-parents", "--zk-auth-file", "/etc/fk/auth",
                       "--max-watches-per-peer", "50", "--max-holder-reads-per-peer", "20"});
  ASSERT_TRUE(parsed.config) << parsed.message;
  auto keys = described(*parsed.config);
  EXPECT_EQ(keys["dev"], "true");
  EXPECT_EQ(keys["root"], "/apps/fk");
  EXPECT_EQ(keys["default-ttl-ms"], "20000");
  EXPECT_EQ(keys["max-ttl-ms"], "300000");
  EXPECT_EQ(keys["allow-uid"], "65533,65534");
  EXPECT_EQ(keys["allow-gid"], "7");
  EXPECT_EQ(keys["max-leases"], "0");
  EXPECT_EQ(keys["persistent-parents"], "true");
  EXPECT_EQ(keys["zk-auth-file"], "/etc/fk/auth");
  EXPECT_EQ(keys["max-watches-per-peer"], "50");
  EXPECT_EQ(keys["max-watches"], "10000");
  EXPECT_EQ(keys["max-holder-reads-per-peer"], "20");
  EXPECT_EQ(keys["max-calls-per-peer"], "1024");
  EXPECT_EQ(keys.size(), 36u);  // a new flag gets a line here too
}

// --check-config validates exactly as a start does: a bad flag is refused before it is read.
TEST(CheckConfig, BadFlagsAreRefusedWithUsageExit) {
  const std::vector<std::vector<std::string>> bad = {
      {"--check-config"},  // neither --zk nor --dev
      {"--zk", "zk:2181", "--check-config", "--session-timeout", "soon"},
      {"--zk", "zk:2181", "--status-listen", "9464"},
      {"--zk", "zk:2181", "--status-listen", ":9464"},
      {"--zk", "zk:2181", "--status-listen", "127.0.0.1:65536"},
      {"--zk", "zk:2181", "--status-listen", "127.0.0.1:0"},
      {"--zk", "zk:2181", "--status-listen", "::1:9464"},
      {"--zk", "zk:2181", "--status-listen", "[]:9464"},
      {"--zk", "zk:2181", "--log-format", "xml"},
      {"--zk", "zk:2181", "--status-socket", ""},
      {"--zk", "zk:2181", "--lease-table", ""},
      {"--zk", "zk:2181", "--status-listen", "localhost:9464"},  // numeric addresses only
      {"--zk", "zk:2181", "--max-holder-reads-per-peer", "0"},     // a rate: 0 would stop reads
  };
  for (const auto& args : bad) {
    auto parsed = parse(args);
    std::string joined;
    for (auto& a : args) joined += a + " ";
    EXPECT_FALSE(parsed.config) << joined;
    EXPECT_EQ(parsed.exitCode, 64) << joined;
    EXPECT_NE(parsed.message.find("(see --help)"), std::string::npos) << parsed.message;
  }
  auto parsed = parse({"--zk", "zk:2181", "--status-listen", "[::1]:9464"});
  EXPECT_TRUE(parsed.config) << parsed.message;
}

}  // namespace
}  // namespace fencekeeper
