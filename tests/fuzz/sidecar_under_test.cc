#include "tests/fuzz/sidecar_under_test.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>

#include "sidecar/engine/lock_name.h"

namespace fencekeeper::fuzz {

namespace {

// Hands the listener the server's end of the socket pair, once; later accepts never complete.
class OneConnection final : public kj::ConnectionReceiver {
 public:
  explicit OneConnection(kj::Own<kj::AsyncIoStream> stream) : stream_(kj::mv(stream)) {}

  kj::Promise<kj::Own<kj::AsyncIoStream>> accept() override {
    KJ_IF_MAYBE (stream, stream_) {
      auto out = kj::mv(*stream);
      stream_ = nullptr;
      return kj::mv(out);
    }
    return kj::NEVER_DONE;
  }
  kj::Promise<kj::AuthenticatedStream> acceptAuthenticated() override {
    return accept().then([](kj::Own<kj::AsyncIoStream> stream) {
      kj::LocalPeerIdentity::Credentials self{static_cast<int>(getpid()),
                                              static_cast<uint>(getuid())};
      return kj::AuthenticatedStream{kj::mv(stream), kj::LocalPeerIdentity::newInstance(self)};
    });
  }
  uint getPort() override { return 0; }

 private:
  kj::Maybe<kj::Own<kj::AsyncIoStream>> stream_;
};

engine::EngineConfig engineConfig() {
  engine::EngineConfig config;
  config.instanceId = SidecarUnderTest::kInstanceId;
  return config;
}

// No input may keep the loop busy forever: this many rounds without settling is a livelock.
constexpr int kMaxSettleRounds = 100'000;

}  // namespace

kj::AsyncIoContext& asyncIo() {
  static kj::AsyncIoContext* io = [] {
    signal(SIGPIPE, SIG_IGN);  // a write to a peer that closed is an error, not a death
    // Millions of inputs: the sidecar's log only when asked for (reproducing a crash).
    if (!std::getenv("FK_FUZZ_LOG"))
      spdlog::set_level(spdlog::level::off);
    else
      spdlog::set_level(spdlog::level::debug);
    return new kj::AsyncIoContext(kj::setupAsyncIo());
  }();
  return *io;
}

SidecarUnderTest::SidecarUnderTest()
    : zk_(server_, executor_),
      engine_(zk_, timer_, engineConfig()),
      context_{engine_, zk_, timer_, "/fencekeeper", timer_.now()} {
  auto pipe = asyncIo().provider->newTwoWayPipe();
  client_ = kj::mv(pipe.ends[0]);
  listener_ =
      std::make_unique<rpc::RpcListener>(context_, kj::heap<OneConnection>(kj::mv(pipe.ends[1])));
  // Grants need two answered heartbeats a quarter of the session timeout apart.
  settle();
  advance(Millis(1000));
}

SidecarUnderTest::~SidecarUnderTest() {
  client_ = nullptr;
  listener_.reset();
  settle();
}

void SidecarUnderTest::settle() {
  auto& waitScope = asyncIo().waitScope;
  for (int round = 0; round < kMaxSettleRounds; ++round) {
    waitScope.poll();
    if (executor_.runAll() == 0) return;
  }
  oracleFailed("settle()", "the loop never ran out of work");
}

void SidecarUnderTest::advance(Millis by) {
  timer_.advance(by);
  settle();
}

void SidecarUnderTest::expireSession() {
  server_.expireSession(zk_);
  settle();
}

void SidecarUnderTest::checkHeldLeases() {
  // Holders of one lock together: shared ones, or at most N permits of one N; never an
  // exclusive one with any other.
  auto leases = engine_.status().leases;
  for (size_t i = 0; i < leases.size(); ++i) {
    const auto& a = leases[i];
    FK_FUZZ_CHECK(engine::isValidLockName(a.name), "held a lock on an invalid name");
    uint32_t together = 1;
    for (size_t j = i + 1; j < leases.size(); ++j) {
      const auto& b = leases[j];
      if (a.name != b.name) continue;
      ++together;
      FK_FUZZ_CHECK(a.mode != engine::LockMode::kExclusive && a.mode == b.mode &&
                        a.permits == b.permits,
                    std::string("two holders of ") + a.name + ": " + engine::lockModeName(a.mode) +
                        " and " + engine::lockModeName(b.mode));
    }
    if (a.mode == engine::LockMode::kPermits) {
      FK_FUZZ_CHECK(together <= a.permits, a.name + ": " + std::to_string(together) +
                                               " holders of " + std::to_string(a.permits) +
                                               " permits");
    }
  }
}

void SidecarUnderTest::disconnectAndCheckNothingLeft() {
  client_ = nullptr;
  settle();
  auto status = engine_.status();
  FK_FUZZ_CHECK(status.held == 0, std::to_string(status.held) + " leases held");
  FK_FUZZ_CHECK(status.waiting == 0, std::to_string(status.waiting) + " requests waiting");
  FK_FUZZ_CHECK(context_.live.empty(), std::to_string(context_.live.size()) + " connections");
  checkNoNodesUnder("/fencekeeper/locks");
}

void SidecarUnderTest::checkNoNodesUnder(const std::string& path) {
  const std::string ours = std::string("fk") + kInstanceId + "-";
  for (const auto& child : server_.childrenOf(path)) {
    FK_FUZZ_CHECK(!(child.rfind(ours, 0) == 0 && engine::parseQueueNode(child)),
                  "lock node left behind: " + path + "/" + child);
    checkNoNodesUnder(path + "/" + child);
  }
}

kj::Promise<void> discardAll(kj::AsyncInputStream& in) {
  auto buffer = kj::heapArray<kj::byte>(4096);
  auto read = in.tryRead(buffer.begin(), 1, buffer.size());
  return read.then([&in, buffer = kj::mv(buffer)](size_t n) -> kj::Promise<void> {
    if (n == 0) return kj::READY_NOW;
    return discardAll(in);
  });
}

}  // namespace fencekeeper::fuzz
