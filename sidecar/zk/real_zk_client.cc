#include "sidecar/zk/real_zk_client.h"

#include <boost/intrusive/list.hpp>
#include <spdlog/spdlog.h>
#include <zookeeper/zookeeper.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "common/kj_loop.h"
#include "sidecar/zk/c_client_log.h"
#include "sidecar/zk/host_resolver.h"
#include "sidecar/zk/socket_drop.h"
#include "sidecar/zk/zk_loop_driver.h"

namespace fencekeeper::zk {

namespace {

// The single mapping of C client return codes.
Code mapCode(int rc) {
  switch (rc) {
    case ZOK:
      return Code::kOk;
    case ZNONODE:
      return Code::kNoNode;
    case ZNODEEXISTS:
      return Code::kNodeExists;
    case ZNOTEMPTY:
      return Code::kNotEmpty;
    case ZBADVERSION:
      return Code::kBadVersion;
    case ZCONNECTIONLOSS:
    case ZSESSIONMOVED:  // sent on a connection the session has left: outcome unknown
    case ZTHROTTLEDOP:   // not applied, but safe to treat as unknown and retry
    // The client dropped the connection over a reply it did not expect: outcome unknown, as a
    // lost connection.
    case ZRUNTIMEINCONSISTENCY:
      return Code::kConnectionLoss;
    case ZOPERATIONTIMEOUT:
      return Code::kOperationTimeout;
    case ZSESSIONEXPIRED:
    case ZINVALIDSTATE:  // the handle's session has expired
      return Code::kSessionExpired;
    case ZCLOSING:
      return Code::kClosing;
    case ZBADARGUMENTS:
      return Code::kInvalidArgument;
    case ZNOAUTH:
    case ZAUTHFAILED:  // the server refused the session's credentials: nothing is allowed
    case ZINVALIDACL:  // our "auth" ACL on a session with no authenticated identity
      return Code::kNoAuth;
    default:
      return Code::kOther;
  }
}

Stat copyStat(const ::Stat* s) {
  Stat out;
  if (!s) return out;
  out.czxid = s->czxid;
  out.mzxid = s->mzxid;
  out.ctimeMs = s->ctime;
  out.ephemeralOwner = s->ephemeralOwner;
  out.version = s->version;
  out.numChildren = s->numChildren;
  return out;
}

constexpr int kResolutionDelayMs = 10'000;
constexpr Millis kResolveEvery{10'000};
constexpr int kReopenRetryMs = 1'000;

}  // namespace

// The context of one watch the C client may still call. Small, since each held lease has one on
// its own node: listed intrusively (a set's node was 56 bytes), and its client by plain pointer
// (closeHandle() frees every context before the client can go).
struct WatchCtx : boost::intrusive::list_base_hook<> {
  WatchCtx(RealZkClient::Shared& s, Client::WatchCallback c) : shared(s), onChange(std::move(c)) {}
  RealZkClient::Shared& shared;
  Client::WatchCallback onChange;
};

// What the C client's callbacks reach, all on the loop thread. `alive` turns false when the client
// is destroyed: what the closing handle answers then is dropped, as the interface promises.
struct RealZkClient::Shared : std::enable_shared_from_this<RealZkClient::Shared> {
  Timer& timer;
  std::string hosts;    // as given: "host:port,...[/chroot]"
  std::string connect;  // what a new handle gets: the names resolved (host_resolver.h)
  std::optional<DigestCredentials> credentials;
  std::vector<int> ports;  // of `hosts`: how this process's connection to them is found
  bool watchHandshakes;
  Millis sessionTimeout;
  bool alive = true;
  // The server the client has been trying to connect to since `handshakeSince` (watchHandshake).
  std::string handshakeServer;
  TimePoint handshakeSince{};
  uint64_t handshakeTimer = 0;
  bool handshakeCut = false;  // in this spell of connecting

  zhandle_t* zh = nullptr;
  struct HandleCtx* handleCtx = nullptr;
  uint64_t generation = 0;  // of the current handle; events of older handles are ignored
  SessionState state = SessionState::kConnecting;
  int64_t sessionId = 0;
  int32_t negotiatedTimeoutMs = 0;
  std::function<void(SessionState)> listener;
  // The session expired: a new handle is opened once the client's calls have returned.
  bool reopenDue = false;

  // Watch contexts the C client may still call; freed when they fire or their handle closes.
  boost::intrusive::list<WatchCtx, boost::intrusive::constant_time_size<false>> watches;
  // Unlists `w`; false if it was not listed (fired, or freed by a close).
  bool unlist(WatchCtx* w) {
    if (!w->is_linked()) return false;
    watches.erase(watches.iterator_to(*w));
    return true;
  }

  // Declared last: destroyed first, while what its callbacks reach still stands.
  std::unique_ptr<ZkLoopDriver> driver;
  // With host names: the thread that resolves them, and its way to the loop.
  std::unique_ptr<KjLoopExecutor> resolvedToLoop;
  std::unique_ptr<HostResolver> resolver;

  explicit Shared(kj::UnixEventPort& events, Timer& tm, std::string h, Millis t, bool watch,
                  std::optional<DigestCredentials> c)
      : timer(tm),
        hosts(std::move(h)),
        connect(hosts),
        credentials(std::move(c)),
        ports(portsOf(hosts)),
        watchHandshakes(watch),
        sessionTimeout(t),
        driver(std::make_unique<ZkLoopDriver>(events, tm, [this] { settled(); })) {}
  // After the client's calls returned: what they could not do inside them.
  void settled();
  // Runs `fn` now, unless the client has been destroyed (its closing handle answers then). It
  // runs inside the C client's call: nothing may unwind through the client's C frames.
  template <typename Fn>
  void deliver(Fn&& fn) {
    if (!alive) return;
    try {
      fn();
    } catch (const std::exception& e) {
      spdlog::error("a ZooKeeper answer's handler failed: {}", e.what());
    }
  }
};

namespace {

using Shared = RealZkClient::Shared;

// The `data` of one request: owns the callback until the completion posts it.
template <typename Callback>
struct Pending {
  std::shared_ptr<Shared> shared;
  Callback done;
};

}  // namespace

struct HandleCtx {
  std::shared_ptr<Shared> shared;
  uint64_t generation;
};

namespace {

void deliverSessionEvent(const std::shared_ptr<Shared>& shared, uint64_t generation, int state,
                         int64_t session, int32_t timeoutMs);

void sessionWatcher(zhandle_t* zh, int type, int state, const char*, void* ctx) {
  if (type != ZOO_SESSION_EVENT) return;
  auto* handle = static_cast<HandleCtx*>(ctx);
  const clientid_t* id = zoo_client_id(zh);
  auto shared = handle->shared;
  shared->deliver([&] {
    deliverSessionEvent(shared, handle->generation, state, id ? id->client_id : 0,
                        zoo_recv_timeout(zh));
  });
}

void nodeWatcher(zhandle_t*, int type, int, const char*, void* ctx) {
  if (type == ZOO_SESSION_EVENT) return;  // the session listener reports those
  auto* watch = static_cast<WatchCtx*>(ctx);
  if (!watch->shared.unlist(watch)) return;
  Shared& shared = watch->shared;
  auto onChange = std::move(watch->onChange);
  delete watch;
  // (ZOO_NOTWATCHING_EVENT, a watch removed, counts as a change: the caller looks again.)
  WatchEvent event = type == ZOO_DELETED_EVENT ? WatchEvent::kDeleted : WatchEvent::kChanged;
  shared.deliver([&] { onChange(event); });
}

void onStringStat(int rc, const char* value, const ::Stat* stat, const void* data) {
  auto* p = static_cast<Pending<Client::CreateCallback>*>(const_cast<void*>(data));
  CreateResult result{mapCode(rc), value && rc == ZOK ? value : "",
                      copyStat(rc == ZOK ? stat : nullptr)};
  p->shared->deliver([&] { p->done(result); });
  delete p;
}

void onStrings(int rc, const struct String_vector* strings, const void* data) {
  auto* p = static_cast<Pending<Client::ChildrenCallback>*>(const_cast<void*>(data));
  ChildrenResult result{mapCode(rc), {}};
  if (rc == ZOK && strings) {
    for (int i = 0; i < strings->count; ++i) result.children.emplace_back(strings->data[i]);
  }
  p->shared->deliver([&] { p->done(result); });
  delete p;
}

void onData(int rc, const char* value, int len, const ::Stat* stat, const void* data) {
  auto* p = static_cast<Pending<Client::GetCallback>*>(const_cast<void*>(data));
  GetResult result{mapCode(rc), {}, copyStat(rc == ZOK ? stat : nullptr)};
  if (rc == ZOK && value && len > 0) result.data.assign(value, static_cast<size_t>(len));
  p->shared->deliver([&] { p->done(result); });
  delete p;
}

void onVoid(int rc, const void* data) {
  auto* p = static_cast<Pending<Client::CodeCallback>*>(const_cast<void*>(data));
  Code code = mapCode(rc);
  p->shared->deliver([&] { p->done(code); });
  delete p;
}

void onSync(int rc, const char*, const void* data) { onVoid(rc, data); }
void onStat(int rc, const ::Stat*, const void* data) { onVoid(rc, data); }

void onAcl(int rc, struct ACL_vector* acl, struct ::Stat*, const void* data) {
  auto* p = static_cast<Pending<Client::AclCallback>*>(const_cast<void*>(data));
  AclResult result{mapCode(rc), {}};
  if (rc == ZOK && acl) {
    for (int i = 0; i < acl->count; ++i) {
      const ::ACL& entry = acl->data[i];
      result.acl.push_back(Acl{entry.id.scheme, entry.id.id, entry.perms});
    }
  }
  p->shared->deliver([&] { p->done(result); });
  delete p;
}

// With credentials: all rights for the session's authenticated identity (the "auth" scheme stands
// for it: the server stores digest:user:base64(sha1(user:password))), read for everyone.
::ACL_vector* ownedAcl() {
  static ::ACL entries[] = {{ZOO_PERM_ALL, ZOO_AUTH_IDS}, {ZOO_PERM_READ, ZOO_ANYONE_ID_UNSAFE}};
  static ::ACL_vector acl = {2, entries};
  return &acl;
}

// The C client calls no completion when a request is refused at once: answer it ourselves, on a
// later turn (never inside the caller's request). A request it took may need the socket.
template <typename Callback, typename Result>
void refuseIfNotSent(int rc, Pending<Callback>* p, Result result) {
  Shared& shared = *p->shared;
  if (rc == ZOK) return shared.driver->requestQueued();
  shared.driver->later([p = std::shared_ptr<Pending<Callback>>(p), result = std::move(result)] {
    p->shared->deliver([&] { p->done(result); });
  });
}

WatchCtx* listWatch(const std::shared_ptr<Shared>& shared, Client::WatchCallback onChange) {
  auto* watch = new WatchCtx(*shared, std::move(onChange));
  shared->watches.push_back(*watch);
  return watch;
}

// For a watching read's answer, on the loop: the C client registers the watch only when the read
// succeeds (an exists also on kNoNode), so on an error its context is freed here, unless the
// handle was closed meanwhile (closeHandle freed it: the context must not even be looked at).
auto freeIfUnregistered(const std::shared_ptr<Shared>& shared, WatchCtx* watch,
                        bool noNodeWatches = false) {
  return [shared, watch, generation = shared->generation, noNodeWatches](Code code) {
    if (code == Code::kOk || (noNodeWatches && code == Code::kNoNode)) return;
    if (generation != shared->generation) return;
    if (shared->unlist(watch)) delete watch;
  };
}

// Closes the handle, if any (never from inside the client's calls): completions still pending are
// answered (ZCLOSING) before it returns, and no watch context can be called afterwards. A handle
// still connected sends its session's close and waits for the answer (at most 1.5 s).
void closeHandle(Shared& shared) {
  if (!shared.zh) return;
  shared.driver->attach(nullptr);
  zookeeper_close(shared.zh);
  shared.zh = nullptr;
  delete shared.handleCtx;
  shared.handleCtx = nullptr;
  shared.watches.clear_and_dispose([](WatchCtx* w) { delete w; });
}

void watchHandshake(const std::shared_ptr<Shared>& shared);

// Adds the credentials to a new handle. Called before any request on it: the C client sends
// them first on every connection of the handle (ahead of queued requests).
void addAuth(const std::shared_ptr<Shared>& shared) {
  if (!shared->credentials) return;
  std::string secret = shared->credentials->secret();
  // Answered once per handle, by the first connection that carries the credentials (the client
  // sends them again on every reconnect, unanswered); a lost connection answers it with the loss.
  auto* p =
      new Pending<Client::CodeCallback>{shared, [user = shared->credentials->user](Code code) {
                                          if (code == Code::kOk) {
                                            spdlog::info("zookeeper: authenticated as {}", user);
                                          } else if (code == Code::kNoAuth) {
                                            spdlog::error(
                                                "zookeeper refused the credentials of {} "
                                                "(--zk-auth-file): the session can do "
                                                "nothing",
                                                user);
                                          }
                                        }};
  int rc =
      zoo_add_auth(shared->zh, "digest", secret.data(), static_cast<int>(secret.size()), onVoid, p);
  refuseIfNotSent(rc, p, mapCode(rc));
}

// Opens a new session (after closing the old handle, if any).
void reopen(const std::shared_ptr<Shared>& shared) {
  closeHandle(*shared);
  ++shared->generation;
  shared->state = SessionState::kConnecting;
  shared->sessionId = 0;
  auto* ctx = new HandleCtx{shared, shared->generation};
  shared->zh = zookeeper_init2(shared->connect.c_str(), sessionWatcher,
                               static_cast<int>(shared->sessionTimeout.count()), nullptr, ctx, 0,
                               logCClientLine);
  if (!shared->zh) {
    delete ctx;
    // E.g. no host of the list resolves while an ensemble's pods roll: try again, for ever.
    spdlog::error("cannot open a ZooKeeper session to {}: {}; retrying in {} ms", shared->hosts,
                  std::strerror(errno), kReopenRetryMs);
    shared->timer.schedule(shared->timer.now() + Millis(kReopenRetryMs),
                           [weak = std::weak_ptr<Shared>(shared)] {
                             auto shared = weak.lock();
                             if (shared && shared->alive && !shared->zh) reopen(shared);
                           });
    return;
  }
  shared->handleCtx = ctx;
  // By default the client resolves its host list again before nearly every send (measured: 13-33%
  // of a create+delete). It is given addresses (resolveOffTheLoop): once every 10 s re-parses them.
  zoo_set_servers_resolution_delay(shared->zh, kResolutionDelayMs);
  addAuth(shared);
  shared->handshakeCut = false;
  shared->handshakeServer.clear();
  watchHandshake(shared);  // a new session's first server may be silent too
  shared->driver->attach(shared->zh);
}

// Ends the connection the client has, or is making (see socket_drop.h).
bool dropConnection(Shared& shared, const std::string& connections, const char* why) {
  if (!shared.zh || connections.empty()) return false;
  int dropped = shutdownConnections(connections);
  if (dropped > 0)
    spdlog::warn("zookeeper client: {}: leaving {}", why,
                 connections.substr(0, connections.find('\n')));
  return dropped > 0;
}

// While connecting: a server that has not completed the handshake within an eighth of the session
// timeout (it accepted the TCP connection but answers nothing: frozen) is left at once, instead of
// after the client's own 2/3 of the timeout. A handshake takes a round trip to the server and one
// from it to the leader; in case those are slow everywhere, only one handshake is cut per spell.
Millis handshakeLimit(const Shared& shared) {
  return std::max(Millis(250), shared.sessionTimeout / 8);
}

void watchHandshake(const std::shared_ptr<Shared>& shared) {
  shared->timer.cancel(shared->handshakeTimer);
  shared->handshakeTimer = 0;
  if (!shared->watchHandshakes || shared->state != SessionState::kConnecting || !shared->zh) return;
  TimePoint now = shared->timer.now();
  std::string server = tcpConnectionsTo(shared->ports);
  if (server.empty() || server != shared->handshakeServer) {
    shared->handshakeServer = server;
    shared->handshakeSince = now;
  } else if (!shared->handshakeCut && now - shared->handshakeSince >= handshakeLimit(*shared) &&
             dropConnection(*shared, server, "no answer to the handshake")) {
    shared->handshakeCut = true;
    shared->handshakeServer.clear();
  }
  shared->handshakeTimer =
      shared->timer.schedule(now + std::max(Millis(10), shared->sessionTimeout / 16),
                             [weak = std::weak_ptr<Shared>(shared)] {
                               if (auto s = weak.lock(); s && s->alive) {
                                 s->handshakeTimer = 0;
                                 watchHandshake(s);
                               }
                             });
}

// A session event, on the loop thread: update the state, reopen after expiry, tell the listener.
void deliverSessionEvent(const std::shared_ptr<Shared>& shared, uint64_t generation, int state,
                         int64_t session, int32_t timeoutMs) {
  if (generation != shared->generation) return;
  SessionState next;
  if (state == ZOO_CONNECTED_STATE) {
    next = SessionState::kConnected;
    shared->sessionId = session;
    shared->negotiatedTimeoutMs = timeoutMs;
  } else if (state == ZOO_EXPIRED_SESSION_STATE) {
    next = SessionState::kExpired;
  } else if (state == ZOO_AUTH_FAILED_STATE) {
    next = SessionState::kAuthFailed;
  } else {
    next = SessionState::kConnecting;
  }
  if (next == shared->state) return;
  shared->state = next;
  if (next == SessionState::kConnected) {
    shared->timer.cancel(shared->handshakeTimer);
    shared->handshakeTimer = 0;
  } else if (next == SessionState::kConnecting) {
    shared->handshakeCut = false;
    shared->handshakeServer.clear();
    watchHandshake(shared);
  }
  // Expired: the listener is told while the state still says so, then a new session starts once
  // the client's calls have returned (settled()).
  if (next == SessionState::kExpired) shared->reopenDue = true;
  if (shared->listener) shared->listener(next);
}

}  // namespace

namespace {

// Host names in `hosts` are resolved off the loop from now on: the client gets addresses.
void resolveOffTheLoop(const std::shared_ptr<Shared>& shared, kj::UnixEventPort& events) {
  std::string chroot, list = shared->hosts;
  if (auto slash = list.find('/'); slash != std::string::npos) {
    chroot = list.substr(slash);
    list.resize(slash);
  }
  if (HostResolver::numeric(list)) return;
  std::string resolved = HostResolver::resolve(list);  // at the start: the loop serves nothing yet
  // None resolves now: the client is given the names, and resolves them at each attempt.
  if (!resolved.empty()) {
    shared->connect = resolved + chroot;
    spdlog::info("zookeeper hosts {} resolve to {}", list, resolved);
  }
  shared->resolvedToLoop = std::make_unique<KjLoopExecutor>(events);
  shared->resolver = std::make_unique<HostResolver>(
      list, resolved, kResolveEvery, *shared->resolvedToLoop,
      [weak = std::weak_ptr<Shared>(shared), chroot](const std::string& now) {
        auto shared = weak.lock();
        if (!shared || !shared->alive) return;
        spdlog::info("zookeeper hosts {} now resolve to {}", shared->hosts, now);
        shared->connect = now + chroot;
        if (shared->zh) zoo_set_servers(shared->zh, now.c_str());
      });
}

}  // namespace

void RealZkClient::Shared::settled() {
  if (!reopenDue || !alive) return;
  reopenDue = false;
  reopen(shared_from_this());
}

RealZkClient::RealZkClient(kj::UnixEventPort& events, Timer& timer, std::string hosts,
                           Millis sessionTimeout, bool watchHandshakes,
                           std::optional<DigestCredentials> credentials)
    : shared_(std::make_shared<Shared>(events, timer, std::move(hosts), sessionTimeout,
                                       watchHandshakes, std::move(credentials))) {
  resolveOffTheLoop(shared_, events);
  zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);
  routeCClientLogStream();
  reopen(shared_);
  if (!shared_->zh) {
    throw std::runtime_error("cannot start the ZooKeeper client for '" + shared_->hosts +
                             "': " + std::strerror(errno));
  }
}

RealZkClient::~RealZkClient() {
  shared_->alive = false;
  shared_->resolver.reset();  // joins its thread
  shared_->resolvedToLoop.reset();
  shared_->timer.cancel(shared_->handshakeTimer);
  shared_->listener = nullptr;
  closeHandle(*shared_);
  shared_->driver.reset();  // its pending tasks hold answers that refer back to the client
}

SessionState RealZkClient::sessionState() const { return shared_->state; }
int64_t RealZkClient::sessionId() const { return shared_->sessionId; }
int32_t RealZkClient::negotiatedTimeoutMs() const { return shared_->negotiatedTimeoutMs; }
std::string RealZkClient::sessionPassword() const {
  const clientid_t* id = shared_->zh ? zoo_client_id(shared_->zh) : nullptr;
  return id && id->client_id ? std::string(id->passwd, sizeof id->passwd) : std::string();
}

void RealZkClient::setSessionListener(std::function<void(SessionState)> listener) {
  shared_->listener = std::move(listener);
}

void RealZkClient::create(const std::string& path, const std::string& data, CreateMode mode,
                          CreateCallback done) {
  int flags = mode == CreateMode::kEphemeralSequential ? ZOO_EPHEMERAL_SEQUENTIAL
              : mode == CreateMode::kContainer         ? ZOO_CONTAINER
                                                       : ZOO_PERSISTENT;
  auto* p = new Pending<CreateCallback>{shared_, std::move(done)};
  int rc = shared_->zh
               ? zoo_acreate2(shared_->zh, path.c_str(), data.data(), static_cast<int>(data.size()),
                              shared_->credentials ? ownedAcl() : &ZOO_OPEN_ACL_UNSAFE, flags,
                              onStringStat, p)
               : ZINVALIDSTATE;
  refuseIfNotSent(rc, p, CreateResult{mapCode(rc), {}, {}});
}

void RealZkClient::getChildren(const std::string& path, ChildrenCallback done) {
  auto* p = new Pending<ChildrenCallback>{shared_, std::move(done)};
  int rc =
      shared_->zh ? zoo_aget_children(shared_->zh, path.c_str(), 0, onStrings, p) : ZINVALIDSTATE;
  refuseIfNotSent(rc, p, ChildrenResult{mapCode(rc), {}});
}

void RealZkClient::getChildrenAndWatch(const std::string& path, ChildrenCallback done,
                                       WatchCallback onChange) {
  WatchCtx* watch = listWatch(shared_, std::move(onChange));
  auto* p = new Pending<ChildrenCallback>{
      shared_, [unregistered = freeIfUnregistered(shared_, watch),
                done = std::move(done)](ChildrenResult result) {
        unregistered(result.code);
        done(std::move(result));
      }};
  int rc = shared_->zh ? zoo_awget_children(shared_->zh, path.c_str(), nodeWatcher, watch,
                                            onStrings, p)
                       : ZINVALIDSTATE;
  refuseIfNotSent(rc, p, ChildrenResult{mapCode(rc), {}});
}

void RealZkClient::get(const std::string& path, GetCallback done) {
  auto* p = new Pending<GetCallback>{shared_, std::move(done)};
  int rc = shared_->zh ? zoo_aget(shared_->zh, path.c_str(), 0, onData, p) : ZINVALIDSTATE;
  refuseIfNotSent(rc, p, GetResult{mapCode(rc), {}, {}});
}

void RealZkClient::getAndWatch(const std::string& path, GetCallback done, WatchCallback onChange) {
  WatchCtx* watch = listWatch(shared_, std::move(onChange));
  auto* p = new Pending<GetCallback>{
      shared_, [unregistered = freeIfUnregistered(shared_, watch),
                done = std::move(done)](GetResult result) {
        unregistered(result.code);
        done(std::move(result));
      }};
  int rc = shared_->zh ? zoo_awget(shared_->zh, path.c_str(), nodeWatcher, watch, onData, p)
                       : ZINVALIDSTATE;
  refuseIfNotSent(rc, p, GetResult{mapCode(rc), {}, {}});
}

void RealZkClient::existsAndWatch(const std::string& path, CodeCallback done,
                                  WatchCallback onChange) {
  WatchCtx* watch = listWatch(shared_, std::move(onChange));
  auto* p = new Pending<CodeCallback>{
      shared_, [unregistered = freeIfUnregistered(shared_, watch, /*noNodeWatches=*/true),
                done = std::move(done)](Code code) {
        unregistered(code);
        done(code);
      }};
  int rc = shared_->zh ? zoo_awexists(shared_->zh, path.c_str(), nodeWatcher, watch, onStat, p)
                       : ZINVALIDSTATE;
  refuseIfNotSent(rc, p, mapCode(rc));
}

void RealZkClient::remove(const std::string& path, CodeCallback done) {
  auto* p = new Pending<CodeCallback>{shared_, std::move(done)};
  int rc = shared_->zh ? zoo_adelete(shared_->zh, path.c_str(), -1, onVoid, p) : ZINVALIDSTATE;
  refuseIfNotSent(rc, p, mapCode(rc));
}

void RealZkClient::sync(const std::string& path, CodeCallback done) {
  auto* p = new Pending<CodeCallback>{shared_, std::move(done)};
  int rc = shared_->zh ? zoo_async(shared_->zh, path.c_str(), onSync, p) : ZINVALIDSTATE;
  refuseIfNotSent(rc, p, mapCode(rc));
}

void RealZkClient::getAcl(const std::string& path, AclCallback done) {
  auto* p = new Pending<AclCallback>{shared_, std::move(done)};
  int rc = shared_->zh ? zoo_aget_acl(shared_->zh, path.c_str(), onAcl, p) : ZINVALIDSTATE;
  refuseIfNotSent(rc, p, AclResult{mapCode(rc), {}});
}

}  // namespace fencekeeper::zk

namespace fencekeeper::zk {

void RealZkClient::leaveServer() {
  if (shared_->state == SessionState::kConnected) {
    dropConnection(*shared_, tcpConnectionsTo(shared_->ports), "server silent");
  }
}

}  // namespace fencekeeper::zk
