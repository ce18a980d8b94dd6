// Issue 24, item 3: the status server could be starved. 64 connections that sent a request and
// never read the answer, or sent a byte a second, over the Unix socket, over --status-listen, or
// from a uid --allow-uid refuses, filled its one pool and `fencectl health` failed for as long as
// they stayed (in Kubernetes the liveness probe restarts the sidecar and every lease is dropped).
// Now probes have a pool of their own, waiting connections make room for new ones, a refused
// uid's connections have a small pool of theirs, and an answer nobody reads is given up.
#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "sidecar/devzk/loopback.h"
#include "tests/support/fake_sidecar.h"
#include "tests/support/http_get.h"
#include "tests/support/sidecar_cluster.h"
#include "tests/support/wait.h"

namespace fencekeeper::testing {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// What a probe may take, the flood notwithstanding: the kubelet's timeoutSeconds in k8s/ is 2 s
// for readiness, 5 s for liveness.
constexpr milliseconds kProbeDeadline{2'000};

// Connections that each send `request` (as much of it as the socket takes at once) and never
// read; they are closed at the end.
struct Flood {
  std::vector<int> fds;
  ~Flood() {
    for (int fd : fds) close(fd);
  }
  void open(size_t n, const std::function<int()>& dial, const std::string& request) {
    for (size_t i = 0; i < n; ++i) {
      int fd = dial();
      ASSERT_GE(fd, 0) << "connection " << i;
      ASSERT_GT(send(fd, request.data(), request.size(), MSG_NOSIGNAL | MSG_DONTWAIT), 0);
      fds.push_back(fd);
    }
  }
};

// The start of a request and no more: a byte a second would do the same.
const std::string kSlow = "GET /status HTTP/1.1\r\nHost: x\r\n";

// `n` requests for `target` pipelined: their answers, never read, fill the socket's buffer.
std::string pipelined(const std::string& target, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += "GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n";
  return out;
}

// True when the server closes `fd` within `timeout`: POLLHUP needs no read, so what it wrote
// stays unread.
bool hungUpWithin(int fd, milliseconds timeout) {
  pollfd pfd{fd, POLLRDHUP, 0};
  return poll(&pfd, 1, static_cast<int>(timeout.count())) == 1 &&
         (pfd.revents & (POLLHUP | POLLRDHUP));
}

// The last "closed N" fk-http-get --hold printed, or 0.
size_t lastClosed(const std::string& log) {
  auto at = log.rfind("closed ");
  return at == std::string::npos ? 0 : std::stoul(log.substr(at + 7));
}

long long msSince(Clock::time_point t0) {
  return std::chrono::duration_cast<milliseconds>(Clock::now() - t0).count();
}

class StatusStarvation : public ::testing::Test {
 protected:
  // fencectl finds the status socket by the lease socket, as the probes in k8s/ do.
  void SetUp() override { unsetenv("FENCEKEEPER_STATUS_SOCKET"); }

  void start(std::vector<std::string> args = {}) {
    SidecarOptions options;
    options.defaultStatusSocket = true;
    options.extraArgs = std::move(args);
    cluster.startSidecar(options);
    statusPath = cluster.socket(0) + ".status";
  }

  // `fencectl health [--ready]` answers ok within kProbeDeadline.
  void expectProbesAnswer() {
    for (std::vector<std::string> args :
         {std::vector<std::string>{"health"}, std::vector<std::string>{"health", "--ready"}}) {
      auto t0 = Clock::now();
      auto run = cluster.fencectl(0, args);
      int code = run->wait(milliseconds(15'000));
      EXPECT_EQ(code, 0) << args.back() << ": " << run->log();
      EXPECT_LT(msSince(t0), kProbeDeadline.count()) << args.back();
      std::printf("fencectl %s: %lld ms (sidecar RSS %s)\n", args.back().c_str(), msSince(t0),
                  rss().c_str());
    }
  }

  // The sidecar's VmRSS line, for the figures in docs/security.md.
  std::string rss() {
    std::ifstream in("/proc/" + std::to_string(cluster.sidecar(0).pid()) + "/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("VmRSS:", 0) == 0) return line.substr(line.find_first_not_of(" \t", 6));
    }
    return "?";
  }

  SidecarCluster cluster;
  std::string statusPath;
};

// More slow and unread connections of the probes' own uid than every pool holds: the probes
// still answer at once.
TEST_F(StatusStarvation, ProbesAnswerWhileSlowAndUnreadConnectionsOfTheirUidFillThePools) {
  start();
  auto dial = [&] { return connectUnix(statusPath); };
  std::printf("before the flood: sidecar RSS %s\n", rss().c_str());
  Flood flood;
  flood.open(80, dial, pipelined("/metrics", 200));   // answers nobody reads, on other routes
  flood.open(40, dial, pipelined("/healthz", 4000));  // and on the probes' routes
  flood.open(80, dial, kSlow);                        // requests that never end
  expectProbesAnswer();
  auto metrics = httpGet(statusPath, "/healthz", kProbeDeadline);
  ASSERT_TRUE(metrics) << "a plain GET too";
  EXPECT_EQ(metrics->code, 200);
}

// The same over --status-listen, where no uid tells the flooder from the probe.
TEST_F(StatusStarvation, HealthzOverStatusListenAnswersWhileSlowAndUnreadConnectionsFillIt) {
  int port = devzk::freeLoopbackPort();
  start({"--status-listen", "127.0.0.1:" + std::to_string(port)});
  auto dial = [&] { return connectTcp(port); };
  Flood flood;
  flood.open(80, dial, pipelined("/metrics", 400));
  flood.open(40, dial, pipelined("/healthz", 20000));
  flood.open(80, dial, kSlow);
  for (const char* target : {"/healthz", "/readyz"}) {
    auto t0 = Clock::now();
    auto answer = httpExchangeTcp(
        port, std::string("GET ") + target + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        kProbeDeadline);
    ASSERT_TRUE(answer) << target << " after " << msSince(t0) << " ms";
    EXPECT_EQ(answer->code, 200) << target;
  }
  expectProbesAnswer();  // the Unix socket's pools are apart
}

// Connections of a uid the allow-list refuses get their 403 or are closed, and never take the
// slots an allowed uid needs.
TEST_F(StatusStarvation, ARefusedUidsConnectionsAreClosedAndTakeNoSlotOfAllowedOnes) {
  ASSERT_EQ(chmod(cluster.dir().c_str(), 0711), 0);
  start({"--socket-world", "--allow-uid", "0"});
  std::string tool = cluster.dir() + "/fk-http-get";
  std::filesystem::copy_file(FK_HTTP_GET_BIN, tool);
  ASSERT_EQ(chmod(tool.c_str(), 0755), 0);
  std::string uid = std::to_string(kImpostorUid);
  ChildProcess refused({"setpriv", "--reuid=" + uid, "--regid=" + uid, "--clear-groups", tool,
                        statusPath, "--hold", "200"},
                       cluster.newLogPath("refused-flood"));
  ASSERT_TRUE(waitUntil([&] { return refused.log().find("open ") != std::string::npos; }))
      << refused.log();
  expectProbesAnswer();
  // All but a few at once (the refused pool keeps 8 until their header deadline).
  EXPECT_TRUE(waitUntil([&] { return lastClosed(refused.log()) >= 192; }, milliseconds(2'000)))
      << refused.log();
  EXPECT_TRUE(waitUntil([&] { return lastClosed(refused.log()) == 200; }, milliseconds(10'000)))
      << refused.log();
  // A refused request is answered 403, and the connection closed at once, even kept alive.
  ChildProcess keptAlive({"setpriv", "--reuid=" + uid, "--regid=" + uid, "--clear-groups", tool,
                          statusPath, "/healthz", "--keep-alive"},
                         cluster.newLogPath("refused-keep-alive"));
  ASSERT_EQ(keptAlive.wait(milliseconds(10'000)), 0) << keptAlive.log();
  EXPECT_EQ(keptAlive.log().rfind("HTTP/1.1 403 Forbidden\r\n", 0), 0u) << keptAlive.log();
  auto at = keptAlive.log().find("closed after ");
  ASSERT_NE(at, std::string::npos) << keptAlive.log();
  EXPECT_LT(std::stol(keptAlive.log().substr(at + 13)), 1'000) << keptAlive.log();
}

// An answer nobody reads is given up after the write deadline (5 s) and its connection closed;
// before, it stayed as long as the peer liked.
TEST_F(StatusStarvation, AnAnswerNobodyReadsIsClosedAfterTheWriteTimeout) {
  start();
  int fd = connectUnix(statusPath);
  ASSERT_GE(fd, 0);
  std::string requests = pipelined("/metrics", 300);
  ASSERT_EQ(send(fd, requests.data(), requests.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(requests.size()));
  auto t0 = Clock::now();
  EXPECT_TRUE(hungUpWithin(fd, milliseconds(12'000))) << "still open after " << msSince(t0);
  EXPECT_GE(msSince(t0), 4'000) << "closed before the write deadline";
  close(fd);
  expectProbesAnswer();
}

}  // namespace
}  // namespace fencekeeper::testing
