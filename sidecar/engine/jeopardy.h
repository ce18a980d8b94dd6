// Chubby's jeopardy: holders are warned while their leases still stand but may not last, so that
// they can checkpoint before a loss. At risk when the ZooKeeper connection is down while the
// session is still vouched for, or when an overdue heartbeat leaves less than the risk floor of
// vouching (steady heartbeats never do: right before each answer about T/2 is left); safe again
// at an extension that leaves at least the floor while connected. A lapse ends it silently: the
// leases are lost, and that is what their holders hear. Loop thread only; owned by the engine.
#pragma once

#include <functional>

#include "common/clock.h"

namespace fencekeeper::engine {

class Jeopardy {
 public:
  // `floor`: the risk floor now (it follows the negotiated session timeout); `tell(atRisk,
  // left)` on every change, `left` being how long the session is still vouched for.
  Jeopardy(Timer& timer, std::function<Millis()> floor,
           std::function<void(bool atRisk, Millis left)> tell);
  ~Jeopardy();
  Jeopardy(const Jeopardy&) = delete;
  Jeopardy& operator=(const Jeopardy&) = delete;

  void onVouched(TimePoint safeUntil);  // every move of safeUntil; 0: a lapse or an expiry
  void onConnection(bool connected);
  bool atRisk() const { return atRisk_; }
  Millis left() const;

 private:
  void check();

  Timer& timer_;
  std::function<Millis()> floor_;
  std::function<void(bool, Millis)> tell_;
  TimePoint safeUntil_{};
  bool connected_ = false;
  bool atRisk_ = false;
  uint64_t timerId_ = 0;
};

}  // namespace fencekeeper::engine
