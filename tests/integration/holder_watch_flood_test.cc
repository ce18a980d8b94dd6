// Issue 24, item 1 and 2: one uid's holder watches of names nobody uses must not make another
// holder's lease lapse, must stay within the per-uid watch budget, and must leave no node behind
// in ZooKeeper. Raw Cap'n Proto connections open the watches, as a hostile local user would.
#include <capnp/rpc-twoparty.h>
#include <gtest/gtest.h>
#include <kj/async-io.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>

#include "fencekeeper/client.h"
#include "ipc/fencekeeper.capnp.h"
#include "sidecar/devzk/proc_state.h"
#include "tests/support/loss_recorder.h"
#include "tests/support/raw_sidecar_connection.h"
#include "tests/support/sidecar_cluster.h"
#include "tests/support/wait.h"
#include "tests/support/zk_inspector.h"

namespace fencekeeper::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class IgnoringWatcher final : public ipc::HolderWatcher::Server {
  kj::Promise<void> changed(ChangedContext) override { return kj::READY_NOW; }
};

struct WatchFlood {
  std::atomic<int> opened{0};
  std::atomic<int> refused{0};
  std::atomic<bool> settled{false};
  std::string refusal;  // the first refusal's detail, set before `settled`
};

// `connections` connections of this process's uid, each asking for `perConnection` watches of
// distinct names nobody uses, 100 calls in flight at a time (a peer that reads its answers: one
// that does not is closed by --max-queued-replies, another limit); keeps them all open, answering
// the sidecar's calls, for `hold`.
void floodWatches(const std::string& socket, int connections, int perConnection,
                  std::chrono::milliseconds hold, WatchFlood& out) {
  constexpr int kInFlight = 100;
  auto io = kj::setupAsyncIo();
  kj::Vector<RawSidecarConnection> conns;
  kj::Vector<ipc::HolderWatch::Client> watches;
  for (int c = 0; c < connections; ++c) {
    auto conn = connectRaw(io, socket);
    for (int i = 0; i < perConnection; i += kInFlight) {
      kj::Vector<kj::Promise<void>> answers;
      for (int k = i; k < std::min(perConnection, i + kInFlight); ++k) {
        auto request = conn.sidecar.watchHolderRequest();
        request.setName(kj::str("unused/c", c, "-", k));
        request.setWatcher(kj::heap<IgnoringWatcher>());
        answers.add(request.send().then([&](auto response) {
          if (response.getError() == ipc::Error::OK) {
            ++out.opened;
            watches.add(response.getWatch());
          } else if (out.refused++ == 0) {
            out.refusal = response.getDetail().cStr();
          }
        }));
      }
      kj::joinPromises(answers.releaseAsArray()).wait(io.waitScope);
    }
    conns.add(kj::mv(conn));
  }
  out.settled = true;
  io.provider->getTimer().afterDelay(hold.count() * kj::MILLISECONDS).wait(io.waitScope);
}

struct Outcome {
  bool lost = false;
  int lapses = 0;
  long rssBeforeKiB = 0;
  long rssPeakKiB = 0;
  bool holderNodeSeen = false;  // the holder's node, under the path layout this test expects
};

// A holder on a 4 s session, kept alive by its client, while the flood runs for `hold`.
Outcome holdThroughFlood(SidecarCluster& cluster, size_t i, int connections, int perConnection,
                         std::chrono::milliseconds hold, WatchFlood& flood) {
  auto client = cluster.connect(i);
  LossRecorder loss;
  auto o = acquireOptions(milliseconds(5000), milliseconds(30000));
  o.onLost = loss.callback();
  auto lease = client->acquire("steady", o);
  EXPECT_TRUE(lease);
  Outcome out;
  pid_t sidecar = cluster.sidecar(i).pid();
  out.rssBeforeKiB = devzk::procStatusKiB(sidecar, "VmRSS");
  std::atomic<bool> done{false};
  std::thread flooder([&] {
    floodWatches(cluster.socket(i), connections, perConnection, hold, flood);
    done = true;
  });
  while (!done) {  // the peak, sampled until the flood's connections close
    out.rssPeakKiB = std::max(out.rssPeakKiB, devzk::procStatusKiB(sidecar, "VmRSS"));
    std::this_thread::sleep_for(milliseconds(100));
  }
  flooder.join();
  out.lost = loss.lost.load();
  // Looked at while the lease is held: once released, ZooKeeper's container reaper (1 s in the
  // harness) may take its parent at any moment.
  ZkInspector zk("127.0.0.1:" + std::to_string(cluster.zk().clientPort(0)));
  out.holderNodeSeen = zk.children("/fencekeeper/locks/steady").size() == 1;
  std::string log = cluster.sidecar(i).log();
  for (size_t at = log.find("can no longer be vouched for"); at != std::string::npos;
       at = log.find("can no longer be vouched for", at + 1)) {
    ++out.lapses;
  }
  return out;
}

// Watching never creates: not even the flood's parent exists.
void expectNoNodesLeft(SidecarCluster& cluster, const Outcome& out) {
  EXPECT_TRUE(out.holderNodeSeen) << "the path this test expects";
  ZkInspector zk("127.0.0.1:" + std::to_string(cluster.zk().clientPort(0)));
  auto left = zk.children("/fencekeeper/locks/unused");
  EXPECT_FALSE(zk.exists("/fencekeeper/locks/unused")) << left.size() << " nodes left under it";
}

TEST(HolderWatchFlood, OneUidPastItsWatchBudgetIsRefusedAndCostsAnotherHolderNothing) {
  SidecarCluster cluster;
  size_t i = cluster.startSidecar(SidecarOptions{.sessionTimeout = "4s"});
  WatchFlood flood;
  auto out = holdThroughFlood(cluster, i, 20, 1'000, seconds(15), flood);
  std::printf("20 connections x 1,000 watches: %d opened, %d refused (%s); %d lapses; sidecar "
              "RSS %ld KiB before, %ld KiB at most\n",
              flood.opened.load(), flood.refused.load(), flood.refusal.c_str(), out.lapses,
              out.rssBeforeKiB, out.rssPeakKiB);
  EXPECT_EQ(flood.opened.load(), 1'000) << "the default --max-watches-per-peer";
  EXPECT_NE(flood.refusal.find("--max-watches-per-peer"), std::string::npos) << flood.refusal;
  EXPECT_FALSE(out.lost);
  EXPECT_EQ(out.lapses, 0);
  expectNoNodesLeft(cluster, out);
}

// The budgets raised to 20,000: the reads are paced (--max-holder-reads-per-peer, and at most 16
// out at once), so the heartbeat never queues behind the flood's. Before: 20,000 watches on a 4 s
// session gave 3-7 lapses in 15-20 s, and the holder was told "lost".
TEST(HolderWatchFlood, TwentyThousandWatchesOfUnusedNamesKeepTheHeartbeatAndLeaveNoNodes) {
  SidecarCluster cluster;
  size_t i = cluster.startSidecar(SidecarOptions{
      .sessionTimeout = "4s",
      .extraArgs = {"--max-watches-per-peer", "20000", "--max-watches", "20000"}});
  WatchFlood flood;
  auto out = holdThroughFlood(cluster, i, 20, 1'000, seconds(15), flood);
  std::printf("20,000 watches: %d opened; %d lapses; sidecar RSS %ld KiB before, %ld KiB at most "
              "(%ld bytes a watch)\n",
              flood.opened.load(), out.lapses, out.rssBeforeKiB, out.rssPeakKiB,
              (out.rssPeakKiB - out.rssBeforeKiB) * 1024 / std::max(1, flood.opened.load()));
  EXPECT_EQ(flood.opened.load(), 20'000);
  EXPECT_FALSE(out.lost);
  EXPECT_EQ(out.lapses, 0);
  expectNoNodesLeft(cluster, out);
}

}  // namespace
}  // namespace fencekeeper::testing
