#include "tests/support/zk_backends.h"

#include <zookeeper/zookeeper.h>

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>

#include "sidecar/devzk/zk_server.h"
#include "sidecar/zk/real_zk_client.h"

namespace fencekeeper::testing {

namespace {

std::string nextBase() {
  static std::atomic<int> counter{0};
  return "/t" + std::to_string(counter++);
}

void quiet(const char*) {}

constexpr Millis kRealSessionTimeout{2000};

}  // namespace

// ---- fake ------------------------------------------------------------------------------------

FakeBackend::FakeBackend() : base_(nextBase()) {
  server_.createExternally(base_, "", zk::CreateMode::kPersistent);
}

std::unique_ptr<zk::Client> FakeBackend::newClient(
    std::optional<zk::DigestCredentials> credentials) {
  return std::make_unique<zk::FakeZkClient>(server_, executor_, std::move(credentials));
}

bool FakeBackend::until(const std::function<bool()>& done, Millis timeout) {
  for (Millis waited{0};; waited += Millis(10)) {
    while (executor_.runAll() > 0) {
    }
    if (done()) return true;
    if (waited >= timeout) return false;
    timer_.advance(Millis(10));
  }
}

void FakeBackend::pass(Millis d) {
  for (Millis passed{0};; passed += Millis(10)) {
    while (executor_.runAll() > 0) {
    }
    if (passed >= d) return;
    timer_.advance(std::min(Millis(10), d - passed));
  }
}

void FakeBackend::expire(zk::Client& client) {
  server_.expireSession(dynamic_cast<zk::FakeZkClient&>(client));
}

std::vector<std::string> FakeBackend::children(const std::string& path) {
  return server_.childrenOf(path);
}
bool FakeBackend::exists(const std::string& path) { return server_.exists(path); }
zk::Stat FakeBackend::stat(const std::string& path) { return server_.statOf(path); }
void FakeBackend::remove(const std::string& path) { server_.removeExternally(path); }
std::string FakeBackend::create(const std::string& path, const std::string& data,
                                zk::CreateMode mode) {
  return server_.createExternally(path, data, mode);
}

void FakeBackend::setAcl(const std::string& path, const std::vector<zk::Acl>& acl) {
  server_.setAclExternally(path, acl);
}

// ---- real ------------------------------------------------------------------------------------

devzk::ZkServerProcess* RealBackend::server_ = nullptr;

void RealBackend::startServer() {
  if (server_) return;
  devzk::ZkServerOptions options;
  options.forceSync = false;
  server_ = new devzk::ZkServerProcess(options);
  server_->start();
}

void RealBackend::stopServer() {
  delete server_;
  server_ = nullptr;
}

namespace {

// Drives a handle of the single-threaded client with poll() until `done` holds or `timeout` passes:
// for the steps that need a handle of their own, briefly, with no loop to run on.
bool pumpUntil(zhandle_t* zh, const std::function<bool()>& done, Millis timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    auto left = std::chrono::duration_cast<Millis>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    int fd = -1, interest = 0;
    struct timeval tv {};
    zookeeper_interest(zh, &fd, &interest, &tv);
    long waitMs = std::min<long>({tv.tv_sec * 1000 + tv.tv_usec / 1000, left.count(), 50});
    pollfd p{fd, 0, 0};
    if (interest & ZOOKEEPER_READ) p.events |= POLLIN;
    if (interest & ZOOKEEPER_WRITE) p.events |= POLLOUT;
    int events = 0;
    if (poll(fd >= 0 ? &p : nullptr, fd >= 0 ? 1 : 0, static_cast<int>(waitMs)) > 0) {
      if (p.revents & POLLIN) events |= ZOOKEEPER_READ;
      if (p.revents & (POLLOUT | POLLHUP)) events |= ZOOKEEPER_WRITE;
    }
    zookeeper_process(zh, events);
  }
  return true;
}

void sessionStateWatcher(zhandle_t*, int type, int state, const char*, void* ctx) {
  if (type == ZOO_SESSION_EVENT) *static_cast<int*>(ctx) = state;
}

// A handle of its own (of the session `id`, if given), connected; nullptr if it cannot be, or
// the session has expired (`state` says which).
zhandle_t* openHandle(const std::string& hosts, const clientid_t* id, int& state) {
  state = 0;
  zhandle_t* zh = zookeeper_init2(hosts.c_str(), sessionStateWatcher,
                                  static_cast<int>(kRealSessionTimeout.count()), id, &state, 0,
                                  quiet);
  if (!zh) return nullptr;
  pumpUntil(
      zh,
      [&] { return state == ZOO_CONNECTED_STATE || state == ZOO_EXPIRED_SESSION_STATE; },
      Millis(5000));
  if (state == ZOO_CONNECTED_STATE) return zh;
  zookeeper_close(zh);
  return nullptr;
}

}  // namespace

RealBackend::RealBackend()
    : io_(std::make_unique<kj::AsyncIoContext>(kj::setupAsyncIo())),
      executor_(io_->unixEventPort),
      timer_(io_->provider->getTimer()),
      base_(nextBase()) {
  zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
  other_ = newClient();
  create(base_, "", zk::CreateMode::kPersistent);
}

RealBackend::~RealBackend() = default;

std::unique_ptr<zk::Client> RealBackend::newClient(
    std::optional<zk::DigestCredentials> credentials) {
  auto client = std::make_unique<zk::RealZkClient>(io_->unixEventPort, timer_,
                                                   server_->connectString(), kRealSessionTimeout,
                                                   /*watchHandshakes=*/false,
                                                   std::move(credentials));
  if (!until([&] { return client->sessionState() == zk::SessionState::kConnected; })) {
    throw std::runtime_error("RealBackend: the client did not connect");
  }
  return client;
}

void RealBackend::turn() {
  io_->provider->getTimer().afterDelay(2 * kj::MILLISECONDS).wait(io_->waitScope);
}

bool RealBackend::until(const std::function<bool()>& done, Millis timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    turn();
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
  }
}

void RealBackend::pass(Millis d) {
  auto deadline = std::chrono::steady_clock::now() + d;
  do {
    turn();
  } while (std::chrono::steady_clock::now() < deadline);
}

void RealBackend::expire(zk::Client& client) {
  auto& real = dynamic_cast<zk::RealZkClient&>(client);
  clientid_t id{};
  id.client_id = real.sessionId();
  std::string password = real.sessionPassword();
  std::memcpy(id.passwd, password.data(), std::min(password.size(), sizeof id.passwd));
  // The session's own client is not driven meanwhile (this thread runs its loop): a second
  // handle connects to the session and closes it; the server deletes its ephemerals. Once more
  // if the first handle raced a reconnect of the session's own client.
  for (int attempt = 0; attempt < 20; ++attempt) {
    int state = 0;
    zhandle_t* twin = openHandle(server_->connectString(), &id, state);
    if (twin) zookeeper_close(twin);
    if (state == ZOO_EXPIRED_SESSION_STATE) return;
  }
  throw std::runtime_error("RealBackend::expire: the session would not end");
}

template <typename Result>
Result RealBackend::await(const std::function<void(std::function<void(const Result&)>)>& send) {
  std::optional<Result> answer;
  send([&answer](const Result& r) { answer = r; });
  if (!until([&] { return answer.has_value(); })) {
    throw std::runtime_error("RealBackend: ZooKeeper did not answer");
  }
  return *answer;
}

std::vector<std::string> RealBackend::children(const std::string& path) {
  auto listed = await<zk::ChildrenResult>([&](auto done) { other_->getChildren(path, done); });
  return listed.code == zk::Code::kOk ? listed.children : std::vector<std::string>{};
}

bool RealBackend::exists(const std::string& path) { return stat(path).czxid != 0; }

zk::Stat RealBackend::stat(const std::string& path) {
  auto read = await<zk::GetResult>([&](auto done) { other_->get(path, done); });
  return read.code == zk::Code::kOk ? read.stat : zk::Stat{};
}

void RealBackend::remove(const std::string& path) {
  await<zk::Code>([&](auto done) { other_->remove(path, done); });
}

std::string RealBackend::create(const std::string& path, const std::string& data,
                                zk::CreateMode mode) {
  auto made =
      await<zk::CreateResult>([&](auto done) { other_->create(path, data, mode, done); });
  return made.code == zk::Code::kOk ? made.path : std::string();
}

void RealBackend::setAcl(const std::string& path, const std::vector<zk::Acl>& acl) {
  std::vector<::ACL> entries;
  for (auto& a : acl) {
    entries.push_back(
        {a.perms, {const_cast<char*>(a.scheme.c_str()), const_cast<char*>(a.id.c_str())}});
  }
  ::ACL_vector vector{static_cast<int32_t>(entries.size()), entries.data()};
  // (The other session's client has no ACL setter: the sidecar never sets one.)
  int state = 0;
  zhandle_t* zh = openHandle(server_->connectString(), nullptr, state);
  if (!zh) throw std::runtime_error("RealBackend::setAcl: cannot connect");
  int rc = 1;  // no ZooKeeper code: unanswered
  zoo_aset_acl(
      zh, path.c_str(), -1, &vector,
      [](int code, const void* data) { *static_cast<int*>(const_cast<void*>(data)) = code; },
      &rc);
  pumpUntil(zh, [&] { return rc != 1; }, Millis(5000));
  zookeeper_close(zh);
}

}  // namespace fencekeeper::testing
