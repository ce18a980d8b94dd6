// How long the loop can be held back: a tick every 50 ms measures how late the loop runs it. A
// turn of the loop is never preempted, so the lateness is at least the longest turn that was
// running (or queued) when the tick fell due. With the ZooKeeper client on the loop, a long turn
// delays heartbeats too: this is what keeps "nothing blocks the loop" measured. Loop thread only.
#pragma once

#include <chrono>
#include <functional>

#include "common/clock.h"

namespace fencekeeper::status {

class LoopLag {
 public:
  using Sink = std::function<void(std::chrono::microseconds late)>;
  // `sink` gets every tick's lateness.
  LoopLag(Timer& timer, Sink sink);
  ~LoopLag();
  LoopLag(const LoopLag&) = delete;
  LoopLag& operator=(const LoopLag&) = delete;

  static constexpr Millis kTick{50};

 private:
  void arm(TimePoint due);

  Timer& timer_;
  Sink sink_;
  uint64_t timerId_ = 0;
};

}  // namespace fencekeeper::status
