// The lock engine: ZooKeeper's lock recipe (one ephemeral sequential node per lease request,
// FIFO by sequence, each waiter watching only the nodes whose deletion can admit it: the queue
// policy of lock_queue.h, for exclusive, shared and permit leases) and the lease lifecycle
//   CREATING -> WAITING -> HELD -> (RELEASED | LOST)
// with fencing tokens (the czxid of the request's own node) and TTL deadlines.
//
// Runs on the sidecar's event loop thread only; it has no locks. It depends on nothing but the
// zk::Client interface and a Timer, so tests run it against the in-memory fake.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "sidecar/engine/delete_queue.h"
#include "sidecar/engine/engine_events.h"
#include "sidecar/engine/foreign_nodes.h"
#include "sidecar/engine/jeopardy.h"
#include "sidecar/engine/lease_types.h"
#include "sidecar/engine/peer_tally.h"
#include "sidecar/engine/read_pacer.h"
#include "sidecar/engine/session_guard.h"
#include "sidecar/zk/zk_client.h"

namespace fencekeeper::engine {

struct EngineConfig {
  std::string root = "/fencekeeper";
  bool persistentParents = false;  // CONTAINER lock parents unless set
  Millis defaultTtl{30'000};
  Millis minTtl{100};
  Millis maxTtl{3'600'000};
  Millis maxWait{3'600'000};
  // Live requests (held or waiting; released and lost ones do not count), 0: unlimited.
  size_t maxLeases = 10'000;         // the whole sidecar
  size_t maxLeasesPerPeer = 2'500;   // held + waiting of one uid
  size_t maxWaitingPerPeer = 1'000;  // waiting of one uid
  size_t maxOwnerLabelBytes = 256;
  // Identifies this sidecar's nodes (`fk<instanceId>-<n>__lock__<seq>`); random per process.
  std::string instanceId;
  // Delay before an operation that failed with a lost connection is tried again.
  Millis retryDelay{100};
  // How long a try-once acquire (wait 0) may spend on ZooKeeper faults before it gives up.
  Millis tryOnceBudget{5'000};
  // Subtracted from how long the session can be vouched for (see SessionGuard).
  Millis safetyMargin{100};
  // No grant while the session is vouched for less than this (0: a quarter of the session
  // timeout): a request stays queued until vouching recovers or its wait runs out.
  Millis minGrantVouch{0};
  // release() answers once its delete is confirmed or after this long, whichever comes first.
  Millis releaseAnswerWait{100};
  // Unconfirmed node deletions kept for retry (see DeleteQueue); while full, acquires are refused.
  size_t maxPendingDeletes = 1'000;
  // Holder reads (holder(), holder watches) out at once, and a second per uid (ReadPacer): the
  // session's heartbeat never queues behind more than the first, whatever peers ask for.
  uint32_t maxHolderReadsInFlight = 16;
  uint32_t holderReadsPerPeerPerSecond = 1'000;
};

class LockEngine {
 public:
  // `observer` (not owned, may be null) hears of every lease event and session change.
  LockEngine(zk::Client& zk, Timer& timer, EngineConfig config, EngineObserver* observer = nullptr);
  ~LockEngine();
  LockEngine(const LockEngine&) = delete;
  LockEngine& operator=(const LockEngine&) = delete;

  // Queues a lease request. `done` is called once: with kOk and a LeaseId that stays valid until
  // withdraw(), or with an error (the request is then gone). It may be called before acquire()
  // returns when the request is refused at once (bad name, limits, shutting down).
  // Returns the request's id (for withdraw() before it is granted), or 0 when refused at once.
  LeaseId acquire(AcquireSpec spec, std::function<void(AcquireOutcome)> done);

  // The caller lets go of a request or lease in any state (dropped capability, closed connection,
  // cancelled call): its node is deleted, nobody is notified, and `id` is dead afterwards.
  // Also cancels a pending acquire: its `done` is never called.
  void withdraw(LeaseId id);

  Validity renew(LeaseId id, Millis ttl);
  Validity token(LeaseId id);
  // Ends the lease at once (it is not valid from this call on) and deletes its node. `done` runs
  // once ZooKeeper confirmed the delete or after releaseAnswerWait, whichever comes first, and
  // says which; an unconfirmed delete stays queued (DeleteQueue). At once when not held.
  void release(LeaseId id, std::function<void(ReleaseOutcome)> done);

  // Who holds the lock `name`, from ZooKeeper. Concurrent queries of one lock share one
  // ZooKeeper round: a query asked while a round is out waits for the next one (at most one
  // round per lock at a time), so that its answer is never older than the question.
  // `uid`: the peer whose reads-a-second budget the round counts against (ReadPacer).
  using HolderCallback = std::function<void(LeaseError, HolderInfo, std::string detail)>;
  void holder(const std::string& name, HolderCallback done, uint32_t uid = 0);
  // Reports who holds `name` now and then every change, from one ZooKeeper children watch per
  // lock however many watch it. Changes may be coalesced; a token is never lower than one
  // reported before (the same holder may be reported again after kUnknown). kUnknown while the
  // session is not vouched for. `changed` runs on the loop, never from within this call.
  // Returns 0 (and sets `error`) when `name` is invalid. Watching creates nothing: a lock with no
  // node yet is watched for its creation. The lock's reads count against the budget of `uid`,
  // the peer of its first watcher.
  using HolderChangeCallback = std::function<void(const HolderChange&)>;
  HolderWatchId watchHolder(const std::string& name, HolderChangeCallback changed,
                            LeaseError& error, uint32_t uid = 0);
  void unwatchHolder(HolderWatchId id);
  // Counts everything; lists at most `maxListed` leases and as many waiters.
  EngineStatus status(size_t maxListed = SIZE_MAX) const;
  // The counts of status() without its lists: constant time, whatever the number of leases.
  EngineStatus counts() const;
  // A listing in slices (the status socket walks 100k leases without holding the loop): appends
  // to `out` (from counts()) the leases and waiters among requests with ids from `from` on,
  // visiting at most `maxVisited` and listing at most `cap` of each. Returns the id to go on
  // from, or 0 when the listing is complete (`out.truncated` says whether it was cut at `cap`).
  LeaseId listSlice(LeaseId from, size_t maxVisited, size_t cap, EngineStatus& out) const;
  const EngineConfig& config() const { return config_; }
  // What the limits count now (live requests only).
  Counts countsOfPeer(uint32_t uid) const { return tally_.ofPeer(uid); }
  Counts countsOfConnection(uint64_t connection) const { return tally_.ofConnection(connection); }
  // How long this sidecar can still vouch for its ZooKeeper session.
  Millis safeFor() const { return guard_->safeFor(); }
  // Whether it vouches for its session now. A lapse whose timer has not run yet runs first, so a
  // reader told "not vouched" is never shown the lapse's leases still held or the lapse uncounted.
  bool vouched();
  // Up to when it vouches for it (0: it vouches for nothing now).
  TimePoint safeUntil() const { return guard_->safe() ? guard_->safeUntil() : TimePoint{}; }

  // Tells every holder (reason kSidecarShutdown), fails every waiter, deletes every node, refuses
  // new requests; `done` runs when ZooKeeper confirmed the deletions (or they failed). A held
  // lease's node goes once its holder acknowledged the notice, at the latest when the validity it
  // was given runs out.
  void shutdown(std::function<void()> done);

 private:
  struct Request;
  enum class State : uint8_t;
  enum class OwnWatch : uint8_t;
  static PeerTally::Bucket bucketOf(State state);

  // Lifetime rules of the engine's callbacks:
  // - ZooKeeper answers and watches, and retry timers, may run after the engine is gone (the
  //   client's and the timer's queues outlive it), after their request was withdrawn, or after it
  //   started over in a new session. They capture ids only and go through resume() (or
  //   whileAlive() when they serve no request), which re-finds what they act on.
  // - A request's own timers (wait, TTL) are cancelled whenever the request leaves the state that
  //   armed them and when the engine is destroyed: they find their request by id alone.
  // - The SessionGuard's and the DeleteQueue's callbacks need nothing: the engine owns both, and
  //   they call back only while they live.
  // - Callbacks handed to the engine (acquire's `done`, `onLost`, release's `done`) belong to the
  //   request and die with it; release's `done` may run after the engine is gone (its timer).
  //   shutdown()'s deletions wait on timers and on holders' answers: they go through whileAlive().
  template <typename Step, typename Stale>
  auto resume(const Request& r, State state, Step step, Stale stale);
  template <typename Step>
  auto resume(const Request& r, State state, Step step);
  // As resume(), for the answers and the watch of the request's own node: they serve it waiting
  // or held, as long as it has that node. `Step` is a member function taking the request first.
  template <auto Step>
  auto resumeOwnNode(const Request& r);
  template <typename Fn>
  auto whileAlive(Fn fn) {
    return [alive = std::weak_ptr<bool>(alive_), fn = std::move(fn)](auto&&... args) mutable {
      if (alive.lock()) fn(std::forward<decltype(args)>(args)...);
    };
  }
  // The one place a request changes state; aborts on a transition the lifecycle does not have.
  void moveTo(Request& r, State next);

  Request* find(LeaseId id, uint32_t attempt);
  Request* find(LeaseId id);
  const Request* find(LeaseId id) const;
  std::string lockPath(const std::string& name) const;
  // The path our sequential node is created at (ZooKeeper appends the sequence), and its path
  // (empty while it has none).
  std::string nodePrefix(const Request& r) const;
  std::string nodePath(const Request& r) const;
  // A request's unique id in its node's name (`fk<instanceId>-<id in hex>`), and back: derived,
  // not stored, since every live request has one.
  std::string guidOf(LeaseId id) const;
  std::optional<LeaseId> idOfGuid(std::string_view guid) const;

  void startCreate(Request& r);
  void onCreated(Request& r, const zk::CreateResult& result);
  void recoverCreate(Request& r);
  void recoverLater(Request& r);
  void findCreatedNode(Request& r);
  void adoptCreatedNode(Request& r, const std::string& path);
  void ensureParents(Request& r, size_t level, int restarts);
  void ensureParentExists(Request& r, size_t level, int restarts, const std::string& node);
  // Lists r's queue: by the listing out now for its lock if it was sent after r's create
  // (`pipelined`: sent right behind it), else by the next one.
  void checkQueue(Request& r, bool pipelined = false);
  // A listing that serves one request just created (and no other) also arms the lock's
  // children watch: if it grants that request, the watch covers its node (kCovered), which then
  // asks for no watch of its own: 3 requests an uncontended cycle, not 4.
  void sendQueueListing(const std::string& path);
  // The children watch covering lease `id` fired: a watch of its own node from here on.
  void onCoverFired(LeaseId id);
  // `coverable`: the request a watch armed by this listing covers if it grants it (0: none).
  void onQueueListing(const std::string& path, const zk::ChildrenResult& result,
                      LeaseId coverable);
  // The listing's nodes in the queue, once for all its readers; this sidecar's orphans deleted.
  std::vector<QueueNode> queueOf(const std::string& path, const zk::ChildrenResult& result);
  void onQueue(Request& r, zk::Code code, const std::vector<QueueNode>& queue, bool coverable);
  // Watches `node`, one the waiter `r` waits behind.
  void watchAhead(Request& r, const std::string& node);
  bool grantedBy(const Request& r, const std::string& node) const;
  // The request of this sidecar holding the node at `path`, found by the guid in its name.
  const Request* heldAt(const std::string& path) const;
  // One read of a lock's holder: its queue, then the lowest entry. `onChange` set: the queue
  // listing arms a children watch with it.
  struct HolderRead {
    LeaseError error = LeaseError::kOk;
    HolderInfo info;
    std::string detail;
    bool listed = false;       // the queue was listed (a watch asked for is armed)
    bool lockMissing = false;  // the lock's node does not exist
    bool handedOver = false;   // the lowest entry went between the listing and its read
  };
  // A read's holders, gathered from one get each.
  struct HolderGather {
    HolderRead read;
    std::vector<HolderEntry> entries;  // token 0: its node was gone when read
    size_t outstanding = 0;
    HolderRead finish();
  };
  void readHolderNode(const std::string& path, const std::string& node, const zk::GetResult& got,
                      HolderEntry& entry, HolderInfo& info);
  // Through the ReadPacer, for `uid`.
  void readHolder(const std::string& path, uint32_t uid, zk::Client::WatchCallback onChange,
                  std::function<void(const HolderRead&)> done);
  void sendHolderRead(const std::string& path, zk::Client::WatchCallback onChange,
                      std::function<void(const HolderRead&)> done);
  void queryHolder(const std::string& path);
  std::vector<std::string> parentChain(const std::string& lockPath) const;
  // Holder watches (lock_engine_holders.cc).
  void startHolderWatch(HolderWatchId id);
  void refreshHolder(const std::string& path);
  void onHolderRead(const std::string& path, uint64_t generation, bool arming,
                    const HolderRead& read);
  void awaitLockNode(const std::string& path, uint64_t generation);
  // The watch of `path` if it is still the one of `generation` (not removed and made again).
  struct HolderWatch;
  HolderWatch* holderWatchOf(const std::string& path, uint64_t generation);
  void holderUnreadable(const std::string& path, uint64_t generation, std::string why);
  void tellHolder(const std::string& path, HolderChange change);
  HolderChange holderUnknown() const;
  void holdersUnknown();
  void refreshUnknownHolders();
  void answerHolder(const std::string& path, LeaseError error, const HolderInfo& info,
                    const std::string& detail);
  void grant(Request& r, bool covered = false);
  void armTtlTimer(Request& r);
  void watchOwnNode(Request& r);
  // Every change of a request's own watch: a held request is in unwatchedHolders_ exactly
  // while its watch is not armed (its grant puts it there unless armed already).
  void setOwnWatch(Request& r, OwnWatch watch);
  // `r` is held and its own watch armed, or it is held no more: out of unwatchedHolders_.
  void forgetUnwatched(const Request& r);
  // Loses this engine's leases held on the lock at `path`, not yet watching their own node,
  // whose nodes `children` (listed after their grants) lacks: deleted behind their backs.
  void loseUnwatchedMissingFrom(const std::string& path, const std::vector<std::string>& children);
  // Ends a held lease: its holder is told (onLost) and its node deleted, unless gone already
  // (session lost, deleted elsewhere). At shutdown the node goes only once the holder took the
  // notice in or its validity ran out; `nodeGone` runs once ZooKeeper answered that delete.
  void lose(Request& r, LossReason reason, std::function<void()> nodeGone = nullptr);
  void noteRenewFailed(Request& r, LeaseError error);
  LeaseEvent eventOf(const Request& r, LeaseEventKind kind) const;
  void fail(Request& r, LeaseError error, std::string detail = {});
  void erase(LeaseId id);

  void deleteNode(const std::string& path, DeleteQueue::Done done = nullptr);
  void deleteOrphansByGuid(const std::string& lockPath, const std::string& guid);
  // Whether `child`, a node in a lock's queue, is this sidecar's and no request's (left by an
  // abandoned create): deleted when seen, never waited behind.
  bool isOwnOrphan(const std::string& child) const;
  void retryLater(const Request& r, std::function<void(Request&)> step);
  void onOwnNode(Request& r, bool arming, const zk::GetResult& res);
  void onOwnNodeArmed(Request& r, const zk::GetResult& res) { onOwnNode(r, true, res); }
  void onOwnNodeChecked(Request& r, const zk::GetResult& res) { onOwnNode(r, false, res); }
  void onOwnNodeEvent(Request& r, zk::WatchEvent event);
  void ownNodeGone(Request& r);
  void onSessionState(zk::SessionState state);
  void onUnsafe();
  void onGrantable();
  // Tells every held lease it is at risk, or safe again (Jeopardy).
  void onJeopardy(bool atRisk, Millis left);
  void verifyHeldNodes();

  Validity validity(const Request& r) const;
  // Why an acquire must be refused now (limits), or nullopt.
  std::optional<std::string> overLimit(const AcquireSpec& spec) const;

  zk::Client& zk_;
  Timer& timer_;
  EngineObserver noObserver_;
  EngineObserver& observer_;
  const EngineConfig config_;
  const std::string guidPrefix_;
  LeaseId nextId_ = 1;
  std::map<LeaseId, Request> requests_;  // (by value: one allocation a request, not two)
  PeerTally tally_;
  bool shuttingDown_ = false;
  uint64_t grantsTotal_ = 0;
  std::unique_ptr<SessionGuard> guard_;
  DeleteQueue deletes_;
  Jeopardy jeopardy_;
  // Lowest in their queue, not granted while the session is vouched for less than the floor.
  std::vector<LeaseId> awaitingSafety_;
  // Per lock path: the callers of the holder() round out now, and those of the next one.
  struct HolderQuery {
    std::vector<HolderCallback> current;
    std::vector<HolderCallback> next;
    uint32_t uid = 0;      // the current round's first caller's peer
    uint32_t nextUid = 0;  // the next round's
  };
  std::map<std::string, HolderQuery> holderQueries_;
  // Per lock path: the requests the queue listing out now answers, and those the next one will
  // (sent when this one answers, so it holds every node made before). One listing out a lock:
  // n waiters arriving at once cost n listings of up to n names each before (O(n^2) memory).
  struct QueueListing {
    struct Reader {
      LeaseId id;
      uint32_t attempt;
      bool pipelined;  // the listing sent right behind its create
    };
    std::vector<Reader> current;
    std::vector<Reader> next;
  };
  std::map<std::string, QueueListing> queueListings_;
  // Held leases whose own node's watch is not armed (covered, asked for, or asked again), by
  // lock name (a view of the request's own spec.name: requests_ never moves a request). Until
  // it is, a listing answered after the grant may come back without the node, deleted behind
  // the lease's back; onQueueListing loses such a lease before that listing grants anyone.
  std::multimap<std::string_view, LeaseId> unwatchedHolders_;
  // Per watched lock path: its local watchers and its one ZooKeeper children watch.
  struct HolderWatch {
    uint64_t generation = 0;  // tells a stale ZooKeeper answer or watch from this one's
    uint32_t uid = 0;         // its first watcher's peer: its reads count against that budget
    std::map<HolderWatchId, HolderChangeCallback> watchers;
    std::optional<HolderChange> told;  // what its watchers were told last
    uint64_t highestToken = 0;
    bool armed = false;    // its children watch is set in ZooKeeper
    bool awaitingNode = false;  // the lock has no node: an exists watch waits for its creation
    bool reading = false;  // a read is out
    bool again = false;    // read again when it answers: something changed meanwhile
    uint64_t retryTimer = 0;
  };
  std::map<std::string, HolderWatch> holderWatches_;
  std::map<HolderWatchId, std::string> holderWatchPaths_;
  uint64_t nextHolderWatch_ = 1;
  ForeignNodes foreign_;
  ReadPacer holderReads_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace fencekeeper::engine
