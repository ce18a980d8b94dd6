#include "tests/support/zk_backends.h"

#include <zookeeper/zookeeper.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "sidecar/devzk/zk_server.h"
#include "sidecar/zk/real_zk_client.h"

namespace fencekeeper::testing {

namespace {

std::string nextBase() {
  static std::atomic<int> counter{0};
  return "/t" + std::to_string(counter++);
}

zk::Stat copyStat(const ::Stat& s) {
  zk::Stat out;
  out.czxid = s.czxid;
  out.mzxid = s.mzxid;
  out.ctimeMs = s.ctime;
  out.ephemeralOwner = s.ephemeralOwner;
  out.version = s.version;
  out.numChildren = s.numChildren;
  return out;
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

void RealBackend::LoopExecutor::post(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.push_back(std::move(fn));
}

size_t RealBackend::LoopExecutor::runAll() {
  size_t n = 0;
  for (;;) {
    std::function<void()> fn;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (queue_.empty()) return n;
      fn = std::move(queue_.front());
      queue_.pop_front();
    }
    fn();
    ++n;
  }
}

RealBackend::RealBackend() : base_(nextBase()) {
  zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
  other_ =
      zookeeper_init2(server_->connectString().c_str(), nullptr, 10000, nullptr, nullptr, 0, quiet);
  if (!other_ || !until([&] { return zoo_state(other_) == ZOO_CONNECTED_STATE; })) {
    throw std::runtime_error("RealBackend: cannot connect to " + server_->connectString());
  }
  create(base_, "", zk::CreateMode::kPersistent);
}

RealBackend::~RealBackend() {
  if (other_) zookeeper_close(other_);
}

std::unique_ptr<zk::Client> RealBackend::newClient(
    std::optional<zk::DigestCredentials> credentials) {
  auto client = std::make_unique<zk::RealZkClient>(executor_, timer_, server_->connectString(),
                                                   kRealSessionTimeout, /*watchHandshakes=*/false,
                                                   std::move(credentials));
  if (!until([&] { return client->sessionState() == zk::SessionState::kConnected; })) {
    throw std::runtime_error("RealBackend: the client did not connect");
  }
  return client;
}

void RealBackend::turn() {
  executor_.runAll();
  timer_.runDue();
  executor_.runAll();
}

bool RealBackend::until(const std::function<bool()>& done, Millis timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    turn();
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(Millis(2));
  }
}

void RealBackend::pass(Millis d) {
  auto deadline = std::chrono::steady_clock::now() + d;
  do {
    turn();
    std::this_thread::sleep_for(Millis(2));
  } while (std::chrono::steady_clock::now() < deadline);
  turn();
}

void RealBackend::expire(zk::Client& client) {
  auto& real = dynamic_cast<zk::RealZkClient&>(client);
  clientid_t id{};
  id.client_id = real.sessionId();
  std::string password = real.sessionPassword();
  std::memcpy(id.passwd, password.data(), std::min(password.size(), sizeof id.passwd));
  struct Seen {
    std::mutex mutex;
    std::condition_variable changed;
    int state = 0;
  };
  auto watcher = [](zhandle_t*, int type, int state, const char*, void* ctx) {
    if (type != ZOO_SESSION_EVENT) return;
    auto* s = static_cast<Seen*>(ctx);
    std::lock_guard<std::mutex> lock(s->mutex);
    s->state = state;
    s->changed.notify_all();
  };
  // The session's own client reconnects at once and may take the session back before the second
  // handle's close arrives: try again until a handle with the session's id is told it expired.
  for (int attempt = 0; attempt < 20; ++attempt) {
    Seen seen;
    zhandle_t* twin =
        zookeeper_init2(server_->connectString().c_str(), watcher,
                        static_cast<int>(kRealSessionTimeout.count()), &id, &seen, 0, quiet);
    if (!twin) throw std::runtime_error("RealBackend::expire: cannot open a second handle");
    int state = 0;
    {
      std::unique_lock<std::mutex> lock(seen.mutex);
      seen.changed.wait_for(lock, std::chrono::seconds(5), [&] {
        return seen.state == ZOO_CONNECTED_STATE || seen.state == ZOO_EXPIRED_SESSION_STATE;
      });
      state = seen.state;
    }
    zookeeper_close(twin);  // when connected: closes the session, the server deletes its ephemerals
    if (state == ZOO_EXPIRED_SESSION_STATE) return;
  }
  throw std::runtime_error("RealBackend::expire: the session would not end");
}

std::vector<std::string> RealBackend::children(const std::string& path) {
  String_vector names{};
  std::vector<std::string> out;
  if (zoo_get_children(other_, path.c_str(), 0, &names) != ZOK) return out;
  for (int i = 0; i < names.count; ++i) out.emplace_back(names.data[i]);
  deallocate_String_vector(&names);
  return out;
}

bool RealBackend::exists(const std::string& path) {
  ::Stat s{};
  return zoo_exists(other_, path.c_str(), 0, &s) == ZOK;
}

zk::Stat RealBackend::stat(const std::string& path) {
  ::Stat s{};
  return zoo_exists(other_, path.c_str(), 0, &s) == ZOK ? copyStat(s) : zk::Stat{};
}

void RealBackend::remove(const std::string& path) { zoo_delete(other_, path.c_str(), -1); }

std::string RealBackend::create(const std::string& path, const std::string& data,
                                zk::CreateMode mode) {
  int flags = mode == zk::CreateMode::kEphemeralSequential ? ZOO_EPHEMERAL_SEQUENTIAL
              : mode == zk::CreateMode::kContainer         ? ZOO_CONTAINER
                                                           : ZOO_PERSISTENT;
  char created[512] = {};
  int rc = zoo_create(other_, path.c_str(), data.data(), static_cast<int>(data.size()),
                      &ZOO_OPEN_ACL_UNSAFE, flags, created, sizeof created);
  return rc == ZOK ? std::string(created) : std::string();
}

void RealBackend::setAcl(const std::string& path, const std::vector<zk::Acl>& acl) {
  std::vector<::ACL> entries;
  for (auto& a : acl) {
    entries.push_back(
        {a.perms, {const_cast<char*>(a.scheme.c_str()), const_cast<char*>(a.id.c_str())}});
  }
  ::ACL_vector vector{static_cast<int32_t>(entries.size()), entries.data()};
  zoo_set_acl(other_, path.c_str(), -1, &vector);
}

}  // namespace fencekeeper::testing
