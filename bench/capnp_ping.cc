#include "bench/capnp_ping.h"

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <stdexcept>

#include "bench/ping.capnp.h"
#include "tests/support/child_process.h"
#include "tests/support/wait.h"

namespace fencekeeper::bench {
namespace {

class PingServer final : public Ping::Server {
 protected:
  kj::Promise<void> ping(PingContext context) override {
    context.initResults(capnp::MessageSize{4, 0});  // as the sidecar's answers are sized
    return kj::READY_NOW;
  }
};

}  // namespace

int capnpPingServerMain(const std::string& path) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the benchmark
  auto io = kj::setupAsyncIo();
  ::unlink(path.c_str());
  auto address =
      io.provider->getNetwork().parseAddress(kj::str("unix:", path.c_str())).wait(io.waitScope);
  auto listener = address->listen();
  auto stream = listener->accept().wait(io.waitScope);
  capnp::TwoPartyVatNetwork network(*stream, capnp::rpc::twoparty::Side::SERVER);
  auto rpc = capnp::makeRpcServer(network, kj::heap<PingServer>());
  network.onDisconnect().wait(io.waitScope);
  ::unlink(path.c_str());
  return 0;
}

struct CapnpPingPeer::State {
  kj::AsyncIoContext io = kj::setupAsyncIo();
  std::unique_ptr<testing::ChildProcess> process;
  kj::Own<kj::AsyncIoStream> stream;
  kj::Own<capnp::TwoPartyClient> rpc;
  kj::Maybe<Ping::Client> ping;
};

CapnpPingPeer::CapnpPingPeer(const std::string& selfExe, const std::string& dir)
    : state_(std::make_unique<State>()) {
  std::string path = dir + "/capnp-ping.sock";
  state_->process = std::make_unique<testing::ChildProcess>(
      std::vector<std::string>{selfExe, "--capnp-ping-server", path}, dir + "/capnp-ping.log");
  auto& io = state_->io;
  bool connected = testing::waitUntil(
      [&] {
        KJ_IF_MAYBE (e, kj::runCatchingExceptions([&] {
                       auto address = io.provider->getNetwork()
                                          .parseAddress(kj::str("unix:", path.c_str()))
                                          .wait(io.waitScope);
                       state_->stream = address->connect().wait(io.waitScope);
                     })) {
          return false;  // not listening yet
        }
        return true;
      },
      std::chrono::milliseconds(5000));
  if (!connected) throw std::runtime_error("capnp ping server did not start");
  state_->rpc = kj::heap<capnp::TwoPartyClient>(*state_->stream);
  state_->ping = state_->rpc->bootstrap().castAs<Ping>();
}

CapnpPingPeer::~CapnpPingPeer() {
  state_->ping = nullptr;
  state_->rpc = nullptr;
  state_->stream = nullptr;  // the server sees EOF and exits
  if (state_->process) state_->process->wait(std::chrono::milliseconds(2000));
}

bool CapnpPingPeer::pingOnce() {
  KJ_IF_MAYBE (ping, state_->ping) {
    // Sized like the library's own calls (ipc/message_size.h): no 8 KiB first segment.
    auto request = ping->pingRequest(capnp::MessageSize{4, 0});
    return kj::runCatchingExceptions([&] { request.send().wait(state_->io.waitScope); }) == nullptr;
  }
  return false;
}

}  // namespace fencekeeper::bench
