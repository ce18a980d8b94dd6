#include "sidecar/engine/delete_queue.h"

#include <spdlog/spdlog.h>

namespace fencekeeper::engine {

DeleteQueue::DeleteQueue(zk::Client& zk, Timer& timer, Millis retryDelay, size_t bound)
    : zk_(zk), timer_(timer), retryDelay_(retryDelay), bound_(bound) {}

DeleteQueue::~DeleteQueue() { *alive_ = false; }

void DeleteQueue::remove(const std::string& path, Done done) {
  auto it = entries_.find(path);
  if (it != entries_.end()) {
    if (done) it->second.done.push_back(std::move(done));
    return;
  }
  Entry entry;
  entry.serial = nextSerial_++;
  entry.retry = !full();
  if (done) entry.done.push_back(std::move(done));
  send(path, entries_.emplace(path, std::move(entry)).first->second);
}

void DeleteQueue::send(const std::string& path, Entry& entry) {
  entry.inFlight = true;
  zk_.remove(path, [this, alive = std::weak_ptr<bool>(alive_), path,
                    serial = entry.serial](zk::Code code) {
    if (alive.lock()) onAnswer(path, serial, code);
  });
}

void DeleteQueue::onAnswer(const std::string& path, uint64_t serial, zk::Code code) {
  auto it = entries_.find(path);
  if (it == entries_.end() || it->second.serial != serial) return;  // dropped meanwhile
  Entry& entry = it->second;
  entry.inFlight = false;
  switch (code) {
    case zk::Code::kOk:
    case zk::Code::kNoNode:
    case zk::Code::kSessionExpired:  // an ephemeral node dies with its session
      return finish(path, true);
    case zk::Code::kConnectionLoss:
    case zk::Code::kOperationTimeout:
      break;
    case zk::Code::kClosing:  // the session is being closed: the node goes with it
      return finish(path, false);
    default:
      spdlog::error("cannot delete {}: {}", path, zk::codeName(code));
      return finish(path, false);
  }
  if (!entry.retry) {
    spdlog::warn("delete of {} unconfirmed with {} deletes pending: left to the session", path,
                 entries_.size());
    ++dropped_;
    return finish(path, false);
  }
  // Sent again on the next kConnected; a timeout while connected has no such event: retry soon.
  if (zk_.sessionState() != zk::SessionState::kConnected) return;
  timer_.schedule(timer_.now() + retryDelay_,
                  [this, alive = std::weak_ptr<bool>(alive_), path, serial] {
                    if (!alive.lock()) return;
                    auto again = entries_.find(path);
                    if (again == entries_.end() || again->second.serial != serial) return;
                    if (!again->second.inFlight) send(path, again->second);
                  });
}

void DeleteQueue::finish(const std::string& path, bool gone) {
  auto it = entries_.find(path);
  auto done = std::move(it->second.done);
  entries_.erase(it);
  for (auto& d : done) d(gone);
}

void DeleteQueue::onSessionState(zk::SessionState state) {
  if (state == zk::SessionState::kConnected) {
    for (auto& [path, entry] : entries_) {
      if (!entry.inFlight) send(path, entry);
    }
  } else if (state == zk::SessionState::kExpired) {
    if (!entries_.empty()) {
      spdlog::info("session expired: {} pending deletes dropped, their nodes went with it",
                   entries_.size());
    }
    auto doomed = std::move(entries_);
    entries_.clear();
    for (auto& [path, entry] : doomed) {
      for (auto& d : entry.done) d(true);
    }
  }
}

}  // namespace fencekeeper::engine
