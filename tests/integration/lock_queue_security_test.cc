// The lock engine against clients that do not play by the recipe, on the fake and on a real
// server: a ZooKeeper client without the sidecars' credentials (ACLs), a persistent node planted
// in a lock's queue, a parent owned by another identity, and a flood of holder() queries.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include "sidecar/engine/lock_engine.h"
#include "sidecar/zk/acl_audit.h"
#include "sidecar/zk/faulty_zk_client.h"
#include "tests/support/engine_request.h"
#include "tests/support/zk_backends.h"

namespace fencekeeper::engine {
namespace {

const zk::DigestCredentials kApp{"app", "s3cret"};
// What holder() sends (the session's heartbeats are syncs).
constexpr unsigned kReads = zk::FaultyZkClient::kGetChildren | zk::FaultyZkClient::kGet;

struct HolderAnswer {
  LeaseError error = LeaseError::kInternal;
  HolderInfo info;
  std::string detail;
};

template <typename Backend>
class LockQueueSecurityTest : public ::testing::Test {
 protected:
  // One sidecar: its session (with the application's credentials, or none), a FaultyZkClient
  // around it that counts the requests sent, its engine.
  struct Side {
    Side(Backend& env, const std::string& id, std::optional<zk::DigestCredentials> credentials)
        : zk(env.newClient(std::move(credentials))),
          counted(*zk, env.executor(), env.timer()),
          engine(counted, env.timer(), config(env, id)) {}
    static EngineConfig config(Backend& env, const std::string& id) {
      EngineConfig c;
      c.root = env.base() + "/fk";
      c.instanceId = id;
      return c;
    }
    std::unique_ptr<zk::Client> zk;
    zk::FaultyZkClient counted;
    LockEngine engine;
  };

  static void SetUpTestSuite() { Backend::startServer(); }
  static void TearDownTestSuite() { Backend::stopServer(); }

  std::unique_ptr<testing::EngineRequest> request(Side& s, const std::string& name,
                                                  Millis wait = Millis(60'000)) {
    return testing::startRequest(s.engine, name, wait, Millis(10'000));
  }
  std::unique_ptr<testing::EngineRequest> grant(Side& s, const std::string& name) {
    auto p = request(s, name);
    EXPECT_TRUE(env.until([&] { return p->outcome.has_value(); }));
    EXPECT_TRUE(p->granted());
    return p;
  }
  HolderAnswer holder(Side& s, const std::string& name) {
    std::optional<HolderAnswer> out;
    s.engine.holder(name, [&](LeaseError e, HolderInfo info, std::string detail) {
      out = HolderAnswer{e, std::move(info), std::move(detail)};
    });
    EXPECT_TRUE(env.until([&] { return out.has_value(); }));
    return out.value_or(HolderAnswer{});
  }
  // Sends one request and waits for its answer (`unanswered` if none comes).
  template <typename Result, typename Call>
  Result ask(Call call, Result unanswered) {
    std::optional<Result> out;
    call([&](Result r) { out = std::move(r); });
    EXPECT_TRUE(env.until([&] { return out.has_value(); }));
    return out.value_or(std::move(unanswered));
  }
  zk::Code remove(zk::Client& c, const std::string& path) {
    return ask<zk::Code>([&](auto done) { c.remove(path, done); }, zk::Code::kOther);
  }
  zk::Code create(zk::Client& c, const std::string& path, zk::CreateMode mode) {
    return ask<zk::CreateResult>([&](auto done) { c.create(path, "", mode, done); },
                                 zk::CreateResult{zk::Code::kOther, {}, {}})
        .code;
  }
  std::string root() { return env.base() + "/fk"; }
  std::string lock(const std::string& name) { return root() + "/locks/" + name; }
  std::vector<std::string> queue(const std::string& name) { return env.children(lock(name)); }
  // Parents made by a client without credentials: open ACLs, as before --zk-auth-file.
  void makeOpenParents(const std::string& name) {
    env.create(root(), "", zk::CreateMode::kPersistent);
    env.create(root() + "/locks", "", zk::CreateMode::kPersistent);
    env.create(lock(name), "", zk::CreateMode::kPersistent);
  }

  Backend env;
};

TYPED_TEST_SUITE(LockQueueSecurityTest, testing::ZkBackends, testing::ZkBackendNames);

// With credentials, every node the engine makes, parents included, is closed to other clients.
TYPED_TEST(LockQueueSecurityTest, AClientWithoutTheCredentialsCanReadButNeitherDeleteNorJoin) {
  typename TestFixture::Side a(this->env, "aaaa", kApp);
  auto held = this->grant(a, "jobs/nightly");
  auto stranger = this->env.newClient();
  auto nodes = this->queue("jobs/nightly");
  ASSERT_EQ(nodes.size(), 1u);
  std::string node = this->lock("jobs/nightly") + "/" + nodes[0];

  EXPECT_EQ(this->remove(*stranger, node), zk::Code::kNoAuth) << "a forced hand-over";
  EXPECT_EQ(this->create(*stranger, this->lock("jobs/nightly") + "/evil__lock__0000000000",
                         zk::CreateMode::kPersistent),
            zk::Code::kNoAuth)
      << "a planted queue entry";
  // Parents included: no new lock under the sidecar's tree, no parent removed or replaced.
  EXPECT_EQ(this->create(*stranger, this->lock("squat"), zk::CreateMode::kPersistent),
            zk::Code::kNoAuth);
  EXPECT_EQ(this->create(*stranger, this->lock("jobs/other"), zk::CreateMode::kPersistent),
            zk::Code::kNoAuth);
  EXPECT_EQ(this->create(*stranger, this->root() + "/x", zk::CreateMode::kPersistent),
            zk::Code::kNoAuth);
  EXPECT_EQ(this->remove(*stranger, this->lock("jobs")), zk::Code::kNoAuth);
  // But it can read: holder() from a second sidecar without credentials works.
  typename TestFixture::Side reader(this->env, "bbbb", std::nullopt);
  auto seen = this->holder(reader, "jobs/nightly");
  EXPECT_EQ(seen.error, LeaseError::kOk);
  EXPECT_TRUE(seen.info.held);
  EXPECT_EQ(seen.info.token, held->outcome->token);
  EXPECT_EQ(a.engine.token(held->outcome->id).error, LeaseError::kOk);
  // And a sidecar without them may not queue: permissionDenied naming the lock.
  auto refused = this->request(reader, "jobs/nightly");
  ASSERT_TRUE(this->env.until([&] { return refused->outcome.has_value(); }));
  EXPECT_EQ(refused->outcome->error, LeaseError::kPermissionDenied);
  EXPECT_NE(refused->outcome->detail.find(this->lock("jobs/nightly")), std::string::npos)
      << refused->outcome->detail;
}

// A lock parent another identity owns: the ACL error says so (not "zookeeper unavailable").
TYPED_TEST(LockQueueSecurityTest, AnAclErrorOnALockParentIsPermissionDeniedNamingThePath) {
  auto other = this->env.newClient(zk::DigestCredentials{"someone", "else"});
  ASSERT_EQ(this->create(*other, this->root(), zk::CreateMode::kPersistent), zk::Code::kOk);
  ASSERT_EQ(this->create(*other, this->root() + "/locks", zk::CreateMode::kPersistent),
            zk::Code::kOk);
  typename TestFixture::Side a(this->env, "aaaa", kApp);
  auto refused = this->request(a, "x");
  ASSERT_TRUE(this->env.until([&] { return refused->outcome.has_value(); }));
  EXPECT_EQ(refused->outcome->error, LeaseError::kPermissionDenied);
  EXPECT_NE(refused->outcome->detail.find(this->root() + "/locks"), std::string::npos)
      << refused->outcome->detail;
  EXPECT_EQ(std::string(errorName(refused->outcome->error)), "permission denied");
}

// A persistent node planted in a queue is reported as foreign; the waiter waits behind it (never
// skips it) and is granted once an operator deleted it.
TYPED_TEST(LockQueueSecurityTest, APlantedNodeIsForeignAndTheWaiterWaitsUntilItIsDeleted) {
  this->makeOpenParents("p");
  std::string planted = this->env.create(this->lock("p") + "/evil__lock__0000000000", "attacker",
                                         zk::CreateMode::kPersistent);
  ASSERT_FALSE(planted.empty());
  typename TestFixture::Side a(this->env, "aaaa", std::nullopt);
  auto waiter = this->request(a, "p");
  ASSERT_TRUE(this->env.until([&] { return this->queue("p").size() == 2u; }));
  ASSERT_TRUE(this->env.until([&] { return !a.engine.status().foreignNodes.empty(); }));
  EXPECT_EQ(a.engine.status().foreignNodes, std::vector<std::string>{planted});

  auto seen = this->holder(a, "p");
  EXPECT_EQ(seen.error, LeaseError::kOk);
  EXPECT_TRUE(seen.info.foreign) << "the attacker is no holder";
  EXPECT_EQ(seen.info.foreignNode, planted);
  EXPECT_FALSE(seen.info.thisSidecar);
  EXPECT_EQ(seen.info.waiters, 1u);

  this->env.pass(Millis(500));
  EXPECT_FALSE(waiter->outcome.has_value()) << "skipped the planted node";
  this->env.remove(planted);  // the operator
  ASSERT_TRUE(this->env.until([&] { return waiter->granted(); }));
  EXPECT_TRUE(a.engine.status().foreignNodes.empty());
  EXPECT_FALSE(this->holder(a, "p").info.foreign);
}

// A queue entry this session may not read cannot be watched: the waiter looks again every second
// and is granted once the entry is gone.
TYPED_TEST(LockQueueSecurityTest, AnUnreadablePredecessorIsWaitedBehindAndLookedAtAgain) {
  this->makeOpenParents("u");
  std::string hidden = this->env.create(this->lock("u") + "/0a1b2c__lock__", "secret",
                                        zk::CreateMode::kEphemeralSequential);
  ASSERT_FALSE(hidden.empty());
  // Its ACL: all rights for another identity only (the hash is no real one: nobody matches it).
  this->env.setAcl(hidden, {zk::Acl{"digest", "someone:nobody", zk::kPermAll}});
  typename TestFixture::Side a(this->env, "aaaa", std::nullopt);
  auto waiter = this->request(a, "u");
  ASSERT_TRUE(this->env.until([&] { return this->queue("u").size() == 2u; }));
  this->env.pass(Millis(1'500));  // at least one look again
  EXPECT_FALSE(waiter->outcome.has_value()) << "skipped the unreadable entry";
  EXPECT_EQ(this->holder(a, "u").error, LeaseError::kPermissionDenied);
  this->env.remove(hidden);  // its parent lets anyone delete it
  ASSERT_TRUE(this->env.until([&] { return waiter->granted(); }, Millis(5'000)));
}

// A kazoo contender (ephemeral, another session) is an ordinary queue entry.
TYPED_TEST(LockQueueSecurityTest, AKazooContenderIsNotForeign) {
  this->makeOpenParents("k");
  std::string kazoo = this->env.create(this->lock("k") + "/0f9e8d7c6b5a__lock__", "kazoo",
                                       zk::CreateMode::kEphemeralSequential);
  ASSERT_FALSE(kazoo.empty());
  typename TestFixture::Side a(this->env, "aaaa", std::nullopt);
  auto waiter = this->request(a, "k");
  ASSERT_TRUE(this->env.until([&] { return this->queue("k").size() == 2u; }));
  auto seen = this->holder(a, "k");
  EXPECT_TRUE(seen.info.held);
  EXPECT_FALSE(seen.info.foreign);
  EXPECT_TRUE(seen.info.foreignNode.empty());
  EXPECT_EQ(seen.info.ownerLabel, "kazoo");
  EXPECT_TRUE(a.engine.status().foreignNodes.empty());
  this->env.remove(kazoo);
  ASSERT_TRUE(this->env.until([&] { return waiter->granted(); }));
}

// Defect 5: 20,000 concurrent holder() calls of one lock cost two ZooKeeper rounds, not 20,000; a
// call made while a round is out waits for the next one (its answer is never older than it).
TYPED_TEST(LockQueueSecurityTest, ConcurrentHolderQueriesOfOneLockShareOneZooKeeperRound) {
  typename TestFixture::Side a(this->env, "aaaa", std::nullopt);
  auto held = this->grant(a, "busy");
  uint64_t before = a.counted.sent(kReads);
  constexpr int kCalls = 20'000;
  int answered = 0;
  bool allHeld = true;
  for (int i = 0; i < kCalls; ++i) {
    a.engine.holder("busy", [&](LeaseError e, HolderInfo info, std::string) {
      ++answered;
      allHeld = allHeld && e == LeaseError::kOk && info.held && info.token == held->outcome->token;
    });
  }
  ASSERT_TRUE(this->env.until([&] { return answered == kCalls; }));
  EXPECT_TRUE(allHeld);
  uint64_t sent = a.counted.sent(kReads) - before;
  std::printf("%d concurrent holder() calls: %llu ZooKeeper requests\n", kCalls,
              static_cast<unsigned long long>(sent));
  // Two rounds of a getChildren and a get: the first caller's, then one for the 19,999 who asked
  // while it was out.
  EXPECT_EQ(sent, 4u);

  // Asked while a round is out: answered by the next round, which starts when the first ends.
  before = a.counted.sent(kReads);
  int first = 0, second = 0;
  a.engine.holder("busy", [&](LeaseError, HolderInfo, std::string) { ++first; });
  a.engine.holder("busy", [&](LeaseError, HolderInfo, std::string) { ++second; });
  EXPECT_EQ(a.counted.sent(kReads) - before, 0u) << "a read leaves on a later turn (ReadPacer)";
  ASSERT_TRUE(this->env.until([&] { return first == 1 && second == 1; }));
  EXPECT_EQ(a.counted.sent(kReads) - before, 4u);
}

// At start: existing parents with an open ACL are found; parents the sidecar made are not.
TYPED_TEST(LockQueueSecurityTest, TheStartupAuditFindsParentsWithAnOpenAcl) {
  this->makeOpenParents("old");
  typename TestFixture::Side a(this->env, "aaaa", kApp);
  auto fresh = this->grant(a, "new");
  std::optional<zk::AclAuditReport> report;
  zk::AclAudit audit(*a.zk, this->env.timer(), this->root(),
                     [&](zk::AclAuditReport r) { report = std::move(r); });
  ASSERT_TRUE(this->env.until([&] { return report.has_value(); }));
  std::sort(report->openNodes.begin(), report->openNodes.end());
  EXPECT_EQ(report->openNodes,
            (std::vector<std::string>{this->root(), this->root() + "/locks", this->lock("old")}));
  EXPECT_TRUE(report->unchecked.empty());
  EXPECT_EQ(report->checked, 4u);  // root, locks, old, new
  auto lines = zk::describe(*report);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("open ACL"), std::string::npos);
}

}  // namespace
}  // namespace fencekeeper::engine
