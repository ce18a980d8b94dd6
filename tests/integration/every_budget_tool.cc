// fk-every-budget: one local process (so one uid) using every budget of its uid at once, within
// its limits, for the memory tests (memory_bound_test.cc; docs/security.md "The stated bound"):
//   fk-every-budget --socket S --prefix P
// Holds P/contended; keeps 4,800 released lease capabilities (8 connections) and 1,000 holder
// watches (1); then 117 raw connections it never reads write 4 x 250 acquires of P/contended
// (they wait) and 113 x 300 status() calls (their replies pile up past the reply budgets).
// Prints "loaded ..." once the sidecar has read every frame (none left in a socket's queue: read,
// or dropped with a connection the sidecar closed), then keeps it all until killed.
#include <capnp/ez-rpc.h>
#include <linux/sockios.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ipc/fencekeeper.capnp.h"
#include "tests/support/kept_leases.h"
#include "tests/support/raw_rpc_socket.h"

using namespace fencekeeper;
using namespace fencekeeper::rpcframes;
using Clock = std::chrono::steady_clock;

namespace {

class IgnoringWatcher final : public ipc::HolderWatcher::Server {
  kj::Promise<void> changed(ChangedContext) override { return kj::READY_NOW; }
};

// Bytes written to `fd` its peer has not read yet (-1: unknown).
int unread(int fd) {
  int bytes = 0;
  return ioctl(fd, SIOCOUTQ, &bytes) == 0 ? bytes : -1;
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  std::string socket, prefix = "budget";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--socket") socket = argv[i + 1];
    if (flag == "--prefix") prefix = argv[i + 1];
  }
  const std::string contended = prefix + "/contended";

  // Connection 1 of 128: the lease the acquires wait behind.
  capnp::EzRpcClient holder("unix:" + socket);
  auto hold = holder.getMain<ipc::Sidecar>().acquireRequest();
  hold.setName(contended);
  hold.setTtlMs(120'000);
  auto held = hold.send().wait(holder.getWaitScope());
  if (held.getError() != ipc::Error::OK) {
    std::fprintf(stderr, "fk-every-budget: %s refused: %s\n", contended.c_str(),
                 held.getDetail().cStr());
    return 1;
  }
  auto lease = held.getLease();

  // 4,800 kept capabilities (8 connections), 1,000 holder watches (1).
  std::vector<std::unique_ptr<capnp::EzRpcClient>> raws;
  std::vector<ipc::Lease::Client> kept;
  for (int c = 0; c < 8; ++c) {
    raws.push_back(std::make_unique<capnp::EzRpcClient>("unix:" + socket));
    testing::acquireAndRelease(*raws.back(), prefix + "/kept/" + std::to_string(c) + "-", 600,
                               kept);
  }
  raws.push_back(std::make_unique<capnp::EzRpcClient>("unix:" + socket));
  std::vector<ipc::HolderWatch::Client> watches;
  auto main = raws.back()->getMain<ipc::Sidecar>();
  for (int i = 0; i < 1'000; i += 100) {
    kj::Vector<kj::Promise<void>> answers;
    for (int k = i; k < i + 100; ++k) {
      auto request = main.watchHolderRequest();
      request.setName(prefix + "/watched/" + std::to_string(k));
      request.setWatcher(kj::heap<IgnoringWatcher>());
      answers.add(request.send().then([&](auto response) {
        KJ_REQUIRE(response.getError() == ipc::Error::OK, response.getDetail());
        watches.push_back(response.getWatch());
      }));
    }
    kj::joinPromises(answers.releaseAsArray()).wait(raws.back()->getWaitScope());
  }

  // The rest of its 128 connections but one (left for the test's status calls), never read.
  auto deadline = [] { return Clock::now() + std::chrono::seconds(2); };
  std::vector<int> fds;
  int closedBySidecar = 0;
  for (int c = 0; c < 128 - 1 - 9 - 1; ++c) {
    int fd = dial(socket);
    if (fd < 0) {
      std::perror("fk-every-budget: connect");
      return 1;
    }
    fds.push_back(fd);
    bool open = writeFrame(fd, bootstrap(0), deadline());
    for (uint32_t q = 1; open && q <= 300; ++q) {
      open = writeFrame(fd, c < 4 ? acquire(q, 0, contended, 120'000, 120'000)
                                  : status(q, 0),
                        deadline());
    }
    closedBySidecar += !open;
  }
  auto readAll = Clock::now() + std::chrono::seconds(20);
  while (std::any_of(fds.begin(), fds.end(), [](int fd) { return unread(fd) != 0; })) {
    if (Clock::now() > readAll) {
      std::fprintf(stderr, "fk-every-budget: the sidecar left frames unread for 20 s\n");
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::printf("loaded kept=%zu watches=%zu raw=%zu closed-while-written=%d\n", kept.size(),
              watches.size(), fds.size(), closedBySidecar);
  std::fflush(stdout);
  pause();  // keeps everything open until killed
}
