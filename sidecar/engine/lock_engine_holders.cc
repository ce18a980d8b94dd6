// Who holds a lock: one-shot queries (one ZooKeeper round per lock at a time, shared by every
// caller), the reads behind them (the queue, then each holder's node), and holder watches: per
// watched lock one ZooKeeper children watch, whose firing re-reads the queue and tells every local
// watcher of that lock what changed. A lock with no node is watched for its creation (an exists
// watch): watching never creates a node, which nobody would delete.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/utf8_text.h"
#include "sidecar/engine/lock_engine.h"
#include "sidecar/engine/lock_engine_request.h"
#include "sidecar/engine/lock_name.h"
#include "sidecar/engine/lock_queue.h"

namespace fencekeeper::engine {

namespace {
// After a failed read (refused, connection lost): read again this much later.
constexpr Millis kHolderRetry{1000};

bool alreadyTold(const std::optional<HolderChange>& told, const HolderChange& next) {
  if (!told || told->state != next.state) return false;
  if (next.state != HolderState::kHeld) return true;
  // The same holders: a shared lock's or a semaphore's set changes without its first holder.
  return std::ranges::equal(told->info.holders, next.info.holders, {}, &HolderEntry::token,
                            &HolderEntry::token);
}
}  // namespace

void LockEngine::holder(const std::string& name, HolderCallback done, uint32_t uid) {
  if (auto problem = lockNameProblem(name)) return done(LeaseError::kInvalidName, {}, *problem);
  std::string path = lockPath(name);
  auto [query, idle] = holderQueries_.try_emplace(path);
  if (!idle) {
    if (query->second.next.empty()) query->second.nextUid = uid;
    return query->second.next.push_back(std::move(done));
  }
  query->second.current.push_back(std::move(done));
  query->second.uid = uid;
  queryHolder(path);
}

// One ZooKeeper round for every caller of holderQueries_[path].current.
void LockEngine::queryHolder(const std::string& path) {
  uint32_t uid = holderQueries_.at(path).uid;
  readHolder(path, uid, nullptr, [this, path](const HolderRead& read) {
    answerHolder(path, read.error, read.info, read.detail);  // handed over: nobody, just now
  });
}

void LockEngine::readHolder(const std::string& path, uint32_t uid,
                            zk::Client::WatchCallback onChange,
                            std::function<void(const HolderRead&)> done) {
  holderReads_.submit(uid, whileAlive([this, path, onChange = std::move(onChange),
                                       done = std::move(done)](std::function<void()> finished) {
    sendHolderRead(path, onChange, [finished, done](const HolderRead& read) {
      finished();
      done(read);
    });
  }));
}

void LockEngine::sendHolderRead(const std::string& path, zk::Client::WatchCallback onChange,
                                std::function<void(const HolderRead&)> done) {
  auto failed = [](LeaseError error, std::string detail) {
    HolderRead read;
    read.error = error;
    read.detail = std::move(detail);
    return read;
  };
  auto unavailable = [](zk::Code code) { return std::string("ZooKeeper: ") + zk::codeName(code); };
  auto listed = whileAlive([this, path, done, failed, unavailable](const zk::ChildrenResult& res) {
    HolderRead read;
    if (res.code == zk::Code::kNoNode) {
      read.lockMissing = true;
      return done(read);
    }
    if (res.code == zk::Code::kNoAuth) {
      return done(failed(LeaseError::kPermissionDenied, refusedBy("list", path)));
    }
    if (res.code != zk::Code::kOk) {
      return done(failed(LeaseError::kZkUnavailable, unavailable(res.code)));
    }
    read.listed = true;
    foreign_.prune(path, res.children);
    std::vector<QueueNode> queue;
    for (auto& child : res.children) {
      if (auto q = parseQueueNode(child)) queue.push_back(std::move(*q));
    }
    if (queue.empty()) return done(read);
    sortQueue(queue);
    std::vector<size_t> holders = holdersOf(queue);
    read.info.waiters = static_cast<uint32_t>(queue.size() - holders.size());
    read.info.foreignNode = foreign_.firstPlanted(path, queue);
    // Every holder's node read at once; the answer goes when the last one is in.
    auto gathered = std::make_shared<HolderGather>();
    gathered->read = std::move(read);
    gathered->entries.resize(holders.size());
    gathered->outstanding = holders.size();
    for (size_t i = 0; i < holders.size(); ++i) {
      const QueueNode& q = queue[holders[i]];
      std::string node = path + "/" + q.name;
      gathered->entries[i].mode = q.mode;
      gathered->entries[i].permits = q.permits;
      zk_.get(node, whileAlive([this, path, node, i, gathered, done, failed,
                                unavailable](const zk::GetResult& got) {
                if (gathered->read.error == LeaseError::kOk) {
                  if (got.code == zk::Code::kNoNode) {
                    gathered->entries[i].token = 0;  // left between the listing and this read
                  } else if (got.code == zk::Code::kNoAuth) {
                    gathered->read = failed(LeaseError::kPermissionDenied, refusedBy("read", node));
                  } else if (got.code != zk::Code::kOk) {
                    gathered->read = failed(LeaseError::kZkUnavailable, unavailable(got.code));
                  } else {
                    readHolderNode(path, node, got, gathered->entries[i], gathered->read.info);
                  }
                }
                if (--gathered->outstanding == 0) done(gathered->finish());
              }));
    }
  });
  if (onChange) {
    zk_.getChildrenAndWatch(path, std::move(listed), std::move(onChange));
  } else {
    zk_.getChildren(path, std::move(listed));
  }
}

// Answers the round's callers; those who asked meanwhile get the next round.
void LockEngine::answerHolder(const std::string& path, LeaseError error, const HolderInfo& info,
                              const std::string& detail) {
  auto it = holderQueries_.find(path);
  auto callers = std::move(it->second.current);
  if (it->second.next.empty()) {
    holderQueries_.erase(it);
  } else {
    it->second.current = std::move(it->second.next);
    it->second.next.clear();
    it->second.uid = it->second.nextUid;
    queryHolder(path);
  }
  // (A caller may ask again from its callback: it joins the next round.)
  for (auto& done : callers) done(error, info, detail);
}

void LockEngine::readHolderNode(const std::string& path, const std::string& node,
                                const zk::GetResult& got, HolderEntry& entry, HolderInfo& info) {
  entry.token = static_cast<uint64_t>(got.stat.czxid);
  // Written by whichever client made the node (kazoo, another version): repaired here, so
  // status, holder and the logs never carry invalid text.
  entry.ownerLabel = repairedLabelText(got.data);
  entry.sinceUnixMs = got.stat.ctimeMs;
  if (got.stat.ephemeralOwner == 0) {
    // Planted: it blocks the lock, but nobody holds a lease.
    foreign_.planted(path.substr(lockPath("").size()), node);
    info.foreign = true;
    info.foreignNode = node;
  }
  // By the node's session, not the engine's state: the queue head of this session may not be
  // granted yet (its grant waits on a listing or on vouching), and the grant changes no node, so
  // no later read would correct a "not this sidecar".
  entry.thisSidecar = got.stat.ephemeralOwner != 0 && got.stat.ephemeralOwner == zk_.sessionId();
  if (const Request* r = heldAt(node)) entry.sinceUnixMs = r->grantedUnixMs;
}

LockEngine::HolderRead LockEngine::HolderGather::finish() {
  if (read.error != LeaseError::kOk) return std::move(read);
  auto& info = read.info;
  for (auto& entry : entries) {
    if (entry.token != 0) info.holders.push_back(std::move(entry));
  }
  if (info.holders.empty()) {
    // Every holder went between the listing and its read: nobody, just now.
    info = {};
    read.handedOver = true;
    return std::move(read);
  }
  info.held = true;
  const HolderEntry& first = info.holders.front();
  info.token = first.token;
  info.ownerLabel = first.ownerLabel;
  info.sinceUnixMs = first.sinceUnixMs;
  info.thisSidecar = first.thisSidecar;
  return std::move(read);
}

// ---- holder watches ------------------------------------------------------------------------------

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
