// The status() answer: the engine's numbers, the session, the limits and what counts against
// them, per connection and per peer uid.
#pragma once

#include "ipc/fencekeeper.capnp.h"
#include "sidecar/rpc/sidecar_server.h"

namespace fencekeeper::rpc {

uint32_t clampMs(Millis ms);

// Most leases (and as many waiters) one status answer lists; the counts cover them all.
constexpr size_t kStatusListingCap = 10'000;
void fillStatus(const ServerContext& ctx, ipc::Status::Builder out,
                size_t listingCap = kStatusListingCap);
// The same from an engine listing already made (`s`, listed with `listingCap`).
void fillStatus(const ServerContext& ctx, ipc::Status::Builder out, const engine::EngineStatus& s,
                size_t listingCap);
void fillLease(const engine::LeaseSummary& lease, ipc::LeaseSummary::Builder out);
void fillWaiter(const engine::WaiterSummary& waiter, ipc::WaiterSummary::Builder out);

// A yes or no with the reason for a no: /healthz and /readyz answer these.
struct Verdict {
  bool yes = false;
  std::string reason;  // empty on yes
};
// The loop serves (whoever asks is answered by it) and every socket accepts.
Verdict healthOf(const ServerContext& ctx);
// The sidecar can vouch for its ZooKeeper session: leases can be granted and trusted.
Verdict readinessOf(const ServerContext& ctx);

const char* fencekeeperVersion();
const char* fencekeeperBuild();

}  // namespace fencekeeper::rpc
