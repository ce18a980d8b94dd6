// An in-memory ZooKeeper for fast, deterministic engine tests: one FakeZkServer (the znode tree,
// zxids, sessions, ephemeral and sequential nodes, watches) and one FakeZkClient per session.
// Single-threaded: answers are posted to an Executor, as the real client posts them. It fails
// only the way a healthy server does (expiry, nodes changed by others); network and server faults
// come from FaultyZkClient around it. tests/integration/zk_conformance_test.cc holds it to a real
// server. ACLs are checked as the server checks them (create and delete on the parent, reads on
// the node); a digest identity is `user:` and a stand-in for base64(sha1(user:password)).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "common/executor.h"
#include "sidecar/zk/credentials.h"
#include "sidecar/zk/zk_client.h"

namespace fencekeeper::zk {

class FakeZkServer;

class FakeZkClient final : public Client {
 public:
  // With `credentials`, the session is authenticated as their digest identity and creates nodes
  // with the ACL zk_client.h describes.
  FakeZkClient(FakeZkServer& server, Executor& executor,
               std::optional<DigestCredentials> credentials = std::nullopt);
  ~FakeZkClient() override;

  void create(const std::string& path, const std::string& data, CreateMode mode,
              CreateCallback done) override;
  void getChildren(const std::string& path, ChildrenCallback done) override;
  void getChildrenAndWatch(const std::string& path, ChildrenCallback done,
                           WatchCallback onChange) override;
  void getAndWatch(const std::string& path, GetCallback done, WatchCallback onChange) override;
  void existsAndWatch(const std::string& path, CodeCallback done, WatchCallback onChange) override;
  void get(const std::string& path, GetCallback done) override;
  void remove(const std::string& path, CodeCallback done) override;
  void sync(const std::string& path, CodeCallback done) override;
  void getAcl(const std::string& path, AclCallback done) override;
  void leaveServer() override {}  // one server: nowhere to go
  SessionState sessionState() const override { return state_; }
  int64_t sessionId() const override { return session_; }
  int32_t negotiatedTimeoutMs() const override { return 4000; }
  void setSessionListener(std::function<void(SessionState)> listener) override {
    listener_ = std::move(listener);
  }

 private:
  friend class FakeZkServer;
  void post(std::function<void()> fn);
  void setState(SessionState state);
  bool connected() const { return state_ == SessionState::kConnected; }
  // What a request fails with while not connected.
  Code failure() const {
    return state_ == SessionState::kExpired ? Code::kSessionExpired : Code::kConnectionLoss;
  }

  FakeZkServer& server_;
  Executor& executor_;
  std::string identity_;  // digest id; empty without credentials
  int64_t session_ = 0;
  SessionState state_ = SessionState::kConnected;
  std::function<void(SessionState)> listener_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

class FakeZkServer {
 public:
  // Ends a session: its ephemerals vanish, its watches are dropped; its client sees kConnecting
  // (the server closed the connection), then on later turns of the executor kExpired and
  // kConnected with a new session, as the real client re-initialises itself. Requests fail
  // meanwhile with kConnectionLoss, then kSessionExpired.
  void expireSession(FakeZkClient& client);
  // Deletes a node as another client would (fires watches).
  void removeExternally(const std::string& path);
  // Sets a node's ACL as an administrator would.
  void setAclExternally(const std::string& path, std::vector<Acl> acl);
  // Sets the sequence the next sequential child of `path` gets (e.g. just before the counter's
  // wrap, which on a server takes 2^31 creates).
  void setNextSequence(const std::string& path, int32_t next);
  // Deletes every empty container node that has had children, as the server's reaper does.
  void reapEmptyContainers();
  // Creates a node as another session would (e.g. a kazoo contender); ephemeral nodes belong to
  // a session id that no FakeZkClient has.
  std::string createExternally(const std::string& path, const std::string& data, CreateMode mode);

  bool exists(const std::string& path) const { return nodes_.count(path) > 0; }
  std::vector<std::string> childrenOf(const std::string& path) const;
  std::string dataOf(const std::string& path) const;
  Stat statOf(const std::string& path) const;

 private:
  friend class FakeZkClient;
  struct Node {
    std::string data;
    Stat stat;
    CreateMode mode;
    int32_t childrenCreated = 0;  // the next sequence suffix, as on the server
    bool hadChildren = false;
    std::vector<Acl> acl;
  };
  struct Watch {
    FakeZkClient* client;
    Client::WatchCallback fn;
    bool onChildren = false;  // a children watch (else a data watch)
  };

  int64_t openSession(FakeZkClient* client);
  void closeSession(int64_t session);
  CreateResult doCreate(int64_t session, const std::string& path, const std::string& data,
                        CreateMode mode, const std::string& identity = {});
  // Whether the node's ACL grants any of `perms` to the digest `identity` (empty: none).
  bool allows(const std::string& path, int32_t perms, const std::string& identity) const;
  Code doRemove(const std::string& path);
  // Fires the data watches of `path` and the children watches of its parent; a deletion also
  // fires the children watches of `path` itself.
  void fireWatches(const std::string& path, bool deleted);
  static std::string parentOf(const std::string& path);

  int64_t zxid_ = 0x100000000;
  int64_t nextSession_ = 0x1000;
  std::map<std::string, Node> nodes_{
      {"/", Node{{}, {}, CreateMode::kPersistent, 0, false, {Acl{"world", "anyone", kPermAll}}}}};
  std::map<int64_t, FakeZkClient*> sessions_;
  std::multimap<std::string, Watch> watches_;
};

}  // namespace fencekeeper::zk
