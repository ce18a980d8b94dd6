// Holder watches: per watched lock one ZooKeeper children watch, whose firing re-reads the queue
// and tells every local watcher of that lock what changed. A lock with no node is watched for its
// creation (an exists watch): watching never creates a node, which nobody would delete.
#include <spdlog/spdlog.h>

#include "sidecar/engine/lock_engine.h"
#include "sidecar/engine/lock_name.h"

namespace fencekeeper::engine {

namespace {
// After a failed read (refused, connection lost): read again this much later.
constexpr Millis kHolderRetry{1000};

bool alreadyTold(const std::optional<HolderChange>& told, const HolderChange& next) {
  if (!told || told->state != next.state) return false;
  return next.state != HolderState::kHeld || told->info.token == next.info.token;
}
}  // namespace

HolderWatchId LockEngine::watchHolder(const std::string& name, HolderChangeCallback changed,
                                      LeaseError& error, uint32_t uid) {
  if (!isValidLockName(name)) {
    error = LeaseError::kInvalidName;
    return 0;
  }
  error = LeaseError::kOk;
  std::string path = lockPath(name);
  HolderWatchId id = nextHolderWatch_++;
  auto [it, fresh] = holderWatches_.try_emplace(path);
  if (fresh) {
    it->second.generation = id;
    it->second.uid = uid;
  }
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
      HolderWatch* w = holderWatchOf(path, generation);
      if (!w) return;
      w->armed = false;
      refreshHolder(path);
    });
  }
  readHolder(path, w.uid, std::move(onChange),
             [this, path, generation, arming](const HolderRead& read) {
               onHolderRead(path, generation, arming, read);
             });
}

void LockEngine::onHolderRead(const std::string& path, uint64_t generation, bool arming,
                              const HolderRead& read) {
  HolderWatch* found = holderWatchOf(path, generation);
  if (!found) return;
  auto& w = *found;
  w.reading = false;
  if (arming && read.listed) w.armed = true;
  if (w.again || read.handedOver) {
    w.again = false;
    return refreshHolder(path);  // a newer answer is due: tell that one
  }
  if (!guard_->safe()) return tellHolder(path, holderUnknown());  // lapsed while reading
  if (read.lockMissing) {
    tellHolder(path, HolderChange{HolderState::kFree, {}, {}});
    return awaitLockNode(path, generation);
  }
  if (read.error != LeaseError::kOk) return holderUnreadable(path, generation, read.detail);
  if (!w.armed) return holderUnreadable(path, generation, "the lock's watch is not set");
  tellHolder(path, HolderChange{read.info.held ? HolderState::kHeld : HolderState::kFree,
                                read.info, {}});
}

// A lock nobody used yet (or whose container ZooKeeper reaped): one exists watch waits for its
// node, then the children watch takes over. Paced like the reads.
void LockEngine::awaitLockNode(const std::string& path, uint64_t generation) {
  auto& w = holderWatches_.at(path);
  if (w.awaitingNode) return;  // the exists watch set before has not fired: it still waits
  w.awaitingNode = true;
  holderReads_.submit(w.uid, whileAlive([this, path,
                                         generation](std::function<void()> finished) {
    if (!holderWatchOf(path, generation)) return finished();
    zk_.existsAndWatch(
        path,
        whileAlive([this, path, generation, finished](zk::Code code) {
          finished();
          HolderWatch* w = holderWatchOf(path, generation);
          if (!w) return;
          if (code == zk::Code::kNoNode) return;  // the watch fires when the node comes
          w->awaitingNode = false;  // created meanwhile: its exists watch will fire into nothing
          if (code == zk::Code::kOk) return refreshHolder(path);
          holderUnreadable(path, generation,
                           std::string("cannot watch for the lock's node: ") +
                               zk::codeName(code));
        }),
        whileAlive([this, path, generation](zk::WatchEvent) {
          HolderWatch* w = holderWatchOf(path, generation);
          if (!w || !w->awaitingNode) return;
          w->awaitingNode = false;
          refreshHolder(path);
        }));
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
                        HolderWatch* w = holderWatchOf(path, generation);
                        if (!w) return;
                        w->retryTimer = 0;
                        refreshHolder(path);
                      }));
  tellHolder(path, HolderChange{HolderState::kUnknown, {}, std::move(why)});
}

LockEngine::HolderWatch* LockEngine::holderWatchOf(const std::string& path, uint64_t generation) {
  auto it = holderWatches_.find(path);
  return it == holderWatches_.end() || it->second.generation != generation ? nullptr : &it->second;
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
