// The structure-aware RPC fuzz input: a script of well-formed `Sidecar` and `Lease` calls with
// fuzzed parameters, interleaved with time steps and ZooKeeper events, run by a real Cap'n Proto
// client against SidecarUnderTest, so inputs reach the engine rather than stop at the framing.
// The encoding is byte-oriented so that scripts can be written by hand (ScriptWriter).
#pragma once

#include <cstdint>
#include <string>

namespace fencekeeper::fuzz {

enum class Op : uint8_t {
  kAcquire,    // name, ttlMs u32, waitMs u32, ownerLabel, flags (bit 0: with a LeaseWatcher)
  kRenew,      // lease index, ttlMs u32
  kToken,      // lease index
  kRelease,    // lease index
  kDropLease,  // lease index: the client lets go of the capability
  kHolder,     // name
  kStatus,     //
  kCancel,     // call index: the client drops an unanswered call
  kAdvance,    // ms u32 (at most two hours)
  kExpireSession,
  kRemoveHolderNode,  // name: another ZooKeeper client deletes the lock's first queue node
  kAddContender,      // name: another session queues for the lock (as kazoo would)
  kPlantNode,         // name: a persistent node named like a queue entry
  kCount,
};

// Ops added after the first regression seeds were committed: the byte kExtended, then which one,
// so that no older script reads differently (no committed seed has that byte; `u8 % kCount` would
// have remapped them all).
constexpr uint8_t kExtended = 0xfe;
enum class ExtendedOp : uint8_t {
  kWatchHolder,      // name: watch the lock's holder; the watcher checks what it is told
  kDropHolderWatch,  // watch index: the client drops the watch's capability
  kAcquireMode,      // as kAcquire, then mode u8 (raw: unknown values too) and permits u32
  kCount,
};

// A name is one byte: below kCustomName it picks one of a few shared names (so calls collide on
// the same locks), kCustomName is followed by a length byte and that many bytes.
constexpr uint8_t kCustomName = 0xff;

class ScriptWriter {
 public:
  ScriptWriter& acquire(const std::string& name, uint32_t ttlMs, uint32_t waitMs,
                        const std::string& label, bool watcher);
  ScriptWriter& leaseOp(Op op, uint8_t lease, uint32_t ttlMs = 0);  // renew/token/release/drop
  ScriptWriter& named(Op op, const std::string& name);  // holder and the ZooKeeper events
  ScriptWriter& plain(Op op);                           // status, expire
  ScriptWriter& cancel(uint8_t call);
  ScriptWriter& advance(uint32_t ms);
  ScriptWriter& watchHolder(const std::string& name);
  ScriptWriter& dropHolderWatch(uint8_t watch);
  ScriptWriter& acquireMode(const std::string& name, uint32_t ttlMs, uint32_t waitMs,
                            uint8_t mode, uint32_t permits);
  const std::string& bytes() const { return out_; }

 private:
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(uint32_t v);
  void text(const std::string& s);
  void name(const std::string& s);
  std::string out_;
};

// Runs one script against a fresh sidecar and checks the oracles (aborts on a violation). When
// `wire` is set, every byte the client wrote is appended to it (seeds for the raw-bytes target).
void runCallScript(const uint8_t* data, size_t size, std::string* wire = nullptr);

}  // namespace fencekeeper::fuzz
