// fk-fake-sidecar SOCKET DETAIL [--grant-then-lose]: a stand-in for the sidecar, bound at SOCKET
// exactly, that answers acquire, holder and status with limitReached and DETAIL. The clients' tests
// use it to see the detail surface and, run under another uid, as the impostor their server check
// refuses. With --grant-then-lose, acquire grants a lease whose renew and token answer `lost`
// (session uncertain) with no LeaseWatcher.lost call: a sidecar's answer that overtook its call.
// Prints "ready" once it listens; serves until killed.
#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "ipc/fencekeeper.capnp.h"

namespace {

namespace ipc = fencekeeper::ipc;

class LostLease final : public ipc::Lease::Server {
 public:
  kj::Promise<void> renew(RenewContext context) override { return lost(context); }
  kj::Promise<void> token(TokenContext context) override { return lost(context); }

 private:
  template <typename Context>
  kj::Promise<void> lost(Context& context) {
    auto results = context.getResults();
    results.setError(ipc::Error::LOST);
    results.setLossReason(ipc::LossReason::SESSION_UNCERTAIN);
    results.setDetail("lost: session uncertain");
    return kj::READY_NOW;
  }
};

class FakeSidecar final : public ipc::Sidecar::Server {
 public:
  FakeSidecar(std::string detail, bool grant) : detail_(std::move(detail)), grant_(grant) {}

  kj::Promise<void> acquire(AcquireContext context) override {
    if (!grant_) return refuse(context);
    auto results = context.getResults();
    results.setError(ipc::Error::OK);
    results.setLease(kj::heap<LostLease>());
    results.setToken(7);
    results.setValidMs(300);
    return kj::READY_NOW;
  }
  kj::Promise<void> holder(HolderContext context) override { return refuse(context); }
  kj::Promise<void> status(StatusContext context) override { return refuse(context); }

 private:
  template <typename Context>
  kj::Promise<void> refuse(Context& context) {
    auto results = context.getResults();
    results.setError(ipc::Error::LIMIT_REACHED);
    results.setDetail(detail_);
    return kj::READY_NOW;
  }
  std::string detail_;
  const bool grant_;
};

}  // namespace

int main(int argc, char** argv) {
  bool grant = argc == 4 && std::string(argv[3]) == "--grant-then-lose";
  if (argc != 3 && !grant) {
    std::fprintf(stderr, "usage: fk-fake-sidecar SOCKET DETAIL [--grant-then-lose]\n");
    return 64;
  }
  unlink(argv[1]);
  auto io = kj::setupAsyncIo();
  auto listener = io.provider->getNetwork()
                      .parseAddress(kj::str("unix:", argv[1]))
                      .wait(io.waitScope)
                      ->listen();
  capnp::TwoPartyServer server(kj::heap<FakeSidecar>(argv[2], grant));
  auto serving = server.listen(*listener);
  std::printf("ready\n");
  std::fflush(stdout);
  kj::NEVER_DONE.wait(io.waitScope);
}
