#include "sidecar/status/connection_slots.h"

#include <spdlog/spdlog.h>

#include <map>

namespace fencekeeper::status {

namespace {

const char* nameOf(Pool pool) {
  switch (pool) {
    case Pool::kWaiting:
      return "waiting for a request";
    case Pool::kProbe:
      return "probe";
    case Pool::kOther:
      return "route";
    case Pool::kRefused:
      return "refused-peer";
    case Pool::kClosed:
      break;
  }
  return "closed";
}

std::string uidText(std::optional<uint32_t> uid) {
  return uid ? "uid " + std::to_string(*uid) : std::string("a TCP peer");
}

}  // namespace

size_t ConnectionSlots::limitOf(Pool pool) const {
  switch (pool) {
    case Pool::kWaiting:
      return limits_.waiting;
    case Pool::kProbe:
      return limits_.probes;
    case Pool::kOther:
      return limits_.others;
    case Pool::kRefused:
      return limits_.refused;
    case Pool::kClosed:
      break;
  }
  return 0;
}

size_t ConnectionSlots::count(Pool pool) const {
  size_t n = 0;
  for (const Slot& s : slots_) n += s.pool == pool;
  return n;
}

size_t ConnectionSlots::countOf(Pool pool, std::optional<uint32_t> uid) const {
  size_t n = 0;
  for (const Slot& s : slots_) n += s.pool == pool && s.uid == uid;
  return n;
}

ConnectionSlots::Slot& ConnectionSlots::open(const void* stream, std::optional<uint32_t> uid,
                                             Pool pool, TimePoint now) {
  if (count(pool) >= limitOf(pool)) evictOldest(pool, pool == Pool::kWaiting, nullptr);
  Slot& slot = slots_.emplace_back();
  slot.stream = stream;
  slot.uid = uid;
  slot.pool = pool;
  slot.opened = now;
  return slot;
}

std::string ConnectionSlots::enter(Slot& slot, Pool pool) {
  if (pool == Pool::kOther) {
    if (count(Pool::kOther) >= limits_.others) {
      return std::to_string(limits_.others) + " status requests are being answered; try again";
    }
    if (countOf(Pool::kOther, slot.uid) >= limits_.othersPerUid) {
      return uidText(slot.uid) + " has " + std::to_string(limits_.othersPerUid) +
             " status requests being answered, its share; read their answers first";
    }
  } else if (count(pool) >= limitOf(pool)) {
    evictOldest(pool, false, &slot);
  }
  slot.pool = pool;
  return "";
}

void ConnectionSlots::answered(Slot& slot) {
  slot.pool = Pool::kClosed;  // not counted while making room for it
  if (count(Pool::kWaiting) >= limits_.waiting) evictOldest(Pool::kWaiting, true, &slot);
  slot.pool = Pool::kWaiting;
}

void ConnectionSlots::erase(Slot& slot) {
  for (auto it = slots_.begin(); it != slots_.end(); ++it) {
    if (&*it == &slot) {
      slots_.erase(it);
      return;
    }
  }
}

ConnectionSlots::Slot* ConnectionSlots::find(const void* stream) {
  for (Slot& s : slots_) {
    if (s.stream == stream) return &s;
  }
  return nullptr;
}

void ConnectionSlots::evictOldest(Pool pool, bool byUid, const Slot* keep) {
  std::optional<std::optional<uint32_t>> uid;
  if (byUid) {
    std::map<std::optional<uint32_t>, size_t> perUid;
    size_t most = 0;
    for (const Slot& s : slots_) {
      if (s.pool != pool || &s == keep) continue;
      if (size_t n = ++perUid[s.uid]; n > most) {
        most = n;
        uid = s.uid;
      }
    }
  }
  Slot* oldest = nullptr;
  for (Slot& s : slots_) {
    if (s.pool != pool || &s == keep || (uid && s.uid != *uid)) continue;
    if (!oldest || s.opened < oldest->opened) oldest = &s;
  }
  if (!oldest) return;
  spdlog::debug("{}: {} {} connections open, closing the one opened first, of {}", name_,
                count(pool), nameOf(pool), uidText(oldest->uid));
  oldest->pool = Pool::kClosed;  // its task's end erases it
  oldest->canceler.cancel(kj::str("closed to make room in the ", nameOf(pool), " pool"));
}

}  // namespace fencekeeper::status
