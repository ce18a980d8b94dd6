#include "sidecar/status/loop_lag.h"

namespace fencekeeper::status {

LoopLag::LoopLag(Timer& timer, Sink sink) : timer_(timer), sink_(std::move(sink)) {
  arm(timer_.now() + kTick);
}

LoopLag::~LoopLag() { timer_.cancel(timerId_); }

void LoopLag::arm(TimePoint due) {
  timerId_ = timer_.schedule(due, [this, due] {
    TimePoint now = timer_.now();
    sink_(std::chrono::duration_cast<std::chrono::microseconds>(now - due));
    arm(now + kTick);
  });
}

}  // namespace fencekeeper::status
