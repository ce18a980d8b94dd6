// The lock engine's request, its lifecycle's enums and the helpers its source files share:
// included by lock_engine*.cc only (the engine's users see LockEngine alone).
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "sidecar/engine/lock_engine.h"

namespace fencekeeper::engine {

enum class LockEngine::State : uint8_t { kCreating, kWaiting, kHeld, kReleased, kLost };
// kCovered: held, and the lock's children watch (armed after the node was made) stands in for
// the node's own watch until the children change.
enum class LockEngine::OwnWatch : uint8_t { kNone, kAsked, kArmed, kCovered };

struct LockEngine::Request {
  // (Ordered so that no padding is left: the engine keeps one a lease.)
  LeaseId id;
  AcquireSpec spec;
  // Bumped whenever the request starts over (new session): callbacks of an older attempt are stale.
  uint32_t attempt = 0;
  State state = State::kCreating;
  // The watch on our node: asked for when the request must wait (a waiter's own node may be
  // deleted behind its back too) or at its grant, registered once ZooKeeper answered.
  OwnWatch ownWatch = OwnWatch::kNone;
  LossReason lossReason = LossReason::kTtlExpired;
  bool renewFailureNoted : 1 = false;
  bool recreateOnConnect : 1 = false;
  // The listing sent right behind the create has not answered yet.
  bool listingPipelined : 1 = false;
  // The deletion of any node in waitsBehind grants it (QueueDecision::grantedByAnyDeletion).
  bool grantedByAnyDeletion : 1 = false;
  // Our node's sequence number, once known. Its path is derived (nodePath()): a copy a lease cost
  // a heap string, as did its lock's path.
  std::optional<int32_t> nodeSeq;
  // Position in its queue from the engine's last listing (0: next in line), for status; none
  // between its create and the first listing of its queue.
  std::optional<uint32_t> position;
  int64_t czxid = 0;           // of our node: the token
  int64_t ephemeralOwner = 0;  // of our node: the session that made it
  TimePoint deadline{};
  uint64_t ttlTimer = 0;
  uint64_t waitTimer = 0;
  int64_t grantedUnixMs = 0;
  TimePoint queuedAt{};   // acquire() accepted it
  TimePoint grantedAt{};  // 0 until granted
  // The nodes it waits behind (QueueDecision::waitsBehind), as paths.
  std::vector<std::string> waitsBehind;
  std::function<void(AcquireOutcome)> done;
};

template <typename Step, typename Stale>
auto LockEngine::resume(const Request& r, State state, Step step, Stale stale) {
  return [this, alive = std::weak_ptr<bool>(alive_), id = r.id, attempt = r.attempt, state,
          step = std::move(step), stale = std::move(stale)](auto&&... args) mutable {
    if (!alive.lock()) return;
    Request* again = find(id, attempt);
    if (again && again->state == state) {
      step(*again, std::forward<decltype(args)>(args)...);
    } else {
      stale(std::forward<decltype(args)>(args)...);
    }
  };
}

template <typename Step>
auto LockEngine::resume(const Request& r, State state, Step step) {
  return resume(r, state, std::move(step), [](auto&&...) {});
}

template <auto Step>
auto LockEngine::resumeOwnNode(const Request& r) {
  // The node is known by its czxid, unique to it (and so to the attempt that made it). The
  // closure is kept small: a held lease keeps one, in its watch, as long as it is held.
  return [this, alive = std::weak_ptr<bool>(alive_), id = r.id,
          czxid = r.czxid](auto&&... args) mutable {
    if (!alive.lock()) return;
    Request* again = find(id);
    if (!again || !again->nodeSeq || again->czxid != czxid) return;
    if (again->state == State::kWaiting || again->state == State::kHeld) {
      (this->*Step)(*again, std::forward<decltype(args)>(args)...);
    }
  };
}

inline std::string baseName(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// The detail of a permissionDenied: what ZooKeeper refused, on which node.
inline std::string refusedBy(const std::string& operation, const std::string& path) {
  return "ZooKeeper refused to " + operation + " " + path +
         ": its ACL does not grant this sidecar's identity (--zk-auth-file; see "
         "docs/security.md)";
}

}  // namespace fencekeeper::engine
