#include "sidecar/rpc/sidecar_server.h"

#include <capnp/rpc-twoparty.h>
#include <spdlog/spdlog.h>

#include <memory>

#include "ipc/fencekeeper.capnp.h"
#include "ipc/message_size.h"
#include "sidecar/engine/lock_name.h"
#include "sidecar/rpc/error_mapping.h"
#include "sidecar/rpc/message_limits.h"
#include "sidecar/rpc/read_buffered_stream.h"
#include "sidecar/rpc/status_report.h"

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

// Every byte of a Text: converting through a C string would cut a name short at a NUL.
std::string textBytes(capnp::Text::Reader text) { return std::string(text.cStr(), text.size()); }

using Budget = std::shared_ptr<ConnectionBudget>;

// The results of `context`, in a message sized for them and `textBytes` of text.
template <typename Params, typename Results>
typename Results::Builder answer(capnp::CallContext<Params, Results>& context, size_t textBytes,
                                 unsigned caps = 0) {
  return context.getResults(ipc::sizeFor<Results>(textBytes, caps));
}

template <typename Context>
kj::Promise<void> answerRefused(Context& context, const Refusal& no) {
  auto results = answer(context, no.detail.size());
  results.setError(toIpc(no.error));
  results.setDetail(no.detail);
  return kj::READY_NOW;
}

// Serves a call the connection's budget admits, counted as unanswered until its promise settles.
template <typename Context, typename Serve>
kj::Promise<void> admitted(const Budget& budget, Context& context, Serve serve) {
  if (auto no = budget->admit()) return answerRefused(context, *no);
  struct Slot {
    explicit Slot(Budget b) : budget(std::move(b)), slot(*budget) {}
    Budget budget;
    ConnectionBudget::CallSlot slot;
  };
  return serve().attach(kj::heap<Slot>(budget));
}

// One granted lease. Dropping the last reference (client drop, connection close) withdraws it.
class LeaseImpl final : public ipc::Lease::Server {
 public:
  LeaseImpl(engine::LockEngine& engine, engine::LeaseId id, Budget budget)
      : engine_(engine), id_(id), budget_(std::move(budget)) {
    budget_->leaseCreated();
  }
  ~LeaseImpl() noexcept(false) {
    budget_->leaseDropped();
    engine_.withdraw(id_);
  }

  kj::Promise<void> renew(RenewContext context) override {
    return admitted(budget_, context, [&] {
      auto v = engine_.renew(id_, Millis(context.getParams().getTtlMs()));
      auto results = answer(context, v.detail.size());
      results.setError(toIpc(v.error));
      results.setValidMs(clampMs(v.valid));
      results.setDetail(v.detail);
      results.setLossReason(toIpc(v.reason));
      return kj::Promise<void>(kj::READY_NOW);
    });
  }

  kj::Promise<void> token(TokenContext context) override {
    return admitted(budget_, context, [&] {
      auto v = engine_.token(id_);
      auto results = answer(context, v.detail.size());
      results.setError(toIpc(v.error));
      results.setToken(v.token);
      results.setValidMs(clampMs(v.valid));
      results.setDetail(v.detail);
      results.setLossReason(toIpc(v.reason));
      return kj::Promise<void>(kj::READY_NOW);
    });
  }

  kj::Promise<void> release(ReleaseContext context) override {
    context.allowCancellation();  // the node is deleted all the same; only the answer is dropped
    return admitted(budget_, context, [&] {
      auto released = bridge<engine::ReleaseOutcome>();
      engine_.release(id_, kj::mv(released.callback));
      return released.promise.then([context](engine::ReleaseOutcome o) mutable {
        auto results = answer(context, o.detail.size());
        results.setError(toIpc(o.error));
        results.setConfirmed(o.confirmed);
        results.setDetail(o.detail);
      });
    });
  }

 private:
  engine::LockEngine& engine_;
  const engine::LeaseId id_;
  const Budget budget_;
};

void fillHolderInfo(const engine::HolderInfo& h, ipc::HolderInfo::Builder info) {
  info.setHeld(h.held);
  info.setToken(h.token);
  info.setOwnerLabel(h.ownerLabel);
  info.setSinceUnixMs(h.sinceUnixMs);
  info.setWaiters(h.waiters);
  info.setThisSidecar(h.thisSidecar);
  info.setForeign(h.foreign);
  info.setForeignNode(h.foreignNode);
  auto holders = info.initHolders(static_cast<unsigned>(h.holders.size()));
  for (unsigned i = 0; i < h.holders.size(); ++i) {
    const auto& e = h.holders[i];
    auto out = holders[i];
    out.setToken(e.token);
    out.setOwnerLabel(e.ownerLabel);
    out.setSinceUnixMs(e.sinceUnixMs);
    out.setThisSidecar(e.thisSidecar);
    out.setMode(toIpc(e.mode));
    out.setPermits(e.permits);
  }
}

// Pushes a holder watch's changes to its client's watcher, one call at a time: what changes while
// a call is out is coalesced to the latest, so a slow client costs one pending change, not a queue.
class HolderPush : public std::enable_shared_from_this<HolderPush> {
 public:
  explicit HolderPush(ipc::HolderWatcher::Client watcher) : watcher_(kj::mv(watcher)) {}
  void push(const engine::HolderChange& change) {
    pending_ = change;
    if (!inFlight_ && !gone_) sendPending();
  }

 private:
  void sendPending() {
    auto request = watcher_.changedRequest();
    auto out = request.initChange();
    out.setState(toIpc(pending_->state));
    out.setDetail(pending_->detail);
    fillHolderInfo(pending_->info, out.initInfo());
    pending_.reset();
    inFlight_ = true;
    auto done = [self = weak_from_this()](bool delivered) {
      auto push = self.lock();
      if (!push) return;
      push->inFlight_ = false;
      if (!delivered) push->gone_ = true;  // its connection or watcher is gone: the watch ends
      if (push->pending_ && !push->gone_) push->sendPending();
    };
    request.send()
        .then([done](auto&&) { done(true); }, [done](kj::Exception&&) { done(false); })
        .detach([](kj::Exception&&) {});
  }

  ipc::HolderWatcher::Client watcher_;
  std::optional<engine::HolderChange> pending_;
  bool inFlight_ = false;
  bool gone_ = false;
};

// One holder watch of a connection. Dropping it (client drop, connection close) ends the watch.
class HolderWatchImpl final : public ipc::HolderWatch::Server {
 public:
  HolderWatchImpl(engine::LockEngine& engine, engine::HolderWatchId id, Budget budget,
                  std::shared_ptr<HolderPush> push)
      : engine_(engine), id_(id), budget_(std::move(budget)), push_(std::move(push)) {
    budget_->holderWatchCreated();
  }
  ~HolderWatchImpl() noexcept(false) {
    budget_->holderWatchDropped();
    engine_.unwatchHolder(id_);
  }

 private:
  engine::LockEngine& engine_;
  const engine::HolderWatchId id_;
  const Budget budget_;
  std::shared_ptr<HolderPush> push_;
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
  SidecarImpl(ServerContext& context, Budget budget, kj::ForkedPromise<void> hangUp)
      : ctx_(context), budget_(std::move(budget)), hangUp_(kj::mv(hangUp)) {}

  kj::Promise<void> acquire(AcquireContext context) override {
    // Without this a call outlives its client's disconnect (Cap'n Proto 0.9.2) and a dead
    // client's waiter would stay queued.
    context.allowCancellation();
    return admitted(budget_, context, [&] { return serveAcquire(context); });
  }

  kj::Promise<void> holder(HolderContext context) override {
    context.allowCancellation();
    return admitted(budget_, context, [&] { return serveHolder(context); });
  }

  kj::Promise<void> watchHolder(WatchHolderContext context) override {
    return admitted(budget_, context, [&] {
      serveWatchHolder(context);
      return kj::Promise<void>(kj::READY_NOW);
    });
  }

  kj::Promise<void> status(StatusContext context) override {
    return admitted(budget_, context, [&] {
      fillStatus(ctx_, context.getResults().initStatus());
      return kj::Promise<void>(kj::READY_NOW);
    });
  }

  kj::Promise<void> leaseTable(LeaseTableContext context) override {
    return admitted(budget_, context, [&] {
      auto results = context.getResults();
      if (!ctx_.leaseTable) {
        results.setError(toIpc(engine::LeaseError::kNotHeld));
        results.setDetail("this sidecar publishes no lease table (--lease-table none)");
      } else {
        results.setPath(ctx_.leaseTable->path());
        results.setInstance(ctx_.leaseTable->instance());
        results.setLayoutVersion(lease_table::kLayoutVersion);
      }
      return kj::Promise<void>(kj::READY_NOW);
    });
  }

 private:
  kj::Promise<void> serveAcquire(AcquireContext context) {
    if (auto no = budget_->admitLease()) {
      budget_->noteRefused(no->detail);
      return answerRefused(context, *no);
    }
    auto params = context.getParams();
    const Peer& peer = budget_->peer();
    engine::AcquireSpec spec;
    spec.name = textBytes(params.getName());
    spec.ownerLabel = textBytes(params.getOwnerLabel());
    spec.clientPid = peer.pid;
    spec.clientUid = peer.uid;
    spec.connection = peer.connection;
    spec.ttl = Millis(params.getTtlMs());
    spec.wait = Millis(params.getWaitMs());
    auto mode = fromIpc(params.getMode());
    if (!mode) {
      return answerRefused(context, {engine::LeaseError::kInvalidArgument,
                                     "mode " + std::to_string(static_cast<int>(params.getMode())) +
                                         " is not one this sidecar knows (exclusive, shared, "
                                         "permits): upgrade the sidecar"});
    }
    spec.mode = *mode;
    spec.permits = params.getPermits();
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
      // (A watcher of an older schema answers unimplemented: nothing to do about it.)
      spec.onRisk = [watcher](uint64_t token, bool atRisk, Millis left) {
        if (atRisk) {
          auto request = watcher->atRiskRequest();
          request.setToken(token);
          request.setLeftMs(clampMs(left));
          request.send().detach([](kj::Exception&&) {});
        } else {
          auto request = watcher->safeAgainRequest();
          request.setToken(token);
          request.send().detach([](kj::Exception&&) {});
        }
      };
    }
    auto granted = bridge<engine::AcquireOutcome>();
    auto pending = kj::heap<PendingAcquire>(ctx_.engine);
    pending->id = ctx_.engine.acquire(std::move(spec), kj::mv(granted.callback));
    auto& pendingRef = *pending;
    return granted.promise
        .then([this, context, &pendingRef](engine::AcquireOutcome o) mutable {
          pendingRef.answered = true;
          auto results = answer(context, o.detail.size(), 1);
          results.setError(toIpc(o.error));
          results.setDetail(o.detail);
          if (o.error == engine::LeaseError::kLimitReached) budget_->noteRefused(o.detail);
          if (o.error != engine::LeaseError::kOk) return;
          results.setToken(o.token);
          results.setValidMs(clampMs(o.valid));
          if (auto place = ctx_.leaseTable ? ctx_.leaseTable->placeOf(o.id) : std::nullopt) {
            results.setTableSlot(place->slot);
            results.setTableGeneration(place->generation);
          }
          results.setLease(kj::heap<LeaseImpl>(ctx_.engine, o.id, budget_));
        })
        .attach(kj::mv(pending))
        // A call pipelined on the lease keeps this call alive past a hang-up (Cap'n Proto 0.9.2
        // cancels only calls that allowed it): the hang-up itself withdraws the request.
        .exclusiveJoin(hangUp_.addBranch());
  }

  void serveWatchHolder(WatchHolderContext& context) {
    auto results = context.getResults();
    if (auto no = budget_->admitHolderWatch()) {
      budget_->noteRefused(no->detail);
      results.setError(toIpc(no->error));
      results.setDetail(no->detail);
      return;
    }
    auto params = context.getParams();
    std::string name = textBytes(params.getName());
    if (!params.hasWatcher()) {
      results.setError(toIpc(engine::LeaseError::kInvalidArgument));
      results.setDetail("watchHolder needs a watcher to call");
      return;
    }
    auto push = std::make_shared<HolderPush>(params.getWatcher());
    engine::LeaseError error;
    std::weak_ptr<HolderPush> weak = push;
    auto id = ctx_.engine.watchHolder(
        name,
        [weak](const engine::HolderChange& change) {
          if (auto p = weak.lock()) p->push(change);
        },
        error, budget_->peer().uid);
    if (error != engine::LeaseError::kOk) {
      results.setError(toIpc(error));
      results.setDetail(engine::lockNameProblem(name).value_or("invalid lock name"));
      return;
    }
    results.setWatch(kj::heap<HolderWatchImpl>(ctx_.engine, id, budget_, kj::mv(push)));
  }

  kj::Promise<void> serveHolder(HolderContext context) {
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
                       },
                       budget_->peer().uid);
    return answered.promise.then([context](Answer answer) mutable {
      auto results = context.getResults();
      results.setError(toIpc(answer.error));
      results.setDetail(answer.detail);
      fillHolderInfo(answer.info, results.initInfo());
    });
  }

  ServerContext& ctx_;
  const Budget budget_;
  kj::ForkedPromise<void> hangUp_;  // resolves when the connection closed
};

// The bootstrap of a connection the sidecar will not serve (allow-list, too many connections of
// one uid): every call answers why, and the connection closes soon after.
class RefusingSidecar final : public ipc::Sidecar::Server {
 public:
  RefusingSidecar(Refusal why, Budget budget, Timer& timer)
      : why_(std::move(why)), budget_(std::move(budget)), timer_(timer) {
    closeAfter(kGrace);
  }

  kj::Promise<void> acquire(AcquireContext context) override { return refuse(context); }
  kj::Promise<void> holder(HolderContext context) override { return refuse(context); }
  kj::Promise<void> watchHolder(WatchHolderContext context) override { return refuse(context); }
  kj::Promise<void> status(StatusContext context) override { return refuse(context); }
  kj::Promise<void> leaseTable(LeaseTableContext context) override { return refuse(context); }

 private:
  // Long enough for the answer to be written, short enough that refused peers cost no fds.
  static constexpr Millis kAnswered{100};
  static constexpr Millis kGrace{2'000};

  template <typename Context>
  kj::Promise<void> refuse(Context& context) {
    ++refused_;
    if (refused_ == 1) closeAfter(kAnswered);
    return answerRefused(context, why_);
  }
  void closeAfter(Millis delay) {
    std::weak_ptr<ConnectionBudget> budget = budget_;
    timer_.schedule(timer_.now() + delay, [budget, why = why_.detail] {
      if (auto b = budget.lock()) b->close("refused: " + why);
    });
  }

  const Refusal why_;
  const Budget budget_;
  Timer& timer_;
  uint32_t refused_ = 0;
};

// One client connection: its stream, network and RPC system, alive until the peer disconnects
// or the sidecar closes it. Counted in the context from construction to destruction.
struct Connection {
  struct Registration {
    Registration(ServerContext& c, const Budget& b) : ctx(c), budget(b) {
      ctx.live.emplace(b->peer().connection, b.get());
      ++ctx.connectionsByUid[b->peer().uid];
      ctx.load.opened(*b);
    }
    ~Registration() {
      ctx.load.closed(*budget);
      ctx.heapTrim.connectionClosed();
      ctx.live.erase(budget->peer().connection);
      auto it = ctx.connectionsByUid.find(budget->peer().uid);
      if (--it->second == 0) ctx.connectionsByUid.erase(it);
    }
    ServerContext& ctx;
    Budget budget;
  };

  Registration registration;  // first: it goes last, after every lease of the connection
  kj::Own<kj::AsyncIoStream> stream;
  BoundedMessageStream messages;
  capnp::TwoPartyVatNetwork network;
  capnp::RpcSystem<capnp::rpc::twoparty::VatId> rpcSystem;

  Connection(ServerContext& context, const Budget& budget, kj::Own<kj::AsyncIoStream> s,
             capnp::Capability::Client bootstrap)
      : registration(context, budget),
        stream(kj::heap<ReadBufferedStream>(kj::mv(s))),
        messages(*stream),
        network(messages, capnp::rpc::twoparty::Side::SERVER, replyOptions()),
        rpcSystem(capnp::makeRpcServer(network, kj::mv(bootstrap))) {
    budget->attach(network);
  }
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

std::optional<Refusal> RpcListener::refusalOf(const Peer& peer) const {
  std::string denied = context_.allow.refusal(peer);
  if (!denied.empty()) return Refusal{engine::LeaseError::kPermissionDenied, denied};
  uint32_t max = context_.limits.maxConnectionsPerPeer;
  auto open = context_.connectionsByUid.find(peer.uid);
  if (max && open != context_.connectionsByUid.end() && open->second >= max) {
    return Refusal{engine::LeaseError::kLimitReached,
                   "uid " + std::to_string(peer.uid) + " has " + std::to_string(open->second) +
                       " connections open, its limit (" + std::to_string(max) +
                       "): close some, or raise --max-connections"};
  }
  return std::nullopt;
}

void RpcListener::serve(kj::AuthenticatedStream stream) {
  Peer peer = readPeer(nextConnection_++, *stream.stream);
  auto budget = std::make_shared<ConnectionBudget>(peer, context_.limits, context_.refused,
                                                   context_.keptLeases, context_.holderWatches,
                                                   context_.load);
  capnp::Capability::Client bootstrap = nullptr;
  auto hangUp = kj::newPromiseAndFulfiller<void>();
  if (auto refused = refusalOf(peer)) {
    // The audit line of a refused peer; the connection answers why, then closes.
    spdlog::warn("refused connection {} gid {}: {}", peer.describe(), peer.gid, refused->detail);
    context_.refused.add(refused->detail);
    bootstrap = kj::heap<RefusingSidecar>(*refused, budget, context_.timer);
  } else {
    spdlog::info("connection {} gid {} opened", peer.describe(), peer.gid);
    bootstrap = kj::heap<SidecarImpl>(context_, budget, hangUp.promise.fork());
  }
  auto connection =
      kj::heap<Connection>(context_, budget, kj::mv(stream.stream), kj::mv(bootstrap));
  auto& messages = connection->messages;
  auto ended = connection->network.onDisconnect().exclusiveJoin(budget->whenClosed());
  connections_.add(
      ended
          .then([&messages, budget]() -> std::string {
            if (!budget->closeReason().empty()) return budget->closeReason();
            if (!messages.failure().empty()) return "malformed message: " + messages.failure();
            return "peer closed";
          })
          .attach(kj::mv(connection))
          .then([budget, hungUp = kj::mv(hangUp.fulfiller)](std::string reason) mutable {
            spdlog::info("connection {} closed: {}", budget->peer().describe(), reason);
            hungUp->fulfill();
          }));
}

void RpcListener::taskFailed(kj::Exception&& e) {
  spdlog::warn("connection failed: {}", e.getDescription().cStr());
}

}  // namespace fencekeeper::rpc
