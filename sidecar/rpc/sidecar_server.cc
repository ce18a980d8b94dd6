#include "sidecar/rpc/sidecar_server.h"

#include <capnp/rpc-twoparty.h>
#include <spdlog/spdlog.h>

#include "ipc/fencekeeper.capnp.h"
#include "sidecar/rpc/error_mapping.h"
#include "sidecar/rpc/message_limits.h"

namespace fencekeeper::rpc {

namespace {

// A promise and a copyable callback that fulfils it: the engine takes std::function callbacks.
// A callback run after the promise was dropped does nothing.
template <typename T>
struct Bridge {
  kj::Promise<T> promise;
  std::function<void(T)> callback;
};
template <typename T>
Bridge<T> bridge() {
  auto paf = kj::newPromiseAndFulfiller<T>();
  auto fulfiller = std::make_shared<kj::Own<kj::PromiseFulfiller<T>>>(kj::mv(paf.fulfiller));
  return {kj::mv(paf.promise), [fulfiller](T value) { (*fulfiller)->fulfill(kj::mv(value)); }};
}

uint32_t clampMs(Millis ms) {
  auto count = ms.count();
  if (count <= 0) return 0;
  return count > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(count);
}

// Every byte of a Text: converting through a C string would cut a name short at a NUL.
std::string textBytes(capnp::Text::Reader text) { return std::string(text.cStr(), text.size()); }

// Who is on the other end of a connection, for logs and status.
struct Peer {
  uint64_t connection;
  int32_t pid = 0;
  std::string describe() const {
    return "pid " + std::to_string(pid) + " conn " + std::to_string(connection);
  }
};

// One granted lease. Dropping the last reference (client drop, connection close) withdraws it.
class LeaseImpl final : public ipc::Lease::Server {
 public:
  LeaseImpl(engine::LockEngine& engine, engine::LeaseId id) : engine_(engine), id_(id) {}
  ~LeaseImpl() noexcept(false) { engine_.withdraw(id_); }

  kj::Promise<void> renew(RenewContext context) override {
    auto v = engine_.renew(id_, Millis(context.getParams().getTtlMs()));
    auto results = context.getResults();
    results.setError(toIpc(v.error));
    results.setValidMs(clampMs(v.valid));
    return kj::READY_NOW;
  }

  kj::Promise<void> token(TokenContext context) override {
    auto v = engine_.token(id_);
    auto results = context.getResults();
    results.setError(toIpc(v.error));
    results.setToken(v.token);
    results.setValidMs(clampMs(v.valid));
    return kj::READY_NOW;
  }

  kj::Promise<void> release(ReleaseContext context) override {
    context.allowCancellation();  // the node is deleted all the same; only the answer is dropped
    auto released = bridge<engine::ReleaseOutcome>();
    engine_.release(id_, kj::mv(released.callback));
    return released.promise.then([context](engine::ReleaseOutcome o) mutable {
      auto results = context.getResults();
      results.setError(toIpc(o.error));
      results.setConfirmed(o.confirmed);
    });
  }

 private:
  engine::LockEngine& engine_;
  const engine::LeaseId id_;
};

// Withdraws a pending acquire whose call is cancelled (the client gave up or went away).
struct PendingAcquire {
  explicit PendingAcquire(engine::LockEngine& e) : engine(e) {}
  engine::LockEngine& engine;
  engine::LeaseId id = 0;
  bool answered = false;
  ~PendingAcquire() {
    if (!answered) engine.withdraw(id);
  }
};

class SidecarImpl final : public ipc::Sidecar::Server {
 public:
  SidecarImpl(ServerContext& context, Peer peer, kj::ForkedPromise<void> hangUp)
      : ctx_(context), peer_(std::move(peer)), hangUp_(kj::mv(hangUp)) {
    ++ctx_.connections;
  }
  ~SidecarImpl() noexcept(false) { --ctx_.connections; }

  kj::Promise<void> acquire(AcquireContext context) override {
    // Without this a call outlives its client's disconnect (Cap'n Proto 0.9.2) and a dead
    // client's waiter would stay queued.
    context.allowCancellation();
    auto params = context.getParams();
    engine::AcquireSpec spec;
    spec.name = textBytes(params.getName());
    spec.ownerLabel = textBytes(params.getOwnerLabel());
    spec.client = peer_.describe();
    spec.clientPid = peer_.pid;
    spec.ttl = Millis(params.getTtlMs());
    spec.wait = Millis(params.getWaitMs());
    if (params.hasWatcher()) {
      auto watcher = std::make_shared<ipc::LeaseWatcher::Client>(params.getWatcher());
      spec.onLost = [watcher](uint64_t token, engine::LossReason reason,
                              std::function<void()> told) {
        auto request = watcher->lostRequest();
        request.setToken(token);
        request.setReason(toIpc(reason));
        // The answer means the holder has handled the notice; a failure means it is gone.
        request.send()
            .then([told](auto&&) { told(); }, [told](kj::Exception&&) { told(); })
            .detach([](kj::Exception&&) {});
      };
    }
    auto granted = bridge<engine::AcquireOutcome>();
    auto pending = kj::heap<PendingAcquire>(ctx_.engine);
    pending->id = ctx_.engine.acquire(std::move(spec), kj::mv(granted.callback));
    auto& pendingRef = *pending;
    return granted.promise
        .then([this, context, &pendingRef](engine::AcquireOutcome o) mutable {
          pendingRef.answered = true;
          auto results = context.getResults();
          results.setError(toIpc(o.error));
          results.setDetail(o.detail);
          if (o.error != engine::LeaseError::kOk) return;
          results.setToken(o.token);
          results.setValidMs(clampMs(o.valid));
          results.setLease(kj::heap<LeaseImpl>(ctx_.engine, o.id));
        })
        .attach(kj::mv(pending))
        // A call pipelined on the lease keeps this call alive past a hang-up (Cap'n Proto 0.9.2
        // cancels only calls that allowed it): the hang-up itself withdraws the request.
        .exclusiveJoin(hangUp_.addBranch());
  }

  kj::Promise<void> holder(HolderContext context) override {
    context.allowCancellation();
    struct Answer {
      engine::LeaseError error;
      engine::HolderInfo info;
      std::string detail;
    };
    auto answered = bridge<Answer>();
    ctx_.engine.holder(textBytes(context.getParams().getName()),
                       [callback = kj::mv(answered.callback)](
                           engine::LeaseError e, engine::HolderInfo info, std::string detail) {
                         callback(Answer{e, std::move(info), std::move(detail)});
                       });
    return answered.promise.then([context](Answer answer) mutable {
      auto results = context.getResults();
      results.setError(toIpc(answer.error));
      results.setDetail(answer.detail);
      auto info = results.initInfo();
      const auto& h = answer.info;
      info.setHeld(h.held);
      info.setToken(h.token);
      info.setOwnerLabel(h.ownerLabel);
      info.setSinceUnixMs(h.sinceUnixMs);
      info.setWaiters(h.waiters);
      info.setThisSidecar(h.thisSidecar);
      info.setForeign(h.foreign);
      info.setForeignNode(h.foreignNode);
    });
  }

  kj::Promise<void> status(StatusContext context) override {
    auto s = ctx_.engine.status();
    auto out = context.getResults().initStatus();
    out.setZkState(zk::sessionStateName(ctx_.zk.sessionState()));
    char session[24];
    std::snprintf(session, sizeof session, "0x%llx",
                  static_cast<unsigned long long>(ctx_.zk.sessionId()));
    out.setSessionId(session);
    out.setSessionTimeoutMs(static_cast<uint32_t>(std::max(0, ctx_.zk.negotiatedTimeoutMs())));
    out.setSafeForMs(clampMs(ctx_.engine.safeFor()));
    out.setLeasesHeld(s.held);
    out.setWaiters(s.waiting);
    out.setConnections(ctx_.connections);
    out.setUptimeMs(static_cast<uint64_t>(
        std::chrono::duration_cast<Millis>(ctx_.timer.now() - ctx_.startedAt).count()));
    out.setGrantsTotal(s.grantsTotal);
    out.setRoot(ctx_.root);
    out.setPendingDeletes(s.pendingDeletes);
    out.setDroppedDeletes(s.droppedDeletes);
    if (auto* accept = ctx_.acceptLoop) {
      out.setAccepting(accept->accepting());
      out.setAcceptFailures(accept->failures());
    }
    auto leases = out.initLeases(static_cast<unsigned>(s.leases.size()));
    for (unsigned i = 0; i < s.leases.size(); ++i) {
      leases[i].setName(s.leases[i].name);
      leases[i].setToken(s.leases[i].token);
      leases[i].setOwnerLabel(s.leases[i].ownerLabel);
      leases[i].setClientPid(s.leases[i].clientPid);
      leases[i].setValidMs(clampMs(s.leases[i].valid));
    }
    auto foreign = out.initForeignNodes(static_cast<unsigned>(s.foreignNodes.size()));
    for (unsigned i = 0; i < s.foreignNodes.size(); ++i) foreign.set(i, s.foreignNodes[i]);
    return kj::READY_NOW;
  }

 private:
  ServerContext& ctx_;
  const Peer peer_;
  kj::ForkedPromise<void> hangUp_;  // resolves when the connection closed
};

// One client connection: its stream, network and RPC system, alive until the peer disconnects.
struct Connection {
  kj::Own<kj::AsyncIoStream> stream;
  BoundedMessageStream messages;
  capnp::TwoPartyVatNetwork network;
  capnp::RpcSystem<capnp::rpc::twoparty::VatId> rpcSystem;

  Connection(kj::Own<kj::AsyncIoStream> s, capnp::Capability::Client bootstrap)
      : stream(kj::mv(s)),
        messages(*stream),
        network(messages, capnp::rpc::twoparty::Side::SERVER, clientReaderOptions()),
        rpcSystem(capnp::makeRpcServer(network, kj::mv(bootstrap))) {}
};

}  // namespace

RpcListener::RpcListener(ServerContext& context, kj::Own<kj::ConnectionReceiver> receiver)
    : context_(context),
      receiver_(kj::mv(receiver)),
      connections_(*this),
      accepting_(*receiver_, context.timer,
                 [this](kj::AuthenticatedStream stream) { serve(kj::mv(stream)); }) {
  context_.acceptLoop = &accepting_;
}

RpcListener::~RpcListener() noexcept(false) { context_.acceptLoop = nullptr; }

void RpcListener::serve(kj::AuthenticatedStream stream) {
  Peer peer{nextConnection_++};
  KJ_IF_MAYBE (local, kj::dynamicDowncastIfAvailable<kj::LocalPeerIdentity>(*stream.peerIdentity)) {
    KJ_IF_MAYBE (pid, local->getCredentials().pid) {
      peer.pid = *pid;
    }
  }
  spdlog::debug("connection {} from pid {}", peer.connection, peer.pid);
  auto hangUp = kj::newPromiseAndFulfiller<void>();
  auto connection = kj::heap<Connection>(
      kj::mv(stream.stream), kj::heap<SidecarImpl>(context_, peer, hangUp.promise.fork()));
  auto disconnected = connection->network.onDisconnect();
  uint64_t id = peer.connection;
  connections_.add(disconnected.attach(kj::mv(connection))
                       .then([id, hungUp = kj::mv(hangUp.fulfiller)]() mutable {
                         spdlog::debug("connection {} closed", id);
                         hungUp->fulfill();
                       }));
}

void RpcListener::taskFailed(kj::Exception&& e) {
  spdlog::warn("connection failed: {}", e.getDescription().cStr());
}

}  // namespace fencekeeper::rpc
