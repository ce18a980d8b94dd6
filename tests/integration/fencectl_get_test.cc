// `fencectl get TARGET`: any route of a real sidecar's status socket, its body on stdout (the
// container image has no curl). Exit 0 on 200, 1 on another answer (its status on stderr), 69 when
// no answer comes, 64 for a target that is none of the four routes.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <regex>

#include "tests/support/http_get.h"
#include "tests/support/sidecar_cluster.h"
#include "tests/support/wait.h"

namespace fencekeeper::testing {
namespace {

using std::chrono::milliseconds;

constexpr int kExitNot200 = 1;
constexpr int kExitUsage = 64;
constexpr int kExitUnavailable = 69;

struct Ran {
  int code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs `fencectl ARGS` to its end (at most 15 s), stdout and stderr apart, in files `stem`*.
Ran fencectl(const std::string& stem, std::vector<std::string> args) {
  std::string err = stem + ".err";
  std::vector<std::string> argv{"sh", "-c", "exec \"$@\" 2>\"" + err + "\"", "sh",
                                fencectlBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess run(argv, stem + ".out");
  Ran ran;
  ran.code = run.wait(milliseconds(15'000));
  ran.out = run.log();
  ran.err = readFile(err);
  return ran;
}

// A short-lived directory for the tests that need no sidecar (and no ZooKeeper).
struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/fk-get-XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string path;
};

class FencectlGet : public ::testing::Test {
 protected:
  void SetUp() override { unsetenv("FENCEKEEPER_STATUS_SOCKET"); }
  // `fencectl --socket <sidecar 0's> get ARGS`, naming its status socket unless `named` is false.
  Ran get(std::vector<std::string> args, bool named = true) {
    std::vector<std::string> all{"--socket", cluster.socket(0), "get"};
    all.insert(all.end(), args.begin(), args.end());
    if (named) all.insert(all.end(), {"--status-socket", cluster.statusSocket(0)});
    return fencectl(cluster.newLogPath("fencectl-get"), all);
  }
  SidecarCluster cluster;
};

TEST_F(FencectlGet, PrintsTheBodyOfEachRouteAndExits0On200) {
  cluster.startSidecar();
  Ran r = get({"/healthz"});
  EXPECT_EQ((std::tuple{r.code, r.out, r.err}),
            (std::tuple{0, std::string("ok\n"), std::string()}));
  r = get({"/readyz"});
  EXPECT_EQ((std::tuple{r.code, r.out, r.err}),
            (std::tuple{0, std::string("ready\n"), std::string()}));
  r = get({"/status", "--timeout", "5s"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("{\"zkState\":\"connected\"", 0), 0u) << r.out;
  EXPECT_EQ(r.err, "");
  r = get({"/metrics"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\nfencekeeper_build_info{"), std::string::npos) << r.out;
  static const std::regex asked(
      R"(\nfencekeeper_status_requests_total\{[^}]*path="status"[^}]*\} 1\n)");
  EXPECT_TRUE(std::regex_search(r.out, asked)) << "the /status just asked for: " << r.out;
  // The options before TARGET as after it.
  r = fencectl(cluster.newLogPath("fencectl-get"),
               {"get", "--status-socket", cluster.statusSocket(0), "--timeout", "3s", "/healthz"});
  EXPECT_EQ((std::tuple{r.code, r.out}), (std::tuple{0, std::string("ok\n")})) << r.err;
}

// A probe reads at most 64 KiB; /status with 450 leases is longer (about 85 KiB).
TEST_F(FencectlGet, PrintsAStatusLongerThanAProbeReads) {
  cluster.startSidecar();
  auto client = cluster.connect(0);
  std::vector<std::unique_ptr<Lease>> leases;
  for (int i = 0; i < 450; ++i) {
    Status s;
    leases.push_back(
        client->acquire("fencectl-get/a-lock-with-a-name-long-enough-" + std::to_string(i),
                        acquireOptions(milliseconds(0), milliseconds(60'000)), &s));
    ASSERT_TRUE(leases.back()) << s.message;
  }
  Ran r = get({"/status", "--timeout", "10s"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_GT(r.out.size(), 64u * 1024);
  EXPECT_EQ(r.out.substr(r.out.size() - 2), "}\n") << "whole";
  EXPECT_NE(r.out.find("a-lock-with-a-name-long-enough-449\""), std::string::npos);
}

TEST_F(FencectlGet, AnotherAnswerThan200Exits1WithItsStatusOnStderrAndTheBodyOnStdout) {
  cluster.startSidecar();
  cluster.zk().stop(0);
  ASSERT_TRUE(waitUntil(
      [&] {
        auto a = httpGet(cluster.statusSocket(0), "/readyz", milliseconds(2000));
        return a && a->code == 503;
      },
      milliseconds(10'000)));
  Ran r = get({"/readyz"});
  EXPECT_EQ(r.code, kExitNot200);
  EXPECT_NE(r.out.find("not vouched for"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "fencectl: get: " + cluster.statusSocket(0) + " answered 503 on /readyz\n");
  r = get({"/healthz"});
  EXPECT_EQ((std::tuple{r.code, r.out}), (std::tuple{0, std::string("ok\n")})) << r.err;
}

TEST(FencectlGetWithoutASidecar, NoAnswerExits69) {
  unsetenv("FENCEKEEPER_STATUS_SOCKET");
  TempDir dir;
  // No socket: the default beside a lease socket nobody serves.
  Ran r =
      fencectl(dir.path + "/nobody", {"--socket", dir.path + "/nobody.sock", "get", "/healthz"});
  EXPECT_EQ(r.code, kExitUnavailable);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(dir.path + "/nobody.sock.status"), std::string::npos) << r.err;
  // A server that accepts (the backlog) and never answers: the timeout ends the wait.
  std::string silent = dir.path + "/silent.sock";
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, silent.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  auto started = std::chrono::steady_clock::now();
  r = fencectl(dir.path + "/silent",
               {"get", "/metrics", "--status-socket", silent, "--timeout", "300ms"});
  EXPECT_EQ(r.code, kExitUnavailable);
  EXPECT_NE(r.err.find("no answer"), std::string::npos) << r.err;
  EXPECT_GE(msSince(started), 300);
  close(fd);
}

TEST(FencectlGetWithoutASidecar, TargetsOtherThanTheFourRoutesAreUsageErrors) {
  TempDir dir;
  for (std::vector<std::string> args : {std::vector<std::string>{"get"},
                                        {"get", "/"},
                                        {"get", "healthz"},
                                        {"get", "/status?limit=5"},
                                        {"get", "/x"},
                                        {"get", ""},
                                        {"get", "/healthz", "/readyz"},
                                        {"get", "/healthz", "--ready"},
                                        {"get", "/healthz", "--timeout", "0"},
                                        {"get", "/healthz", "--status-socket"}}) {
    SCOPED_TRACE(::testing::PrintToString(args));
    Ran r = fencectl(dir.path + "/usage", args);
    EXPECT_EQ(r.code, kExitUsage);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err.rfind("fencectl: ", 0), 0u) << r.err;
    bool aTarget = args.size() <= 2;
    if (aTarget) {
      EXPECT_NE(r.err.find("/healthz, /readyz, /status, /metrics\n"), std::string::npos) << r.err;
    }
  }
}

}  // namespace
}  // namespace fencekeeper::testing
