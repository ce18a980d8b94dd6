// The C++ client: a KJ event loop on its own I/O thread owns the connection and every Cap'n
// Proto object; public calls hop onto it through a KjLoopExecutor (a mutex-guarded queue and an
// eventfd) and wait for the answer on a CallAnswer. KJ's own cross-thread executor would do, but
// its futex-based locking is invisible to ThreadSanitizer.
#include "fencekeeper/client.h"

// clang-format off
#include "common/kj_async_io.h"  // first: before anything else that brings KJ
// clang-format on

#include <capnp/rpc-twoparty.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "boot_clock.h"
#include "client_lib/src/acquire_request.h"
#include "client_lib/src/call_answer.h"
#include "client_lib/src/client_internal.h"
#include "client_lib/src/lease_table_reader.h"
#include "client_lib/src/pollable_flag.h"
#include "client_lib/src/server_check.h"
#include "client_lib/src/status_reader.h"
#include "common/kj_loop.h"
#include "common/socket_path.h"
#include "ipc/fencekeeper.capnp.h"
#include "ipc/message_size.h"

namespace fencekeeper {

namespace {

// Validity deadlines count suspends, like the sidecar's (see boot_clock.h).
using Clock = BootClock;
// A frozen or wedged sidecar must not block a caller for ever: calls give up this long after
// the time the sidecar itself had to answer.
constexpr Millis kCallSlack{10'000};
// After the connection drops (the sidecar restarted, say), reconnect attempts back off from the
// first delay to the last.
constexpr Millis kReconnectFirstDelay{20};
constexpr Millis kReconnectMaxDelay{1'000};

ErrorCode fromIpc(ipc::Error e) { return static_cast<ErrorCode>(static_cast<uint16_t>(e)); }
LossReason fromIpc(ipc::LossReason r) { return static_cast<LossReason>(static_cast<uint16_t>(r)); }

// A renew or token answer that says the lease is gone for good.
bool endsLease(ipc::Error e) { return e == ipc::Error::EXPIRED || e == ipc::Error::LOST; }

// The loss a failed renew or token answer reports. The answer carries the sidecar's reason, so the
// loss reads the same whether this answer or LeaseWatcher.lost runs first on the client.
LossReason lossOf(ipc::Error e, ipc::LossReason reason) {
  return endsLease(e) ? fromIpc(reason) : LossReason::kRenewFailed;
}

Status error(ErrorCode code, std::string message = {}) {
  if (message.empty()) message = errorCodeName(code);
  return Status{code, std::move(message)};
}

Status clientClosed() { return error(ErrorCode::kSidecarUnavailable, "the client is closed"); }

// A failed result of the sidecar: its code, with the detail it gave (if any) after the name.
template <typename Results>
Status failure(const Results& r) {
  ErrorCode code = fromIpc(r.getError());
  std::string detail = r.getDetail();
  return error(code, detail.empty() ? "" : std::string(errorCodeName(code)) + ": " + detail);
}

// A call that failed in transport, said for people: KJ's own text ("Peer disconnected.") names
// neither the sidecar nor what to do.
Status transportFailure(const kj::Exception& e) {
  if (e.getType() == kj::Exception::Type::DISCONNECTED) {
    return error(ErrorCode::kSidecarUnavailable,
                 "sidecar unavailable: the sidecar closed the connection (it stopped, restarted "
                 "or dropped this client; every lease of this connection is lost)");
  }
  return error(ErrorCode::kSidecarUnavailable,
               std::string("sidecar unavailable: the call to the sidecar failed: ") +
                   e.getDescription().cStr());
}

// Refuses text the sidecar would see cut short: a C string ends at its first NUL.
Status refuseNul(const std::string& text, ErrorCode code, const char* what) {
  if (text.find('\0') == std::string::npos) return Status{};
  return error(code, std::string(errorCodeName(code)) + ": the " + what + " holds a NUL byte");
}

// Now on the lease table's clock (CLOCK_BOOTTIME, in ns).
uint64_t bootNowNs() { return static_cast<uint64_t>(Clock::now().time_since_epoch().count()); }

Millis clampNonNegative(Clock::duration d) {
  auto ms = std::chrono::duration_cast<Millis>(d);
  return ms.count() < 0 ? Millis(0) : ms;
}

}  // namespace

// Shared by a Lease handle (any thread) and the I/O thread.
struct LeaseState {
  std::weak_ptr<ClientImpl> client;
  uint64_t key = 0;  // in ClientImpl::leases_
  std::string name;
  AcquireOptions options;
  std::atomic<uint64_t> token{0};
  std::atomic<bool> checkedIn{true};
  std::atomic<bool> atRisk{false};  // jeopardy: between the sidecar's atRisk and safeAgain
  // Set once lost or released: validFor()'s lock-free answer.
  std::atomic<bool> ended{false};
  // Set once the I/O thread has erased it (its release was answered): its drop needs no hop.
  std::atomic<bool> forgotten{false};
  // The lease's slot in the sidecar's shared-memory lease table; no table, or generation 0, when
  // it has none (validFor() then counts from the sidecar's last answer). Set before delivery.
  std::shared_ptr<const internal::LeaseTableReader> table;
  uint32_t tableSlot = 0;
  uint64_t tableGeneration = 0;

  mutable std::mutex mutex;
  Clock::time_point validUntil{};
  uint32_t lastValidMs = 0;
  bool lost = false;
  bool released = false;
  bool delivered = false;  // acquire returned it to its caller
  LossReason lossReason = LossReason::kTtlExpired;
  // Loss as cancellation: both fire on a loss of a delivered lease, before its callback.
  std::stop_source stop;
  internal::PollableFlag lossFlag;

  // Marks the lease lost once and tells the application. Runs on the I/O thread.
  void markLost(LossReason reason) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (lost || released) return;
      lost = true;
      ended = true;
      lossReason = reason;
      validUntil = {};
      // Not delivered yet, it was never the caller's: acquire drops it and queues again.
      if (!delivered) return;
    }
    lossFlag.set();
    stop.request_stop();
    if (options.exitOnLoss) {
      std::fprintf(stderr, "fencekeeper: lease on '%s' (token %llu) lost: %s; exiting\n",
                   name.c_str(), static_cast<unsigned long long>(token.load()),
                   lossReasonName(reason));
      std::fflush(stderr);
      _exit(70);
    }
    if (options.onLost) options.onLost(token.load(), reason);
  }
  // Jeopardy, as the sidecar pushes it (I/O thread): the flag, then the application's callback.
  void markRisk(bool risky, Millis left) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (lost || released) return;
    }
    atRisk = risky;
    if (options.onRisk) options.onRisk(token.load(), risky, left);
  }
  // Its owner let go of it (release, Lease destroyed, client closed): no loss callback follows.
  void markReleased() {
    std::lock_guard<std::mutex> lock(mutex);
    released = true;
    ended = true;
    validUntil = {};
  }
  // Hands the grant to acquire's caller, unless it is lost or has no validity left.
  bool deliver() {
    std::lock_guard<std::mutex> lock(mutex);
    delivered = !lost && !released && validUntil > Clock::now();
    return delivered;
  }
  void setValidity(Clock::time_point sentAt, uint32_t validMs) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!lost && !released) validUntil = sentAt + Millis(validMs);
    lastValidMs = validMs;
  }
  // Renew three times per validity the sidecar granted: that is bounded by the TTL and by how long
  // the sidecar can vouch for its ZooKeeper session, which may be much shorter than the TTL.
  Millis renewPeriod() const {
    std::lock_guard<std::mutex> lock(mutex);
    // (A TTL of 0 asks for the sidecar's default: only the validity granted says how long.)
    Millis valid(lastValidMs);
    Millis bound = options.ttl.count() > 0 ? std::min(options.ttl, valid) : valid;
    return std::max(Millis(1), bound / 3);
  }
  Status stateError() const {
    std::lock_guard<std::mutex> lock(mutex);
    if (released) return error(ErrorCode::kNotHeld);
    if (lost) {
      return error(lossReason == LossReason::kTtlExpired ? ErrorCode::kExpired : ErrorCode::kLost,
                   std::string("lease lost: ") + lossReasonName(lossReason));
    }
    return {};
  }
};

namespace {

HolderInfo readHolderInfo(ipc::HolderInfo::Reader info) {
  HolderInfo out{info.getHeld(),        info.getToken(),   info.getOwnerLabel(),
                 info.getSinceUnixMs(), info.getWaiters(), info.getThisSidecar(),
                 info.getForeign(),     info.getForeignNode(), {}};
  for (auto h : info.getHolders()) {
    out.holders.push_back({h.getToken(), h.getOwnerLabel(), h.getSinceUnixMs(), h.getThisSidecar(),
                           static_cast<LockMode>(h.getMode()), h.getPermits()});
  }
  return out;
}

// One holder watch of the client, kept on the I/O thread across reconnects.
struct IoHolderWatch {
  std::string name;
  HolderChangeCallback onChange;
  kj::Maybe<ipc::HolderWatch::Client> cap;  // set while the sidecar serves it
};

// Hands the sidecar's pushes to the watch's callback, while the watch lives.
class HolderWatcherImpl final : public ipc::HolderWatcher::Server {
 public:
  explicit HolderWatcherImpl(std::weak_ptr<IoHolderWatch> watch) : watch_(std::move(watch)) {}
  kj::Promise<void> changed(ChangedContext context) override {
    auto watch = watch_.lock();
    if (!watch) return kj::READY_NOW;
    auto in = context.getParams().getChange();
    HolderChange change;
    switch (in.getState()) {
      case ipc::HolderState::HELD:
        change.state = HolderState::kHeld;
        break;
      case ipc::HolderState::FREE:
        change.state = HolderState::kFree;
        break;
      default:
        change.state = HolderState::kUnknown;
    }
    change.info = readHolderInfo(in.getInfo());
    change.detail = in.getDetail();
    watch->onChange(change);
    return kj::READY_NOW;
  }

 private:
  std::weak_ptr<IoHolderWatch> watch_;
};

class WatcherImpl final : public ipc::LeaseWatcher::Server {
 public:
  explicit WatcherImpl(std::weak_ptr<LeaseState> state) : state_(std::move(state)) {}
  kj::Promise<void> lost(LostContext context) override {
    if (auto s = state_.lock()) s->markLost(fromIpc(context.getParams().getReason()));
    return kj::READY_NOW;
  }
  kj::Promise<void> atRisk(AtRiskContext context) override {
    if (auto s = state_.lock()) s->markRisk(true, Millis(context.getParams().getLeftMs()));
    return kj::READY_NOW;
  }
  kj::Promise<void> safeAgain(SafeAgainContext) override {
    if (auto s = state_.lock()) s->markRisk(false, Millis(0));
    return kj::READY_NOW;
  }

 private:
  std::weak_ptr<LeaseState> state_;
};

}  // namespace

class ClientImpl : public std::enable_shared_from_this<ClientImpl> {
 public:
  ClientImpl(std::string socketPath, std::optional<uid_t> expectUid)
      : socketPath_(resolveSocketPath(socketPath)), expectUid_(expectUid) {}

  // The I/O thread holds a reference while it runs, so the last reference may be dropped there
  // (a Lease freed in a loss callback): it cannot join itself, and it is about to end anyway.
  ~ClientImpl() {
    if (!thread_.joinable()) return;
    if (onIoThread()) {
      thread_.detach();
    } else {
      post([this] { stop_->fulfill(); });
      thread_.join();
    }
  }

  Status start() {
    std::promise<Status> ready;
    auto result = ready.get_future();
    thread_ = std::thread([self = shared_from_this(), &ready] { self->run(ready); });
    return result.get();
  }

  // Ends the connection (leases still held are released by the sidecar) and, unless called on
  // the I/O thread itself, waits for the thread to end. Idempotent.
  void stop() {
    post([this] { stop_->fulfill(); });
    if (!onIoThread() && thread_.joinable()) thread_.join();
  }

  bool connected() const { return connected_.load(); }
  int connectionLossFd() { return disconnected_.fd(); }
  int connectionFd() const { return connectionFd_.load(); }
  bool onIoThread() const { return std::this_thread::get_id() == ioThread_; }

  // How a caller waits: calls the sidecar answers alone (check, renew) poll before they sleep;
  // calls that wait for ZooKeeper (a millisecond or more) sleep at once.
  enum class Wait { kSleep, kSpinFirst };
  using Answer = std::shared_ptr<CallAnswerSetter>;

  // Runs `fn` on the I/O thread and waits for it. `fn` returns a Promise<Status> or a Status; one
  // that takes an Answer may answer from inside the reply's handler, before Cap'n Proto sends
  // its Finish (the caller then need not wait for that write).
  template <typename Func>
  Status call(Func&& fn, Wait wait = Wait::kSleep) {
    if (onIoThread()) return error(ErrorCode::kWrongThread);
    if (!connected_) return offline();
    auto answer = std::make_shared<CallAnswer>();
    auto setter = std::make_shared<CallAnswerSetter>(answer, clientClosed());
    bool posted = post([this, &fn, setter] {
      kj::Promise<Status> promise = kj::evalNow([&]() -> kj::Promise<Status> {
        if (sidecar_ == nullptr) return offline();  // dropped since the check above
        if constexpr (std::is_invocable_v<Func&, const Answer&>) {
          return fn(setter);
        } else {
          return fn();
        }
      });
      calls_->add(promise.then([setter](Status s) { setter->set(std::move(s)); }));
    });
    if (!posted) return clientClosed();
    return answer->wait(wait == Wait::kSpinFirst);
  }

  // Runs an acquire for `request` on the I/O thread and finishes it there (at once if refused).
  void startAcquire(std::shared_ptr<AcquireRequestState> request, const std::string& name,
                    const AcquireOptions& options);
  Status release(LeaseState& state, bool* confirmed = nullptr);
  Status renew(LeaseState& state, Millis ttl);
  Status check(LeaseState& state, Millis* validFor);
  Status setKeepAlive(LeaseState& state, bool on);
  void drop(uint64_t key);
  Status holder(const std::string& name, HolderInfo* out);
  // Starts a holder watch; `*key` names it for unwatchHolder().
  Status watchHolder(const std::string& name, HolderChangeCallback onChange, uint64_t* key);
  void unwatchHolder(uint64_t key);
  // Asks for the sidecar's status; `read` gets the answer on the I/O thread.
  Status status(const std::function<void(ipc::Status::Reader)>& read);
  // Runs `use` on the I/O thread with the lease table (nullptr and why not), once the sidecar
  // said where it is.
  Status withLeaseTable(
      const std::function<Status(const internal::LeaseTableReader*, const std::string&)>& use);

 private:
  struct IoLease {
    ipc::Lease::Client cap;
    std::shared_ptr<LeaseState> state;
    kj::Maybe<kj::Promise<void>> keepAlive;  // set while keep-alive is on
  };

  void run(std::promise<Status>& ready);
  // Asks the sidecar to serve holder watch `key` on this connection.
  kj::Promise<Status> startHolderWatch(uint64_t key);
  // After a reconnect: each holder watch again, or kUnknown saying why not.
  void resumeHolderWatches();
  void tellHolderUnknown(IoHolderWatch& watch, const std::string& why);
  // Opens a connection to the sidecar, checks who serves it, and asks for its lease table.
  kj::Promise<Status> connect();
  // Resolves never: when the connection drops, its leases are lost and the client reconnects,
  // backing off from kReconnectFirstDelay to kReconnectMaxDelay, and watches the new one.
  kj::Promise<void> watchConnection();
  kj::Promise<void> reconnect(Millis delay);
  void dropConnection();
  // One turn in the queue for `name` as lease `key`, and another while a grant turns out void
  // before `deadline` (lost or expired before acquire returned it). Sets `*granted` when it is ok.
  kj::Promise<Status> queueFor(const std::string& name, const AcquireOptions& options, uint64_t key,
                               Clock::time_point deadline,
                               std::shared_ptr<std::shared_ptr<LeaseState>> granted);
  kj::Promise<void> keepAliveLoop(uint64_t key);
  // Resolves to kCancelled once `request` is cancelled.
  kj::Promise<Status> whenCancelled(std::shared_ptr<AcquireRequestState> request);
  // Asks the sidecar where its lease table is and maps it (table_, or tableProblem_ says why not).
  kj::Promise<void> openLeaseTable(std::optional<uid_t> serverUid);
  // `promise`, or kSidecarUnavailable once `budget` passed: a frozen sidecar holds no caller for
  // ever.
  kj::Promise<Status> withDeadline(kj::Promise<Status> promise, Millis budget = kCallSlack);
  void onDisconnected();
  // kSidecarUnavailable, saying why there is no connection now.
  Status offline() const;

  // Hands `fn` to the I/O thread; false once its loop has ended.
  bool post(std::function<void()> fn) {
    std::lock_guard<std::mutex> lock(loopMutex_);
    if (!loop_) return false;
    loop_->post(std::move(fn));
    return true;
  }

  struct CallErrors final : kj::TaskSet::ErrorHandler {
    void taskFailed(kj::Exception&&) override {}  // its CallAnswerSetter answers "client closed"
  };

  const std::string socketPath_;  // where the sidecar binds it (resolveSocketPath)
  const std::optional<uid_t> expectUid_;
  mutable std::mutex offlineMutex_;
  std::string offlineReason_;  // why the client is not connected, while it is not
  std::thread thread_;
  std::thread::id ioThread_;
  std::atomic<bool> connected_{false};
  internal::PollableFlag disconnected_;  // set from a drop until the reconnect
  std::atomic<int> connectionFd_{-1};     // set while the connection is open
  std::mutex loopMutex_;                  // guards loop_ (set and reset on the I/O thread)
  std::unique_ptr<KjLoopExecutor> loop_;  // set while the I/O loop runs

  // I/O thread only:
  CallErrors callErrors_;
  std::unique_ptr<kj::TaskSet> calls_;
  kj::Timer* timer_ = nullptr;
  kj::UnixEventPort* eventPort_ = nullptr;
  kj::Network* network_ = nullptr;
  kj::Own<kj::AsyncIoStream> stream_;  // the connection: replaced after the sidecar restarts
  kj::Own<capnp::TwoPartyClient> rpc_;
  kj::Own<kj::PromiseFulfiller<void>> stop_;
  std::map<uint64_t, std::shared_ptr<IoHolderWatch>> holderWatches_;
  kj::Maybe<ipc::Sidecar::Client> sidecar_;
  std::map<uint64_t, IoLease> leases_;
  uint64_t nextKey_ = 1;
  std::shared_ptr<const internal::LeaseTableReader> table_;
  std::string tableProblem_;
  kj::Maybe<kj::ForkedPromise<void>> tableOpened_;
};

void ClientImpl::run(std::promise<Status>& ready) {
  ioThread_ = std::this_thread::get_id();
  bool readySet = false;
  try {
    auto io = kj::setupAsyncIo();
    timer_ = &io.provider->getTimer();
    eventPort_ = &io.unixEventPort;
    network_ = &io.provider->getNetwork();
    auto paf = kj::newPromiseAndFulfiller<void>();
    stop_ = kj::mv(paf.fulfiller);
    calls_ = std::make_unique<kj::TaskSet>(callErrors_);
    Status first = connect().wait(io.waitScope);
    if (first.ok()) {  // before the caller has the client: its first call is posted here
      std::lock_guard<std::mutex> lock(loopMutex_);
      loop_ = std::make_unique<KjLoopExecutor>(io.unixEventPort);
    }
    ready.set_value(first);
    readySet = true;
    if (first.ok()) paf.promise.exclusiveJoin(watchConnection()).wait(io.waitScope);
    connected_ = false;
    // Dropping every capability makes the sidecar release what is still held: the handles that
    // outlive the client must not report a validity any more.
    for (auto& [key, lease] : leases_) lease.state->markReleased();
    {
      std::lock_guard<std::mutex> lock(loopMutex_);
      loop_.reset();  // work posted from now on is refused; work queued and not run is dropped
    }
    calls_.reset();  // breaks the promises of calls in flight: their callers return
    holderWatches_.clear();  // their capabilities belong to this thread's loop
    dropConnection();
  } catch (const kj::Exception& e) {
    connected_ = false;
    if (!readySet) {
      ready.set_value(error(ErrorCode::kInternal, e.getDescription().cStr()));
    } else {
      std::fprintf(stderr, "fencekeeper client: I/O thread failed: %s\n",
                   e.getDescription().cStr());
    }
  }
}

kj::Promise<Status> ClientImpl::connect() {
  return network_->parseAddress(kj::str("unix:", socketPath_.c_str()))
      .then([](kj::Own<kj::NetworkAddress> address) {
        return address->connect().attach(kj::mv(address));
      })
      .then(
          [this](kj::Own<kj::AsyncIoStream> stream) -> Status {
            KJ_IF_MAYBE (fd, stream->getFd()) {
              // Nothing goes to a server before it proved to be the sidecar (docs/security.md).
              if (Status trusted = internal::checkServer(*fd, socketPath_, expectUid_);
                  !trusted.ok()) {
                return trusted;
              }
              connectionFd_ = *fd;
            }
            stream_ = kj::mv(stream);
            rpc_ = kj::heap<capnp::TwoPartyClient>(*stream_);
            sidecar_ = rpc_->bootstrap().castAs<ipc::Sidecar>();
            // Asked before any acquire can be sent: the sidecar answers it at once, so every
            // grant on this connection finds the table open (calls on one capability are
            // delivered in order).
            tableOpened_ = openLeaseTable(internal::peerUid(connectionFd_)).fork();
            connected_ = true;
            disconnected_.clear();
            return Status{};
          },
          [this](kj::Exception&& e) {
            return error(ErrorCode::kSidecarUnavailable, "cannot connect to the sidecar at " +
                                                             socketPath_ + ": " +
                                                             e.getDescription().cStr());
          });
}

kj::Promise<void> ClientImpl::watchConnection() {
  return rpc_->onDisconnect().then([] {}, [](kj::Exception&&) {}).then([this] {
    onDisconnected();
    // The calls the drop broke answer their callers first; then the connection goes.
    return kj::evalLast([this] {
      dropConnection();
      return reconnect(kReconnectFirstDelay);
    });
  });
}

kj::Promise<void> ClientImpl::reconnect(Millis delay) {
  return timer_->afterDelay(delay.count() * kj::MILLISECONDS)
      .then([this] { return connect(); })
      .then([this, delay](Status status) -> kj::Promise<void> {
        if (status.ok()) {
          resumeHolderWatches();
          return watchConnection();
        }
        std::lock_guard<std::mutex> lock(offlineMutex_);
        offlineReason_ = status.message;
        return reconnect(std::min(delay * 2, kReconnectMaxDelay));
      });
}

void ClientImpl::onDisconnected() {
  connected_ = false;
  disconnected_.set();
  {
    std::lock_guard<std::mutex> lock(offlineMutex_);
    offlineReason_ = "the sidecar closed the connection; reconnecting";
  }
  for (auto& [key, lease] : leases_) lease.state->markLost(LossReason::kConnectionLost);
  auto watches = holderWatches_;  // a callback may end its own watch
  for (auto& [key, watch] : watches) {
    watch->cap = nullptr;
    tellHolderUnknown(*watch, "the connection to the sidecar is lost; reconnecting");
  }
}

void ClientImpl::dropConnection() {
  leases_.clear();  // capabilities of this connection: lost or released already
  tableOpened_ = nullptr;
  sidecar_ = nullptr;
  rpc_ = nullptr;
  connectionFd_ = -1;
  stream_ = nullptr;
}

Status ClientImpl::offline() const {
  std::lock_guard<std::mutex> lock(offlineMutex_);
  return error(ErrorCode::kSidecarUnavailable,
               "sidecar unavailable: not connected to the sidecar (" + offlineReason_ + ")");
}

kj::Promise<Status> ClientImpl::withDeadline(kj::Promise<Status> promise, Millis budget) {
  return promise.exclusiveJoin(timer_->afterDelay(budget.count() * kj::MILLISECONDS).then([] {
    return error(ErrorCode::kSidecarUnavailable, "the sidecar did not answer");
  }));
}

void ClientImpl::startAcquire(std::shared_ptr<AcquireRequestState> request, const std::string& name,
                              const AcquireOptions& options) {
  Status refused = refuseNul(name, ErrorCode::kInvalidName, "lock name");
  if (refused.ok())
    refused = refuseNul(options.ownerLabel, ErrorCode::kInvalidOwner, "owner label");
  if (refused.ok() && onIoThread()) refused = error(ErrorCode::kWrongThread);
  if (refused.ok() && !connected_) refused = offline();
  if (!refused.ok()) {
    request->finish(refused, nullptr);
    return;
  }
  auto deadline = Clock::now() + options.wait;
  bool posted = post([this, request, name, options, deadline] {
    uint64_t key = nextKey_++;  // one for every turn: an abandoned turn must know what to let go
    auto granted = std::make_shared<std::shared_ptr<LeaseState>>();
    kj::Promise<Status> outcome =
        withDeadline(queueFor(name, options, key, deadline, granted), options.wait + kCallSlack)
            .exclusiveJoin(whenCancelled(request));
    calls_->add(outcome
                    .then([this, key, request, granted](Status status) {
                      if (!status.ok()) {
                        // Abandoned (cancelled, no answer): a grant that crossed it goes too,
                        // and dropping the call withdraws the queue node at the sidecar.
                        leases_.erase(key);
                        request->finish(std::move(status), nullptr);
                        return;
                      }
                      request->finish(Status{}, std::unique_ptr<Lease>(new Lease(*granted)));
                    })
                    .attach(kj::defer([request] {  // the client closed under it
                      request->finish(clientClosed(), nullptr);
                    })));
  });
  if (!posted) request->finish(clientClosed(), nullptr);
}

kj::Promise<Status> ClientImpl::whenCancelled(std::shared_ptr<AcquireRequestState> request) {
  auto cancelled = [] {
    return error(ErrorCode::kCancelled, "cancelled: the acquire was withdrawn before a grant");
  };
  if (request->cancelled.load()) return cancelled();
  if (request->cancelFd < 0) return kj::Promise<Status>(kj::NEVER_DONE);  // not cancellable
  // An eventfd written before the observer exists is still reported: epoll reports a ready fd
  // when it is added.
  auto observer = kj::heap<kj::UnixEventPort::FdObserver>(
      *eventPort_, request->cancelFd, kj::UnixEventPort::FdObserver::OBSERVE_READ);
  auto readable = observer->whenBecomesReadable();
  return readable.attach(kj::mv(observer), kj::mv(request)).then(cancelled);
}

kj::Promise<Status> ClientImpl::queueFor(const std::string& name, const AcquireOptions& options,
                                         uint64_t key, Clock::time_point deadline,
                                         std::shared_ptr<std::shared_ptr<LeaseState>> granted) {
  if (sidecar_ == nullptr) return offline();  // the connection dropped (while queued, say)
  auto state = std::make_shared<LeaseState>();
  state->client = weak_from_this();
  state->key = key;
  state->name = name;
  state->options = options;
  auto request = KJ_ASSERT_NONNULL(sidecar_).acquireRequest(
      ipc::sizeFor<ipc::Sidecar::AcquireParams>(name.size() + options.ownerLabel.size() + 8, 1));
  request.setName(name);
  request.setTtlMs(static_cast<uint32_t>(std::min<int64_t>(options.ttl.count(), UINT32_MAX)));
  Millis wait = options.wait == kWaitForever ? kWaitForever
                                             : clampNonNegative(deadline - Clock::now());
  request.setWaitMs(static_cast<uint32_t>(std::min<int64_t>(wait.count(), UINT32_MAX)));
  request.setOwnerLabel(options.ownerLabel);
  request.setMode(static_cast<ipc::LockMode>(options.mode));
  request.setPermits(options.permits);
  request.setWatcher(kj::heap<WatcherImpl>(state));
  auto sentAt = Clock::now();
  return request.send().then(
      [this, key, state, sentAt, deadline,
       granted](capnp::Response<ipc::Sidecar::AcquireResults> response) -> kj::Promise<Status> {
        if (response.getError() != ipc::Error::OK) return failure(response);
        state->token = response.getToken();
        state->setValidity(sentAt, response.getValidMs());
        if (response.getTableGeneration() != 0 && table_) {
          state->table = table_;
          state->tableSlot = response.getTableSlot();
          state->tableGeneration = response.getTableGeneration();
        }
        auto& lease =
            leases_.emplace(key, IoLease{response.getLease(), state, nullptr}).first->second;
        // The validity counts from the send, to err on the safe side; after a long wait in the
        // queue that leaves little or nothing of it, so ask again, counting from now.
        auto refresh = kj::Promise<Status>(Status{});
        if (Clock::now() - sentAt > Millis(response.getValidMs()) / 4) {
          auto askedAt = Clock::now();
          refresh = lease.cap.tokenRequest(ipc::sizeFor<ipc::Lease::TokenParams>()).send().then(
              [state, askedAt](capnp::Response<ipc::Lease::TokenResults> r) {
                if (r.getError() != ipc::Error::OK) return failure(r);
                state->setValidity(askedAt, r.getValidMs());
                return Status{};
              },
              [](kj::Exception&& e) { return transportFailure(e); });
        }
        return refresh.then(
            [this, key, state, deadline, granted](Status status) -> kj::Promise<Status> {
              if (status.ok() && state->deliver()) {
                if (state->options.keepAlive) {
                  leases_.at(key).keepAlive = keepAliveLoop(key).eagerlyEvaluate(nullptr);
                }
                *granted = state;
                return Status{};
              }
              leases_.erase(key);  // withdraws it at the sidecar, if it still holds it
              state->markReleased();
              if (status.code == ErrorCode::kSidecarUnavailable) return status;
              // Lost or expired before the caller had it (it was stopped, say): that was no grant.
              if (Clock::now() >= deadline) {
                return error(ErrorCode::kTimedOut,
                             "granted, but the grant was lost or expired before acquire could "
                             "return it, and the wait ran out");
              }
              return queueFor(state->name, state->options, key, deadline, granted);
            });
      },
      [](kj::Exception&& e) -> kj::Promise<Status> { return transportFailure(e); });
}

kj::Promise<void> ClientImpl::openLeaseTable(std::optional<uid_t> serverUid) {
  return KJ_ASSERT_NONNULL(sidecar_).leaseTableRequest().send().then(
      [this, serverUid](capnp::Response<ipc::Sidecar::LeaseTableResults> r) {
        if (r.getError() != ipc::Error::OK) {
          tableProblem_ = failure(r).message;
          return;
        }
        if (!serverUid) {
          tableProblem_ = "the sidecar's uid cannot be read";
          return;
        }
        std::string path = r.getPath();
        auto table =
            internal::LeaseTableReader::open(path, r.getInstance(), *serverUid, &tableProblem_);
        // The sidecar may mount the shared volume elsewhere: look beside our socket too.
        auto beside = std::filesystem::path(socketPath_).parent_path() /
                      std::filesystem::path(path).filename();
        if (!table && beside != path) {
          std::string besideProblem;
          table =
              internal::LeaseTableReader::open(beside, r.getInstance(), *serverUid, &besideProblem);
        }
        if (table) tableProblem_.clear();
        table_ = std::move(table);
      },
      [this](kj::Exception&& e) {
        tableProblem_ = std::string("the sidecar did not say where its lease table is: ") +
                        e.getDescription().cStr();
      });
}

Status ClientImpl::withLeaseTable(
    const std::function<Status(const internal::LeaseTableReader*, const std::string&)>& use) {
  return call([&]() -> kj::Promise<Status> {
    auto& opened = KJ_ASSERT_NONNULL(tableOpened_);
    return withDeadline(
        opened.addBranch().then([&]() { return use(table_.get(), tableProblem_); }));
  });
}

kj::Promise<void> ClientImpl::keepAliveLoop(uint64_t key) {
  auto it = leases_.find(key);
  if (it == leases_.end()) return kj::READY_NOW;
  auto period = it->second.state->renewPeriod();
  return timer_->afterDelay(period.count() * kj::MILLISECONDS)
      .then([this, key]() -> kj::Promise<void> {
        auto it = leases_.find(key);
        if (it == leases_.end()) return kj::READY_NOW;
        auto state = it->second.state;
        if (state->options.renewOnlyIfCheckedIn && !state->checkedIn.exchange(false)) {
          return keepAliveLoop(key);  // no check-in: let the lease run out
        }
        auto sentAt = Clock::now();
        return it->second.cap.renewRequest(ipc::sizeFor<ipc::Lease::RenewParams>()).send().then(
            [this, key, state,
             sentAt](capnp::Response<ipc::Lease::RenewResults> r) -> kj::Promise<void> {
              if (r.getError() != ipc::Error::OK) {
                state->markLost(lossOf(r.getError(), r.getLossReason()));
                return kj::READY_NOW;
              }
              state->setValidity(sentAt, r.getValidMs());
              return keepAliveLoop(key);
            },
            [](kj::Exception&&) {});  // the connection dropped: onDisconnected says lost
      });
}

Status ClientImpl::release(LeaseState& state, bool* confirmed) {
  if (Status s = state.stateError(); !s.ok()) return s;
  uint64_t key = state.key;
  Status status = call([&]() -> kj::Promise<Status> {
    auto it = leases_.find(key);
    if (it == leases_.end()) return error(ErrorCode::kNotHeld);
    // No renew may race the release: its "not held" would read as a loss.
    it->second.keepAlive = nullptr;
    return withDeadline(it->second.cap.releaseRequest(ipc::sizeFor<ipc::Lease::ReleaseParams>()).send().then(
        [this, key, confirmed, s = it->second.state](capnp::Response<ipc::Lease::ReleaseResults> r) {
          leases_.erase(key);
          s->forgotten.store(true, std::memory_order_release);
          if (confirmed) *confirmed = r.getConfirmed();
          return r.getError() == ipc::Error::OK ? Status{} : failure(r);
        },
        [](kj::Exception&& e) { return transportFailure(e); }));
  });
  if (status.ok()) state.markReleased();
  return status;
}

Status ClientImpl::renew(LeaseState& state, Millis ttl) {
  if (Status s = state.stateError(); !s.ok()) return s;
  uint64_t key = state.key;
  return call(
      [&](const Answer& answer) -> kj::Promise<Status> {
        auto it = leases_.find(key);
        if (it == leases_.end()) return error(ErrorCode::kNotHeld);
        auto request = it->second.cap.renewRequest(ipc::sizeFor<ipc::Lease::RenewParams>());
        request.setTtlMs(static_cast<uint32_t>(std::min<int64_t>(ttl.count(), UINT32_MAX)));
        auto sentAt = Clock::now();
        auto s = it->second.state;
        return withDeadline(request.send().then(
            [s, sentAt, answer](capnp::Response<ipc::Lease::RenewResults> r) {
              Status status;
              if (r.getError() != ipc::Error::OK) {
                if (endsLease(r.getError())) s->markLost(lossOf(r.getError(), r.getLossReason()));
                status = failure(r);
              } else {
                s->setValidity(sentAt, r.getValidMs());
              }
              answer->set(status);
              return status;
            },
            [](kj::Exception&& e) { return transportFailure(e); }));
      },
      Wait::kSpinFirst);
}

Status ClientImpl::check(LeaseState& state, Millis* validFor) {
  if (Status s = state.stateError(); !s.ok()) return s;
  uint64_t key = state.key;
  return call(
      [&](const Answer& answer) -> kj::Promise<Status> {
        auto it = leases_.find(key);
        if (it == leases_.end()) return error(ErrorCode::kNotHeld);
        auto sentAt = Clock::now();
        auto s = it->second.state;
        return withDeadline(
            it->second.cap.tokenRequest(ipc::sizeFor<ipc::Lease::TokenParams>()).send().then(
                [s, sentAt, validFor, answer](capnp::Response<ipc::Lease::TokenResults> r) {
                  Status status;
                  if (r.getError() != ipc::Error::OK) {
                    if (endsLease(r.getError()))
                      s->markLost(lossOf(r.getError(), r.getLossReason()));
                    status = failure(r);
                  } else {
                    s->setValidity(sentAt, r.getValidMs());
                    if (validFor)
                      *validFor = clampNonNegative(sentAt + Millis(r.getValidMs()) - Clock::now());
                  }
                  answer->set(status);
                  return status;
                },
                [](kj::Exception&& e) { return transportFailure(e); }));
      },
      Wait::kSpinFirst);
}

Status ClientImpl::setKeepAlive(LeaseState& state, bool on) {
  if (Status s = state.stateError(); !s.ok()) return s;
  uint64_t key = state.key;
  return call([&]() -> Status {
    auto it = leases_.find(key);
    if (it == leases_.end()) return error(ErrorCode::kNotHeld);
    auto& keepAlive = it->second.keepAlive;
    if (!on) {
      keepAlive = nullptr;
    } else if (keepAlive == nullptr) {
      keepAlive = keepAliveLoop(key).eagerlyEvaluate(nullptr);
    }
    return Status{};
  });
}

void ClientImpl::drop(uint64_t key) {
  if (onIoThread()) {
    // A Lease destroyed in a loss callback: the caller may be iterating leases_
    // (onDisconnected) or running this lease's keep-alive promise, so erase on a later turn.
    kj::evalLater([this, key] { leases_.erase(key); }).detach([](kj::Exception&&) {});
    return;
  }
  auto done = std::make_shared<std::promise<void>>();
  auto erased = done->get_future();
  if (!post([this, key, done] {
        leases_.erase(key);
        done->set_value();
      })) {
    return;  // the client is closed: its leases are gone already
  }
  try {
    erased.wait();
  } catch (const std::future_error&) {
  }
}

Status ClientImpl::watchHolder(const std::string& name, HolderChangeCallback onChange,
                               uint64_t* key) {
  if (Status s = refuseNul(name, ErrorCode::kInvalidName, "lock name"); !s.ok()) return s;
  return call([&]() -> kj::Promise<Status> {
    *key = nextKey_++;
    holderWatches_[*key] = std::make_shared<IoHolderWatch>(IoHolderWatch{name, onChange, nullptr});
    return startHolderWatch(*key).then([this, key = *key](Status s) {
      if (!s.ok()) holderWatches_.erase(key);
      return s;
    });
  });
}

kj::Promise<Status> ClientImpl::startHolderWatch(uint64_t key) {
  auto it = holderWatches_.find(key);
  if (it == holderWatches_.end() || sidecar_ == nullptr) return Status{};
  auto request = KJ_ASSERT_NONNULL(sidecar_).watchHolderRequest();
  request.setName(it->second->name);
  request.setWatcher(kj::heap<HolderWatcherImpl>(it->second));
  return withDeadline(request.send().then(
      [this, key](capnp::Response<ipc::Sidecar::WatchHolderResults> r) {
        if (r.getError() != ipc::Error::OK) return failure(r);
        auto it = holderWatches_.find(key);
        if (it != holderWatches_.end()) it->second->cap = r.getWatch();
        return Status{};
      },
      [](kj::Exception&& e) { return transportFailure(e); }));
}

void ClientImpl::resumeHolderWatches() {
  for (auto& [key, watch] : holderWatches_) {
    calls_->add(startHolderWatch(key).then([this, key = key](Status s) {
      auto it = holderWatches_.find(key);
      if (!s.ok() && it != holderWatches_.end()) tellHolderUnknown(*it->second, s.message);
    }));
  }
}

void ClientImpl::tellHolderUnknown(IoHolderWatch& watch, const std::string& why) {
  HolderChange change;
  change.detail = why;
  auto onChange = watch.onChange;  // a copy: the call may end the watch
  onChange(change);
}

void ClientImpl::unwatchHolder(uint64_t key) {
  if (onIoThread()) {
    // From a callback: the caller may be iterating the watches; the callback will not run again.
    auto it = holderWatches_.find(key);
    if (it != holderWatches_.end()) it->second->onChange = [](const HolderChange&) {};
    kj::evalLater([this, key] { holderWatches_.erase(key); }).detach([](kj::Exception&&) {});
    return;
  }
  auto done = std::make_shared<std::promise<void>>();
  auto erased = done->get_future();
  if (!post([this, key, done] {
        holderWatches_.erase(key);
        done->set_value();
      })) {
    return;  // the client is closed: its watches are gone already
  }
  try {
    erased.wait();
  } catch (const std::future_error&) {
  }
}

Status ClientImpl::holder(const std::string& name, HolderInfo* out) {
  if (Status s = refuseNul(name, ErrorCode::kInvalidName, "lock name"); !s.ok()) return s;
  return call([&]() -> kj::Promise<Status> {
    auto request = KJ_ASSERT_NONNULL(sidecar_).holderRequest();
    request.setName(name);
    return withDeadline(request.send().then(
        [out](capnp::Response<ipc::Sidecar::HolderResults> r) {
          if (r.getError() != ipc::Error::OK) return failure(r);
          *out = readHolderInfo(r.getInfo());
          return Status{};
        },
        [](kj::Exception&& e) { return transportFailure(e); }));
  });
}

Status ClientImpl::status(const std::function<void(ipc::Status::Reader)>& read) {
  return call([&]() -> kj::Promise<Status> {
    return withDeadline(KJ_ASSERT_NONNULL(sidecar_).statusRequest().send().then(
        [&read](capnp::Response<ipc::Sidecar::StatusResults> r) {
          if (r.getError() != ipc::Error::OK) return failure(r);
          read(r.getStatus());
          return Status{};
        },
        [](kj::Exception&& e) { return transportFailure(e); }));
  });
}

// ---- public API ------------------------------------------------------------------------------

Lease::Lease(std::shared_ptr<LeaseState> state) : state_(std::move(state)) {}

Lease::~Lease() {
  state_->markReleased();
  if (state_->forgotten.load(std::memory_order_acquire)) return;  // released: nothing to drop
  if (auto client = state_->client.lock()) client->drop(state_->key);
}

const std::string& Lease::name() const { return state_->name; }
uint64_t Lease::token() const { return state_->token.load(); }

Millis Lease::validFor() const {
  if (state_->ended.load(std::memory_order_acquire)) return Millis(0);
  if (state_->table) {  // what the sidecar decided, as of now: no message needed
    return std::chrono::duration_cast<Millis>(std::chrono::nanoseconds(state_->table->validForNs(
        state_->tableSlot, state_->tableGeneration, state_->token.load(), bootNowNs())));
  }
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (state_->lost || state_->released) return Millis(0);
  return clampNonNegative(state_->validUntil - Clock::now());
}

std::stop_token Lease::stopToken() const { return state_->stop.get_token(); }

bool Lease::atRisk() const { return state_->atRisk.load() && !lost(); }

int Lease::lossFd() const { return state_->lossFlag.fd(); }

bool Lease::lost() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->lost;
}

std::optional<LossReason> Lease::lossReason() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (!state_->lost) return std::nullopt;
  return state_->lossReason;
}

void Lease::checkIn() { state_->checkedIn = true; }

Status Lease::check(Millis* validFor) {
  auto client = state_->client.lock();
  if (!client) return clientClosed();
  return client->check(*state_, validFor);
}

Status Lease::renew(Millis ttl) {
  auto client = state_->client.lock();
  if (!client) return clientClosed();
  return client->renew(*state_, ttl);
}

Status Lease::setKeepAlive(bool on) {
  auto client = state_->client.lock();
  if (!client) return clientClosed();
  return client->setKeepAlive(*state_, on);
}

Status Lease::release() { return release(nullptr); }

Status Lease::release(bool* confirmed) {
  auto client = state_->client.lock();
  if (!client) return clientClosed();
  return client->release(*state_, confirmed);
}

std::unique_ptr<Client> Client::connect(const std::string& socketPath, Status* status) {
  return connect(socketPath, ConnectOptions{}, status);
}

std::unique_ptr<Client> Client::connect(const std::string& socketPath,
                                        const ConnectOptions& options, Status* status) {
  std::optional<uid_t> expectUid;
  Status s = internal::expectedUid(options.expectUid, &expectUid);
  if (!s.ok()) {
    if (status) *status = s;
    return nullptr;
  }
  auto impl = std::make_shared<ClientImpl>(socketPath, expectUid);
  s = impl->start();
  if (status) *status = s;
  if (!s.ok()) return nullptr;
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

Client::Client(std::shared_ptr<ClientImpl> impl) : impl_(std::move(impl)) {}

bool Client::usesLeaseTable(std::string* detail) {
  bool uses = false;
  Status s = impl_->withLeaseTable(
      [&](const internal::LeaseTableReader* table, const std::string& problem) {
        uses = table != nullptr;
        if (detail) *detail = table ? table->path() : problem;
        return Status{};
      });
  if (!s.ok() && detail) *detail = s.message;
  return uses;
}

Status Client::tableShowsValid(const std::string& name, uint64_t token, bool* valid) {
  *valid = false;
  return impl_->withLeaseTable(
      [&](const internal::LeaseTableReader* table, const std::string& problem) {
        if (!table) return error(ErrorCode::kNotHeld, "no lease table to read: " + problem);
        *valid = table->anyValid(name, token, bootNowNs());
        return Status{};
      });
}
Client::~Client() { impl_->stop(); }

std::unique_ptr<Lease> Client::acquire(const std::string& name, const AcquireOptions& options,
                                       Status* status) {
  // Nobody can cancel or poll this one: no eventfds (AcquireRequestState).
  auto state = std::make_shared<AcquireRequestState>(false);
  impl_->startAcquire(state, name, options);
  return AcquireRequest(std::move(state)).wait(Millis(-1), status);
}

std::unique_ptr<AcquireRequest> Client::acquireAsync(const std::string& name,
                                                     const AcquireOptions& options) {
  auto state = std::make_shared<AcquireRequestState>();
  if (!state->finished) impl_->startAcquire(state, name, options);
  return std::unique_ptr<AcquireRequest>(new AcquireRequest(std::move(state)));
}
Status Client::holder(const std::string& name, HolderInfo* out) { return impl_->holder(name, out); }

std::unique_ptr<HolderWatch> Client::watchHolder(const std::string& name,
                                                 HolderChangeCallback onChange, Status* status) {
  uint64_t key = 0;
  Status s = impl_->watchHolder(name, std::move(onChange), &key);
  if (status) *status = s;
  if (!s.ok()) return nullptr;
  return std::unique_ptr<HolderWatch>(new HolderWatch(impl_, key));
}

HolderWatch::HolderWatch(std::weak_ptr<ClientImpl> client, uint64_t key)
    : client_(std::move(client)), key_(key) {}

HolderWatch::~HolderWatch() {
  if (auto client = client_.lock()) client->unwatchHolder(key_);
}
Status Client::status(SidecarStatus* out) {
  return impl_->status([out](ipc::Status::Reader s) { internal::readStatus(s, out); });
}
Status Client::statusJson(std::string* out) {
  return impl_->status([out](ipc::Status::Reader s) { *out = internal::statusJson(s); });
}
bool Client::connected() const { return impl_->connected(); }

int Client::connectionLossFd() { return impl_->connectionLossFd(); }
int internal::connectionFd(const Client& client) { return client.impl_->connectionFd(); }

std::string defaultSocketPath() {
  const char* env = std::getenv("FENCEKEEPER_SOCKET");
  return env && *env ? env : "/run/fencekeeper/fencekeeper.sock";
}

const char* errorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk:
      return "ok";
    case ErrorCode::kInvalidName:
      return "invalid lock name";
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kTimedOut:
      return "timed out";
    case ErrorCode::kNotHeld:
      return "not held";
    case ErrorCode::kExpired:
      return "lease expired";
    case ErrorCode::kLost:
      return "lease lost";
    case ErrorCode::kZkUnavailable:
      return "zookeeper unavailable";
    case ErrorCode::kShuttingDown:
      return "sidecar shutting down";
    case ErrorCode::kLimitReached:
      return "limit reached";
    case ErrorCode::kInternal:
      return "internal error";
    case ErrorCode::kInvalidOwner:
      return "invalid owner";
    case ErrorCode::kModeConflict:
      return "mode conflict";
    case ErrorCode::kPermissionDenied:
      return "permission denied";
    case ErrorCode::kSidecarUnavailable:
      return "sidecar unavailable";
    case ErrorCode::kWrongThread:
      return "called from the client's I/O thread";
    case ErrorCode::kCancelled:
      return "cancelled";
    case ErrorCode::kInProgress:
      return "in progress";
  }
  return "unknown error";
}

static_assert(static_cast<int>(ipc::LockMode::PERMITS) == static_cast<int>(LockMode::kPermits));

const char* lockModeName(LockMode mode) {
  switch (mode) {
    case LockMode::kExclusive:
      return "exclusive";
    case LockMode::kShared:
      return "shared";
    case LockMode::kPermits:
      return "permits";
  }
  return "?";
}

const char* lossReasonName(LossReason reason) {
  switch (reason) {
    case LossReason::kTtlExpired:
      return "ttl expired";
    case LossReason::kSessionLost:
      return "zookeeper session lost";
    case LossReason::kSessionUncertain:
      return "zookeeper session uncertain";
    case LossReason::kSidecarShutdown:
      return "sidecar shutting down";
    case LossReason::kReleasedElsewhere:
      return "released elsewhere";
    case LossReason::kConnectionLost:
      return "connection to the sidecar lost";
    case LossReason::kRenewFailed:
      return "renew failed";
  }
  return "unknown";
}

}  // namespace fencekeeper
