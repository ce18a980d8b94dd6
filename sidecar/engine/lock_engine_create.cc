// The lock engine's creates: a request's node, the lock's parents, and the recovery of a create
// whose answer was lost (found again by the guid in its name, never made twice or leaked).
#include <spdlog/spdlog.h>

#include "sidecar/engine/lock_engine.h"
#include "sidecar/engine/lock_engine_request.h"
#include "sidecar/engine/lock_name.h"

namespace fencekeeper::engine {

namespace {
constexpr int kMaxParentRestarts = 5;

std::string parentPath(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}
}  // namespace

void LockEngine::startCreate(Request& r) {
  moveTo(r, State::kCreating);
  r.nodeSeq.reset();
  r.position.reset();
  r.waitsBehind.clear();
  r.grantedByAnyDeletion = false;
  r.ownWatch = OwnWatch::kNone;
  zk_.create(nodePrefix(r), r.spec.ownerLabel, zk::CreateMode::kEphemeralSequential,
             resume(
                 r, State::kCreating,
                 [this](Request& again, const zk::CreateResult& res) { onCreated(again, res); },
                 [this](const zk::CreateResult& res) {
                   // Withdrawn or started over while the create was in flight: the node must not
                   // survive. (An ambiguous answer needs nothing here: withdraw() looks the guid
                   // up after it settles.)
                   if (res.code == zk::Code::kOk) deleteNode(res.path);
                 }));
  // Sent behind the create, not after its answer: ZooKeeper runs a session's requests in order
  // and a read sees the session's earlier writes, so this listing holds the new node and answers
  // right after the create. The acquire saves a round trip.
  r.listingPipelined = true;
  checkQueue(r, true);
}

void LockEngine::onCreated(Request& r, const zk::CreateResult& res) {
  switch (res.code) {
    case zk::Code::kOk:
      if (auto seq = sequenceAfter(res.path, nodePrefix(r))) {
        r.nodeSeq = seq;
      } else {  // not ZooKeeper's naming of a sequential node: nothing could find it again
        deleteNode(res.path);
        return fail(r, LeaseError::kInternal, "ZooKeeper named the node " + res.path);
      }
      r.czxid = res.stat.czxid;
      r.ephemeralOwner = res.stat.ephemeralOwner;
      moveTo(r, State::kWaiting);
      if (!r.listingPipelined) checkQueue(r);  // found again after an ambiguous create
      return;
    case zk::Code::kNoNode:
      ensureParents(r, 0, 0);
      return;
    case zk::Code::kConnectionLoss:
    case zk::Code::kOperationTimeout:
      retryLater(r, [this](Request& again) { recoverCreate(again); });
      return;
    case zk::Code::kSessionExpired:
      r.recreateOnConnect = true;  // the session listener starts it over
      return;
    case zk::Code::kClosing:
      fail(r, LeaseError::kShuttingDown, "the sidecar is shutting down");
      return;
    case zk::Code::kNoAuth: {
      std::string why = refusedBy("create a node in", lockPath(r.spec.name));
      spdlog::error("lock {}: {}", r.spec.name, why);
      fail(r, LeaseError::kPermissionDenied, std::move(why));
      return;
    }
    default: {
      std::string path = lockPath(r.spec.name);
      spdlog::error("create under {} failed: {}", path, zk::codeName(res.code));
      fail(r, LeaseError::kZkUnavailable,
           std::string("ZooKeeper refused the create under ") + path + ": " +
               zk::codeName(res.code));
      return;
    }
  }
}

// After an ambiguous create: sync (so we read what the leader has), then look for our guid.
void LockEngine::recoverCreate(Request& r) {
  zk_.sync(lockPath(r.spec.name), resume(r, State::kCreating, [this](Request& r, zk::Code code) {
             if (code == zk::Code::kNoNode) return startCreate(r);  // parent gone: no node either
             if (code != zk::Code::kOk) return recoverLater(r);
             findCreatedNode(r);
           }));
}

void LockEngine::recoverLater(Request& r) {
  retryLater(r, [this](Request& again) { recoverCreate(again); });
}

void LockEngine::findCreatedNode(Request& r) {
  zk_.getChildren(
      lockPath(r.spec.name),
      resume(r, State::kCreating, [this](Request& r, const zk::ChildrenResult& res) {
        if (res.code == zk::Code::kNoNode) return startCreate(r);
        if (res.code == zk::Code::kNoAuth) {
          return fail(r, LeaseError::kPermissionDenied, refusedBy("list", lockPath(r.spec.name)));
        }
        if (res.code != zk::Code::kOk) return recoverLater(r);
        std::string prefix = guidOf(r.id) + queueMarker(r.spec.mode, r.spec.permits);
        for (auto& child : res.children) {
          if (child.rfind(prefix, 0) == 0) {
            return adoptCreatedNode(r, lockPath(r.spec.name) + "/" + child);
          }
        }
        spdlog::info("lock {}: create was not applied after a lost connection; creating again",
                     r.spec.name);
        startCreate(r);
      }));
}

void LockEngine::adoptCreatedNode(Request& r, const std::string& path) {
  zk_.get(path, resume(r, State::kCreating, [this, path](Request& r, const zk::GetResult& got) {
            if (got.code == zk::Code::kNoNode) return startCreate(r);
            if (got.code == zk::Code::kNoAuth) {
              return fail(r, LeaseError::kPermissionDenied, refusedBy("read", path));
            }
            if (got.code != zk::Code::kOk) return recoverLater(r);
            spdlog::info("lock {}: found node {} again after a lost connection", r.spec.name, path);
            r.listingPipelined = false;  // the lost create's listing, if still due, is not ours
            onCreated(r, zk::CreateResult{zk::Code::kOk, path, got.stat});
          }));
}

// Root, root/locks and each segment of the lock's path, the lock's own node last.
std::vector<std::string> LockEngine::parentChain(const std::string& lockPath) const {
  std::vector<std::string> chain{config_.root, config_.root + "/locks"};
  for (size_t pos = chain.back().size() + 1; pos <= lockPath.size(); ++pos) {
    if (pos == lockPath.size() || lockPath[pos] == '/') chain.push_back(lockPath.substr(0, pos));
  }
  return chain;
}

// Creates the parent chain, then the request's node again.
void LockEngine::ensureParents(Request& r, size_t level, int restarts) {
  std::vector<std::string> chain = parentChain(lockPath(r.spec.name));
  if (level >= chain.size()) return startCreate(r);
  bool persistent = level < 2 || config_.persistentParents;
  zk_.create(
      chain[level], "", persistent ? zk::CreateMode::kPersistent : zk::CreateMode::kContainer,
      resume(r, State::kCreating,
             [this, level, restarts, node = chain[level]](Request& r, const zk::CreateResult& res) {
               if (res.code == zk::Code::kOk || res.code == zk::Code::kNodeExists) {
                 return ensureParents(r, level + 1, restarts);
               }
               if (res.code == zk::Code::kNoNode && restarts < kMaxParentRestarts) {
                 return ensureParents(r, 0, restarts + 1);  // a parent was reaped meanwhile
               }
               if (zk::isAmbiguous(res.code)) {
                 return retryLater(r, [this, level, restarts](Request& again) {
                   ensureParents(again, level, restarts);
                 });
               }
               if (res.code == zk::Code::kSessionExpired) {
                 r.recreateOnConnect = true;  // the session listener starts it over
                 return;
               }
               if (res.code == zk::Code::kClosing)
                 return fail(r, LeaseError::kShuttingDown, "the sidecar is shutting down");
               // Refused under a parent this identity may not write: fine if the node exists.
               if (res.code == zk::Code::kNoAuth)
                 return ensureParentExists(r, level, restarts, node);
               spdlog::error("cannot create lock parent for {}: {}", r.spec.name,
                             zk::codeName(res.code));
               fail(r, LeaseError::kZkUnavailable,
                    "cannot create the lock's parent " + node + ": " + zk::codeName(res.code));
             }));
}

void LockEngine::ensureParentExists(Request& r, size_t level, int restarts,
                                    const std::string& node) {
  zk_.get(node, resume(r, State::kCreating,
                       [this, level, restarts, node](Request& r, const zk::GetResult& got) {
                         if (got.code == zk::Code::kOk)
                           return ensureParents(r, level + 1, restarts);
                         if (zk::isAmbiguous(got.code)) {
                           return retryLater(r, [this, level, restarts](Request& again) {
                             ensureParents(again, level, restarts);
                           });
                         }
                         if (got.code == zk::Code::kSessionExpired) {
                           r.recreateOnConnect = true;  // the session listener starts it over
                           return;
                         }
                         std::string detail = refusedBy("create " + node + " in", parentPath(node));
                         spdlog::error("lock {}: {}", r.spec.name, detail);
                         fail(r, LeaseError::kPermissionDenied, std::move(detail));
                       }));
}

void LockEngine::deleteOrphansByGuid(const std::string& lockPath, const std::string& guid) {
  auto again = whileAlive([this, lockPath, guid] { deleteOrphansByGuid(lockPath, guid); });
  auto retry = [this, again] { timer_.schedule(timer_.now() + config_.retryDelay, again); };
  zk_.sync(lockPath, whileAlive([this, lockPath, guid, retry](zk::Code code) {
             if (zk::isAmbiguous(code)) return retry();
             zk_.getChildren(
                 lockPath, whileAlive([this, lockPath, guid, retry](const zk::ChildrenResult& res) {
                   if (zk::isAmbiguous(res.code)) return retry();
                   for (auto& child : res.children) {
                     size_t marker = markerStart(child);
                     if (marker != std::string::npos && child.compare(0, marker, guid) == 0) {
                       deleteNode(lockPath + "/" + child);
                     }
                   }
                 }));
           }));
}

}  // namespace fencekeeper::engine
