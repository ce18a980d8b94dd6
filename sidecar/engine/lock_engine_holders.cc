// Holder watches: per watched lock one ZooKeeper children watch, whose firing re-reads the queue
// and tells every local watcher of that lock what changed.
#include <spdlog/spdlog.h>

#include "sidecar/engine/lock_engine.h"
#include "sidecar/engine/lock_name.h"

namespace fencekeeper::engine {

namespace {
// After a failed read or parent creation (refused, connection lost): read again this much later.
constexpr Millis kHolderRetry{1000};
// Parents reaped while being created, in a row, before the watch says why it gives up for now.
constexpr int kMaxLockNodeRestarts = 5;

bool alreadyTold(const std::optional<HolderChange>& told, const HolderChange& next) {
  if (!told || told->state != next.state) return false;
  return next.state != HolderState::kHeld || told->info.token == next.info.token;
}
}  // namespace

HolderWatchId LockEngine::watchHolder(const std::string& name, HolderChangeCallback changed,
                                      LeaseError& error) {
  if (!isValidLockName(name)) {
    error = LeaseError::kInvalidName;
    return 0;
  }
  error = LeaseError::kOk;
  std::string path = lockPath(name);
  HolderWatchId id = nextHolderWatch_++;
  auto [it, fresh] = holderWatches_.try_emplace(path);
  if (fresh) it->second.generation = id;
  it->second.watchers.emplace(id, std::move(changed));
  holderWatchPaths_.emplace(id, path);
  // On the next turn: a watcher is never called from within watchHolder().
  timer_.schedule(timer_.now(), whileAlive([this, id] { startHolderWatch(id); }));
  return id;
}

void LockEngine::unwatchHolder(HolderWatchId id) {
  auto p = holderWatchPaths_.find(id);
  if (p == holderWatchPaths_.end()) return;
  auto w = holderWatches_.find(p->second);
  holderWatchPaths_.erase(p);
  w->second.watchers.erase(id);
  if (!w->second.watchers.empty()) return;
  // Its ZooKeeper watch cannot be taken back: it fires once into nothing (generation).
  timer_.cancel(w->second.retryTimer);
  holderWatches_.erase(w);
}

// A new watcher starts with what the others were told last, or with the first read.
void LockEngine::startHolderWatch(HolderWatchId id) {
  auto p = holderWatchPaths_.find(id);
  if (p == holderWatchPaths_.end()) return;
  auto& w = holderWatches_.at(p->second);
  if (w.told) {
    auto changed = w.watchers.at(id);  // a copy: the call may unwatch
    return changed(*w.told);
  }
  refreshHolder(p->second);
}

void LockEngine::refreshHolder(const std::string& path) {
  auto it = holderWatches_.find(path);
  if (it == holderWatches_.end()) return;
  auto& w = it->second;
  timer_.cancel(w.retryTimer);
  w.retryTimer = 0;
  if (w.reading) {
    w.again = true;
    return;
  }
  // Read again once vouched for (refreshUnknownHolders).
  if (!guard_->safe()) return tellHolder(path, holderUnknown());
  w.reading = true;
  uint64_t generation = w.generation;
  bool arming = !w.armed;
  zk::Client::WatchCallback onChange;
  if (arming) {
    onChange = whileAlive([this, path, generation](zk::WatchEvent) {
      auto it = holderWatches_.find(path);
      if (it == holderWatches_.end() || it->second.generation != generation) return;
      it->second.armed = false;
      refreshHolder(path);
    });
  }
  readHolder(path, std::move(onChange),
             [this, path, generation, arming](const HolderRead& read) {
               onHolderRead(path, generation, arming, read);
             });
}

void LockEngine::onHolderRead(const std::string& path, uint64_t generation, bool arming,
                              const HolderRead& read) {
  auto it = holderWatches_.find(path);
  if (it == holderWatches_.end() || it->second.generation != generation) return;
  auto& w = it->second;
  w.reading = false;
  if (arming && read.listed) w.armed = true;
  if (w.again || read.handedOver) {
    w.again = false;
    return refreshHolder(path);  // a newer answer is due: tell that one
  }
  if (!guard_->safe()) return tellHolder(path, holderUnknown());  // lapsed while reading
  if (read.lockMissing) {
    tellHolder(path, HolderChange{HolderState::kFree, {}, {}});
    return makeLockNode(path, generation, 0, 0);
  }
  if (read.error != LeaseError::kOk) return holderUnreadable(path, generation, read.detail);
  if (!w.armed) return holderUnreadable(path, generation, "the lock's watch is not set");
  tellHolder(path, HolderChange{read.info.held ? HolderState::kHeld : HolderState::kFree,
                                read.info, {}});
}

// Only an existing node can be watched: a lock nobody used yet gets its parent chain (as an
// acquire would create it), then the watch.
void LockEngine::makeLockNode(const std::string& path, uint64_t generation, size_t level,
                              int restarts) {
  std::vector<std::string> chain = parentChain(path);
  if (level >= chain.size()) return refreshHolder(path);
  bool persistent = level < 2 || config_.persistentParents;
  zk_.create(chain[level], "", persistent ? zk::CreateMode::kPersistent : zk::CreateMode::kContainer,
             whileAlive([this, path, generation, level, restarts,
                         node = chain[level]](const zk::CreateResult& res) {
               auto it = holderWatches_.find(path);
               if (it == holderWatches_.end() || it->second.generation != generation) return;
               // Refused under a parent this identity may not write: the read tells if it exists.
               if (res.code == zk::Code::kOk || res.code == zk::Code::kNodeExists ||
                   res.code == zk::Code::kNoAuth) {
                 return makeLockNode(path, generation, level + 1, restarts);
               }
               if (res.code == zk::Code::kNoNode && restarts < kMaxLockNodeRestarts) {
                 return makeLockNode(path, generation, 0, restarts + 1);  // a parent was reaped
               }
               holderUnreadable(path, generation,
                                "cannot create the lock's node " + node + " to watch it: " +
                                    zk::codeName(res.code));
             }));
}

// Says why the holder is unknown now, and reads again a little later.
void LockEngine::holderUnreadable(const std::string& path, uint64_t generation, std::string why) {
  auto it = holderWatches_.find(path);
  if (it == holderWatches_.end()) return;
  spdlog::debug("holder watch of {}: {}", path, why);
  timer_.cancel(it->second.retryTimer);
  it->second.retryTimer =
      timer_.schedule(timer_.now() + kHolderRetry, whileAlive([this, path, generation] {
                        auto it = holderWatches_.find(path);
                        if (it == holderWatches_.end() || it->second.generation != generation)
                          return;
                        it->second.retryTimer = 0;
                        refreshHolder(path);
                      }));
  tellHolder(path, HolderChange{HolderState::kUnknown, {}, std::move(why)});
}

void LockEngine::tellHolder(const std::string& path, HolderChange change) {
  auto it = holderWatches_.find(path);
  if (it == holderWatches_.end()) return;
  auto& w = it->second;
  if (change.state == HolderState::kHeld) {
    if (change.info.token < w.highestToken) return;  // older than what was told: never back
    w.highestToken = change.info.token;
  }
  if (alreadyTold(w.told, change)) return;
  w.told = change;
  std::vector<HolderWatchId> ids;
  for (auto& [id, fn] : w.watchers) ids.push_back(id);
  for (HolderWatchId id : ids) {
    auto now = holderWatches_.find(path);  // a call may unwatch any of them
    if (now == holderWatches_.end()) return;
    auto fn = now->second.watchers.find(id);
    if (fn == now->second.watchers.end()) continue;
    auto changed = fn->second;  // a copy: the call may unwatch itself
    changed(change);
  }
}

HolderChange LockEngine::holderUnknown() const {
  return HolderChange{HolderState::kUnknown, {},
                      std::string("ZooKeeper session ") +
                          zk::sessionStateName(zk_.sessionState()) +
                          ", not vouched for: the holder is unknown"};
}

void LockEngine::holdersUnknown() {
  std::vector<std::string> paths;
  for (auto& [path, w] : holderWatches_) paths.push_back(path);
  for (auto& path : paths) tellHolder(path, holderUnknown());
}

void LockEngine::refreshUnknownHolders() {
  std::vector<std::string> paths;
  for (auto& [path, w] : holderWatches_) {
    if (!w.reading && !w.retryTimer && w.told && w.told->state == HolderState::kUnknown)
      paths.push_back(path);
  }
  for (auto& path : paths) refreshHolder(path);
}

}  // namespace fencekeeper::engine
