#include "sidecar/engine/read_pacer.h"

#include <algorithm>
#include <memory>
#include <utility>

namespace fencekeeper::engine {

ReadPacer::ReadPacer(Timer& timer, uint32_t maxInFlight, uint32_t perUidPerSecond)
    : timer_(timer),
      maxInFlight_(std::max<uint32_t>(1, maxInFlight)),
      perSecond_(std::max<uint32_t>(1, perUidPerSecond)) {}

ReadPacer::~ReadPacer() { timer_.cancel(pumpTimer_); }

void ReadPacer::submit(uint32_t uid, Read read) {
  auto [it, fresh] = peers_.try_emplace(uid);
  if (fresh) {
    it->second.tokens = perSecond_;  // a full bucket: a burst of one second's reads at once
    it->second.refilledAt = timer_.now();
  }
  it->second.queue.push_back(std::move(read));
  ++waiting_;
  schedulePump(timer_.now());  // on a later turn: a read never starts inside submit()
}

void ReadPacer::refill(Peer& peer, TimePoint now) const {
  double elapsed = std::chrono::duration<double>(now - peer.refilledAt).count();
  peer.tokens = std::min(perSecond_, peer.tokens + elapsed * perSecond_);
  peer.refilledAt = now;
}

void ReadPacer::schedulePump(TimePoint when) {
  if (pumpTimer_ && pumpAt_ <= when) return;
  timer_.cancel(pumpTimer_);
  pumpAt_ = when;
  pumpTimer_ = timer_.schedule(when, [this, alive = std::weak_ptr<bool>(alive_)] {
    if (alive.expired()) return;
    pumpTimer_ = 0;
    pump();
  });
}

void ReadPacer::pump() {
  TimePoint now = timer_.now();
  TimePoint nextToken = TimePoint::max();
  while (inFlight_ < maxInFlight_ && waiting_ > 0) {
    // The first uid above the last one served (wrapping) that has a read and a token.
    auto pick = peers_.end();
    auto visit = [&](auto from, auto to) {
      for (auto it = from; it != to && pick == peers_.end(); ++it) {
        Peer& peer = it->second;
        if (peer.queue.empty()) continue;
        refill(peer, now);
        if (peer.tokens >= 1) {
          pick = it;
        } else {
          auto wait = std::chrono::duration<double>((1 - peer.tokens) / perSecond_);
          nextToken = std::min(nextToken,
                               now + std::chrono::ceil<TimePoint>(wait));
        }
      }
    };
    visit(peers_.upper_bound(lastServed_), peers_.end());
    visit(peers_.begin(), peers_.upper_bound(lastServed_));
    if (pick == peers_.end()) break;
    lastServed_ = pick->first;
    Peer& peer = pick->second;
    peer.tokens -= 1;
    Read read = std::move(peer.queue.front());
    peer.queue.pop_front();
    --waiting_;
    ++inFlight_;
    read([this, alive = std::weak_ptr<bool>(alive_), done = std::make_shared<bool>(false)] {
      if (alive.expired() || std::exchange(*done, true)) return;
      --inFlight_;
      schedulePump(timer_.now());
    });
  }
  // A uid whose bucket is full again and has nothing waiting costs nothing: forget it.
  for (auto it = peers_.begin(); it != peers_.end();) {
    refill(it->second, now);
    bool idle = it->second.queue.empty() && it->second.tokens >= perSecond_;
    it = idle ? peers_.erase(it) : std::next(it);
  }
  if (waiting_ > 0 && inFlight_ < maxInFlight_ && nextToken != TimePoint::max()) {
    schedulePump(nextToken);
  }
}

}  // namespace fencekeeper::engine
