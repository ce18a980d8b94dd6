#include "tests/support/kept_leases.h"

#include <kj/debug.h>

namespace fencekeeper::testing {

void acquireAndRelease(capnp::EzRpcClient& raw, const std::string& prefix, int count,
                       std::vector<ipc::Lease::Client>& kept) {
  constexpr int kBatch = 100;
  auto main = raw.getMain<ipc::Sidecar>();
  auto& waitScope = raw.getWaitScope();
  for (int done = 0; done < count; done += kBatch) {
    std::vector<capnp::RemotePromise<ipc::Sidecar::AcquireResults>> acquires;
    for (int i = done; i < done + kBatch && i < count; ++i) {
      auto request = main.acquireRequest();
      request.setName(prefix + std::to_string(i));
      request.setTtlMs(20'000);
      acquires.push_back(request.send());
    }
    auto releases = kj::heapArrayBuilder<kj::Promise<void>>(acquires.size());
    for (auto& sent : acquires) {
      auto got = sent.wait(waitScope);
      KJ_REQUIRE(got.getError() == ipc::Error::OK, "acquire refused", got.getDetail());
      kept.push_back(got.getLease());
      releases.add(kept.back().releaseRequest().send().ignoreResult());
    }
    kj::joinPromises(releases.finish()).wait(waitScope);
  }
}

}  // namespace fencekeeper::testing
