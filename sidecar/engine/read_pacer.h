// Paces the ZooKeeper reads that holder queries and holder watches make on behalf of local peers,
// so that no number of them can delay the session's heartbeat or starve another uid: at most
// `maxInFlight` reads are out at once (the heartbeat queues behind no more than that on the
// session's connection), each uid gets at most `perUidPerSecond` reads a second (a bucket of that
// many), and the uids with reads waiting take turns.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>

#include "common/clock.h"

namespace fencekeeper::engine {

class ReadPacer {
 public:
  // Starts one read; calls `finished` once (on the loop thread) when its answer has arrived.
  using Read = std::function<void(std::function<void()> finished)>;

  ReadPacer(Timer& timer, uint32_t maxInFlight, uint32_t perUidPerSecond);
  ~ReadPacer();
  ReadPacer(const ReadPacer&) = delete;
  ReadPacer& operator=(const ReadPacer&) = delete;

  // Runs `read` now or once the limits allow it, never from within this call.
  void submit(uint32_t uid, Read read);

  uint32_t inFlight() const { return inFlight_; }
  size_t waiting() const { return waiting_; }

 private:
  struct Peer {
    std::deque<Read> queue;
    double tokens = 0;
    TimePoint refilledAt{};
  };
  void pump();
  void refill(Peer& peer, TimePoint now) const;
  void schedulePump(TimePoint when);

  Timer& timer_;
  const uint32_t maxInFlight_;
  const double perSecond_;
  std::map<uint32_t, Peer> peers_;  // uids with reads waiting or tokens spent
  uint32_t lastServed_ = 0;         // round robin: the next turn goes to a uid above it
  uint32_t inFlight_ = 0;
  size_t waiting_ = 0;
  uint64_t pumpTimer_ = 0;
  TimePoint pumpAt_{};
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace fencekeeper::engine
