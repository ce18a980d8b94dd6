// The Cap'n Proto face of the sidecar: one `Sidecar` bootstrap object per connection, one `Lease`
// object per grant, and the accept loop on the Unix socket. Thin: the lock logic is the engine's.
// Everything here runs on the loop thread; the listener owns every connection.
#pragma once

// clang-format off
#include "common/kj_async_io.h"  // first: before anything else that brings KJ
// clang-format on

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/clock.h"
#include "sidecar/engine/lock_engine.h"
#include "sidecar/rpc/accept_loop.h"
#include "sidecar/rpc/connection_budget.h"
#include "sidecar/rpc/heap_trim.h"
#include "sidecar/rpc/peer_load.h"
#include "sidecar/rpc/peer.h"
#include "sidecar/shm/lease_table_writer.h"
#include "sidecar/zk/zk_client.h"

namespace fencekeeper::rpc {

// What the connections share: the engine, the limits, and what status() reports besides the
// engine's own numbers.
struct ServerContext {
  engine::LockEngine& engine;
  zk::Client& zk;
  Timer& timer;
  std::string root;
  TimePoint startedAt;
  ConnectionLimits limits{};
  PeerLoad load{limits};
  HeapTrim heapTrim{timer};
  AllowList allow{};
  const AcceptLoop* acceptLoop = nullptr;        // set by the listener, for Status.accepting
  const AcceptLoop* statusAcceptLoop = nullptr;  // the status socket's, when it is served
  std::string zkServers{};
  std::string instanceId{};
  const shm::LeaseTableWriter* leaseTable = nullptr;  // null: --lease-table none
  // Kept by the connections themselves.
  std::map<uint64_t, const ConnectionBudget*> live{};
  std::map<uint32_t, uint32_t> connectionsByUid{};
  UidTally keptLeases{};
  UidTally holderWatches{};
  RefusalCount refused{};
};

// Accepts connections on a listening Unix socket and serves each with its own two-party RPC
// system. Destroying it closes every connection, which withdraws every lease and waiter.
class RpcListener final : private kj::TaskSet::ErrorHandler {
 public:
  RpcListener(ServerContext& context, kj::Own<kj::ConnectionReceiver> receiver);
  ~RpcListener() noexcept(false);
  // Stops accepting; open connections go on until destroyed.
  void stopAccepting() { accepting_.stop(); }

 private:
  void serve(kj::AuthenticatedStream stream);
  // Why a new connection of `peer` is not served (allow-list, connections of its uid), if so.
  std::optional<Refusal> refusalOf(const Peer& peer) const;
  void taskFailed(kj::Exception&& exception) override;

  ServerContext& context_;
  kj::Own<kj::ConnectionReceiver> receiver_;
  uint64_t nextConnection_ = 1;
  kj::TaskSet connections_;
  AcceptLoop accepting_;
};

}  // namespace fencekeeper::rpc
