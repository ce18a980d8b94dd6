// The engine and the lease table together (the in-memory ZooKeeper, manual time): a lease's slot is
// Held from its grant, and a loss or release is in the table before the engine deletes the node or
// calls the holder's watcher, checked at the moment of the delete request and of the call. The
// header's safeUntil follows the SessionGuard, never ahead of it, and drops to 0 at a lapse.
#include <gtest/gtest.h>

#include <filesystem>

#include "sidecar/engine/lock_engine.h"
#include "sidecar/shm/lease_table_publisher.h"
#include "sidecar/zk/fake_zk.h"
#include "sidecar/zk/faulty_zk_client.h"
#include "tests/support/manual_executor.h"
#include "tests/support/spy_zk_client.h"

namespace fencekeeper::shm {
namespace {

namespace lt = lease_table;
using engine::LeaseError;
using engine::LossReason;


// What the table said about one lease when something happened to it.
struct Seen {
  lt::SlotState state = lt::SlotState::kFree;
  uint64_t safeUntilNs = UINT64_MAX;
};

class LeaseTableOrderTest : public ::testing::Test {
 protected:
  LeaseTableOrderTest() {
    char tmpl[] = "/tmp/fk-lease-order-XXXXXX";
    dir = mkdtemp(tmpl);
    table = std::make_unique<LeaseTableWriter>(dir + "/t.leases", 2, 42);
    publisher = std::make_unique<LeaseTablePublisher>(*table, TimePoint{});
    observers.add(*publisher);
    engine::EngineConfig config;
    config.instanceId = "aaaa";
    eng = std::make_unique<engine::LockEngine>(spy, timer, config, &observers);
    // Grants need two answered heartbeats a quarter of the session timeout (4 s) apart.
    settle();
    timer.advance(Millis(1000));
    settle();
  }
  ~LeaseTableOrderTest() override {
    eng.reset();
    std::filesystem::remove_all(dir);
  }
  void settle() {
    while (ex.runAll() > 0) {
    }
  }
  Seen look(uint32_t slot) const {
    auto v = lt::readConsistent(table->slot(slot), false);
    return {v ? v->state : lt::SlotState::kFree, lt::load(table->header().safeUntilNs)};
  }
  // A granted lease whose slot is watched: at its loss notice and at each delete request.
  struct Watched {
    std::optional<engine::AcquireOutcome> outcome;
    TablePlace place;
    std::optional<Seen> atLoss;
    std::optional<Seen> atDelete;
    std::vector<LossReason> losses;
  };
  std::unique_ptr<Watched> grant(const std::string& name, Millis ttl = Millis(10000)) {
    auto w = std::make_unique<Watched>();
    engine::AcquireSpec spec;
    spec.name = name;
    spec.ttl = ttl;
    spec.wait = Millis(1000);
    Watched* raw = w.get();
    spec.onLost = [this, raw](uint64_t, LossReason reason, std::function<void()> told) {
      raw->losses.push_back(reason);
      raw->atLoss = look(raw->place.slot);
      told();
    };
    eng->acquire(std::move(spec), [raw](engine::AcquireOutcome o) { raw->outcome = o; });
    settle();
    EXPECT_TRUE(w->outcome && w->outcome->error == LeaseError::kOk);
    if (!w->outcome || w->outcome->error != LeaseError::kOk) return w;
    auto place = table->placeOf(w->outcome->id);
    EXPECT_TRUE(place);
    w->place = place.value_or(TablePlace{});
    auto v = lt::readConsistent(table->slot(w->place.slot), true);
    EXPECT_EQ(v->state, lt::SlotState::kHeld);
    EXPECT_EQ(v->token, w->outcome->token);
    EXPECT_EQ(v->generation, w->place.generation);
    EXPECT_EQ(v->nameView(), name);
    spy.onRemove = [this, raw](const std::string&) {
      if (!raw->atDelete) raw->atDelete = look(raw->place.slot);
    };
    return w;
  }
  std::string nodeOf(const std::string& name) {
    auto children = server.childrenOf("/fencekeeper/locks/" + name);
    return children.empty() ? "" : "/fencekeeper/locks/" + name + "/" + children[0];
  }

  std::string dir;
  testing::ManualExecutor ex;
  ManualTimer timer;
  zk::FakeZkServer server;
  zk::FakeZkClient fake{server, ex};
  zk::FaultyZkClient faults{fake, ex, timer};
  testing::SpyZkClient spy{faults};
  std::unique_ptr<LeaseTableWriter> table;
  std::unique_ptr<LeaseTablePublisher> publisher;
  engine::ObserverList observers;
  std::unique_ptr<engine::LockEngine> eng;
};

TEST_F(LeaseTableOrderTest, TheHeadersSafeUntilIsTheGuardsAndRenewWritesTheDeadline) {
  EXPECT_GT(eng->safeUntil().count(), 0);
  EXPECT_EQ(lt::load(table->header().safeUntilNs), static_cast<uint64_t>(eng->safeUntil().count()));
  EXPECT_EQ(lt::load(table->header().sessionState),
            static_cast<uint64_t>(lt::SessionState::kVouched));
  auto w = grant("x");
  auto before = lt::readConsistent(table->slot(w->place.slot), false)->validUntilNs;
  timer.advance(Millis(500));
  settle();
  ASSERT_EQ(eng->renew(w->outcome->id, Millis(20000)).error, LeaseError::kOk);
  auto after = lt::readConsistent(table->slot(w->place.slot), false)->validUntilNs;
  EXPECT_EQ(after, static_cast<uint64_t>((timer.now() + Millis(20000)).count()));
  EXPECT_GT(after, before);
  // Heartbeats go on: the header follows each extension, never ahead of the guard.
  for (int i = 0; i < 8; ++i) {
    timer.advance(Millis(700));
    settle();
    EXPECT_EQ(lt::load(table->header().safeUntilNs),
              static_cast<uint64_t>(eng->safeUntil().count()));
  }
}

TEST_F(LeaseTableOrderTest, ATtlExpiryIsInTheTableBeforeTheNodeIsDeletedOrTheHolderTold) {
  auto w = grant("x", Millis(1000));
  timer.advance(Millis(1100));
  settle();
  ASSERT_EQ(w->losses, std::vector<LossReason>{LossReason::kTtlExpired});
  ASSERT_TRUE(w->atDelete && w->atLoss);
  EXPECT_EQ(w->atDelete->state, lt::SlotState::kLost);
  EXPECT_EQ(w->atLoss->state, lt::SlotState::kLost);
  EXPECT_FALSE(table->placeOf(w->outcome->id));
}

TEST_F(LeaseTableOrderTest, AnOwnNodeDeletedElsewhereIsInTheTableBeforeTheHolderIsTold) {
  auto w = grant("x");
  server.removeExternally(nodeOf("x"));
  settle();
  ASSERT_EQ(w->losses, std::vector<LossReason>{LossReason::kReleasedElsewhere});
  EXPECT_EQ(w->atLoss->state, lt::SlotState::kLost);
}

TEST_F(LeaseTableOrderTest, AVouchingLapseZeroesSafeUntilAndLosesTheSlotBeforeAnythingElse) {
  auto w = grant("x", Millis(3'600'000));
  faults.stall(zk::FaultyZkClient::kSync);  // heartbeats go unanswered: vouching runs out
  for (int i = 0; i < 40 && w->losses.empty(); ++i) {
    timer.advance(Millis(100));
    settle();
    // Never ahead of the guard while it still vouches.
    if (eng->safeUntil().count() > 0) {
      EXPECT_LE(lt::load(table->header().safeUntilNs),
                static_cast<uint64_t>(eng->safeUntil().count()));
    }
  }
  ASSERT_EQ(w->losses, std::vector<LossReason>{LossReason::kSessionUncertain});
  ASSERT_TRUE(w->atLoss && w->atDelete);
  EXPECT_EQ(w->atLoss->state, lt::SlotState::kLost);
  EXPECT_EQ(w->atLoss->safeUntilNs, 0u);
  EXPECT_EQ(w->atDelete->state, lt::SlotState::kLost);
  EXPECT_EQ(w->atDelete->safeUntilNs, 0u);
  EXPECT_EQ(lt::load(table->header().sessionState),
            static_cast<uint64_t>(lt::SessionState::kUncertain));
  faults.unstall();
}

TEST_F(LeaseTableOrderTest, ASessionExpiryZeroesSafeUntilBeforeTheHolderIsTold) {
  auto w = grant("x");
  server.expireSession(fake);
  settle();
  ASSERT_FALSE(w->losses.empty());
  EXPECT_EQ(w->losses[0], LossReason::kSessionLost);
  EXPECT_EQ(w->atLoss->state, lt::SlotState::kLost);
  EXPECT_EQ(w->atLoss->safeUntilNs, 0u);
}

TEST_F(LeaseTableOrderTest, AReleaseIsInTheTableBeforeTheDeleteAndTheAnswer) {
  auto w = grant("x");
  std::optional<Seen> atAnswer;
  eng->release(w->outcome->id, [&](engine::ReleaseOutcome) { atAnswer = look(w->place.slot); });
  settle();
  ASSERT_TRUE(w->atDelete && atAnswer);
  EXPECT_EQ(w->atDelete->state, lt::SlotState::kReleased);
  EXPECT_EQ(atAnswer->state, lt::SlotState::kReleased);
  EXPECT_TRUE(w->losses.empty());
}

TEST_F(LeaseTableOrderTest, AWithdrawnLeaseIsReleasedInTheTableBeforeItsNodeIsDeleted) {
  auto w = grant("x");
  eng->withdraw(w->outcome->id);
  settle();
  ASSERT_TRUE(w->atDelete);
  EXPECT_EQ(w->atDelete->state, lt::SlotState::kReleased);
}

TEST_F(LeaseTableOrderTest, AShutdownLossIsInTheTableBeforeTheHolderIsTold) {
  auto w = grant("x");
  bool done = false;
  eng->shutdown([&] { done = true; });
  settle();
  EXPECT_TRUE(done);
  ASSERT_EQ(w->losses, std::vector<LossReason>{LossReason::kSidecarShutdown});
  EXPECT_EQ(w->atLoss->state, lt::SlotState::kLost);
}

TEST_F(LeaseTableOrderTest, LeasesBeyondTheCapacityGetNoSlotAndAFreedOneIsReused) {
  auto a = grant("a");
  auto b = grant("b");
  std::optional<engine::AcquireOutcome> third;
  engine::AcquireSpec spec;
  spec.name = "c";
  spec.wait = Millis(1000);
  eng->acquire(std::move(spec), [&](engine::AcquireOutcome o) { third = o; });
  settle();
  ASSERT_TRUE(third && third->error == LeaseError::kOk) << "granted all the same";
  EXPECT_FALSE(table->placeOf(third->id));
  eng->withdraw(a->outcome->id);
  settle();
  auto d = grant("d");
  EXPECT_EQ(d->place.slot, a->place.slot);
  EXPECT_EQ(d->place.generation, a->place.generation + 1);
}

}  // namespace
}  // namespace fencekeeper::shm
