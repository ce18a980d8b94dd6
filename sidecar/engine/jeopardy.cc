#include "sidecar/engine/jeopardy.h"

namespace fencekeeper::engine {

Jeopardy::Jeopardy(Timer& timer, std::function<Millis()> floor,
                   std::function<void(bool, Millis)> tell)
    : timer_(timer), floor_(std::move(floor)), tell_(std::move(tell)) {}

Jeopardy::~Jeopardy() { timer_.cancel(timerId_); }

Millis Jeopardy::left() const {
  auto left = std::chrono::duration_cast<Millis>(safeUntil_ - timer_.now());
  return left.count() > 0 ? left : Millis(0);
}

void Jeopardy::onVouched(TimePoint safeUntil) {
  safeUntil_ = safeUntil;
  check();
}

void Jeopardy::onConnection(bool connected) {
  connected_ = connected;
  check();
}

void Jeopardy::check() {
  timer_.cancel(timerId_);
  timerId_ = 0;
  TimePoint now = timer_.now();
  if (now >= safeUntil_) {
    atRisk_ = false;  // lapsed: the losses say the rest
    return;
  }
  TimePoint riskFrom = safeUntil_ - floor_();
  bool risky = !connected_ || now >= riskFrom;
  if (!risky) {
    // (The timer finds the same safeUntil when no answer came meanwhile: at risk then.)
    timerId_ = timer_.schedule(riskFrom, [this] {
      timerId_ = 0;
      check();
    });
  }
  if (risky != atRisk_) {
    atRisk_ = risky;
    tell_(risky, left());
  }
}

}  // namespace fencekeeper::engine
