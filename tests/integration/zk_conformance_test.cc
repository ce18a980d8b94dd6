// One suite, run on the in-memory fake and on a real ZooKeeper server: every zk::Client operation
// and session event the lock engine relies on behaves the same on both, so the fake stays honest.
// The FaultyZkClient cases check that its faults look alike over either client.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <type_traits>

#include "sidecar/zk/acl_audit.h"
#include "sidecar/zk/faulty_zk_client.h"
#include "tests/support/zk_backends.h"

namespace fencekeeper::testing {
namespace {

using zk::Code;
using zk::CreateMode;
using zk::SessionState;

template <typename Backend>
class ZkConformanceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { Backend::startServer(); }
  static void TearDownTestSuite() { Backend::stopServer(); }

  zk::CreateResult create(zk::Client& c, const std::string& path, CreateMode mode,
                          const std::string& data = "") {
    std::optional<zk::CreateResult> out;
    c.create(path, data, mode, [&](zk::CreateResult r) { out = r; });
    EXPECT_TRUE(env.until([&] { return out.has_value(); }));
    return out.value_or(zk::CreateResult{Code::kOther, {}, {}});
  }
  zk::GetResult get(zk::Client& c, const std::string& path) {
    std::optional<zk::GetResult> out;
    c.get(path, [&](zk::GetResult r) { out = r; });
    EXPECT_TRUE(env.until([&] { return out.has_value(); }));
    return out.value_or(zk::GetResult{Code::kOther, {}, {}});
  }
  zk::ChildrenResult children(zk::Client& c, const std::string& path) {
    std::optional<zk::ChildrenResult> out;
    c.getChildren(path, [&](zk::ChildrenResult r) { out = r; });
    EXPECT_TRUE(env.until([&] { return out.has_value(); }));
    return out.value_or(zk::ChildrenResult{Code::kOther, {}});
  }
  Code remove(zk::Client& c, const std::string& path) {
    std::optional<Code> out;
    c.remove(path, [&](Code r) { out = r; });
    EXPECT_TRUE(env.until([&] { return out.has_value(); }));
    return out.value_or(Code::kOther);
  }
  zk::AclResult acl(zk::Client& c, const std::string& path) {
    std::optional<zk::AclResult> out;
    c.getAcl(path, [&](zk::AclResult r) { out = r; });
    EXPECT_TRUE(env.until([&] { return out.has_value(); }));
    return out.value_or(zk::AclResult{Code::kOther, {}});
  }
  Code sync(zk::Client& c, const std::string& path) {
    std::optional<Code> out;
    c.sync(path, [&](Code r) { out = r; });
    EXPECT_TRUE(env.until([&] { return out.has_value(); }));
    return out.value_or(Code::kOther);
  }
  std::string path(const std::string& rest) { return env.base() + rest; }

  Backend env;
  std::unique_ptr<zk::Client> client = env.newClient();
};

// The session expired, and a new one is connected now (a real client may report connecting in
// between, when the new session's first connection does not hold: seen under TSan).
bool expiredThenConnected(const std::vector<SessionState>& seen) {
  auto expired = std::find(seen.begin(), seen.end(), SessionState::kExpired);
  return expired != seen.end() && !seen.empty() && seen.back() == SessionState::kConnected;
}

TYPED_TEST_SUITE(ZkConformanceTest, testing::ZkBackends, testing::ZkBackendNames);

const zk::DigestCredentials kApp{"app", "s3cret"};
// The identity the server derives: user:base64(sha1(user:password)) (openssl dgst -sha1 | base64).
constexpr const char* kAppDigest = "app:e2nIdT66oYnDgbYIwoOP6SxOio4=";

TYPED_TEST(ZkConformanceTest, NewClientIsConnectedWithASessionAndATimeout) {
  EXPECT_EQ(this->client->sessionState(), SessionState::kConnected);
  EXPECT_NE(this->client->sessionId(), 0);
  EXPECT_GT(this->client->negotiatedTimeoutMs(), 0);
}

TYPED_TEST(ZkConformanceTest, CreateModesAndTheirStat) {
  auto& c = *this->client;
  auto persistent = this->create(c, this->path("/p"), CreateMode::kPersistent, "data");
  ASSERT_EQ(persistent.code, Code::kOk);
  EXPECT_EQ(persistent.path, this->path("/p"));
  EXPECT_GT(persistent.stat.czxid, 0);
  EXPECT_EQ(persistent.stat.ephemeralOwner, 0);
  EXPECT_EQ(this->create(c, this->path("/p"), CreateMode::kPersistent).code, Code::kNodeExists);
  EXPECT_EQ(this->create(c, this->path("/missing/x"), CreateMode::kPersistent).code, Code::kNoNode);
  EXPECT_EQ(this->create(c, this->path("/container"), CreateMode::kContainer).code, Code::kOk);

  auto first = this->create(c, this->path("/p/guid__lock__"), CreateMode::kEphemeralSequential);
  auto second = this->create(c, this->path("/p/guid__lock__"), CreateMode::kEphemeralSequential);
  ASSERT_EQ(first.code, Code::kOk);
  ASSERT_EQ(second.code, Code::kOk);
  // Ten digits of the parent's counter, appended to the name asked for.
  EXPECT_EQ(first.path, this->path("/p/guid__lock__0000000000"));
  EXPECT_EQ(second.path, this->path("/p/guid__lock__0000000001"));
  EXPECT_GT(second.stat.czxid, first.stat.czxid);
  EXPECT_EQ(first.stat.ephemeralOwner, c.sessionId());
  // The Stat in the answer is the node's (the czxid is the fencing token).
  EXPECT_EQ(this->env.stat(first.path).czxid, first.stat.czxid);
}

// The suffix counts the children ever created under the parent, sequential or not (deletes do not
// count): a planted persistent node moves later requests' numbers on.
TYPED_TEST(ZkConformanceTest, SequenceSuffixesCountEveryChildCreated) {
  auto& c = *this->client;
  this->create(c, this->path("/s"), CreateMode::kPersistent);
  this->create(c, this->path("/s/planted__lock__0000000000"), CreateMode::kPersistent);
  this->create(c, this->path("/s/gone"), CreateMode::kPersistent);
  this->remove(c, this->path("/s/gone"));
  auto mine = this->create(c, this->path("/s/n__lock__"), CreateMode::kEphemeralSequential);
  EXPECT_EQ(mine.path, this->path("/s/n__lock__0000000002"));
}

TYPED_TEST(ZkConformanceTest, GetChildrenListsNamesAndKnowsMissingNodes) {
  auto& c = *this->client;
  this->create(c, this->path("/q"), CreateMode::kPersistent);
  this->create(c, this->path("/q/a"), CreateMode::kPersistent);
  this->create(c, this->path("/q/b"), CreateMode::kPersistent);
  this->create(c, this->path("/q/a/deeper"), CreateMode::kPersistent);
  auto listed = this->children(c, this->path("/q"));
  ASSERT_EQ(listed.code, Code::kOk);
  std::sort(listed.children.begin(), listed.children.end());
  EXPECT_EQ(listed.children, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(this->children(c, this->path("/nope")).code, Code::kNoNode);
}

TYPED_TEST(ZkConformanceTest, GetReturnsDataAndStat) {
  auto& c = *this->client;
  auto made = this->create(c, this->path("/g"), CreateMode::kPersistent, "owner label");
  auto got = this->get(c, this->path("/g"));
  ASSERT_EQ(got.code, Code::kOk);
  EXPECT_EQ(got.data, "owner label");
  EXPECT_EQ(got.stat.czxid, made.stat.czxid);
  EXPECT_GT(got.stat.ctimeMs, 0);
  EXPECT_EQ(this->get(c, this->path("/nope")).code, Code::kNoNode);
}

TYPED_TEST(ZkConformanceTest, WatchFiresOnceWhenTheNodeIsDeleted) {
  auto& c = *this->client;
  this->create(c, this->path("/w"), CreateMode::kPersistent);
  int fired = 0;
  std::optional<zk::WatchEvent> event;
  std::optional<Code> answered;
  c.getAndWatch(
      this->path("/w"), [&](zk::GetResult r) { answered = r.code; },
      [&](zk::WatchEvent e) {
        ++fired;
        event = e;
      });
  ASSERT_TRUE(this->env.until([&] { return answered.has_value(); }));
  EXPECT_EQ(*answered, Code::kOk);
  this->env.remove(this->path("/w"));  // by another session
  ASSERT_TRUE(this->env.until([&] { return fired == 1; }));
  EXPECT_EQ(event, zk::WatchEvent::kDeleted) << "a waiter takes the lock on a deletion alone";
  this->env.create(this->path("/w"), "", CreateMode::kPersistent);
  this->env.remove(this->path("/w"));
  this->env.settle();
  EXPECT_EQ(fired, 1) << "a watch fires once";
}

TYPED_TEST(ZkConformanceTest, WatchOnAMissingNodeIsNotLeftBehind) {
  auto& c = *this->client;
  int fired = 0;
  std::optional<Code> answered;
  c.getAndWatch(
      this->path("/later"), [&](zk::GetResult r) { answered = r.code; }, [&](zk::WatchEvent) { ++fired; });
  ASSERT_TRUE(this->env.until([&] { return answered.has_value(); }));
  EXPECT_EQ(*answered, Code::kNoNode);
  this->env.create(this->path("/later"), "", CreateMode::kPersistent);
  this->env.remove(this->path("/later"));
  this->env.settle();
  EXPECT_EQ(fired, 0);
}

// A holder watch of a lock with no node waits for the node this way, creating nothing.
TYPED_TEST(ZkConformanceTest, ExistsWatchOnAMissingNodeFiresOnceWhenItIsCreated) {
  auto& c = *this->client;
  int fired = 0;
  std::optional<Code> answered;
  c.existsAndWatch(
      this->path("/soon"), [&](Code code) { answered = code; }, [&](zk::WatchEvent) { ++fired; });
  ASSERT_TRUE(this->env.until([&] { return answered.has_value(); }));
  EXPECT_EQ(*answered, Code::kNoNode);
  EXPECT_FALSE(this->env.exists(this->path("/soon"))) << "watching created the node";
  this->env.create(this->path("/soon"), "", CreateMode::kPersistent);
  ASSERT_TRUE(this->env.until([&] { return fired == 1; }));
  this->env.remove(this->path("/soon"));
  this->env.settle();
  EXPECT_EQ(fired, 1) << "a watch fires once";

  this->create(c, this->path("/here"), CreateMode::kPersistent);
  answered.reset();
  c.existsAndWatch(
      this->path("/here"), [&](Code code) { answered = code; }, [&](zk::WatchEvent) { ++fired; });
  ASSERT_TRUE(this->env.until([&] { return answered.has_value(); }));
  EXPECT_EQ(*answered, Code::kOk);
  this->env.remove(this->path("/here"));
  ASSERT_TRUE(this->env.until([&] { return fired == 2; })) << "an existing node's fires on delete";
}

// The holder watches' ZooKeeper watch: one per lock, fired by a child's arrival or departure.
TYPED_TEST(ZkConformanceTest, ChildrenWatchFiresOnceOnAChildCreatedOrDeleted) {
  auto& c = *this->client;
  this->create(c, this->path("/cw"), CreateMode::kPersistent);
  for (bool byCreate : {true, false}) {
    int fired = 0;
    std::optional<zk::WatchEvent> event;
    std::optional<zk::ChildrenResult> answered;
    c.getChildrenAndWatch(
        this->path("/cw"), [&](zk::ChildrenResult r) { answered = r; },
        [&](zk::WatchEvent e) {
          ++fired;
          event = e;
        });
    ASSERT_TRUE(this->env.until([&] { return answered.has_value(); }));
    ASSERT_EQ(answered->code, Code::kOk);
    EXPECT_EQ(answered->children.size(), byCreate ? 0u : 1u);
    if (byCreate) {
      this->env.create(this->path("/cw/a"), "", CreateMode::kPersistent);
    } else {
      this->env.remove(this->path("/cw/a"));
    }
    ASSERT_TRUE(this->env.until([&] { return fired == 1; }));
    EXPECT_EQ(event, zk::WatchEvent::kChanged) << "a child came or went, the node is still there";
    this->env.create(this->path("/cw/b"), "", CreateMode::kPersistent);
    this->env.remove(this->path("/cw/b"));
    this->env.settle();
    EXPECT_EQ(fired, 1) << "a watch fires once";
  }
}

TYPED_TEST(ZkConformanceTest, ChildrenWatchFiresWhenTheNodeItselfIsDeletedAndIsNotLeftOnAMissingOne) {
  auto& c = *this->client;
  this->create(c, this->path("/cd"), CreateMode::kPersistent);
  int fired = 0;
  std::optional<zk::WatchEvent> event;
  std::optional<Code> answered;
  c.getChildrenAndWatch(
      this->path("/cd"), [&](zk::ChildrenResult r) { answered = r.code; },
      [&](zk::WatchEvent e) {
        ++fired;
        event = e;
      });
  ASSERT_TRUE(this->env.until([&] { return answered == Code::kOk; }));
  this->env.remove(this->path("/cd"));
  ASSERT_TRUE(this->env.until([&] { return fired == 1; }));
  EXPECT_EQ(event, zk::WatchEvent::kDeleted);

  int firedMissing = 0;
  answered.reset();
  c.getChildrenAndWatch(
      this->path("/cd"), [&](zk::ChildrenResult r) { answered = r.code; },
      [&](zk::WatchEvent) { ++firedMissing; });
  ASSERT_TRUE(this->env.until([&] { return answered.has_value(); }));
  EXPECT_EQ(*answered, Code::kNoNode);
  this->env.create(this->path("/cd"), "", CreateMode::kPersistent);
  this->env.create(this->path("/cd/x"), "", CreateMode::kPersistent);
  this->env.settle();
  EXPECT_EQ(firedMissing, 0);
}

TYPED_TEST(ZkConformanceTest, RemoveKnowsMissingAndNonEmptyNodes) {
  auto& c = *this->client;
  this->create(c, this->path("/r"), CreateMode::kPersistent);
  this->create(c, this->path("/r/child"), CreateMode::kPersistent);
  EXPECT_EQ(this->remove(c, this->path("/r")), Code::kNotEmpty);
  EXPECT_EQ(this->remove(c, this->path("/r/child")), Code::kOk);
  EXPECT_EQ(this->remove(c, this->path("/r/child")), Code::kNoNode);
  EXPECT_EQ(this->remove(c, this->path("/r")), Code::kOk);
  EXPECT_FALSE(this->env.exists(this->path("/r")));
}

TYPED_TEST(ZkConformanceTest, SyncAnswers) { EXPECT_EQ(this->sync(*this->client, "/"), Code::kOk); }

TYPED_TEST(ZkConformanceTest, ExpiryDeletesEphemeralsAndANewSessionFollows) {
  auto& c = *this->client;
  std::vector<SessionState> seen;
  c.setSessionListener([&](SessionState s) { seen.push_back(s); });
  this->create(c, this->path("/e"), CreateMode::kPersistent);
  auto mine = this->create(c, this->path("/e/n"), CreateMode::kEphemeralSequential);
  ASSERT_EQ(mine.code, Code::kOk);
  int64_t old = c.sessionId();
  this->env.expire(c);
  ASSERT_TRUE(this->env.until([&] { return expiredThenConnected(seen); }));
  // The server closed the connection, the reconnect was told of the expiry, a new session came.
  // (On the real server the client may first take its session back from the expiring handle.)
  ASSERT_GE(seen.size(), 3u);
  EXPECT_EQ(seen[0], SessionState::kConnecting);
  auto expired = std::find(seen.begin(), seen.end(), SessionState::kExpired);
  ASSERT_NE(expired, seen.begin());
  EXPECT_EQ(*(expired - 1), SessionState::kConnecting) << "told of the expiry on a reconnect";
  EXPECT_NE(c.sessionId(), old);
  EXPECT_FALSE(this->env.exists(mine.path)) << "the ephemeral went with its session";
  auto again = this->create(c, this->path("/e/n"), CreateMode::kEphemeralSequential);
  ASSERT_EQ(again.code, Code::kOk);
  EXPECT_EQ(again.stat.ephemeralOwner, c.sessionId());
}

// The engine re-arms its watches after an expiry: the old ones end without a call.
TYPED_TEST(ZkConformanceTest, WatchEndsSilentlyWithAnExpiredSession) {
  auto& c = *this->client;
  std::vector<SessionState> seen;
  c.setSessionListener([&](SessionState s) { seen.push_back(s); });
  this->create(c, this->path("/ws"), CreateMode::kPersistent);
  int fired = 0;
  std::optional<Code> answered;
  c.getAndWatch(
      this->path("/ws"), [&](zk::GetResult r) { answered = r.code; }, [&](zk::WatchEvent) { ++fired; });
  ASSERT_TRUE(this->env.until([&] { return answered == Code::kOk; }));
  this->env.expire(c);
  ASSERT_TRUE(this->env.until([&] { return expiredThenConnected(seen); }));
  this->env.remove(this->path("/ws"));
  this->env.settle();
  EXPECT_EQ(fired, 0);
}

// FaultyZkClient over either client: a disconnect fails what is in flight with connection loss,
// the reconnect comes only when the test says so, and the session lives on.
TYPED_TEST(ZkConformanceTest, DisconnectFailsRequestsInFlightAndTheSessionLivesOn) {
  zk::FaultyZkClient faults(*this->client, this->env.executor(), this->env.timer());
  std::vector<SessionState> seen;
  faults.setSessionListener([&](SessionState s) { seen.push_back(s); });
  int64_t session = faults.sessionId();
  faults.stall(zk::FaultyZkClient::kSync);
  std::optional<Code> held;
  faults.sync("/", [&](Code c) { held = c; });
  this->env.settle();
  EXPECT_FALSE(held);
  faults.disconnect();
  ASSERT_TRUE(this->env.until([&] { return held.has_value(); }));
  EXPECT_EQ(*held, Code::kConnectionLoss);
  EXPECT_EQ(faults.sessionState(), SessionState::kConnecting);
  EXPECT_EQ(this->get(faults, "/").code, Code::kConnectionLoss);
  EXPECT_EQ(this->acl(faults, "/").code, Code::kConnectionLoss);
  faults.unstall();
  faults.reconnect();
  ASSERT_TRUE(
      this->env.until([&] { return !seen.empty() && seen.back() == SessionState::kConnected; }));
  EXPECT_EQ(seen, (std::vector<SessionState>{SessionState::kConnecting, SessionState::kConnected}));
  EXPECT_EQ(faults.sessionId(), session);
  EXPECT_EQ(this->sync(faults, "/"), Code::kOk);
}

TYPED_TEST(ZkConformanceTest, ACutLongerThanTheTimeoutExpiresTheSession) {
  auto& c = *this->client;
  zk::FaultyZkClient faults(c, this->env.executor(), this->env.timer(),
                            [&] { this->env.expire(c); });
  std::vector<SessionState> seen;
  faults.setSessionListener([&](SessionState s) { seen.push_back(s); });
  this->create(faults, this->path("/cut"), CreateMode::kPersistent);
  auto mine = this->create(faults, this->path("/cut/n"), CreateMode::kEphemeralSequential);
  int64_t old = faults.sessionId();
  faults.disconnect();
  ASSERT_TRUE(this->env.until([&] { return !this->env.exists(mine.path); },
                              Millis(faults.negotiatedTimeoutMs() + 5000)));
  faults.reconnect();
  ASSERT_TRUE(this->env.until([&] { return expiredThenConnected(seen); })) << [&] {
    std::string states;
    for (auto st : seen) states += std::string(zk::sessionStateName(st)) + " ";
    return "the listener saw: " + states + "; the client is " +
           zk::sessionStateName(c.sessionState());
  }();
  EXPECT_EQ(seen.front(), SessionState::kConnecting);
  EXPECT_NE(std::find(seen.begin(), seen.end(), SessionState::kExpired), seen.end());
  EXPECT_NE(faults.sessionId(), old);
}

TYPED_TEST(ZkConformanceTest, AmbiguousCreatesLookAlike) {
  zk::FaultyZkClient faults(*this->client, this->env.executor(), this->env.timer());
  this->create(faults, this->path("/amb"), CreateMode::kPersistent);
  faults.failNextCreateAfterApply(Code::kConnectionLoss);
  EXPECT_EQ(this->create(faults, this->path("/amb/a"), CreateMode::kPersistent).code,
            Code::kConnectionLoss);
  EXPECT_TRUE(this->env.exists(this->path("/amb/a"))) << "applied, answer lost";
  faults.failNextCreateBeforeApply(Code::kOperationTimeout);
  EXPECT_EQ(this->create(faults, this->path("/amb/b"), CreateMode::kPersistent).code,
            Code::kOperationTimeout);
  EXPECT_FALSE(this->env.exists(this->path("/amb/b")));
}

// ---- authentication and ACLs -----------------------------------------------------------------

TYPED_TEST(ZkConformanceTest, NodesOfACredentialedClientAreItsOwnAndReadableByAll) {
  auto owner = this->env.newClient(kApp);
  auto stranger = this->env.newClient();
  auto parent = this->create(*owner, this->path("/owned"), CreateMode::kPersistent);
  ASSERT_EQ(parent.code, Code::kOk);
  auto node = this->create(*owner, this->path("/owned/n"), CreateMode::kEphemeralSequential, "me");
  ASSERT_EQ(node.code, Code::kOk);

  auto acl = this->acl(*stranger, node.path);
  ASSERT_EQ(acl.code, Code::kOk);
  ASSERT_EQ(acl.acl.size(), 2u);
  EXPECT_EQ(acl.acl[0].scheme, "digest");
  // Without admin rights on the node, the digest's hash reads as "x".
  EXPECT_EQ(acl.acl[0].id, "app:x");
  auto own = this->acl(*owner, node.path).acl;
  ASSERT_FALSE(own.empty());
  EXPECT_EQ(own[0].id.rfind("app:", 0), 0u) << own[0].id;
  if constexpr (std::is_same_v<TypeParam, RealBackend>) {
    EXPECT_EQ(own[0].id, kAppDigest);
  }
  EXPECT_EQ(acl.acl[0].perms, zk::kPermAll);
  EXPECT_EQ(acl.acl[1].scheme, "world");
  EXPECT_EQ(acl.acl[1].id, "anyone");
  EXPECT_EQ(acl.acl[1].perms, zk::kPermRead);
  EXPECT_FALSE(zk::isOpenAcl(acl.acl));

  // ZooKeeper checks create and delete on the parent: the stranger can do neither, but read.
  EXPECT_EQ(this->remove(*stranger, node.path), Code::kNoAuth);
  EXPECT_EQ(this->create(*stranger, this->path("/owned/x"), CreateMode::kPersistent).code,
            Code::kNoAuth);
  EXPECT_EQ(
      this->create(*stranger, this->path("/owned/q__lock__"), CreateMode::kEphemeralSequential)
          .code,
      Code::kNoAuth);
  EXPECT_EQ(this->get(*stranger, node.path).data, "me");
  EXPECT_EQ(this->children(*stranger, this->path("/owned")).children.size(), 1u);
  EXPECT_TRUE(this->env.exists(node.path));
  // Every client with the same credentials is the same identity.
  auto sibling = this->env.newClient(kApp);
  EXPECT_EQ(this->remove(*sibling, node.path), Code::kOk);
}

TYPED_TEST(ZkConformanceTest, NodesOfAClientWithoutCredentialsAreOpen) {
  auto& c = *this->client;
  this->create(c, this->path("/open"), CreateMode::kPersistent);
  auto acl = this->acl(c, this->path("/open"));
  ASSERT_EQ(acl.code, Code::kOk);
  ASSERT_EQ(acl.acl.size(), 1u);
  EXPECT_EQ(acl.acl[0].scheme, "world");
  EXPECT_EQ(acl.acl[0].perms, zk::kPermAll);
  EXPECT_TRUE(zk::isOpenAcl(acl.acl));
  EXPECT_EQ(this->acl(c, this->path("/nope")).code, Code::kNoNode);
}

// The new handle opened after an expiry authenticates before its first request.
TYPED_TEST(ZkConformanceTest, CredentialsSurviveASessionExpiry) {
  auto owner = this->env.newClient(kApp);
  std::vector<SessionState> seen;
  owner->setSessionListener([&](SessionState s) { seen.push_back(s); });
  ASSERT_EQ(this->create(*owner, this->path("/kept"), CreateMode::kPersistent).code, Code::kOk);
  this->env.expire(*owner);
  ASSERT_TRUE(this->env.until([&] { return expiredThenConnected(seen); }));
  auto again = this->create(*owner, this->path("/kept/n"), CreateMode::kEphemeralSequential);
  ASSERT_EQ(again.code, Code::kOk) << zk::codeName(again.code);
  EXPECT_EQ(this->remove(*this->client, again.path), Code::kNoAuth);
  EXPECT_EQ(this->remove(*owner, again.path), Code::kOk);
}

}  // namespace
}  // namespace fencekeeper::testing
