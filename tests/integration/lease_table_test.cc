// The shared-memory lease table of a real sidecar, read as a client reads it (its own read-only
// mapping of the file leaseTable() names): a lease's slot is Held with the acquire's token and
// generation, turns Released at release (before the answer) and Lost when its TTL runs out (the
// delays printed), and a table turned off answers notHeld and gives no slot.
#include <capnp/rpc-twoparty.h>
#include <gtest/gtest.h>
#include <kj/async-io.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <boost/interprocess/file_mapping.hpp>
#include <boost/interprocess/mapped_region.hpp>
#include <thread>

#include "ipc/fencekeeper.capnp.h"
#include "ipc/lease_table_layout.h"
#include "tests/support/sidecar_cluster.h"
#include "tests/support/wait.h"

namespace fencekeeper::testing {
namespace {

namespace lt = lease_table;
namespace bip = boost::interprocess;
using std::chrono::milliseconds;

uint64_t bootNs() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec);
}

// One raw Cap'n Proto connection to a sidecar.
struct Connection {
  explicit Connection(const std::string& socket)
      : io(kj::setupAsyncIo()),
        stream(io.provider->getNetwork()
                   .parseAddress(kj::str("unix:", socket.c_str()))
                   .wait(io.waitScope)
                   ->connect()
                   .wait(io.waitScope)),
        rpc(*stream),
        sidecar(rpc.bootstrap().castAs<ipc::Sidecar>()) {}
  capnp::Response<ipc::Sidecar::AcquireResults> acquire(const std::string& name, uint32_t ttlMs) {
    auto request = sidecar.acquireRequest();
    request.setName(name);
    request.setTtlMs(ttlMs);
    request.setWaitMs(5000);
    return request.send().wait(io.waitScope);
  }
  kj::AsyncIoContext io;
  kj::Own<kj::AsyncIoStream> stream;
  capnp::TwoPartyClient rpc;
  ipc::Sidecar::Client sidecar;
};

// The table as a client maps it: read-only.
struct Mapped {
  explicit Mapped(const std::string& path)
      : file(path.c_str(), bip::read_only), region(file, bip::read_only) {}
  const lt::Header& header() const { return *static_cast<const lt::Header*>(region.get_address()); }
  lt::SlotView slot(uint32_t i) const {
    auto* slots = reinterpret_cast<const lt::Slot*>(static_cast<const char*>(region.get_address()) +
                                                    lt::kHeaderBytes);
    return lt::readConsistent(slots[i], true).value();
  }
  bip::file_mapping file;
  bip::mapped_region region;
};

TEST(LeaseTableSidecarTest, ALeasesSlotIsHeldWithItsTokenThenReleasedOrLost) {
  SidecarCluster cluster;
  size_t i = cluster.startSidecar();
  ASSERT_TRUE(cluster.waitReady(i));
  Connection c(cluster.socket(i));
  auto where = c.sidecar.leaseTableRequest().send().wait(c.io.waitScope);
  ASSERT_EQ(where.getError(), ipc::Error::OK) << where.getDetail().cStr();
  std::string path = where.getPath();
  EXPECT_EQ(path, cluster.socket(i) + ".leases");
  EXPECT_EQ(where.getLayoutVersion(), lt::kLayoutVersion);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(st.st_uid, geteuid());

  Mapped table(path);
  EXPECT_EQ(lt::load(table.header().magic), lt::kMagic);
  EXPECT_EQ(lt::load(table.header().format), lt::kFormat);
  EXPECT_EQ(lt::load(table.header().instance), where.getInstance());
  EXPECT_EQ(lt::load(table.header().capacity), 10'000u);  // --max-leases' default
  EXPECT_EQ(lt::load(table.header().sessionState),
            static_cast<uint64_t>(lt::SessionState::kVouched));

  auto held = c.acquire("shm/one", 10'000);
  ASSERT_EQ(held.getError(), ipc::Error::OK) << held.getDetail().cStr();
  ASSERT_GT(held.getTableGeneration(), 0u);
  uint32_t slot = held.getTableSlot();
  auto v = table.slot(slot);
  EXPECT_EQ(v.state, lt::SlotState::kHeld);
  EXPECT_EQ(v.token, held.getToken());
  EXPECT_EQ(v.generation, held.getTableGeneration());
  EXPECT_EQ(v.nameView(), "shm/one");
  uint64_t validNs = lt::validForNs(v, held.getTableGeneration(), held.getToken(),
                                    lt::load(table.header().safeUntilNs), bootNs());
  EXPECT_GT(validNs, 0u);
  EXPECT_LE(validNs, 10'000'000'000u);

  // A reader spinning on the slot sees the release before the release's answer arrives.
  std::atomic<uint64_t> seenAt{0};
  std::thread reader([&] {
    auto deadline = bootNs() + 10'000'000'000;
    while (table.slot(slot).state == lt::SlotState::kHeld && bootNs() < deadline) {
    }
    seenAt = bootNs();
  });
  uint64_t sentAt = bootNs();
  auto released = held.getLease().releaseRequest().send().wait(c.io.waitScope);
  uint64_t answeredAt = bootNs();
  reader.join();
  ASSERT_EQ(released.getError(), ipc::Error::OK);
  v = table.slot(slot);
  EXPECT_EQ(v.state, lt::SlotState::kReleased);
  EXPECT_LE(seenAt.load(), answeredAt) << "in the table before release answered";
  std::printf("release: in the table %.1f us after the send, answered %.1f us after it\n",
              (seenAt - sentAt) / 1e3, (answeredAt - sentAt) / 1e3);
  EXPECT_EQ(lt::validForNs(v, held.getTableGeneration(), held.getToken(), UINT64_MAX, 0), 0u);

  // The freed slot goes to the next lease, with a new generation; its TTL runs out unrenewed.
  auto shortLived = c.acquire("shm/two", 200);
  ASSERT_EQ(shortLived.getError(), ipc::Error::OK) << shortLived.getDetail().cStr();
  EXPECT_EQ(shortLived.getTableSlot(), slot);
  EXPECT_EQ(shortLived.getTableGeneration(), held.getTableGeneration() + 1);
  EXPECT_EQ(table.slot(slot).state, lt::SlotState::kHeld);
  // The reader sees the loss moments after the deadline it was told (the sidecar's TTL timer).
  uint64_t deadline = table.slot(slot).validUntilNs, lostSeenAt = 0;
  ASSERT_GT(deadline, 0u) << "lost before its deadline was read";
  while (table.slot(slot).state == lt::SlotState::kHeld && bootNs() < deadline + 5'000'000'000) {
  }
  lostSeenAt = bootNs();
  ASSERT_EQ(table.slot(slot).state, lt::SlotState::kLost);
  std::printf("TTL loss: in the table %.1f us after the lease's deadline\n",
              (lostSeenAt - deadline) / 1e3);
}

TEST(LeaseTableSidecarTest, WithTheTableOffLeaseTableAnswersNotHeldAndLeasesGetNoSlot) {
  SidecarCluster cluster;
  SidecarOptions options;
  options.extraArgs = {"--lease-table", "none"};
  size_t i = cluster.startSidecar(options);
  ASSERT_TRUE(cluster.waitReady(i));
  Connection c(cluster.socket(i));
  auto where = c.sidecar.leaseTableRequest().send().wait(c.io.waitScope);
  EXPECT_EQ(where.getError(), ipc::Error::NOT_HELD);
  EXPECT_NE(std::string(where.getDetail().cStr()).find("--lease-table none"), std::string::npos);
  auto held = c.acquire("shm/none", 10'000);
  ASSERT_EQ(held.getError(), ipc::Error::OK);
  EXPECT_EQ(held.getTableGeneration(), 0u);
  struct stat st {};
  EXPECT_NE(stat((cluster.socket(i) + ".leases").c_str(), &st), 0) << "no file either";
}

}  // namespace
}  // namespace fencekeeper::testing
