// The status answer with 100,000 leases (engine on the in-memory ZooKeeper): the counts cover
// every lease, the listing holds at most the cap and says it was cut, and how long building and
// encoding an answer holds the loop is printed (bench/ measures it against the RPC path).
#include <capnp/compat/json.h>
#include <capnp/message.h>
#include <gtest/gtest.h>

#include <chrono>

#include "sidecar/engine/lock_engine.h"
#include "sidecar/rpc/status_report.h"
#include "sidecar/status/metrics.h"
#include "sidecar/zk/fake_zk.h"
#include "tests/support/engine_request.h"
#include "tests/support/manual_executor.h"

namespace fencekeeper::rpc {
namespace {

using Clock = std::chrono::steady_clock;

long long usSince(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
}

TEST(StatusListing, HundredThousandLeasesAreCountedAndTheListingIsCappedAndSaysSo) {
  testing::ManualExecutor ex;
  ManualTimer timer;
  zk::FakeZkServer server;
  zk::FakeZkClient zk(server, ex);
  engine::EngineConfig config;
  config.instanceId = "status";
  config.maxLeases = config.maxLeasesPerPeer = config.maxWaitingPerPeer = 0;  // unlimited
  engine::LockEngine engine(zk, timer, config);
  auto settle = [&] {
    while (ex.runAll() > 0) {
    }
  };
  settle();
  timer.advance(Millis(1000));
  settle();
  constexpr int kLeases = 100'000;
  std::vector<std::unique_ptr<testing::EngineRequest>> leases;
  leases.reserve(kLeases);
  for (int i = 0; i < kLeases; ++i) {
    leases.push_back(
        testing::startRequest(engine, "l" + std::to_string(i), Millis(60'000), Millis(600'000)));
  }
  settle();
  ASSERT_TRUE(leases.back()->granted());

  ServerContext ctx{engine, zk, timer, "/fencekeeper", timer.now()};
  {  // The first listing after 100k grants pays the allocator's consolidation: time the next.
    capnp::MallocMessageBuilder warm;
    fillStatus(ctx, warm.initRoot<ipc::Status>(), 1'000);
  }
  auto t0 = Clock::now();
  capnp::MallocMessageBuilder message;
  auto status = message.initRoot<ipc::Status>();
  fillStatus(ctx, status, 1'000);
  long long fillUs = usSince(t0);
  EXPECT_EQ(status.getLeasesHeld(), static_cast<uint32_t>(kLeases));
  EXPECT_EQ(status.getLeases().size(), 1'000u);
  EXPECT_TRUE(status.getListingTruncated());
  EXPECT_EQ(status.getListingCap(), 1'000u);

  capnp::JsonCodec codec;
  t0 = Clock::now();
  auto compact = codec.encode(status.asReader());
  long long compactUs = usSince(t0);
  codec.setPrettyPrint(true);
  t0 = Clock::now();
  auto pretty = codec.encode(status.asReader());
  long long prettyUs = usSince(t0);

  // The status socket's way: the listing in slices of 256 visits, entries encoded 32 a turn.
  engine::EngineStatus sliced = engine.counts();
  long long longestSliceUs = 0;
  int slices = 0;
  engine::LeaseId next = 1;
  do {
    t0 = Clock::now();
    next = engine.listSlice(next, 256, 1'000, sliced);
    longestSliceUs = std::max(longestSliceUs, usSince(t0));
    ++slices;
  } while (next != 0);
  EXPECT_EQ(sliced.leases.size(), 1'000u);
  EXPECT_TRUE(sliced.truncated);
  t0 = Clock::now();
  for (size_t i = 0; i < 32; ++i) {
    capnp::MallocMessageBuilder entry(256);
    fillLease(sliced.leases[i], entry.initRoot<ipc::LeaseSummary>());
    codec.encode(entry.getRoot<ipc::LeaseSummary>().asReader());
  }
  long long encode32Us = usSince(t0);

  status::Metrics metrics("test", false);
  t0 = Clock::now();
  auto counts = engine.counts();
  status::GaugeReadings now;
  now.leases = counts.held;
  std::string text = metrics.render(now);
  long long metricsUs = usSince(t0);
  EXPECT_NE(text.find("fencekeeper_leases 100000"), std::string::npos);
  std::printf(
      "100,000 leases: in one go, status of 1,000 filled in %lld us, JSON %lld us (%zu bytes; "
      "pretty %lld us, %zu bytes); in slices, %d listing slices of at most %lld us, 32 entries "
      "encoded in %lld us; metrics counted and rendered in %lld us\n",
      fillUs, compactUs, compact.size(), prettyUs, pretty.size(), slices, longestSliceUs,
      encode32Us, metricsUs);
}

}  // namespace
}  // namespace fencekeeper::rpc
