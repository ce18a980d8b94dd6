#include "sidecar/zk/fake_zk.h"

#include <cstdio>
#include <functional>

namespace fencekeeper::zk {

FakeZkClient::FakeZkClient(FakeZkServer& server, Executor& executor,
                           std::optional<DigestCredentials> credentials)
    : server_(server), executor_(executor) {
  if (credentials) {
    identity_ = credentials->user + ":fake" +
                std::to_string(std::hash<std::string>{}(credentials->secret()));
  }
  session_ = server_.openSession(this);
}

FakeZkClient::~FakeZkClient() {
  *alive_ = false;
  server_.closeSession(session_);
}

void FakeZkClient::post(std::function<void()> fn) {
  executor_.post([alive = alive_, fn = std::move(fn)] {
    if (*alive) fn();
  });
}

void FakeZkClient::setState(SessionState state) {
  state_ = state;
  post([this, state] {
    if (listener_) listener_(state);
  });
}

void FakeZkClient::create(const std::string& path, const std::string& data, CreateMode mode,
                          CreateCallback done) {
  CreateResult result{failure(), {}, {}};
  if (connected()) result = server_.doCreate(session_, path, data, mode, identity_);
  post([done = std::move(done), result = std::move(result)] { done(result); });
}

void FakeZkClient::getChildren(const std::string& path, ChildrenCallback done) {
  ChildrenResult result{failure(), {}};
  if (connected()) {
    result.code = !server_.exists(path)                         ? Code::kNoNode
                  : !server_.allows(path, kPermRead, identity_) ? Code::kNoAuth
                                                                : Code::kOk;
    if (result.code == Code::kOk) result.children = server_.childrenOf(path);
  }
  post([done = std::move(done), result = std::move(result)] { done(result); });
}

void FakeZkClient::getChildrenAndWatch(const std::string& path, ChildrenCallback done,
                                       WatchCallback onChange) {
  if (connected() && server_.exists(path) && server_.allows(path, kPermRead, identity_)) {
    server_.watches_.emplace(path, FakeZkServer::Watch{this, std::move(onChange), true});
  }
  getChildren(path, std::move(done));
}

void FakeZkClient::get(const std::string& path, GetCallback done) {
  GetResult result{failure(), {}, {}};
  if (connected()) {
    auto it = server_.nodes_.find(path);
    if (it == server_.nodes_.end()) {
      result.code = Code::kNoNode;
    } else if (!server_.allows(path, kPermRead, identity_)) {
      result.code = Code::kNoAuth;  // (and no watch is left, as by the server)
    } else {
      result = GetResult{Code::kOk, it->second.data, it->second.stat};
    }
  }
  post([done = std::move(done), result = std::move(result)] { done(result); });
}

void FakeZkClient::getAndWatch(const std::string& path, GetCallback done, WatchCallback onChange) {
  if (connected() && server_.exists(path) && server_.allows(path, kPermRead, identity_)) {
    server_.watches_.emplace(path, FakeZkServer::Watch{this, std::move(onChange)});
  }
  get(path, std::move(done));
}

void FakeZkClient::existsAndWatch(const std::string& path, CodeCallback done,
                                  WatchCallback onChange) {
  Code code = failure();
  if (connected()) {
    code = server_.exists(path) ? Code::kOk : Code::kNoNode;
    server_.watches_.emplace(path, FakeZkServer::Watch{this, std::move(onChange)});
  }
  post([done = std::move(done), code] { done(code); });
}

void FakeZkClient::remove(const std::string& path, CodeCallback done) {
  Code code = failure();
  if (connected()) {
    bool allowed = !server_.exists(path) ||
                   server_.allows(FakeZkServer::parentOf(path), kPermDelete, identity_);
    code = allowed ? server_.doRemove(path) : Code::kNoAuth;
  }
  post([done = std::move(done), code] { done(code); });
}

void FakeZkClient::sync(const std::string&, CodeCallback done) {
  Code code = connected() ? Code::kOk : failure();
  post([done = std::move(done), code] { done(code); });
}

void FakeZkClient::getAcl(const std::string& path, AclCallback done) {
  AclResult result{failure(), {}};
  if (connected()) {
    auto it = server_.nodes_.find(path);
    if (it == server_.nodes_.end()) {
      result.code = Code::kNoNode;
    } else if (!server_.allows(path, kPermRead | kPermAdmin, identity_)) {
      result.code = Code::kNoAuth;
    } else {
      result = AclResult{Code::kOk, it->second.acl};
      // As the server: without admin rights on the node, a digest's hash reads as "x".
      if (!server_.allows(path, kPermAdmin, identity_)) {
        for (auto& entry : result.acl) {
          if (entry.scheme == "digest") entry.id = entry.id.substr(0, entry.id.find(':')) + ":x";
        }
      }
    }
  }
  post([done = std::move(done), result = std::move(result)] { done(result); });
}

int64_t FakeZkServer::openSession(FakeZkClient* client) {
  int64_t session = nextSession_++;
  sessions_[session] = client;
  return session;
}

void FakeZkServer::closeSession(int64_t session) {
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return;
  FakeZkClient* client = it->second;
  sessions_.erase(it);
  for (auto w = watches_.begin(); w != watches_.end();) {
    w = w->second.client == client ? watches_.erase(w) : std::next(w);
  }
  std::vector<std::string> ephemerals;
  for (auto& [path, node] : nodes_) {
    if (node.stat.ephemeralOwner == session) ephemerals.push_back(path);
  }
  for (auto& path : ephemerals) doRemove(path);
}

void FakeZkServer::expireSession(FakeZkClient& client) {
  closeSession(client.session_);
  // As a real server ends a session: it closes the connection, the client's next connect is told
  // the session expired, and only then does the client open a new one.
  client.setState(SessionState::kConnecting);
  client.post([this, &client] {
    client.setState(SessionState::kExpired);
    client.post([this, &client] {
      client.state_ = SessionState::kConnecting;  // (not told, as by the real client)
      client.post([this, &client] {
        client.session_ = openSession(&client);
        client.setState(SessionState::kConnected);
      });
    });
  });
}

void FakeZkServer::setNextSequence(const std::string& path, int32_t next) {
  nodes_.at(path).childrenCreated = next;
}

void FakeZkServer::removeExternally(const std::string& path) { doRemove(path); }

void FakeZkServer::setAclExternally(const std::string& path, std::vector<Acl> acl) {
  auto it = nodes_.find(path);
  if (it != nodes_.end()) it->second.acl = std::move(acl);
}

void FakeZkServer::reapEmptyContainers() {
  std::vector<std::string> reap;
  for (auto& [path, node] : nodes_) {
    if (node.mode == CreateMode::kContainer && node.hadChildren && node.stat.numChildren == 0) {
      reap.push_back(path);
    }
  }
  for (auto& path : reap) doRemove(path);
}

std::string FakeZkServer::createExternally(const std::string& path, const std::string& data,
                                           CreateMode mode) {
  return doCreate(0x7fff0000, path, data, mode).path;
}

std::vector<std::string> FakeZkServer::childrenOf(const std::string& path) const {
  std::vector<std::string> out;
  std::string prefix = path == "/" ? "/" : path + "/";
  for (auto it = nodes_.lower_bound(prefix); it != nodes_.end(); ++it) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) break;
    std::string rest = it->first.substr(prefix.size());
    if (!rest.empty() && rest.find('/') == std::string::npos) out.push_back(rest);
  }
  return out;
}

std::string FakeZkServer::dataOf(const std::string& path) const {
  auto it = nodes_.find(path);
  return it == nodes_.end() ? std::string() : it->second.data;
}

Stat FakeZkServer::statOf(const std::string& path) const {
  auto it = nodes_.find(path);
  return it == nodes_.end() ? Stat{} : it->second.stat;
}

std::string FakeZkServer::parentOf(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

bool FakeZkServer::allows(const std::string& path, int32_t perms,
                          const std::string& identity) const {
  auto it = nodes_.find(path);
  if (it == nodes_.end()) return false;
  for (auto& entry : it->second.acl) {
    if ((entry.perms & perms) == 0) continue;
    if (entry.scheme == "world" && entry.id == "anyone") return true;
    if (entry.scheme == "digest" && !identity.empty() && entry.id == identity) return true;
  }
  return false;
}

CreateResult FakeZkServer::doCreate(int64_t session, const std::string& path,
                                    const std::string& data, CreateMode mode,
                                    const std::string& identity) {
  auto parent = nodes_.find(parentOf(path));
  if (parent == nodes_.end()) return {Code::kNoNode, {}, {}};
  if (!allows(parent->first, kPermCreate, identity)) return {Code::kNoAuth, {}, {}};
  std::string created = path;
  if (mode == CreateMode::kEphemeralSequential) {
    char suffix[16];
    std::snprintf(suffix, sizeof suffix, "%010d", parent->second.childrenCreated);
    created += suffix;
  }
  if (nodes_.count(created)) return {Code::kNodeExists, {}, {}};
  Node node;
  node.data = data;
  node.mode = mode;
  node.stat.czxid = node.stat.mzxid = ++zxid_;
  node.stat.ctimeMs = zxid_;
  node.stat.ephemeralOwner = mode == CreateMode::kEphemeralSequential ? session : 0;
  if (identity.empty()) {
    node.acl = {Acl{"world", "anyone", kPermAll}};
  } else {
    node.acl = {Acl{"digest", identity, kPermAll}, Acl{"world", "anyone", kPermRead}};
  }
  parent->second.stat.numChildren++;
  // An int32 on the server too: after 2147483647 comes -2147483648.
  parent->second.childrenCreated =
      static_cast<int32_t>(static_cast<uint32_t>(parent->second.childrenCreated) + 1);
  parent->second.hadChildren = true;
  Stat stat = node.stat;
  nodes_.emplace(created, std::move(node));
  fireWatches(created, false);
  return {Code::kOk, created, stat};
}

Code FakeZkServer::doRemove(const std::string& path) {
  auto it = nodes_.find(path);
  if (it == nodes_.end()) return Code::kNoNode;
  if (it->second.stat.numChildren > 0) return Code::kNotEmpty;
  nodes_.erase(it);
  ++zxid_;
  auto parent = nodes_.find(parentOf(path));
  if (parent != nodes_.end()) parent->second.stat.numChildren--;
  fireWatches(path, true);
  return Code::kOk;
}

void FakeZkServer::fireWatches(const std::string& path, bool deleted) {
  auto fire = [this](const std::string& at, bool children, WatchEvent event) {
    auto range = watches_.equal_range(at);
    for (auto it = range.first; it != range.second;) {
      if (it->second.onChildren != children) {
        ++it;
        continue;
      }
      it->second.client->post([fn = std::move(it->second.fn), event] { fn(event); });
      it = watches_.erase(it);
    }
  };
  WatchEvent onPath = deleted ? WatchEvent::kDeleted : WatchEvent::kChanged;
  fire(path, false, onPath);
  if (deleted) fire(path, true, onPath);
  if (path != "/") fire(parentOf(path), true, WatchEvent::kChanged);
}

}  // namespace fencekeeper::zk
