#include "sidecar/engine/lock_engine.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "common/utf8_text.h"
#include "sidecar/engine/lock_name.h"
#include "sidecar/engine/lock_engine_request.h"
#include "sidecar/engine/lock_queue.h"

namespace fencekeeper::engine {

namespace {
// How often a waiter looks at its queue again while one it waits behind may not be read (its
// ACL): no watch can be set on a node this session may not read.
constexpr Millis kUnreadablePoll{1'000};

// Number formatting for the paths derived on every lock cycle (snprintf was 5% of a cycle's CPU).
void appendHex(std::string& out, uint64_t value) {
  char digits[16];
  auto end = std::to_chars(digits, digits + sizeof digits, value, 16).ptr;
  out.append(digits, end);
}

const char* stateName(int state) {
  static const char* const kNames[] = {"creating", "waiting", "held", "released", "lost"};
  return kNames[state];
}

std::string ms(Millis d) { return std::to_string(d.count()) + " ms"; }
}  // namespace

// What a request in `state` counts as against the limits.
PeerTally::Bucket LockEngine::bucketOf(State state) {
  switch (state) {
    case State::kCreating:
    case State::kWaiting:
      return PeerTally::Bucket::kWaiting;
    case State::kHeld:
      return PeerTally::Bucket::kHeld;
    default:
      return PeerTally::Bucket::kNone;
  }
}

void LockEngine::moveTo(Request& r, State next) {
  auto allowed = [&] {
    switch (r.state) {
      case State::kCreating:  // (to itself: it starts over)
        return next == State::kCreating || next == State::kWaiting;
      case State::kWaiting:  // (back to creating: its node vanished, or its session expired)
        return next == State::kCreating || next == State::kHeld;
      case State::kHeld:
        return next == State::kReleased || next == State::kLost;
      case State::kReleased:
      case State::kLost:
        return false;
    }
    return false;
  };
  if (!allowed()) {
    spdlog::critical("lock {}: request {} cannot go from {} to {}", r.spec.name, r.id,
                     stateName(static_cast<int>(r.state)), stateName(static_cast<int>(next)));
    std::abort();
  }
  tally_.move(r.spec.clientUid, r.spec.connection, bucketOf(r.state), bucketOf(next));
  if (r.state == State::kHeld) forgetUnwatched(r);
  r.state = next;
}

LockEngine::LockEngine(zk::Client& zk, Timer& timer, EngineConfig config, EngineObserver* observer)
    : zk_(zk),
      timer_(timer),
      observer_(observer ? *observer : noObserver_),
      config_(std::move(config)),
      guidPrefix_("fk" + config_.instanceId + "-"),
      deletes_(zk_, timer_, config_.retryDelay, config_.maxPendingDeletes),
      // The risk floor: steady heartbeats leave about T/2 right before each answer; 3T/8 is
      // half a heartbeat's spacing later (an answer overdue by Q/2).
      jeopardy_(
          timer_,
          [this] { return Millis(3 * zk_.negotiatedTimeoutMs() / 8) - config_.safetyMargin; },
          [this](bool atRisk, Millis left) { onJeopardy(atRisk, left); }),
      holderReads_(timer_, config_.maxHolderReadsInFlight, config_.holderReadsPerPeerPerSecond) {
  guard_ = std::make_unique<SessionGuard>(
      zk_, timer_, config_.safetyMargin, config_.minGrantVouch, [this] { onUnsafe(); },
      [this] { onGrantable(); });
  guard_->setHeartbeatListener(
      [this](std::chrono::microseconds roundTrip) { observer_.heartbeatAnswered(roundTrip); });
  guard_->setVouchListener([this](TimePoint safeUntil) {
    observer_.vouchedUntil(safeUntil);
    jeopardy_.onVouched(safeUntil);
  });
  zk_.setSessionListener(whileAlive([this](zk::SessionState s) { onSessionState(s); }));
}

LockEngine::~LockEngine() {
  *alive_ = false;
  zk_.setSessionListener(nullptr);
  for (auto& [id, r] : requests_) {
    timer_.cancel(r.ttlTimer);
    timer_.cancel(r.waitTimer);
  }
  // A request's callbacks may own objects that call back into the engine when destroyed (a
  // client's own Lease passed as its watcher): destroy them while the engine is still whole.
  auto doomed = std::move(requests_);
  requests_.clear();
  doomed.clear();
}

std::string LockEngine::guidOf(LeaseId id) const {
  std::string guid = guidPrefix_;
  appendHex(guid, id);
  return guid;
}

std::optional<LeaseId> LockEngine::idOfGuid(std::string_view guid) const {
  if (guid.size() <= guidPrefix_.size() || guid.substr(0, guidPrefix_.size()) != guidPrefix_) {
    return std::nullopt;
  }
  std::string_view hex = guid.substr(guidPrefix_.size());
  LeaseId id = 0;
  auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), id, 16);
  if (ec != std::errc() || end != hex.data() + hex.size()) return std::nullopt;
  return id;
}

std::string LockEngine::lockPath(const std::string& name) const {
  std::string path;
  path.reserve(config_.root.size() + 7 + name.size());
  return path.append(config_.root).append("/locks/").append(name);
}

std::string LockEngine::nodePrefix(const Request& r) const {
  std::string path;
  // (Room for the sequence too: nodePath() appends it without another allocation.)
  path.reserve(config_.root.size() + 8 + r.spec.name.size() + guidPrefix_.size() + 16 + 12 + 11);
  path.append(config_.root).append("/locks/").append(r.spec.name).append("/").append(guidPrefix_);
  appendHex(path, r.id);
  return path.append(queueMarker(r.spec.mode, r.spec.permits));
}

std::string LockEngine::nodePath(const Request& r) const {
  if (!r.nodeSeq) return {};
  std::string path = nodePrefix(r);
  appendSequenceSuffix(path, *r.nodeSeq);
  return path;
}

LockEngine::Request* LockEngine::find(LeaseId id) {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : &it->second;
}

const LockEngine::Request* LockEngine::find(LeaseId id) const {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : &it->second;
}

LockEngine::Request* LockEngine::find(LeaseId id, uint32_t attempt) {
  Request* r = find(id);
  return r && r->attempt == attempt ? r : nullptr;
}

// ---- acquire ---------------------------------------------------------------------------------

LeaseId LockEngine::acquire(AcquireSpec spec, std::function<void(AcquireOutcome)> done) {
  auto refuse = [&](LeaseError e, std::string detail) {
    done(AcquireOutcome{e, 0, 0, Millis(0), std::move(detail)});
    return LeaseId{0};
  };
  if (shuttingDown_) return refuse(LeaseError::kShuttingDown, "the sidecar is shutting down");
  if (auto problem = lockNameProblem(spec.name)) {
    return refuse(LeaseError::kInvalidName, *problem);
  }
  if (spec.mode == LockMode::kPermits && (spec.permits == 0 || spec.permits > kMaxPermits)) {
    return refuse(LeaseError::kInvalidArgument, "permits " + std::to_string(spec.permits) +
                                                    " outside [1, " + std::to_string(kMaxPermits) +
                                                    "]");
  }
  if (spec.mode != LockMode::kPermits) spec.permits = 0;
  if (spec.ttl.count() == 0) spec.ttl = config_.defaultTtl;
  if (spec.ttl < config_.minTtl || spec.ttl > config_.maxTtl) {
    return refuse(LeaseError::kInvalidArgument, "ttlMs " + std::to_string(spec.ttl.count()) +
                                                    " outside [" + ms(config_.minTtl) + ", " +
                                                    ms(config_.maxTtl) + "] (--max-ttl)");
  }
  if (spec.wait > config_.maxWait && spec.wait != kWaitForever) {
    return refuse(LeaseError::kInvalidArgument, "waitMs " + std::to_string(spec.wait.count()) +
                                                    " above the maximum " + ms(config_.maxWait) +
                                                    " (4294967295: no deadline)");
  }
  if (spec.ownerLabel.size() > config_.maxOwnerLabelBytes) {
    return refuse(LeaseError::kInvalidOwner,
                  "ownerLabel has " + std::to_string(spec.ownerLabel.size()) +
                      " bytes, above the maximum " + std::to_string(config_.maxOwnerLabelBytes));
  }
  if (auto problem = labelTextProblem(spec.ownerLabel)) {
    return refuse(LeaseError::kInvalidOwner,
                  "ownerLabel '" + printable(spec.ownerLabel) + "': " + *problem);
  }
  if (auto limit = overLimit(spec)) return refuse(LeaseError::kLimitReached, *limit);
  // Trying once cannot succeed while ZooKeeper is out of reach and the session unproven.
  if (spec.wait.count() == 0 && !guard_->safe() &&
      zk_.sessionState() != zk::SessionState::kConnected) {
    return refuse(LeaseError::kZkUnavailable,
                  std::string("ZooKeeper session ") + zk::sessionStateName(zk_.sessionState()) +
                      " and not vouched for: try again later or wait (waitMs > 0)");
  }

  Request& r = requests_.try_emplace(nextId_).first->second;
  r.id = nextId_++;
  r.spec = std::move(spec);
  r.done = std::move(done);
  r.queuedAt = timer_.now();
  tally_.move(r.spec.clientUid, r.spec.connection, PeerTally::Bucket::kNone, bucketOf(r.state));

  // Waits end at their deadline; a try-once request still gets a budget to ride out faults.
  // Either way, the answer says whether ZooKeeper or the holder was in the way.
  Millis limit = r.spec.wait.count() > 0 ? r.spec.wait : config_.tryOnceBudget;
  LeaseId id = r.id;
  // Cancelled by grant() and erase(): it finds a queued request.
  if (r.spec.wait != kWaitForever) r.waitTimer = timer_.schedule(timer_.now() + limit, [this, id] {
    Request* w = find(id);
    w->waitTimer = 0;
    bool zkDown = zk_.sessionState() != zk::SessionState::kConnected;
    if (zkDown || w->spec.wait.count() == 0) {
      fail(*w, LeaseError::kZkUnavailable,
           std::string("ZooKeeper did not answer in time (session ") +
               zk::sessionStateName(zk_.sessionState()) + ")");
    } else {
      fail(*w, LeaseError::kTimedOut,
           "not granted within waitMs " + std::to_string(w->spec.wait.count()));
    }
  });
  if (zk_.sessionState() == zk::SessionState::kExpired) {
    r.recreateOnConnect = true;  // the client is opening a new session
  } else {
    startCreate(r);
  }
  return r.id;
}

std::optional<std::string> LockEngine::overLimit(const AcquireSpec& spec) const {
  auto over = [](const char* what, size_t limit, const char* flag) {
    return std::string(what) + " (" + std::to_string(limit) + "): raise " + flag;
  };
  Counts all = tally_.total();
  if (config_.maxLeases && all.held + all.waiting >= config_.maxLeases) {
    return over("this sidecar holds and queues as many leases as it may", config_.maxLeases,
                "--max-leases");
  }
  Counts peer = tally_.ofPeer(spec.clientUid);
  if (config_.maxLeasesPerPeer && peer.held + peer.waiting >= config_.maxLeasesPerPeer) {
    return over(("uid " + std::to_string(spec.clientUid) + " holds " + std::to_string(peer.held) +
                 " and queues " + std::to_string(peer.waiting) + " leases, its limit")
                    .c_str(),
                config_.maxLeasesPerPeer, "--max-leases-per-peer, or release leases");
  }
  if (config_.maxWaitingPerPeer && peer.waiting >= config_.maxWaitingPerPeer) {
    return over(("uid " + std::to_string(spec.clientUid) + " has " + std::to_string(peer.waiting) +
                 " acquires waiting, its limit")
                    .c_str(),
                config_.maxWaitingPerPeer, "--max-waiting-per-peer");
  }
  // While deletes go unconfirmed, no new node: the ones to delete would pile up. A healthy
  // session confirms a burst (a client dropping thousands of leases at once) in moments: that
  // must not refuse everyone else.
  bool healthy = zk_.sessionState() == zk::SessionState::kConnected && guard_->safe();
  if (deletes_.full() && !healthy) {
    return over("ZooKeeper has not confirmed as many node deletions as may be pending",
                config_.maxPendingDeletes, "--max-pending-deletes, or restore ZooKeeper");
  }
  return std::nullopt;
}

// ---- the queue -------------------------------------------------------------------------------

void LockEngine::checkQueue(Request& r, bool pipelined) {
  std::string path = lockPath(r.spec.name);
  auto [listing, idle] = queueListings_.try_emplace(path);
  auto& readers = idle ? listing->second.current : listing->second.next;
  // Asked again before the next listing went out (a permit waiter's N watches can each ask):
  // that listing answers once for all.
  bool queued = std::any_of(readers.begin(), readers.end(), [&](const auto& reader) {
    return reader.id == r.id && reader.attempt == r.attempt && !reader.pipelined;
  });
  if (!pipelined && queued) return;
  readers.push_back({r.id, r.attempt, pipelined});
  if (idle) sendQueueListing(path);
}

void LockEngine::sendQueueListing(const std::string& path) {
  // Only a request just created can be covered: the watch is armed after its node was made.
  const auto& readers = queueListings_.at(path).current;
  LeaseId coverable = 0;
  if (readers.size() == 1 && readers.front().pipelined) coverable = readers.front().id;
  auto listed = whileAlive([this, path, coverable](const zk::ChildrenResult& res) {
    onQueueListing(path, res, res.code == zk::Code::kOk ? coverable : 0);
  });
  if (coverable == 0) return zk_.getChildren(path, std::move(listed));
  zk_.getChildrenAndWatch(path, std::move(listed),
                          whileAlive([this, coverable](zk::WatchEvent) { onCoverFired(coverable); }));
}

void LockEngine::onCoverFired(LeaseId id) {
  Request* r = find(id);
  if (!r || r->state != State::kHeld || r->ownWatch != OwnWatch::kCovered) return;
  setOwnWatch(*r, OwnWatch::kNone);
  watchOwnNode(*r);  // answers kNoNode if the change was its deletion
}

void LockEngine::loseUnwatchedMissingFrom(const std::string& path,
                                          const std::vector<std::string>& children) {
  auto [first, last] = unwatchedHolders_.equal_range(path.substr(lockPath("").size()));
  std::vector<LeaseId> ids;
  for (auto it = first; it != last; ++it) ids.push_back(it->second);
  for (LeaseId id : ids) {  // (lose() erases from unwatchedHolders_)
    Request* r = find(id);
    if (!r || r->state != State::kHeld) continue;
    std::string node = baseName(nodePath(*r));
    if (std::find(children.begin(), children.end(), node) != children.end()) continue;
    spdlog::warn("lock {}: node {} of the lease with token {} is gone from its queue",
                 r->spec.name, node, r->czxid);
    lose(*r, LossReason::kReleasedElsewhere);
  }
}

void LockEngine::setOwnWatch(Request& r, OwnWatch watch) {
  bool wasArmed = r.ownWatch == OwnWatch::kArmed;
  r.ownWatch = watch;
  if (r.state != State::kHeld || wasArmed == (watch == OwnWatch::kArmed)) return;
  if (wasArmed) {
    unwatchedHolders_.emplace(r.spec.name, r.id);  // (a change event: watched again next)
  } else {
    forgetUnwatched(r);
  }
}

void LockEngine::forgetUnwatched(const Request& r) {
  auto [first, last] = unwatchedHolders_.equal_range(r.spec.name);
  for (auto it = first; it != last; ++it) {
    if (it->second == r.id) {
      unwatchedHolders_.erase(it);
      return;
    }
  }
}

void LockEngine::onQueueListing(const std::string& path, const zk::ChildrenResult& res,
                                LeaseId coverable) {
  auto listing = queueListings_.find(path);
  auto readers = std::move(listing->second.current);
  if (listing->second.next.empty()) {
    queueListings_.erase(listing);
  } else {
    listing->second.current = std::exchange(listing->second.next, {});
    sendQueueListing(path);
  }
  if (res.code == zk::Code::kOk) loseUnwatchedMissingFrom(path, res.children);
  std::vector<QueueNode> queue = queueOf(path, res);
  for (const auto& reader : readers) {
    Request* r = find(reader.id, reader.attempt);
    if (!r) continue;
    if (reader.pipelined) {
      // Not still due: the create was lost and its node found again (another listing follows).
      if (!r->listingPipelined) continue;
      r->listingPipelined = false;
    }
    // Not waiting: the create failed and its answer started a recovery, or (a test double's
    // stall) this answer overtook the create's, and onCreated lists again.
    if (r->state == State::kWaiting) onQueue(*r, res.code, queue, r->id == coverable);
  }
}

std::vector<QueueNode> LockEngine::queueOf(const std::string& path,
                                           const zk::ChildrenResult& res) {
  std::vector<QueueNode> queue;
  if (res.code != zk::Code::kOk && res.code != zk::Code::kNoNode) return queue;
  foreign_.prune(path, res.children);
  for (auto& child : res.children) {
    // This sidecar's orphans (left by abandoned creates) are deleted, and not waited behind:
    // they will never be held, and a try-once acquire would fail on its own sidecar's leftovers.
    if (isOwnOrphan(child)) {
      spdlog::warn("deleting orphan node {}/{}", path, child);
      deleteNode(path + "/" + child);
      continue;
    }
    if (auto q = parseQueueNode(child)) queue.push_back(std::move(*q));
  }
  sortQueue(queue);
  return queue;
}

void LockEngine::onQueue(Request& r, zk::Code code, const std::vector<QueueNode>& queue,
                         bool coverable) {
  if (zk::isAmbiguous(code)) {
    return retryLater(r, [this](Request& again) { checkQueue(again); });
  }
  if (code == zk::Code::kSessionExpired) return;  // the session listener starts it over
  const std::string path = lockPath(r.spec.name);
  if (code == zk::Code::kNoAuth) {
    return fail(r, LeaseError::kPermissionDenied, refusedBy("list", path));
  }
  if (code != zk::Code::kOk && code != zk::Code::kNoNode) {
    return fail(r, LeaseError::kZkUnavailable, "cannot list " + path + ": " + zk::codeName(code));
  }
  const std::string ownPath = nodePath(r);
  QueueDecision d = decide(queue, std::string_view(ownPath).substr(ownPath.rfind('/') + 1));
  if (d.kind == QueueDecision::Kind::kMissing) return ownNodeGone(r);  // deleted by someone
  r.position = d.ahead;
  if (d.kind == QueueDecision::Kind::kConflict) {
    spdlog::warn("lock {}: refused: {}", r.spec.name, d.conflict);
    return fail(r, LeaseError::kModeConflict, "lock " + r.spec.name + ": " + d.conflict);
  }
  if (d.kind == QueueDecision::Kind::kGranted) return grant(r, coverable);
  if (r.spec.wait.count() == 0) {  // try once
    return fail(r, LeaseError::kTimedOut, "held by someone else (waitMs 0: tried once)");
  }
  // Before the others (it answers first): a waiter learns of its node's deletion before any
  // later event, and a hand-over without listing finds the watch armed (grantedBy).
  watchOwnNode(r);
  r.waitsBehind.clear();
  for (auto& name : d.waitsBehind) r.waitsBehind.push_back(path + "/" + name);
  r.grantedByAnyDeletion = d.grantedByAnyDeletion;
  for (auto& node : r.waitsBehind) watchAhead(r, node);
}

// Whether the deletion of `node` grants `r` without listing its queue again: the policy said so
// at the last listing (a node made later gets a higher sequence number, so none came ahead). Two
// more conditions: our own node stands (its watch is armed, and would have fired before this
// deletion was told), and the deleted node is not a lease this sidecar still counts as held
// (deleted behind its back: its holder must be told of the loss first).
bool LockEngine::grantedBy(const Request& r, const std::string& node) const {
  if (!r.grantedByAnyDeletion || r.ownWatch != OwnWatch::kArmed ||
      std::find(r.waitsBehind.begin(), r.waitsBehind.end(), node) == r.waitsBehind.end()) {
    return false;
  }
  return heldAt(node) == nullptr;
}

const LockEngine::Request* LockEngine::heldAt(const std::string& node) const {
  std::string name = baseName(node);
  size_t marker = markerStart(name);
  if (marker == std::string::npos) return nullptr;
  auto id = idOfGuid(std::string_view(name).substr(0, marker));
  const Request* r = id ? find(*id) : nullptr;
  return r && r->state == State::kHeld && nodePath(*r) == node ? r : nullptr;
}

void LockEngine::watchAhead(Request& r, const std::string& node) {
  auto onChange = [this, node](Request& r, zk::WatchEvent event) {
    // A watch from an earlier look at the queue: the current watches, or the listing in flight,
    // tell what matters now.
    if (std::find(r.waitsBehind.begin(), r.waitsBehind.end(), node) == r.waitsBehind.end()) return;
    if (event == zk::WatchEvent::kDeleted) {
      foreign_.gone(node);  // no listing may follow to prune it
      if (grantedBy(r, node)) return grant(r);
    }
    checkQueue(r);
  };
  zk_.getAndWatch(node,
                  resume(r, State::kWaiting,
                         [this, node](Request& r, const zk::GetResult& res) {
                           // Gone before we watched: look again.
                           if (res.code == zk::Code::kNoNode) return checkQueue(r);
                           if (zk::isAmbiguous(res.code)) {
                             retryLater(r, [this](Request& again) { checkQueue(again); });
                           }
                           // Planted: wait behind it all the same (its watch is armed).
                           if (res.code == zk::Code::kOk && res.stat.ephemeralOwner == 0) {
                             foreign_.planted(r.spec.name, node);
                           }
                           if (res.code == zk::Code::kNoAuth) {
                             foreign_.unreadable(r.spec.name, node);
                             timer_.schedule(
                                 timer_.now() + kUnreadablePoll,
                                 resume(r, State::kWaiting, [this](Request& r) { checkQueue(r); }));
                           }
                         }),
                  resume(r, State::kWaiting, std::move(onChange)));
}

void LockEngine::grant(Request& r, bool covered) {
  guard_->noticeExpiry();
  if (!guard_->grantable()) {
    // The session cannot be vouched for long enough now: no grant until heartbeats prove more.
    awaitingSafety_.push_back(r.id);
    return;
  }
  if (r.ephemeralOwner != zk_.sessionId()) {
    // The node belongs to an older session of ours that has since expired: it cannot be held.
    spdlog::warn("lock {}: node {} is not owned by the current session; queueing again",
                 r.spec.name, nodePath(r));
    deleteNode(nodePath(r));  // (normally gone with its session already)
    return startCreate(r);
  }
  timer_.cancel(r.waitTimer);
  r.waitTimer = 0;
  moveTo(r, State::kHeld);
  r.grantedUnixMs = wallClockMs();
  r.deadline = timer_.now() + r.spec.ttl;
  armTtlTimer(r);
  ++grantsTotal_;
  r.grantedAt = timer_.now();
  LeaseEvent granted = eventOf(r, LeaseEventKind::kGranted);
  granted.ttl = r.spec.ttl;
  granted.waited = std::chrono::duration_cast<Millis>(r.grantedAt - r.queuedAt);
  observer_.leaseEvent(granted);
  if (covered && r.ownWatch == OwnWatch::kNone) {
    setOwnWatch(r, OwnWatch::kCovered);
  } else {
    watchOwnNode(r);  // (a waiter's: asked for already)
  }
  if (r.ownWatch != OwnWatch::kArmed) unwatchedHolders_.emplace(r.spec.name, r.id);
  auto done = std::move(r.done);
  LeaseId id = r.id;
  done(
      AcquireOutcome{LeaseError::kOk, r.id, static_cast<uint64_t>(r.czxid), validity(r).valid, {}});
  // Granted in jeopardy (a grant needs only the floor of vouching): told at once.
  Request* held = jeopardy_.atRisk() ? find(id) : nullptr;
  if (held && held->state == State::kHeld && held->spec.onRisk) {
    held->spec.onRisk(static_cast<uint64_t>(held->czxid), true, jeopardy_.left());
  }
}

// One timer per lease: renewals only move the deadline (renewing often must not pile up timers),
// and a timer that fires before the current deadline arms itself again for it.
// Cancelled by lose(), release(), shutdown() and erase(): it finds a held request.
void LockEngine::armTtlTimer(Request& r) {
  LeaseId id = r.id;
  r.ttlTimer = timer_.schedule(r.deadline, [this, id] {
    Request* held = find(id);
    held->ttlTimer = 0;
    if (timer_.now() < held->deadline) return armTtlTimer(*held);
    lose(*held, LossReason::kTtlExpired);
  });
}

// A request's node can be deleted by another path (an operator, a recovery tool), or belong to
// a session that is no longer ours: notice it. Asked for once a waiter's node is made, else at
// grant; asked for again after a reconnect if it was not registered (a watch asked for while
// disconnected never arrives at the server).
void LockEngine::watchOwnNode(Request& r) {
  if (r.ownWatch != OwnWatch::kNone) return;  // registered, or its answer is on the way
  setOwnWatch(r, OwnWatch::kAsked);
  zk_.getAndWatch(nodePath(r), resumeOwnNode<&LockEngine::onOwnNodeArmed>(r),
                  resumeOwnNode<&LockEngine::onOwnNodeEvent>(r));
}

void LockEngine::onOwnNodeEvent(Request& r, zk::WatchEvent event) {
  setOwnWatch(r, OwnWatch::kNone);
  if (event == zk::WatchEvent::kDeleted) return ownNodeGone(r);
  watchOwnNode(r);  // changed: still there, watch it again
}

void LockEngine::onOwnNode(Request& r, bool arming, const zk::GetResult& res) {
  if (arming) setOwnWatch(r, res.code == zk::Code::kOk ? OwnWatch::kArmed : OwnWatch::kNone);
  if (res.code == zk::Code::kNoNode) {
    ownNodeGone(r);
  } else if (res.code == zk::Code::kOk && res.stat.ephemeralOwner != zk_.sessionId() &&
             r.state == State::kHeld) {
    lose(r, LossReason::kSessionLost);  // (a waiter's node is checked at its grant)
  }
  // Connection loss: the reconnect checks and arms it again.
}

void LockEngine::ownNodeGone(Request& r) {
  if (r.state == State::kHeld) return lose(r, LossReason::kReleasedElsewhere);
  // Deleted by someone while it waited: queue again, it was not held.
  spdlog::warn("lock {}: waiting node {} vanished; queueing again", r.spec.name, nodePath(r));
  startCreate(r);
}

// ---- loss, failure, release --------------------------------------------------------------------

void LockEngine::lose(Request& r, LossReason reason, std::function<void()> nodeGone) {
  // At shutdown, what the holder was last told it may count on (read before the state moves).
  Millis validFor = reason == LossReason::kSidecarShutdown ? validity(r).valid : Millis(0);
  timer_.cancel(r.ttlTimer);
  r.ttlTimer = 0;
  moveTo(r, State::kLost);
  r.lossReason = reason;
  LeaseEvent lost = eventOf(r, LeaseEventKind::kLost);
  lost.reason = reason;
  observer_.leaseEvent(lost);
  std::function<void()> told = [] {};
  if (reason == LossReason::kSidecarShutdown) {
    // The node goes (and the next holder may be granted) only once the holder has taken the
    // notice in, or once the validity it was given has run out: never two valid holders.
    // (Its timer and the holder's answer may come after the engine is gone.)
    told = whileAlive([this, removed = std::make_shared<bool>(false), node = nodePath(r),
                       nodeGone = std::move(nodeGone)] {
      if (std::exchange(*removed, true)) return;
      deleteNode(node, [nodeGone](bool) {
        if (nodeGone) nodeGone();
      });
    });
    timer_.schedule(timer_.now() + validFor, told);
  } else if (reason != LossReason::kSessionLost && reason != LossReason::kReleasedElsewhere) {
    deleteNode(nodePath(r));
  }
  if (r.spec.onLost) r.spec.onLost(static_cast<uint64_t>(r.czxid), reason, told);
}

void LockEngine::fail(Request& r, LeaseError error, std::string detail) {
  if (r.nodeSeq) {
    deleteNode(nodePath(r));
  } else if (r.state == State::kCreating) {
    // A create may be in flight or its answer lost: whatever it made, only the guid finds it.
    deleteOrphansByGuid(lockPath(r.spec.name), guidOf(r.id));
  }
  auto done = std::move(r.done);
  erase(r.id);
  if (done) done(AcquireOutcome{error, 0, 0, Millis(0), std::move(detail)});
}

void LockEngine::erase(LeaseId id) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return;
  timer_.cancel(it->second.ttlTimer);
  timer_.cancel(it->second.waitTimer);
  const Request& r = it->second;
  tally_.move(r.spec.clientUid, r.spec.connection, bucketOf(r.state), PeerTally::Bucket::kNone);
  if (r.state == State::kHeld) forgetUnwatched(r);
  requests_.erase(it);
}

void LockEngine::withdraw(LeaseId id) {
  Request* r = find(id);
  if (!r) return;
  if (r->state == State::kHeld) {
    LeaseEvent dropped = eventOf(*r, LeaseEventKind::kReleased);
    dropped.how = "dropped";
    observer_.leaseEvent(dropped);
  }
  bool nodeLive = r->state == State::kWaiting || r->state == State::kHeld;
  std::string node = nodePath(*r);
  std::string path = lockPath(r->spec.name);
  std::string guid = guidOf(r->id);
  bool creating = r->state == State::kCreating;
  erase(id);
  if (nodeLive) deleteNode(node);
  // A create in flight finds no request when it answers and deletes its node then; one that
  // was ambiguous may have left a node that only its guid identifies.
  if (creating) deleteOrphansByGuid(path, guid);
}

void LockEngine::release(LeaseId id, std::function<void(ReleaseOutcome)> done) {
  Request* r = find(id);
  if (!r) return done({LeaseError::kNotHeld, false, "no such lease"});
  if (r->state != State::kHeld) {
    Validity v = validity(*r);
    return done({v.error, false, v.detail});
  }
  timer_.cancel(r->ttlTimer);
  r->ttlTimer = 0;
  moveTo(*r, State::kReleased);  // not valid from here on, whatever ZooKeeper answers
  observer_.leaseEvent(eventOf(*r, LeaseEventKind::kReleased));
  // A frozen ZooKeeper must not hold the caller: answer at the bound, the delete stays queued.
  auto answer = std::make_shared<std::function<void(ReleaseOutcome)>>(std::move(done));
  auto once = [answer](bool confirmed) {
    if (auto d = std::exchange(*answer, nullptr)) d({LeaseError::kOk, confirmed, {}});
  };
  uint64_t bound =
      timer_.schedule(timer_.now() + config_.releaseAnswerWait, [once] { once(false); });
  deleteNode(nodePath(*r), [&timer = timer_, once, bound](bool gone) {
    timer.cancel(bound);
    once(gone);
  });
}

Validity LockEngine::validity(const Request& r) const {
  switch (r.state) {
    case State::kHeld: {
      auto left = std::chrono::duration_cast<Millis>(r.deadline - timer_.now());
      if (left.count() <= 0) {
        return {LeaseError::kExpired, 0, Millis(0), "the TTL ran out before a renew"};
      }
      if (!guard_->safe()) {
        return {LeaseError::kLost, 0, Millis(0),
                "the sidecar cannot vouch for its ZooKeeper session (session uncertain)",
                LossReason::kSessionUncertain};
      }
      // Valid while now < min(leaseDeadline, safeUntil).
      return {
          LeaseError::kOk, static_cast<uint64_t>(r.czxid), std::min(left, guard_->safeFor()), {}};
    }
    case State::kLost:
      return {r.lossReason == LossReason::kTtlExpired ? LeaseError::kExpired : LeaseError::kLost, 0,
              Millis(0), std::string("lost: ") + lossReasonName(r.lossReason), r.lossReason};
    case State::kReleased:
      return {LeaseError::kNotHeld, 0, Millis(0), "the lease was released"};
    default:
      return {LeaseError::kNotHeld, 0, Millis(0), "not granted yet"};
  }
}

Validity LockEngine::token(LeaseId id) {
  guard_->noticeExpiry();  // a lease lost to a lapse stays lost
  const Request* r = find(id);
  return r ? validity(*r) : Validity{LeaseError::kNotHeld, 0, Millis(0), "no such lease"};
}

void LockEngine::noteRenewFailed(Request& r, LeaseError error) {
  // Once per lease: a holder that keeps renewing a lost lease must not flood the log.
  if (r.renewFailureNoted) return;
  r.renewFailureNoted = true;
  LeaseEvent failed = eventOf(r, LeaseEventKind::kRenewFailed);
  failed.error = error;
  failed.reason = r.lossReason;
  observer_.leaseEvent(failed);
}

LeaseEvent LockEngine::eventOf(const Request& r, LeaseEventKind kind) const {
  LeaseEvent e;
  e.kind = kind;
  e.id = r.id;
  e.lock = r.spec.name;
  e.token = static_cast<uint64_t>(r.czxid);
  e.clientPid = r.spec.clientPid;
  e.clientUid = r.spec.clientUid;
  e.connection = r.spec.connection;
  e.ownerLabel = r.spec.ownerLabel;
  e.deadline = r.deadline;
  e.mode = r.spec.mode;
  e.permits = r.spec.permits;
  if (r.grantedAt.count() != 0)
    e.held = std::chrono::duration_cast<Millis>(timer_.now() - r.grantedAt);
  return e;
}

Validity LockEngine::renew(LeaseId id, Millis ttl) {
  guard_->noticeExpiry();
  Request* r = find(id);
  if (!r) return {LeaseError::kNotHeld, 0, Millis(0), "no such lease"};
  if (ttl.count() == 0) ttl = r->spec.ttl;
  if (ttl < config_.minTtl || ttl > config_.maxTtl) {
    return {LeaseError::kInvalidArgument, 0, Millis(0),
            "ttlMs " + std::to_string(ttl.count()) + " outside [" + ms(config_.minTtl) + ", " +
                ms(config_.maxTtl) + "] (--max-ttl)"};
  }
  Validity now = validity(*r);
  if (now.error != LeaseError::kOk && r->state == State::kHeld) {
    // The timers have not run yet, but the deadline or safeUntil has passed.
    lose(*r, now.reason);
  }
  if (now.error != LeaseError::kOk) {
    if (r->state == State::kLost) noteRenewFailed(*r, now.error);
    return now;
  }
  r->spec.ttl = ttl;
  r->deadline = timer_.now() + ttl;  // the TTL timer finds the new deadline when it fires
  observer_.leaseRenewed(r->id, r->deadline);
  spdlog::debug("renew lock={} token={} ttl={}ms", r->spec.name, r->czxid, ttl.count());
  return validity(*r);
}

// ---- node deletion and orphans ---------------------------------------------------------------

void LockEngine::deleteNode(const std::string& path, DeleteQueue::Done done) {
  deletes_.remove(path, std::move(done));
}

// A node named with this sidecar's prefix that no live request owns is an orphan (for instance
// from a create whose answer was lost after its request was withdrawn): delete it.
bool LockEngine::isOwnOrphan(const std::string& child) const {
  if (child.rfind(guidPrefix_, 0) != 0) return false;
  auto marker = markerStart(child);
  if (marker == std::string::npos) return false;
  auto id = idOfGuid(child.substr(0, marker));
  return !id || !requests_.count(*id);
}

// Runs `step` after the retry delay if the request is then still where it was.
void LockEngine::retryLater(const Request& r, std::function<void(Request&)> step) {
  timer_.schedule(timer_.now() + config_.retryDelay,
                  resume(r, r.state, [step = std::move(step)](Request& again) { step(again); }));
}

// ---- session ---------------------------------------------------------------------------------

void LockEngine::onSessionState(zk::SessionState state) {
  spdlog::info("zookeeper session {} (0x{:x})", zk::sessionStateName(state), zk_.sessionId());
  observer_.sessionState(state);
  // The engine marks held leases lost to expiry first, so the guard's loss of vouching that
  // follows finds them lost with the right reason.
  struct ForwardAfter {
    SessionGuard& guard;
    zk::SessionState state;
    ~ForwardAfter() { guard.onSessionState(state); }
  } forward{*guard_, state};
  deletes_.onSessionState(state);
  jeopardy_.onConnection(state == zk::SessionState::kConnected);
  if (state == zk::SessionState::kExpired) {
    for (auto& [path, w] : holderWatches_) {
      w.armed = false;  // its watches are gone with the session, silently
      w.awaitingNode = false;
    }
    for (auto& [id, r] : requests_) {
      if (r.state == State::kHeld) {
        lose(r, LossReason::kSessionLost);
      } else if (r.state == State::kCreating || r.state == State::kWaiting) {
        // Its node died with the session; it queues again, at the back, in the new session.
        ++r.attempt;
        moveTo(r, State::kCreating);
        r.nodeSeq.reset();
        r.recreateOnConnect = true;
      }
    }
  } else if (state == zk::SessionState::kConnected) {
    for (auto& [id, r] : requests_) {
      if (r.recreateOnConnect && r.state == State::kCreating) {
        r.recreateOnConnect = false;
        startCreate(r);
      }
    }
    verifyHeldNodes();
  }
}

// After a reconnect: each held lease's node must still exist and belong to this session.
void LockEngine::verifyHeldNodes() {
  for (auto& [id, r] : requests_) {
    if (r.state != State::kHeld) continue;
    if (r.ownWatch == OwnWatch::kCovered) setOwnWatch(r, OwnWatch::kNone);
    if (r.ownWatch != OwnWatch::kArmed) {
      watchOwnNode(r);
      continue;
    }
    // The client re-registers a watch it holds when it reconnects: only check, arm no second.
    zk_.get(nodePath(r), resumeOwnNode<&LockEngine::onOwnNodeChecked>(r));
  }
}

bool LockEngine::vouched() {
  guard_->noticeExpiry();
  return guard_->safe();
}

void LockEngine::onUnsafe() {
  observer_.vouchingLapsed();
  holdersUnknown();
  for (auto& [id, r] : requests_) {
    // Its node may live on: lose() deletes it, retrying until the connection is back.
    if (r.state == State::kHeld) lose(r, LossReason::kSessionUncertain);
  }
}

void LockEngine::onJeopardy(bool atRisk, Millis left) {
  size_t held = tally_.total().held;
  if (held == 0) return;  // (nobody to tell, nothing worth a line: the session's own lines say it)
  if (atRisk) {
    spdlog::warn("{} lease(s) at risk: ZooKeeper session 0x{:x} {}, vouched for {} ms more", held,
                 zk_.sessionId(),
                 zk_.sessionState() == zk::SessionState::kConnected ? "not answering"
                                                                     : "disconnected",
                 left.count());
  } else {
    spdlog::info("{} lease(s) safe again: ZooKeeper session 0x{:x} vouched for {} ms", held,
                 zk_.sessionId(), left.count());
  }
  std::vector<LeaseId> ids;
  for (auto& [id, r] : requests_) {
    if (r.state == State::kHeld && r.spec.onRisk) ids.push_back(id);
  }
  for (LeaseId id : ids) {  // (a holder's callback may withdraw any request)
    Request* r = find(id);
    if (r && r->state == State::kHeld) r->spec.onRisk(static_cast<uint64_t>(r->czxid), atRisk, left);
  }
}

void LockEngine::onGrantable() {
  refreshUnknownHolders();
  if (awaitingSafety_.empty()) return;
  auto ids = std::move(awaitingSafety_);
  awaitingSafety_.clear();
  for (LeaseId id : ids) {
    Request* r = find(id);
    if (r && r->state == State::kWaiting) checkQueue(*r);  // still the lowest?
  }
}

// ---- status and shutdown -------------------------------------------------------------------

EngineStatus LockEngine::status(size_t maxListed) const {
  EngineStatus s = counts();
  listSlice(1, SIZE_MAX, maxListed, s);
  return s;
}

EngineStatus LockEngine::counts() const {
  EngineStatus s;
  Counts total = tally_.total();
  s.held = total.held;
  s.waiting = total.waiting;
  s.grantsTotal = grantsTotal_;
  s.pendingDeletes = static_cast<uint32_t>(deletes_.pending());
  s.droppedDeletes = deletes_.dropped();
  s.foreignNodes = foreign_.planted();
  return s;
}

LeaseId LockEngine::listSlice(LeaseId from, size_t maxVisited, size_t cap,
                              EngineStatus& out) const {
  TimePoint now = timer_.now();
  auto since = [now](TimePoint t) { return std::chrono::duration_cast<Millis>(now - t); };
  auto it = requests_.lower_bound(from);
  for (size_t visited = 0; it != requests_.end(); ++it, ++visited) {
    bool leasesDone = out.leases.size() >= std::min<size_t>(cap, out.held);
    bool waitersDone = out.waiters.size() >= std::min<size_t>(cap, out.waiting);
    if (leasesDone && waitersDone) break;
    if (visited >= maxVisited) return it->first;
    const Request& r = it->second;
    if (r.state == State::kHeld && !leasesDone) {
      out.leases.push_back({r.spec.name, static_cast<uint64_t>(r.czxid), r.spec.ownerLabel,
                            r.spec.clientPid, validity(r).valid, r.spec.clientUid,
                            r.spec.connection, since(r.grantedAt), r.spec.mode,
                            r.spec.permits});
    } else if ((r.state == State::kCreating || r.state == State::kWaiting) && !waitersDone) {
      bool queued = r.state == State::kWaiting && r.position.has_value();
      out.waiters.push_back({r.spec.name, r.spec.ownerLabel, r.spec.clientPid, r.spec.clientUid,
                             r.spec.connection, queued, r.position.value_or(0),
                             since(r.queuedAt), r.spec.mode, r.spec.permits});
    }
  }
  out.truncated = out.leases.size() < out.held || out.waiters.size() < out.waiting;
  return 0;
}

void LockEngine::shutdown(std::function<void()> done) {
  shuttingDown_ = true;
  auto pending = std::make_shared<size_t>(1);
  auto finish = [pending, done = std::move(done)] {
    if (--*pending == 0) done();
  };
  std::vector<LeaseId> ids;
  for (auto& [id, r] : requests_) ids.push_back(id);
  for (LeaseId id : ids) {
    Request* r = find(id);
    if (!r) continue;
    if (r->state == State::kHeld) {
      ++*pending;
      lose(*r, LossReason::kSidecarShutdown, finish);
    } else if (r->state == State::kCreating || r->state == State::kWaiting) {
      if (r->nodeSeq) {
        ++*pending;
        deleteNode(nodePath(*r), [finish](bool) { finish(); });
        r->nodeSeq.reset();
      }
      fail(*r, LeaseError::kShuttingDown, "the sidecar is shutting down");
    }
  }
  finish();
}

const char* errorName(LeaseError error) {
  switch (error) {
    case LeaseError::kOk:
      return "ok";
    case LeaseError::kInvalidName:
      return "invalid name";
    case LeaseError::kInvalidArgument:
      return "invalid argument";
    case LeaseError::kTimedOut:
      return "timed out";
    case LeaseError::kNotHeld:
      return "not held";
    case LeaseError::kExpired:
      return "expired";
    case LeaseError::kLost:
      return "lost";
    case LeaseError::kZkUnavailable:
      return "zookeeper unavailable";
    case LeaseError::kShuttingDown:
      return "shutting down";
    case LeaseError::kLimitReached:
      return "limit reached";
    case LeaseError::kInternal:
      return "internal error";
    case LeaseError::kPermissionDenied:
      return "permission denied";
    case LeaseError::kInvalidOwner:
      return "invalid owner";
    case LeaseError::kModeConflict:
      return "mode conflict";
  }
  return "?";
}

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

const char* leaseEventName(LeaseEventKind kind) {
  switch (kind) {
    case LeaseEventKind::kGranted:
      return "grant";
    case LeaseEventKind::kRenewFailed:
      return "renew_failed";
    case LeaseEventKind::kLost:
      return "lost";
    case LeaseEventKind::kReleased:
      return "release";
  }
  return "?";
}

const char* lossReasonName(LossReason reason) {
  switch (reason) {
    case LossReason::kTtlExpired:
      return "ttl expired";
    case LossReason::kSessionLost:
      return "session lost";
    case LossReason::kSessionUncertain:
      return "session uncertain";
    case LossReason::kSidecarShutdown:
      return "sidecar shutting down";
    case LossReason::kReleasedElsewhere:
      return "released elsewhere";
  }
  return "?";
}

}  // namespace fencekeeper::engine
