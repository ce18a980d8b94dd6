// fk-fake-sidecar SOCKET DETAIL: a stand-in for the sidecar, bound at SOCKET exactly, that
// answers acquire, holder and status with limitReached and DETAIL. The clients' tests use it to
// see the detail surface and, run under another uid, as the impostor their server check refuses.
// Prints "ready" once it listens; serves until killed.
#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "ipc/fencekeeper.capnp.h"

namespace {

class FakeSidecar final : public fencekeeper::ipc::Sidecar::Server {
 public:
  explicit FakeSidecar(std::string detail) : detail_(std::move(detail)) {}

  kj::Promise<void> acquire(AcquireContext context) override { return refuse(context); }
  kj::Promise<void> holder(HolderContext context) override { return refuse(context); }
  kj::Promise<void> status(StatusContext context) override { return refuse(context); }

 private:
  template <typename Context>
  kj::Promise<void> refuse(Context& context) {
    auto results = context.getResults();
    results.setError(fencekeeper::ipc::Error::LIMIT_REACHED);
    results.setDetail(detail_);
    return kj::READY_NOW;
  }
  std::string detail_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: fk-fake-sidecar SOCKET DETAIL\n");
    return 64;
  }
  unlink(argv[1]);
  auto io = kj::setupAsyncIo();
  auto listener = io.provider->getNetwork()
                      .parseAddress(kj::str("unix:", argv[1]))
                      .wait(io.waitScope)
                      ->listen();
  capnp::TwoPartyServer server(kj::heap<FakeSidecar>(argv[2]));
  auto serving = server.listen(*listener);
  std::printf("ready\n");
  std::fflush(stdout);
  kj::NEVER_DONE.wait(io.waitScope);
}
