// The lease socket's limits against a real sidecar (issue 9, docs/security.md "Limits"): each
// limit refuses with a detail naming it, its value and its flag; released and lost leases stop
// counting at once; limits are per uid, so one principal at its limits leaves another alone; the
// allow-list refuses other uids with permissionDenied; status shows what counts.
#include <capnp/ez-rpc.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <future>
#include <thread>

#include "fencekeeper/client.h"
#include "ipc/fencekeeper.capnp.h"
#include "sidecar/devzk/proc_state.h"
#include "tests/support/sidecar_cluster.h"
#include "tests/support/wait.h"

namespace fencekeeper::testing {
namespace {

using std::chrono::milliseconds;

constexpr const char* kNobody = "65534";
constexpr std::string_view kSanitizers = FK_SANITIZERS;

class LimitsTest : public ::testing::Test {
 protected:
  // A sidecar with `flags`, whose socket another uid can reach.
  void start(std::vector<std::string> flags) {
    ASSERT_EQ(chmod(cluster.dir().c_str(), 0711), 0);
    fencectlCopy = cluster.dir() + "/fencectl";
    std::filesystem::copy_file(fencectlBinary(), fencectlCopy);
    ASSERT_EQ(chmod(fencectlCopy.c_str(), 0755), 0);
    SidecarOptions options;
    options.extraArgs = std::move(flags);
    options.extraArgs.push_back("--socket-world");
    cluster.startSidecar(options);
  }

  // `fencectl ARGS...` run as nobody; returns its exit status and keeps its output in `*log`.
  int fencectlAsNobody(std::vector<std::string> args, std::string* log = nullptr) {
    std::vector<std::string> argv{"setpriv",    std::string("--reuid=") + kNobody,
                                  std::string("--regid=") + kNobody, "--clear-groups",
                                  fencectlCopy, "--socket", cluster.socket(0), "--expect-uid",
                                  "0"};
    argv.insert(argv.end(), args.begin(), args.end());
    ChildProcess child(argv, cluster.newLogPath("fencectl-nobody"));
    int status = child.wait(milliseconds(20'000));
    if (log) *log = child.log();
    return status;
  }

  std::unique_ptr<Lease> take(Client& client, const std::string& name, Status* status,
                              milliseconds wait = milliseconds(0)) {
    return client.acquire(name, acquireOptions(wait, milliseconds(20'000)), status);
  }

  SidecarStatus statusOf(Client& client) {
    SidecarStatus s;
    Status got = client.status(&s);
    EXPECT_TRUE(got.ok()) << got.message;
    return s;
  }

  SidecarCluster cluster;
  std::string fencectlCopy;
};

TEST_F(LimitsTest, LeasesPerPeerRefuseWithTheLimitAndStopCountingWhenReleasedOrLost) {
  start({"--max-leases-per-peer", "3"});
  auto client = cluster.connect(0);
  std::vector<std::unique_ptr<Lease>> held;
  Status status;
  for (int i = 0; i < 3; ++i) {
    held.push_back(take(*client, "held-" + std::to_string(i), &status));
    ASSERT_TRUE(held.back()) << status.message;
  }
  EXPECT_FALSE(take(*client, "one-more", &status));
  EXPECT_EQ(status.code, ErrorCode::kLimitReached);
  EXPECT_NE(status.message.find("--max-leases-per-peer"), std::string::npos) << status.message;
  EXPECT_NE(status.message.find("(3)"), std::string::npos) << status.message;

  // Another uid is another principal: root at its limit does not stop it.
  std::string log;
  EXPECT_EQ(fencectlAsNobody({"lock", "nobodys", "--", "true"}, &log), 0) << log;

  // A released lease stops counting at once, although its Lease object is kept.
  ASSERT_TRUE(held[0]->release().ok());
  auto again = take(*client, "one-more", &status);
  ASSERT_TRUE(again) << status.message;

  // So does a lost one: a lease left to expire.
  AcquireOptions lapsing = acquireOptions(milliseconds(0), milliseconds(300));
  lapsing.keepAlive = false;
  ASSERT_TRUE(held[1]->release().ok());
  auto shortLived = client->acquire("short-lived", lapsing, &status);
  ASSERT_TRUE(shortLived) << status.message;
  EXPECT_FALSE(take(*client, "after-expiry", &status));
  ASSERT_TRUE(waitUntil([&] { return statusOf(*client).leasesHeld == 2; }, milliseconds(5000)));
  auto afterExpiry = take(*client, "after-expiry", &status);
  EXPECT_TRUE(afterExpiry) << status.message;

  auto s = statusOf(*client);
  EXPECT_EQ(s.limits.maxLeasesPerPeer, 3u);
  EXPECT_GE(s.refusedTotal, 2u);
  bool sawRoot = false;
  for (auto& p : s.peers) {
    if (p.uid == 0) {
      sawRoot = true;
      EXPECT_EQ(p.leases, 3u);
      EXPECT_EQ(p.waiting, 0u);
    }
  }
  EXPECT_TRUE(sawRoot);
  for (auto& l : s.leases) EXPECT_EQ(l.clientUid, 0u) << l.name;
}

TEST_F(LimitsTest, KeptCapabilitiesOfReleasedLeasesAreBoundedPerConnection) {
  // Twice --max-leases-per-peer (per uid): released leases cost memory until their capability is
  // dropped.
  // (The library drops a released lease's capability; a raw client may keep it.)
  start({"--max-leases-per-peer", "2"});
  capnp::EzRpcClient raw("unix:" + cluster.socket(0));
  auto sidecar = raw.getMain<ipc::Sidecar>();
  auto& waitScope = raw.getWaitScope();
  auto acquire = [&] {
    auto request = sidecar.acquireRequest();
    request.setName("cycle");
    request.setTtlMs(20'000);
    return request.send().wait(waitScope);
  };
  std::vector<ipc::Lease::Client> kept;
  for (int i = 0; i < 4; ++i) {
    auto granted = acquire();
    ASSERT_EQ(granted.getError(), ipc::Error::OK) << i << ": " << granted.getDetail().cStr();
    kept.push_back(granted.getLease());
    auto released = kept.back().releaseRequest().send().wait(waitScope);
    ASSERT_EQ(released.getError(), ipc::Error::OK);
  }
  auto refused = acquire();
  EXPECT_EQ(refused.getError(), ipc::Error::LIMIT_REACHED);
  EXPECT_NE(std::string(refused.getDetail().cStr()).find("drop the Lease objects"),
            std::string::npos)
      << refused.getDetail().cStr();
  // Dropped, they no longer count.
  kept.clear();
  ASSERT_TRUE(waitUntil([&] { return acquire().getError() == ipc::Error::OK; },
                        milliseconds(5000)));
}

// Issue 24: kept capabilities were bounded per connection only (5,000 x 128 connections per uid);
// 8 connections took the sidecar from 43 to 107 MB. Now one uid keeps at most twice
// --max-leases-per-peer in all its connections, which bounds the memory they cost.
TEST_F(LimitsTest, KeptCapabilitiesAreBoundedPerUidAcrossItsConnections) {
  start({});
  const pid_t sidecar = cluster.sidecar(0).pid();
  // The heap: VmRSS also counts the lease table's pages as leases touch them (a file mapping of
  // fixed size, --max-leases slots), which stay resident and are no leak.
  auto heapKiB = [&] { return devzk::procStatusKiB(sidecar, "RssAnon"); };
  const long baselineKiB = heapKiB();
  constexpr int kConnections = 8, kBatch = 100;
  std::vector<std::unique_ptr<capnp::EzRpcClient>> raws;
  std::vector<ipc::Lease::Client> kept;
  std::string refusal;
  for (int c = 0; c < kConnections; ++c) {
    raws.push_back(std::make_unique<capnp::EzRpcClient>("unix:" + cluster.socket(0)));
    auto main = raws.back()->getMain<ipc::Sidecar>();
    auto& waitScope = raws.back()->getWaitScope();
    for (bool refused = false; !refused;) {
      // A batch of acquires in flight, then their releases: each lease's capability is kept.
      std::vector<capnp::RemotePromise<ipc::Sidecar::AcquireResults>> acquires;
      for (int i = 0; i < kBatch; ++i) {
        auto request = main.acquireRequest();
        request.setName("kept/" + std::to_string(c) + "-" + std::to_string(kept.size() + i));
        request.setTtlMs(20'000);
        acquires.push_back(request.send());
      }
      auto releases = kj::heapArrayBuilder<kj::Promise<void>>(kBatch);
      for (auto& sent : acquires) {
        auto got = sent.wait(waitScope);
        if (got.getError() != ipc::Error::OK) {
          ASSERT_EQ(got.getError(), ipc::Error::LIMIT_REACHED) << got.getDetail().cStr();
          refusal = got.getDetail().cStr();
          refused = true;
          continue;
        }
        kept.push_back(got.getLease());
        releases.add(kept.back().releaseRequest().send().ignoreResult());
      }
      kj::joinPromises(releases.finish()).wait(waitScope);
    }
  }
  const long peakKiB = heapKiB();
  EXPECT_EQ(kept.size(), 5'000u) << "twice --max-leases-per-peer (2500), in all of uid 0's "
                                 << kConnections << " connections";
  EXPECT_NE(refusal.find("uid 0 keeps 5000 lease capabilities"), std::string::npos) << refusal;
  std::printf("sidecar heap (RssAnon): %ld KiB at start, %ld KiB with %zu capabilities kept\n",
              baselineKiB, peakKiB, kept.size());

  kept.clear();
  raws.clear();
  ASSERT_TRUE(waitUntil([&] { return statusOf(*cluster.connect(0)).leasesHeld == 0; },
                        milliseconds(10'000)));
  // ASan's allocator adds its own: the plain build checks the figure (6.0 MiB measured).
  if (kSanitizers.find("address") == std::string_view::npos) {
    EXPECT_LT(peakKiB - baselineKiB, 16 * 1024) << "the per-uid bound's memory, KiB";
  }
  // Not asserted: what stays after they close (5.5 of the 6.2 MiB here, malloc_trim or not;
  // docs/security.md, "Memory"): a cause not found yet.
  std::printf("sidecar heap (RssAnon): %ld KiB after the connections closed\n", heapKiB());
}

TEST_F(LimitsTest, WaitingPerPeerAndUnansweredCallsPerConnection) {
  start({"--max-waiting-per-peer", "2", "--max-calls-per-connection", "3"});
  auto holder = cluster.connect(0);
  Status status;
  auto lease = take(*holder, "contended", &status);
  ASSERT_TRUE(lease) << status.message;

  auto waiter = cluster.connect(0);
  std::vector<std::future<bool>> waits;
  for (int i = 0; i < 2; ++i) {
    waits.push_back(std::async(std::launch::async, [&] {
      Status s;
      return take(*waiter, "contended", &s, milliseconds(20'000)) != nullptr;
    }));
  }
  ASSERT_TRUE(waitUntil([&] { return statusOf(*holder).waiters == 2; }, milliseconds(5000)));
  EXPECT_FALSE(take(*holder, "contended", &status, milliseconds(5000)));
  EXPECT_EQ(status.code, ErrorCode::kLimitReached);
  EXPECT_NE(status.message.find("--max-waiting-per-peer"), std::string::npos) << status.message;

  // The waiter's connection has two calls unanswered; a third goes, a fourth is refused.
  auto third = std::async(std::launch::async, [&] {
    HolderInfo info;
    return waiter->holder("contended", &info).ok();
  });
  EXPECT_TRUE(third.get());
  {
    // Another uid may queue while root's waiting limit is reached.
    std::string log;
    EXPECT_EQ(fencectlAsNobody({"lock", "contended-elsewhere", "--", "true"}, &log), 0) << log;
  }
  ASSERT_TRUE(lease->release().ok());
  for (auto& w : waits) EXPECT_TRUE(w.get());
  EXPECT_EQ(statusOf(*holder).waiters, 0u);
}

TEST_F(LimitsTest, UnansweredCallsOfOneConnectionAreBounded) {
  start({"--max-calls-per-connection", "2"});
  auto holder = cluster.connect(0);
  Status status;
  auto lease = take(*holder, "busy", &status);
  ASSERT_TRUE(lease) << status.message;
  auto waiter = cluster.connect(0);
  std::vector<std::future<bool>> waits;
  for (int i = 0; i < 2; ++i) {
    waits.push_back(std::async(std::launch::async, [&] {
      Status s;
      return take(*waiter, "busy", &s, milliseconds(20'000)) != nullptr;
    }));
  }
  ASSERT_TRUE(waitUntil([&] { return statusOf(*holder).waiters == 2; }, milliseconds(5000)));
  SidecarStatus s;
  Status refused = waiter->status(&s);
  EXPECT_EQ(refused.code, ErrorCode::kLimitReached);
  EXPECT_NE(refused.message.find("--max-calls-per-connection"), std::string::npos)
      << refused.message;
  // Other connections are not affected, and status shows the two calls in flight.
  auto seen = statusOf(*holder);
  bool found = false;
  for (auto& c : seen.connectionList) {
    if (c.waiting == 2) {
      found = true;
      EXPECT_EQ(c.callsInFlight, 2u);
      EXPECT_EQ(c.uid, 0u);
    }
  }
  EXPECT_TRUE(found);
  ASSERT_TRUE(lease->release().ok());
  for (auto& w : waits) EXPECT_TRUE(w.get());
}

TEST_F(LimitsTest, ConnectionsPerPeerAndTheGlobalLeaseLimit) {
  start({"--max-connections", "3", "--max-leases", "2"});
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 3; ++i) clients.push_back(cluster.connect(0));
  Status status;
  auto fourth = Client::connect(cluster.socket(0), &status);
  if (fourth) {
    // Served only to say why: every call answers the limit, then the connection closes.
    EXPECT_FALSE(take(*fourth, "x", &status));
  }
  EXPECT_EQ(status.code, fourth ? ErrorCode::kLimitReached : ErrorCode::kSidecarUnavailable);
  if (fourth) {
    EXPECT_NE(status.message.find("--max-connections"), std::string::npos) << status.message;
  }
  EXPECT_NE(cluster.sidecar(0).log().find("refused connection"), std::string::npos);
  clients.pop_back();
  ASSERT_TRUE(waitUntil(
      [&] {
        auto c = Client::connect(cluster.socket(0), &status);
        SidecarStatus s;
        return c && c->status(&s).ok();
      },
      milliseconds(5000)));

  auto a = take(*clients[0], "a", &status);
  auto b = take(*clients[1], "b", &status);
  ASSERT_TRUE(a && b) << status.message;
  EXPECT_FALSE(take(*clients[0], "c", &status));
  EXPECT_NE(status.message.find("--max-leases"), std::string::npos) << status.message;
}

TEST_F(LimitsTest, AnotherUidOutsideTheAllowListIsDeniedAndAudited) {
  start({"--allow-uid", "0"});
  std::string log;
  int exit = fencectlAsNobody({"status"}, &log);
  EXPECT_NE(exit, 0) << log;
  EXPECT_NE(log.find("permission denied"), std::string::npos) << log;
  EXPECT_NE(log.find("--allow-uid"), std::string::npos) << log;
  EXPECT_NE(log.find("uid 65534"), std::string::npos) << log;
  ASSERT_TRUE(waitUntil(
      [&] {
        return cluster.sidecar(0).log().find("refused connection pid") != std::string::npos;
      },
      milliseconds(2000)));
  // Root, on the list, is served.
  auto client = cluster.connect(0);
  Status status;
  EXPECT_TRUE(take(*client, "allowed", &status)) << status.message;
  EXPECT_GE(statusOf(*client).refusedTotal, 1u);
}

// Issue 24: under --socket-world the lease table was 0644, so a uid the allow-list refuses read
// every lease's name, token and deadline from it. It is 0640 now: the socket's group reads it.
TEST_F(LimitsTest, TheLeaseTableIsUnreadableToAUidTheAllowListRefuses) {
  start({"--allow-uid", "0,65533"});
  auto client = cluster.connect(0);
  Status status;
  auto lease = take(*client, "secret-job", &status);
  ASSERT_TRUE(lease) << status.message;
  const std::string table = cluster.socket(0) + ".leases";
  auto readAs = [&](std::vector<std::string> ids) {
    std::vector<std::string> argv{"setpriv"};
    argv.insert(argv.end(), ids.begin(), ids.end());
    argv.insert(argv.end(), {"head", "-c", "8", table});
    ChildProcess child(argv, cluster.newLogPath("read-table"));
    int exit = child.wait(milliseconds(10'000));
    return std::make_pair(exit, child.log());
  };
  auto [refusedExit, refusedLog] = readAs({"--reuid=65534", "--regid=65534", "--clear-groups"});
  EXPECT_NE(refusedExit, 0) << refusedLog;
  EXPECT_NE(refusedLog.find("Permission denied"), std::string::npos) << refusedLog;
  // An allowed uid of the socket's group (k8s/: the application in the sidecar's group) reads it.
  auto [allowedExit, allowedLog] = readAs({"--reuid=65533", "--regid=65533", "--groups=0"});
  EXPECT_EQ(allowedExit, 0) << allowedLog;
}

TEST_F(LimitsTest, ConnectionsAreLoggedWithCredentialsAndCloseReason) {
  start({});
  { auto client = cluster.connect(0); }
  ASSERT_TRUE(waitUntil(
      [&] {
        auto log = cluster.sidecar(0).log();
        return log.find(" uid 0 ") != std::string::npos &&
               log.find("closed: peer closed") != std::string::npos;
      },
      milliseconds(5000)))
      << cluster.sidecar(0).log();
}

}  // namespace
}  // namespace fencekeeper::testing
