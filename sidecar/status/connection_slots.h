// Who may keep a status connection open, per listening socket (issue 24: 64 connections that
// never read their answers, or send a byte a second, took every slot and failed the liveness
// probe). A connection waits for its request in the waiting pool; once the request line is read
// it moves to the probe pool (/healthz, /readyz) or the pool of the other routes, and back to
// waiting for a pipelined request. Full waiting and probe pools make room by closing the
// connection opened first (of the uid holding the most, for waiting), so neither can be held
// against a new probe, which is the newest; the other routes' pool refuses instead (503), with a
// share per uid. Peers the allow-list
// refuses have a small pool of their own. Runs on the loop thread; the StatusServer owns it.
#pragma once

#include <kj/async.h>
#include <kj/compat/http.h>

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <string>

#include "common/clock.h"

namespace fencekeeper::status {

// kClosed: the connection is being closed and counts in no pool.
enum class Pool { kWaiting, kProbe, kOther, kRefused, kClosed };

// Per listening socket; docs/security.md ("The status server's limits") gives each one's reason.
struct SlotLimits {
  size_t waiting = 64;
  size_t probes = 16;
  size_t others = 64;
  size_t othersPerUid = 16;
  size_t refused = 8;
};

class ConnectionSlots {
 public:
  struct Slot {
    const void* stream = nullptr;  // the connection until its service is made, for find()
    std::optional<uint32_t> uid;   // none on TCP: one share for all its peers
    Pool pool = Pool::kWaiting;
    TimePoint opened{};                // accepted: the first opened is the first closed
    kj::Canceler canceler;             // wraps the connection's task: cancel() closes it
    kj::Own<kj::HttpService> service;  // the routes it may use, until its connection takes them
  };

  ConnectionSlots(SlotLimits limits, std::string name) : limits_(limits), name_(std::move(name)) {}

  // A slot for a new connection in `pool` (kWaiting or kRefused), closing another if that pool is
  // full. The slot lives until erase().
  Slot& open(const void* stream, std::optional<uint32_t> uid, Pool pool, TimePoint now);
  // Moves `slot` to kProbe or kOther for a request. Empty when admitted, else why not (the pool
  // of the other routes is full, or its uid's share of it).
  std::string enter(Slot& slot, Pool pool);
  // Back to waiting for a pipelined request once the answer is written.
  void answered(Slot& slot);
  // The connection ended: the slot counts no more, and is to be erased.
  void closed(Slot& slot) { slot.pool = Pool::kClosed; }
  // REQUIRES: nothing its canceler wrapped is alive.
  void erase(Slot& slot);
  Slot* find(const void* stream);

  size_t count(Pool pool) const;
  size_t countOf(Pool pool, std::optional<uint32_t> uid) const;

 private:
  size_t limitOf(Pool pool) const;
  // Closes the connection of `pool` opened first, other than `keep`, among those of the uid
  // holding the most of that pool when `byUid`.
  void evictOldest(Pool pool, bool byUid, const Slot* keep);

  SlotLimits limits_;
  std::string name_;  // "status socket" or "--status-listen", for the log
  std::list<Slot> slots_;
};

}  // namespace fencekeeper::status
