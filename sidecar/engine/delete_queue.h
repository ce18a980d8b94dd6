// The deletions of this sidecar's lock nodes that ZooKeeper has not confirmed yet. A delete whose
// answer is lost (connection loss, frozen server) stays queued and is sent again once the session
// is connected; when the session expires the queue is dropped, since the nodes went with it.
// Bounded: past `bound` entries a delete is still sent, but not retried (see remove()).
//
// Runs on the loop thread; owned by the LockEngine. Its ZooKeeper and timer callbacks do nothing
// once it is destroyed.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "sidecar/zk/zk_client.h"

namespace fencekeeper::engine {

class DeleteQueue {
 public:
  // Called once per remove(): `gone` is true when ZooKeeper confirmed the node is gone (deleted,
  // never there, or its session expired), false when the delete was given up (client closing,
  // an error, or an unconfirmed delete beyond the bound).
  using Done = std::function<void(bool gone)>;

  DeleteQueue(zk::Client& zk, Timer& timer, Millis retryDelay, size_t bound);
  ~DeleteQueue();
  DeleteQueue(const DeleteQueue&) = delete;
  DeleteQueue& operator=(const DeleteQueue&) = delete;

  // Deletes `path`, retrying after a lost answer until it is confirmed or the session is gone.
  // When `bound` deletes are pending already it is sent once; if that answer is lost too it is
  // dropped (counted in dropped()): the node then goes with the session, or earlier with the
  // engine's orphan sweep (it no longer belongs to a live request).
  void remove(const std::string& path, Done done = nullptr);
  // The engine forwards every session state change: kConnected retries, kExpired drops.
  void onSessionState(zk::SessionState state);

  size_t pending() const { return entries_.size(); }
  bool full() const { return entries_.size() >= bound_; }
  uint64_t dropped() const { return dropped_; }

 private:
  struct Entry {
    uint64_t serial = 0;  // answers to an older send of the same path are ignored
    bool inFlight = false;
    bool retry = true;  // false for a delete queued beyond the bound
    std::vector<Done> done;
  };

  void send(const std::string& path, Entry& entry);
  void onAnswer(const std::string& path, uint64_t serial, zk::Code code);
  void finish(const std::string& path, bool gone);

  zk::Client& zk_;
  Timer& timer_;
  const Millis retryDelay_;
  const size_t bound_;
  uint64_t nextSerial_ = 1;
  uint64_t dropped_ = 0;
  std::map<std::string, Entry> entries_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace fencekeeper::engine
