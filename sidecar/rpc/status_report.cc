#include "sidecar/rpc/status_report.h"

#include "sidecar/rpc/error_mapping.h"

#include <algorithm>
#include <cstdio>

namespace fencekeeper::rpc {

uint32_t clampMs(Millis ms) {
  auto count = ms.count();
  if (count <= 0) return 0;
  return count > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(count);
}

namespace {

uint32_t clamp32(uint64_t n) { return n > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(n); }

void fillLimits(const ServerContext& ctx, ipc::Limits::Builder out) {
  const auto& engine = ctx.engine.config();
  out.setMaxConnections(ctx.limits.maxConnectionsPerPeer);
  out.setMaxLeasesPerPeer(clamp32(engine.maxLeasesPerPeer));
  out.setMaxWaitingPerPeer(clamp32(engine.maxWaitingPerPeer));
  out.setMaxCallsPerConnection(ctx.limits.maxCallsPerConnection);
  out.setMaxLeases(clamp32(engine.maxLeases));
  out.setMaxQueuedReplyBytes(ctx.limits.maxQueuedReplyBytes);
  out.setMaxQueuedReplies(ctx.limits.maxQueuedReplies);
  out.setMaxWatchesPerPeer(ctx.limits.maxHolderWatchesPerPeer);
  out.setMaxWatches(ctx.limits.maxHolderWatchesTotal);
  out.setMaxHolderReadsPerPeer(engine.holderReadsPerPeerPerSecond);
  out.setMaxCallsPerPeer(ctx.limits.maxCallsPerPeer);
  out.setMaxCalls(ctx.limits.maxCalls);
  out.setMaxQueuedRepliesPerPeer(ctx.limits.maxQueuedRepliesPerPeer);
  out.setMaxQueuedReplyBytesPerPeer(ctx.limits.maxQueuedReplyBytesPerPeer);
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
    p.setWatches(ctx.holderWatches.of(uid));
    p.setCallsInFlight(ctx.load.callsOf(uid));
    auto unread = ctx.load.unreadOf(uid);
    p.setQueuedReplies(clamp32(unread.replies));
    p.setQueuedReplyBytes(unread.bytes);
  }
}

}  // namespace

const char* fencekeeperVersion() { return FK_VERSION; }
const char* fencekeeperBuild() { return FK_BUILD; }

Verdict healthOf(const ServerContext& ctx) {
  if (ctx.acceptLoop && !ctx.acceptLoop->accepting()) {
    return {false, "the lease socket does not accept: accept() fails (" +
                       std::to_string(ctx.acceptLoop->failures()) + " failures since start)"};
  }
  if (ctx.statusAcceptLoop && !ctx.statusAcceptLoop->accepting()) {
    return {false, "the status socket does not accept: accept() fails"};
  }
  return {true, {}};
}

Verdict readinessOf(const ServerContext& ctx) {
  if (ctx.engine.vouched()) return {true, {}};
  return {false, std::string("ZooKeeper session ") + zk::sessionStateName(ctx.zk.sessionState()) +
                     ", not vouched for: no lease can be granted or trusted now"};
}

void fillLease(const engine::LeaseSummary& l, ipc::LeaseSummary::Builder out) {
  out.setName(l.name);
  out.setToken(l.token);
  out.setOwnerLabel(l.ownerLabel);
  out.setClientPid(l.clientPid);
  out.setValidMs(clampMs(l.valid));
  out.setClientUid(l.clientUid);
  out.setConnection(l.connection);
  out.setHeldForMs(static_cast<uint64_t>(std::max<int64_t>(0, l.heldFor.count())));
  out.setState("held");
  out.setMode(toIpc(l.mode));
  out.setPermits(l.permits);
}

void fillWaiter(const engine::WaiterSummary& w, ipc::WaiterSummary::Builder out) {
  out.setName(w.name);
  out.setOwnerLabel(w.ownerLabel);
  out.setClientPid(w.clientPid);
  out.setClientUid(w.clientUid);
  out.setConnection(w.connection);
  out.setState(w.queued ? "waiting" : "creating");
  out.setPosition(w.position);
  out.setWaitedMs(static_cast<uint64_t>(std::max<int64_t>(0, w.waitedFor.count())));
  out.setMode(toIpc(w.mode));
  out.setPermits(w.permits);
}

void fillStatus(const ServerContext& ctx, ipc::Status::Builder out, size_t listingCap) {
  ctx.engine.vouched();  // a due lapse first: the listing must not show its leases as held
  fillStatus(ctx, out, ctx.engine.status(listingCap), listingCap);
}

void fillStatus(const ServerContext& ctx, ipc::Status::Builder out, const engine::EngineStatus& s,
                size_t listingCap) {
  out.setVersion(FK_VERSION);
  out.setBuild(FK_BUILD);
  out.setZkServers(ctx.zkServers);
  out.setInstanceId(ctx.instanceId);
  out.setListingCap(clamp32(listingCap));
  out.setListingTruncated(s.truncated);
  Verdict ready = readinessOf(ctx);
  out.setReady(ready.yes);
  out.setNotReadyReason(ready.reason);
  Verdict healthy = healthOf(ctx);
  out.setHealthy(healthy.yes);
  out.setNotHealthyReason(healthy.reason);
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
  for (unsigned i = 0; i < s.leases.size(); ++i) fillLease(s.leases[i], leases[i]);
  auto waiters = out.initWaiterList(clamp32(s.waiters.size()));
  for (unsigned i = 0; i < s.waiters.size(); ++i) fillWaiter(s.waiters[i], waiters[i]);
  auto foreign = out.initForeignNodes(clamp32(s.foreignNodes.size()));
  for (unsigned i = 0; i < s.foreignNodes.size(); ++i) foreign.set(i, s.foreignNodes[i]);
  fillLimits(ctx, out.initLimits());
  out.setRefusedTotal(ctx.refused.total);
  fillConnections(ctx, out);
}

}  // namespace fencekeeper::rpc
