// fencekeeper C++ client: fenced leases from the pod's sidecar, without Cap'n Proto or KJ.
//
// A Client owns one connection to the sidecar and one I/O thread. Every method of Client and
// Lease is safe to call from any thread, except from inside a loss callback (which runs on the
// I/O thread: there, calls return ErrorCode::kWrongThread instead of deadlocking).
//
// LOSS IS FATAL TO THE WORK IN HAND. When a lease is lost (TTL passed without a renew, the
// sidecar lost or cannot vouch for its ZooKeeper session, the sidecar stopped, the connection to
// the sidecar dropped), another process may already hold the lock with a larger token. Stop the
// work at once; storage that checks tokens rejects what a stale holder still sends.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>
// std::stop_token is C++20; the header serves C++17 programs too (Lease::stopToken() is there
// for C++20 ones, lossFd() for all).
#if __cplusplus >= 202002L && __has_include(<stop_token>)
#include <stop_token>
#define FENCEKEEPER_HAS_STOP_TOKEN 1
#endif

// What the installed C++ library (libfencekeeper++.so) exports: everything declared here; the rest
// of it (KJ, Cap'n Proto, the internals) is built hidden.
#pragma GCC visibility push(default)

namespace fencekeeper {

// Mirrors the schema's Error enum, plus the client's own kSidecarUnavailable and kWrongThread.
enum class ErrorCode {
  kOk = 0,
  kInvalidName = 1,
  kInvalidArgument = 2,
  kTimedOut = 3,
  kNotHeld = 4,
  kExpired = 5,
  kLost = 6,
  kZkUnavailable = 7,
  kShuttingDown = 8,
  kLimitReached = 9,
  kInternal = 10,
  kPermissionDenied = 11,
  kInvalidOwner = 12,
  kModeConflict = 13,  // the lock's queue holds another mode or permit count (detail: both)
  kSidecarUnavailable = 100,  // cannot connect, or the connection dropped
  kWrongThread = 101,         // called from a loss callback, on the client's I/O thread
  kCancelled = 102,           // the acquire was cancelled before a grant reached its caller
  kInProgress = 103,          // AcquireRequest::wait: not done within the time given
};
const char* errorCodeName(ErrorCode code);

enum class LossReason {
  kTtlExpired = 0,
  kSessionLost = 1,
  kSessionUncertain = 2,
  kSidecarShutdown = 3,
  kReleasedElsewhere = 4,
  kConnectionLost = 100,  // the client's connection to the sidecar dropped
  kRenewFailed = 101,     // keep-alive renew answered with an error
};
const char* lossReasonName(LossReason reason);

struct Status {
  ErrorCode code = ErrorCode::kOk;
  // For people: the code's name, and after ": " the sidecar's detail (which argument and bound,
  // which limit) when it gave one.
  std::string message;
  bool ok() const { return code == ErrorCode::kOk; }
};

using Millis = std::chrono::milliseconds;

// How a lease shares its lock (the schema's LockMode; docs/clients.md "Shared locks and
// semaphores"). Exclusive: alone. Shared: with other shared holders only (kazoo's ReadLock).
// Permits: one of at most AcquireOptions::permits holders (a semaphore).
enum class LockMode { kExclusive = 0, kShared = 1, kPermits = 2 };
const char* lockModeName(LockMode mode);

using LossCallback = std::function<void(uint64_t token, LossReason reason)>;
// Jeopardy: `atRisk` true when the sidecar's ZooKeeper connection is down (or its heartbeats are
// overdue) while the session is still vouched for, `left` being how long: the lease is lost then
// unless the connection comes back. false (left 0) when it came back in time.
using RiskCallback = std::function<void(uint64_t token, bool atRisk, Millis left)>;

struct AcquireOptions {
  Millis ttl{30'000};  // the lease's TTL
  // keepAlive renews three times per validity: min(ttl, how long the sidecar vouches for its
  // ZooKeeper session, about 3/4 of the session timeout) / 3.
  Millis wait{0};  // how long to queue for the lock; 0 tries once; kWaitForever: no deadline
  std::string ownerLabel;
  // Keep-alive renews the lease from the I/O thread. With `renewOnlyIfCheckedIn`,
  // a renew happens only if the application called Lease::checkIn() since the last one, so a
  // hung application loses its lease instead of being kept alive by a healthy thread.
  bool keepAlive = true;
  bool renewOnlyIfCheckedIn = false;
  // Called once, on the I/O thread, when the lease is lost. Keep it short; do not call the
  // client from it.
  LossCallback onLost;
  // Print a line to stderr and _exit(70) when the lease is lost: for work that must not outlive it.
  bool exitOnLoss = false;
  // Called on the I/O thread on every jeopardy change of the lease (see RiskCallback): the time
  // to checkpoint. Keep it short; do not call the client from it.
  RiskCallback onRisk;
  LockMode mode = LockMode::kExclusive;
  uint32_t permits = 0;  // LockMode::kPermits: N, 1..10000 (AcquireOptions::semaphore sets both)
  // The options of one of `n` permits.
  static AcquireOptions semaphore(uint32_t n) {
    AcquireOptions o;
    o.mode = LockMode::kPermits;
    o.permits = n;
    return o;
  }
  static AcquireOptions shared() {
    AcquireOptions o;
    o.mode = LockMode::kShared;
    return o;
  }
};

// AcquireOptions::wait with no deadline (an election's campaign); other waits are at most 1 h.
constexpr Millis kWaitForever{0xFFFFFFFF};

// One of a lock's holders: a shared lock and a semaphore have several.
struct HolderEntry {
  uint64_t token = 0;
  std::string ownerLabel;
  int64_t sinceUnixMs = 0;
  bool thisSidecar = false;
  LockMode mode = LockMode::kExclusive;
  uint32_t permits = 0;
};

// token, ownerLabel, sinceUnixMs and thisSidecar: the first (oldest) holder's; `holders`: all.
struct HolderInfo {
  bool held = false;
  uint64_t token = 0;
  std::string ownerLabel;
  int64_t sinceUnixMs = 0;
  uint32_t waiters = 0;
  bool thisSidecar = false;
  // The first queue entry is a persistent node planted in the queue (not a lease request): it
  // blocks the lock until an operator deletes it. `foreignNode` names the first one known.
  bool foreign = false;
  std::string foreignNode;
  std::vector<HolderEntry> holders;  // oldest first
};

struct LeaseSummary {
  std::string name;
  uint64_t token = 0;
  std::string ownerLabel;
  int32_t clientPid = 0;
  uint32_t validMs = 0;
  uint32_t clientUid = 0;
  uint64_t connection = 0;  // the connection's number in the sidecar's log
  uint64_t heldForMs = 0;   // since the grant
  std::string state;        // "held" (released and lost leases are not listed)
  LockMode mode = LockMode::kExclusive;
  uint32_t permits = 0;
};

// An acquire not granted yet.
struct WaiterSummary {
  std::string name;
  std::string ownerLabel;
  int32_t clientPid = 0;
  uint32_t clientUid = 0;
  uint64_t connection = 0;
  std::string state;      // "creating" (its node is being made) or "waiting" (queued)
  uint32_t position = 0;  // nodes ahead of it in the lock's queue, at the sidecar's last look
  uint64_t waitedMs = 0;  // since the acquire
  LockMode mode = LockMode::kExclusive;
  uint32_t permits = 0;
};

// The sidecar's limits (its flags of the same names; 0: unlimited).
struct SidecarLimits {
  uint32_t maxConnections = 0;  // per peer uid
  uint32_t maxLeasesPerPeer = 0;
  uint32_t maxWaitingPerPeer = 0;
  uint32_t maxCallsPerConnection = 0;
  uint32_t maxLeases = 0;
  uint64_t maxQueuedReplyBytes = 0;
  uint32_t maxQueuedReplies = 0;  // per connection
  uint32_t maxWatchesPerPeer = 0;
  uint32_t maxWatches = 0;
  uint32_t maxHolderReadsPerPeer = 0;  // a second
};

// What one connection counts against the limits.
struct ConnectionCounts {
  uint64_t id = 0;
  int32_t pid = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t leases = 0;
  uint32_t waiting = 0;
  uint32_t callsInFlight = 0;
  uint64_t queuedReplyBytes = 0;
};

// What one peer uid (every connection of it together) counts against the limits.
struct PeerCounts {
  uint32_t uid = 0;
  uint32_t connections = 0;
  uint32_t leases = 0;
  uint32_t waiting = 0;
  uint32_t watches = 0;  // holder watches open
};

struct SidecarStatus {
  std::string zkState;
  std::string sessionId;
  uint32_t sessionTimeoutMs = 0;
  uint32_t safeForMs = 0;
  uint32_t leasesHeld = 0;
  uint32_t waiters = 0;
  uint32_t connections = 0;
  uint64_t uptimeMs = 0;
  uint64_t grantsTotal = 0;
  std::string root;
  std::vector<LeaseSummary> leases;
  uint32_t pendingDeletes = 0;            // lock node deletions ZooKeeper has not confirmed yet
  uint64_t droppedDeletes = 0;            // unconfirmed deletions the sidecar gave up at its bound
  std::vector<std::string> foreignNodes;  // planted queue entries seen in locks waited on
  SidecarLimits limits;
  std::vector<ConnectionCounts> connectionList;
  std::vector<PeerCounts> peers;
  uint64_t refusedTotal = 0;  // requests refused by a limit or the allow-list since start
  bool accepting = true;      // false while accept() fails (fds exhausted): nobody new gets in
  uint64_t acceptFailures = 0;
  std::vector<WaiterSummary> waiterList;
  std::string version;     // fencekeeper's version
  std::string build;       // the source revision and build type
  std::string zkServers;   // the ZooKeeper connect string
  std::string instanceId;  // the sidecar process's id (in its node names), new at every start
  // `leases` and `waiterList` hold at most `listingCap` entries each (the counts cover all);
  // `listingTruncated` says when they were cut.
  bool listingTruncated = false;
  uint32_t listingCap = 0;
  bool ready = false;  // the session is vouched for: what the status socket's /readyz answers
  std::string notReadyReason;
  bool healthy = false;  // the loop serves and every socket accepts: /healthz
  std::string notHealthyReason;
};

// How Client::connect decides to trust the process serving the socket (docs/security.md "Who may
// connect"). By default that process's uid (SO_PEERCRED) must own the socket file, whose
// directory no one else can write; where that directory sits in one that others can write (a
// Kubernetes emptyDir, /tmp), the server must also be root or this process's own uid. A server
// that fails the check is refused with kSidecarUnavailable, naming its uid and the one expected.
struct ConnectOptions {
  // The uid the sidecar must run as, checked instead of the default rule; -1:
  // $FENCEKEEPER_EXPECT_UID if set, else the default rule.
  int64_t expectUid = -1;
};

class ClientImpl;
struct LeaseState;
struct AcquireRequestState;

// A granted lease. Destroying it releases the lease (RAII) without waiting for the sidecar to
// have done so; release() returns once it has.
class Lease {
 public:
  ~Lease();
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;

  const std::string& name() const;
  // The fencing token: send it with every request to storage.
  uint64_t token() const;
  // How long the lease is known valid from now, from the last answer of the sidecar (counted
  // from when that request was sent, on CLOCK_BOOTTIME: a suspend spends it); 0 once lost,
  // released, or past. No round trip.
  Millis validFor() const;
  bool lost() const;
  // Why it was lost, once lost() is true; nullopt before (and for a lease released by its owner).
  std::optional<LossReason> lossReason() const;
  // Loss as cancellation: stop is requested the moment the lease is lost (never when released).
  // Hand it to the work the lease covers (a std::jthread's loop, std::stop_callback, a check
  // between steps). Stop callbacks run on the client's I/O thread: keep them short, and do not
  // call the client from them.
#ifdef FENCEKEEPER_HAS_STOP_TOKEN
  std::stop_token stopToken() const;
#endif
  // Between the sidecar's "at risk" push and its "safe again" (or the loss): see RiskCallback.
  bool atRisk() const;
  // Readable (POLLIN) once the lease is lost, and from then on (never when released): for
  // poll(2), epoll, select or another runtime's poller. Never read or close it; -1 if the
  // system refused an eventfd (EMFILE).
  int lossFd() const;

  // Asks the sidecar: the token and how long it stays valid.
  Status check(Millis* validFor = nullptr);
  // Extends the lease to `ttl` from now (0: the TTL it was acquired with).
  Status renew(Millis ttl = Millis(0));
  // Tells keep-alive that the application is alive (see renewOnlyIfCheckedIn).
  void checkIn();
  // Starts or stops keep-alive for this lease (AcquireOptions::keepAlive chose the start).
  Status setKeepAlive(bool on);
  Status release();
  // As release(); `confirmed` says whether ZooKeeper confirmed the node gone before the sidecar
  // answered (false: it answered after about 100 ms and deletes the node as soon as it can; the
  // lease ended all the same).
  Status release(bool* confirmed);

 private:
  friend class ClientImpl;
  explicit Lease(std::shared_ptr<LeaseState> state);
  std::shared_ptr<LeaseState> state_;
};

// An acquire under way (Client::acquireAsync): wait for it, watch its fd, or cancel it. Destroying
// it cancels it, and a grant it got that no wait() took is released: never orphaned.
class AcquireRequest {
 public:
  ~AcquireRequest();
  AcquireRequest(const AcquireRequest&) = delete;
  AcquireRequest& operator=(const AcquireRequest&) = delete;

  // Withdraws the request: the sidecar deletes its queue node, and wait() answers kCancelled.
  // A grant that crossed the cancel is released instead of returned. Async-signal-safe (an
  // atomic store and a write(2)): callable from any thread or a signal handler, any number of
  // times; no effect once the request is done.
  void cancel() noexcept;
  // Readable (POLLIN) once the request is done, and from then on: for poll(2), epoll or an event
  // loop. Never read or close it.
  int fd() const;
  bool done() const;
  // Waits up to `timeout` (negative: no limit) for the request to be done. Done: the lease (to
  // the first wait() only; later ones get kNotHeld), or nullptr and `*status` says why
  // (kCancelled after cancel(), kTimedOut when AcquireOptions::wait ran out, ...). Not done in
  // time: nullptr with kInProgress.
  std::unique_ptr<Lease> wait(Millis timeout, Status* status = nullptr);

 private:
  friend class Client;
  explicit AcquireRequest(std::shared_ptr<AcquireRequestState> state);
  std::shared_ptr<AcquireRequestState> state_;  // shared with the I/O thread until done
};

// What a holder watch reports (Client::watchHolder). Hints for standbys and people, never a
// fence: only the storage's token check is one.
enum class HolderState {
  kHeld,     // `info` names the holder
  kFree,     // nobody holds the lock
  kUnknown,  // the sidecar cannot vouch for its session, or the connection to it is down: `detail`
};
struct HolderChange {
  HolderState state = HolderState::kUnknown;
  HolderInfo info;     // kHeld: token, owner label, since
  std::string detail;  // kUnknown: why
};
using HolderChangeCallback = std::function<void(const HolderChange&)>;

// A holder watch under way (Client::watchHolder). Destroying it ends the watch: no call of its
// callback begins after the destructor returns (it may be destroyed from its own callback).
class HolderWatch {
 public:
  ~HolderWatch();
  HolderWatch(const HolderWatch&) = delete;
  HolderWatch& operator=(const HolderWatch&) = delete;

 private:
  friend class Client;
  HolderWatch(std::weak_ptr<ClientImpl> client, uint64_t key);
  std::weak_ptr<ClientImpl> client_;
  uint64_t key_;
};

class Client;
namespace internal {
int connectionFd(const Client& client);  // client_lib/src/client_internal.h
}  // namespace internal

class Client {
 public:
  // Connects to the sidecar's socket (in its subdirectory "<name>.d/" where the socket's
  // directory is writable by others, as the sidecar does) and checks who serves it (see
  // ConnectOptions). `*status` (if given) says why when it returns nullptr.
  static std::unique_ptr<Client> connect(const std::string& socketPath, Status* status = nullptr);
  static std::unique_ptr<Client> connect(const std::string& socketPath,
                                         const ConnectOptions& options, Status* status = nullptr);
  ~Client();

  // Queues for `name` and blocks until granted, options.wait passed (kTimedOut), or an error.
  // A `name` or options.ownerLabel holding a NUL byte is refused before anything is sent
  // (kInvalidName, kInvalidArgument); so is a NUL in holder()'s `name`.
  // A grant lost or expired before it could be returned (this process was stopped, say) was
  // never the caller's: it is dropped without onLost or exitOnLoss, and the lock is queued for
  // again within what is left of options.wait.
  std::unique_ptr<Lease> acquire(const std::string& name, const AcquireOptions& options,
                                 Status* status = nullptr);
  // acquire() without blocking: queues for `name` and returns at once (never nullptr). A request
  // refused before anything is sent (a NUL byte, called from a loss callback, the connection
  // dropped) is returned done, wait() saying why.
  std::unique_ptr<AcquireRequest> acquireAsync(const std::string& name,
                                               const AcquireOptions& options);
  Status holder(const std::string& name, HolderInfo* out);
  // Calls `onChange` with the holder of `name` now, then on every change, pushed by the sidecar
  // from its one ZooKeeper watch of the lock (changes may be coalesced; a token is never lower
  // than one reported before). kUnknown while the sidecar cannot vouch for its session and while
  // the connection to it is down; the watch resumes by itself after a reconnect. `onChange` runs
  // on the client's I/O thread: keep it short, do not call the client from it. nullptr (and
  // `*status` says why) for an invalid name or when the sidecar refused the watch.
  std::unique_ptr<HolderWatch> watchHolder(const std::string& name, HolderChangeCallback onChange,
                                           Status* status = nullptr);
  Status status(SidecarStatus* out);
  // The same answer as JSON: Cap'n Proto's JsonCodec encoding of the schema's Status (field names
  // as in ipc/fencekeeper.capnp, 64-bit numbers as strings), as the status socket's /status has it.
  Status statusJson(std::string* out);
  // False while the client has no connection to the sidecar: from a drop (every lease of that
  // connection is then lost, kConnectionLost) until it reconnected by itself, which it keeps
  // trying (20 ms, backing off to 1 s); meanwhile calls fail with kSidecarUnavailable.
  bool connected() const;
  // Readable (POLLIN) while connected() is false after a drop: for a poller that also waits on
  // the work's own fds. Never read or close it; -1 if the system refused an eventfd.
  int connectionLossFd();
  // Whether Lease::validFor() on this connection reads the sidecar's shared-memory lease table
  // (no round trip, and a loss the sidecar decides shows at once) rather than counting from the
  // sidecar's last answer; `*detail` gets the table's path, or why it is not read.
  bool usesLeaseTable(std::string* detail = nullptr);
  // Advisory, for a process without the lease (fencectl valid): whether the sidecar's lease table
  // shows a lease on `name` with `token`, held and valid now. A check followed by a write can race
  // a loss: the storage's token check is the fence (docs/fencing.md). kNotHeld when there is no
  // table to read (the message says why).
  Status tableShowsValid(const std::string& name, uint64_t token, bool* valid);

 private:
  friend int internal::connectionFd(const Client& client);
  explicit Client(std::shared_ptr<ClientImpl> impl);
  std::shared_ptr<ClientImpl> impl_;  // shared with its leases' weak references
};

// Leader election on the queue of lock `name` (kazoo's Election on the same path takes its turn
// in the same queue). The leader holds a lease: its token() is the leader's fencing token, it is
// bounded by its TTL (kept alive by the client) and the sidecar's vouching, and its loss is
// fatal to the leader's work. Resign by releasing (or destroying) the leadership lease.
class Election {
 public:
  Election(Client& client, std::string name, std::string owner, Millis ttl = Millis(30'000));
  // Stands by until this process leads, or `wait` passed (kTimedOut): the leadership lease, or
  // nullptr and `*status` says why. The options' onLost and exitOnLoss apply to it.
  std::unique_ptr<Lease> campaign(Millis wait = kWaitForever, Status* status = nullptr,
                                  LossCallback onLost = nullptr);
  // campaign() without blocking: wait for it, poll its fd, or cancel it.
  std::unique_ptr<AcquireRequest> campaignAsync(Millis wait = kWaitForever,
                                                LossCallback onLost = nullptr);
  // Who leads now (owner label, token); out->held false when nobody does.
  Status leader(HolderInfo* out);
  // The leader now, then each change (Client::watchHolder).
  std::unique_ptr<HolderWatch> observe(HolderChangeCallback onChange, Status* status = nullptr);

 private:
  AcquireOptions options(Millis wait, LossCallback onLost) const;
  Client& client_;
  const std::string name_;
  const std::string owner_;
  const Millis ttl_;
};

// The default socket: $FENCEKEEPER_SOCKET, else /run/fencekeeper/fencekeeper.sock.
std::string defaultSocketPath();

}  // namespace fencekeeper

#pragma GCC visibility pop
