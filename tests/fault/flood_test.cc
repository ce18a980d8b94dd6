// Floods from one local process (fk-flood, raw Cap'n Proto over the lease socket) against a real
// sidecar, while a holder on another connection keeps a lease with keep-alive: through each flood
// the holder is never told lost, every check of its lease answers, and the sidecar vouches for its
// session throughout (issue 9; docs/security.md "Floods"). FK_FLOOD_SECONDS sets each flood's
// length (default 60). Each test prints what it measured: the holder's check() round trips, the
// sidecar's heartbeat round trips (loop latency included), its RSS and the flood's own counts.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <regex>
#include <string_view>
#include <thread>
#include <vector>

#include "fencekeeper/client.h"
#include "sidecar/devzk/proc_state.h"
#include "tests/support/http_get.h"
#include "tests/support/loss_recorder.h"
#include "tests/support/raw_rpc_socket.h"
#include "tests/support/sidecar_cluster.h"
#include "tests/support/wait.h"

namespace fencekeeper::testing {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr const char* kHeldLock = "flood-held";
constexpr milliseconds kQuarterSession{1000};  // Q, with the 4 s session timeout below
constexpr long kRunawayRssKiB = 1024 * 1024;
// The sanitizers this build carries (FK_SANITIZE), "" in a plain build.
constexpr std::string_view kSanitizers = FK_SANITIZERS;

int floodSeconds() {
  const char* env = std::getenv("FK_FLOOD_SECONDS");
  return env && *env ? std::max(1, std::atoi(env)) : 60;
}

size_t openFds(pid_t pid) {
  size_t n = 0;
  for ([[maybe_unused]] auto& e :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    ++n;
  }
  return n;
}

long long percentile(std::vector<long long> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// What the holder and an observer on a third connection saw, sampled from their own thread.
struct Observed {
  std::vector<long long> checkUs;  // round trips of the holder's lease check()
  int checkFailures = 0;
  int statusFailures = 0;
  std::string lastStatusFailure;
  int notConnected = 0;  // status answers with a zkState other than "connected"
  uint32_t minSafeForMs = UINT32_MAX;
  long maxRssKiB = 0;
};

// Round trips of the sidecar's own ZooKeeper heartbeats, from its trace log.
struct Heartbeats {
  long long maxUs = 0;
  int count = 0;
  int anchoredNothing = 0;  // answered later than Q: the loop or ZooKeeper was that slow
};

Heartbeats heartbeatsIn(const std::string& log) {
  static const std::regex answered("heartbeat answered after (\\d+) us");
  static const std::regex slow("heartbeat answered after (\\d+) ms: it anchors nothing");
  Heartbeats h;
  for (std::sregex_iterator it(log.begin(), log.end(), answered), end; it != end; ++it) {
    h.maxUs = std::max(h.maxUs, std::stoll((*it)[1]));
    ++h.count;
  }
  for (std::sregex_iterator it(log.begin(), log.end(), slow), end; it != end; ++it) {
    h.maxUs = std::max(h.maxUs, std::stoll((*it)[1]) * 1000);
    ++h.count;
    ++h.anchoredNothing;
  }
  return h;
}

class FloodTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SidecarOptions options;
    options.sessionTimeout = "4s";  // Q = 1 s: a heartbeat answered later than that anchors nothing
    // The flood comes from another uid (nobody), the holder's principal is root: the limits are
    // per uid, so they must stop the flood without touching the holder.
    options.extraArgs = {"--socket-world"};
    ASSERT_EQ(chmod(cluster.dir().c_str(), 0711), 0);
    floodBinary = cluster.dir() + "/fk-flood";
    std::filesystem::copy_file(FK_FLOOD_BIN, floodBinary);
    ASSERT_EQ(chmod(floodBinary.c_str(), 0755), 0);
    cluster.startSidecar(options);
    holderClient = cluster.connect(0);
    observerClient = cluster.connect(0);
    AcquireOptions acquire = acquireOptions(milliseconds(5000), milliseconds(3000));
    acquire.onLost = loss.callback();
    Status status;
    lease = holderClient->acquire(kHeldLock, acquire, &status);
    ASSERT_TRUE(lease) << status.message;
    token = lease->token();
  }

  // Runs fk-flood MODE for FK_FLOOD_SECONDS with the holder and the observer sampling, then checks
  // that the holder kept its lease and that a new client is served.
  // `during` runs on the observer's thread every 200 ms while the flood lasts.
  void floodAndHold(const std::string& mode, std::vector<std::string> extraArgs = {},
                    std::function<void()> during = {}) {
    ASSERT_TRUE(lease);
    int seconds = floodSeconds();
    std::atomic<bool> done{false}, runaway{false};
    Observed seen;
    pid_t sidecarPid = cluster.sidecar(0).pid();
    std::thread observer([&] {
      for (int i = 0; !done; ++i) {
        auto t0 = Clock::now();
        Millis valid{0};
        if (!lease->check(&valid).ok() || valid.count() == 0) ++seen.checkFailures;
        seen.checkUs.push_back(
            std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count());
        if (i % 10 == 0) {
          SidecarStatus s;
          if (Status got = observerClient->status(&s); !got.ok()) {
            ++seen.statusFailures;
            seen.lastStatusFailure = got.message;
          } else {
            if (s.zkState != "connected") ++seen.notConnected;
            seen.minSafeForMs = std::min(seen.minSafeForMs, s.safeForMs);
          }
          seen.maxRssKiB = std::max(seen.maxRssKiB, devzk::procStatusKiB(sidecarPid, "VmRSS"));
          if (seen.maxRssKiB > kRunawayRssKiB) runaway = true;
          if (during) during();
        }
        std::this_thread::sleep_for(milliseconds(20));
      }
    });
    size_t logBefore = cluster.sidecar(0).log().size();
    std::vector<std::string> argv{
        "setpriv",   "--reuid=65534", "--regid=65534",         "--clear-groups",
        floodBinary, "--socket",      cluster.socket(0),       "--mode",
        mode,        "--seconds",     std::to_string(seconds), "--name",
        kHeldLock};
    argv.insert(argv.end(), extraArgs.begin(), extraArgs.end());
    ChildProcess flood(argv, cluster.newLogPath("flood-" + mode));
    // A sidecar that grows without bound would take the machine down with it: stop the flood.
    int exitStatus = -1;
    auto floodEnds = Clock::now() + std::chrono::seconds(seconds + 60);
    while (Clock::now() < floodEnds && !runaway) {
      if ((exitStatus = flood.wait(milliseconds(100))) != -1) break;
    }
    done = true;
    observer.join();
    EXPECT_FALSE(runaway) << "flood stopped: the sidecar's RSS passed " << kRunawayRssKiB << " KiB";
    if (!runaway) {
      EXPECT_EQ(exitStatus, 0) << flood.log();
    }
    auto heartbeats = heartbeatsIn(cluster.sidecar(0).log().substr(logBefore));
    std::string counts = flood.log();
    while (!counts.empty() && counts.back() == '\n') counts.pop_back();

    // The loop's longest turn as the sidecar measured it (how late its 50 ms tick ran).
    auto metrics = httpGet(cluster.statusSocket(0), "/metrics", milliseconds(5000));
    double loopLagMs =
        metrics ? metricSample(metrics->body, "fencekeeper_loop_lag_max_seconds") * 1000 : -1;
    std::printf(
        "flood %s (%d s): %s  holder check() round trip p50 %lld us, p99 %lld us, max %lld us "
        "over %zu; heartbeat round trip max %lld us over %d (%d later than Q); min safeFor %u ms; "
        "sidecar RSS max %ld KiB; loop lag max %.1f ms (since start)\n",
        mode.c_str(), seconds, counts.c_str(), percentile(seen.checkUs, 0.5),
        percentile(seen.checkUs, 0.99), percentile(seen.checkUs, 1.0), seen.checkUs.size(),
        heartbeats.maxUs, heartbeats.count, heartbeats.anchoredNothing, seen.minSafeForMs,
        seen.maxRssKiB, loopLagMs);

    EXPECT_FALSE(loss.lost) << "the holder was told its lease was lost, reason "
                            << lossReasonName(static_cast<LossReason>(loss.reason.load()));
    EXPECT_EQ(seen.checkFailures, 0) << "the holder's lease stopped checking valid";
    EXPECT_EQ(seen.statusFailures, 0) << seen.lastStatusFailure;
    EXPECT_EQ(seen.notConnected, 0);
    EXPECT_GT(seen.minSafeForMs, 0u) << "the sidecar stopped vouching for its session";
    EXPECT_GT(seen.checkUs.size(), static_cast<size_t>(seconds) * 10) << "checks stalled";
    // A loop that stalls for Q delays a heartbeat's answer past Q: it then anchors nothing.
    EXPECT_LT(percentile(seen.checkUs, 1.0), kQuarterSession.count() * 1000)
        << "the loop stalled for a quarter of the session timeout";
    Status renewed = lease->renew();
    EXPECT_TRUE(renewed.ok()) << renewed.message;
    EXPECT_EQ(lease->token(), token);
    last = seen;

    // The sidecar still serves a newcomer.
    // (A backlog the flood filled is drained first: retry the connect.)
    std::unique_ptr<Client> newcomer;
    ASSERT_TRUE(
        waitUntil([&] { return (newcomer = Client::connect(cluster.socket(0))) != nullptr; },
                  milliseconds(5000)));
    Status status;
    auto other = newcomer->acquire("flood-after",
                                   acquireOptions(milliseconds(5000), milliseconds(3000)), &status);
    EXPECT_TRUE(other) << status.message;
  }

  SidecarCluster cluster;
  std::string floodBinary;  // a copy nobody may run, whatever the build tree's permissions
  std::unique_ptr<Client> holderClient, observerClient;
  LossRecorder loss;
  std::unique_ptr<Lease> lease;
  uint64_t token = 0;
  Observed last;
};

// A client as busy as it can be: status() calls pipelined, every reply read. The sidecar reads
// every connection in turn, so the others' calls and its ZooKeeper answers wait only so long.
TEST_F(FloodTest, BusyClientLeavesAnotherConnectionsLeaseAlone) {
  floodAndHold("status", {"--inflight", "20000"});
}

// (a) Defect 1: acquires on fresh names, every granted lease kept: the flooding uid reaches its
// limits (refused with a detail) and the holder's lease, on another connection, is left alone.
TEST_F(FloodTest, HoardedLeasesLeaveAnotherConnectionsLeaseAlone) { floodAndHold("hoard"); }

// (b) Defect 2: calls whose replies are never read. The sidecar closes the connection once its
// unread replies pass --max-queued-reply-bytes, so its memory stays bounded (issue: 912 MB).
TEST_F(FloodTest, UnreadRepliesLeaveAnotherConnectionsLeaseAloneAndMemoryBounded) {
  floodAndHold("unread");
  // ASan's allocator keeps freed blocks in its quarantine (256 MiB by default): there RSS measures
  // the quarantine, not the sidecar. The plain build checks the bound.
  if (kSanitizers.find("address") == std::string_view::npos) {
    EXPECT_LT(last.maxRssKiB, 64 * 1024) << "sidecar RSS under the unread-replies flood, KiB";
  }
  EXPECT_NE(cluster.sidecar(0).log().find("not read by the peer, above"), std::string::npos)
      << "the flood never reached the queued-reply bound";
}

// (c) Defect 3: capability tables of a million entries, 200-deep nesting, 4 MiB names, 500
// segments.
TEST_F(FloodTest, OversizedMessagesLeaveAnotherConnectionsLeaseAlone) { floodAndHold("oversized"); }

// (d) Defect 4: connections held open until the sidecar's fds run out; once they close, new
// clients are accepted again.
TEST_F(FloodTest, FdExhaustionLeavesAnotherConnectionsLeaseAloneAndAcceptingResumes) {
  // UBSan's vptr check probes memory through a pipe(): in a process without a free fd it reports
  // every virtual call as a bad type (and aborts). The plain build runs this test.
  if (kSanitizers.find("undefined") != std::string_view::npos) {
    GTEST_SKIP() << "UBSan's vptr check needs a free fd (pipe probe); runs in the plain build";
  }
  pid_t pid = cluster.sidecar(0).pid();
  rlimit limit{};
  limit.rlim_cur = limit.rlim_max = openFds(pid) + 32;
  ASSERT_EQ(prlimit(pid, RLIMIT_NOFILE, &limit, nullptr), 0) << std::strerror(errno);
  rpcframes::RawStatusReader status(cluster.socket(0));
  EXPECT_TRUE(status.read().accepting);
  std::atomic<bool> sawRefusal{false};
  floodAndHold("connections", {}, [&] {
    if (!status.read().accepting) sawRefusal = true;
  });
  EXPECT_TRUE(sawRefusal) << "status never showed accepting false";
  auto after = status.read();
  EXPECT_TRUE(after.accepting);
  EXPECT_GT(after.acceptFailures, 0u);
  auto log = cluster.sidecar(0).log();
  EXPECT_NE(log.find("accept() failed"), std::string::npos)
      << "the flood did not exhaust the sidecar's fds";
  EXPECT_NE(log.find("accepting again after"), std::string::npos);
}

// (e) Defect 5: holder() calls on the held lock and 100 others, 20,000 in flight.
TEST_F(FloodTest, HolderQueriesLeaveAnotherConnectionsLeaseAlone) {
  floodAndHold("holder", {"--inflight", "20000"});
}

// (f) Random bytes, and random words behind a valid segment table, on connection after connection.
TEST_F(FloodTest, GarbageFramesLeaveAnotherConnectionsLeaseAlone) { floodAndHold("garbage"); }

}  // namespace
}  // namespace fencekeeper::testing
