#include "client_lib/src/status_reader.h"

#include <capnp/compat/json.h>

namespace fencekeeper::internal {

void readStatus(ipc::Status::Reader s, SidecarStatus* out) {
  *out = SidecarStatus{};
  out->zkState = s.getZkState();
  out->sessionId = s.getSessionId();
  out->sessionTimeoutMs = s.getSessionTimeoutMs();
  out->safeForMs = s.getSafeForMs();
  out->leasesHeld = s.getLeasesHeld();
  out->waiters = s.getWaiters();
  out->connections = s.getConnections();
  out->uptimeMs = s.getUptimeMs();
  out->grantsTotal = s.getGrantsTotal();
  out->pendingDeletes = s.getPendingDeletes();
  out->droppedDeletes = s.getDroppedDeletes();
  for (auto node : s.getForeignNodes()) out->foreignNodes.emplace_back(node);
  out->root = s.getRoot();
  for (auto l : s.getLeases()) {
    out->leases.push_back({l.getName(), l.getToken(), l.getOwnerLabel(), l.getClientPid(),
                           l.getValidMs(), l.getClientUid(), l.getConnection(), l.getHeldForMs(),
                           l.getState(), static_cast<LockMode>(l.getMode()), l.getPermits()});
  }
  for (auto w : s.getWaiterList()) {
    out->waiterList.push_back({w.getName(), w.getOwnerLabel(), w.getClientPid(), w.getClientUid(),
                               w.getConnection(), w.getState(), w.getPosition(), w.getWaitedMs(),
                               static_cast<LockMode>(w.getMode()), w.getPermits()});
  }
  auto limits = s.getLimits();
  out->limits = {limits.getMaxConnections(),    limits.getMaxLeasesPerPeer(),
                 limits.getMaxWaitingPerPeer(), limits.getMaxCallsPerConnection(),
                 limits.getMaxLeases(),         limits.getMaxQueuedReplyBytes(),
                 limits.getMaxQueuedReplies(),  limits.getMaxWatchesPerPeer(),
                 limits.getMaxWatches(),        limits.getMaxHolderReadsPerPeer()};
  for (auto c : s.getConnectionList()) {
    out->connectionList.push_back({c.getId(), c.getPid(), c.getUid(), c.getGid(), c.getLeases(),
                                   c.getWaiting(), c.getCallsInFlight(), c.getQueuedReplyBytes()});
  }
  for (auto p : s.getPeers()) {
    out->peers.push_back(
        {p.getUid(), p.getConnections(), p.getLeases(), p.getWaiting(), p.getWatches()});
  }
  out->refusedTotal = s.getRefusedTotal();
  out->accepting = s.getAccepting();
  out->acceptFailures = s.getAcceptFailures();
  out->version = s.getVersion();
  out->build = s.getBuild();
  out->zkServers = s.getZkServers();
  out->instanceId = s.getInstanceId();
  out->listingTruncated = s.getListingTruncated();
  out->listingCap = s.getListingCap();
  out->ready = s.getReady();
  out->notReadyReason = s.getNotReadyReason();
  out->healthy = s.getHealthy();
  out->notHealthyReason = s.getNotHealthyReason();
}

std::string statusJson(ipc::Status::Reader in) {
  capnp::JsonCodec codec;  // the defaults, as the status socket's
  kj::String json = codec.encode(in);
  return std::string(json.cStr(), json.size());
}

}  // namespace fencekeeper::internal
