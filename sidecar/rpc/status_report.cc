#include "sidecar/rpc/status_report.h"

#include <algorithm>
#include <cstdio>

namespace fencekeeper::rpc {

uint32_t clampMs(Millis ms) {
  auto count = ms.count();
  if (count <= 0) return 0;
  return count > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(count);
}

namespace {

uint32_t clamp32(size_t n) { return n > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(n); }

void fillLimits(const ServerContext& ctx, ipc::Limits::Builder out) {
  const auto& engine = ctx.engine.config();
  out.setMaxConnections(ctx.limits.maxConnectionsPerPeer);
  out.setMaxLeasesPerPeer(clamp32(engine.maxLeasesPerPeer));
  out.setMaxWaitingPerPeer(clamp32(engine.maxWaitingPerPeer));
  out.setMaxCallsPerConnection(ctx.limits.maxCallsPerConnection);
  out.setMaxLeases(clamp32(engine.maxLeases));
  out.setMaxQueuedReplyBytes(ctx.limits.maxQueuedReplyBytes);
}

void fillConnections(const ServerContext& ctx, ipc::Status::Builder out) {
  auto list = out.initConnectionList(clamp32(ctx.live.size()));
  unsigned i = 0;
  for (const auto& [id, budget] : ctx.live) {
    const Peer& peer = budget->peer();
    engine::Counts counts = ctx.engine.countsOfConnection(id);
    auto c = list[i++];
    c.setId(id);
    c.setPid(peer.pid);
    c.setUid(peer.uid);
    c.setGid(peer.gid);
    c.setLeases(counts.held);
    c.setWaiting(counts.waiting);
    c.setCallsInFlight(budget->callsInFlight());
    c.setQueuedReplyBytes(budget->queuedReplyBytes());
  }
  auto peers = out.initPeers(clamp32(ctx.connectionsByUid.size()));
  i = 0;
  for (const auto& [uid, connections] : ctx.connectionsByUid) {
    engine::Counts counts = ctx.engine.countsOfPeer(uid);
    auto p = peers[i++];
    p.setUid(uid);
    p.setConnections(connections);
    p.setLeases(counts.held);
    p.setWaiting(counts.waiting);
  }
}

}  // namespace

void fillStatus(const ServerContext& ctx, ipc::Status::Builder out) {
  auto s = ctx.engine.status();
  out.setZkState(zk::sessionStateName(ctx.zk.sessionState()));
  char session[24];
  std::snprintf(session, sizeof session, "0x%llx",
                static_cast<unsigned long long>(ctx.zk.sessionId()));
  out.setSessionId(session);
  out.setSessionTimeoutMs(static_cast<uint32_t>(std::max(0, ctx.zk.negotiatedTimeoutMs())));
  out.setSafeForMs(clampMs(ctx.engine.safeFor()));
  out.setLeasesHeld(s.held);
  out.setWaiters(s.waiting);
  out.setConnections(clamp32(ctx.live.size()));
  out.setUptimeMs(static_cast<uint64_t>(
      std::chrono::duration_cast<Millis>(ctx.timer.now() - ctx.startedAt).count()));
  out.setGrantsTotal(s.grantsTotal);
  out.setRoot(ctx.root);
  out.setPendingDeletes(s.pendingDeletes);
  out.setDroppedDeletes(s.droppedDeletes);
  if (const auto* accept = ctx.acceptLoop) {
    out.setAccepting(accept->accepting());
    out.setAcceptFailures(accept->failures());
  }
  auto leases = out.initLeases(clamp32(s.leases.size()));
  for (unsigned i = 0; i < s.leases.size(); ++i) {
    leases[i].setName(s.leases[i].name);
    leases[i].setToken(s.leases[i].token);
    leases[i].setOwnerLabel(s.leases[i].ownerLabel);
    leases[i].setClientPid(s.leases[i].clientPid);
    leases[i].setValidMs(clampMs(s.leases[i].valid));
    leases[i].setClientUid(s.leases[i].clientUid);
    leases[i].setConnection(s.leases[i].connection);
  }
  auto foreign = out.initForeignNodes(clamp32(s.foreignNodes.size()));
  for (unsigned i = 0; i < s.foreignNodes.size(); ++i) foreign.set(i, s.foreignNodes[i]);
  fillLimits(ctx, out.initLimits());
  out.setRefusedTotal(ctx.refusedTotal);
  fillConnections(ctx, out);
}

}  // namespace fencekeeper::rpc
