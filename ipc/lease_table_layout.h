// The shared-memory lease table: the fixed-width layout the sidecar writes and every client reads.
//
// One file next to the lease socket, mapped with Boost.Interprocess (read-write by the sidecar, read
// only by clients): a 256-byte Header, then `capacity` Slots of 256 bytes. All fields are 64-bit
// little-endian words accessed atomically (std::atomic_ref), so the layout is the same for every
// process and language. The sidecar alone writes; readers never lock.
//
// Each slot is a seqlock: the writer makes `seq` odd, changes the slot, makes `seq` even again; a
// reader that saw an odd or changed `seq` retries, so it never acts on a torn slot. Validity is an
// absolute CLOCK_BOOTTIME deadline, so a dead sidecar's leases lapse by themselves; the file never
// shrinks (a reader's mapping past a shrunk end would SIGBUS).
//
// A lease is valid for its holder when its slot is Held with the holder's generation and token, the
// header's instance is the one the holder was told, and now < min(validUntilNs, safeUntilNs).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace fencekeeper::lease_table {

inline constexpr uint64_t kMagic = 0x31454C4241544546ULL;  // "FETABLE1" as little-endian bytes
inline constexpr uint32_t kLayoutVersion = 1;
inline constexpr size_t kHeaderBytes = 256;
inline constexpr size_t kSlotBytes = 256;
inline constexpr size_t kNameWords = 25;
inline constexpr size_t kMaxNameBytes = kNameWords * 8;  // = the sidecar's lock name limit (200)
// Header.format: what a reader must match exactly before it trusts any other field.
inline constexpr uint64_t kFormat = uint64_t{kLayoutVersion} | (uint64_t{kSlotBytes} << 32);

enum class SessionState : uint64_t { kUnknown = 0, kVouched = 1, kUncertain = 2, kExpired = 3 };
enum class SlotState : uint64_t { kFree = 0, kHeld = 1, kReleased = 2, kLost = 3 };

struct Header {
  uint64_t magic;
  uint64_t format;
  uint64_t instance;      // the writing sidecar's instance id; a restart writes a new one
  uint64_t capacity;      // slots after the header; only grows
  uint64_t sessionState;  // SessionState, informational
  uint64_t safeUntilNs;   // CLOCK_BOOTTIME ns up to which the sidecar vouches for its session
  uint64_t writerPid;
  uint64_t reserved[25];
};

struct Slot {
  uint64_t seq;           // seqlock: odd while the writer changes the slot
  uint64_t generation;    // bumped each time the slot is given to a new lease
  uint64_t token;         // the lease's fencing token (czxid)
  uint64_t validUntilNs;  // CLOCK_BOOTTIME ns: the lease's TTL deadline
  uint64_t state;         // SlotState
  uint64_t nameLength;
  uint64_t name[kNameWords];  // the lock name's bytes, zero-padded
  uint64_t reserved;
};

static_assert(sizeof(Header) == kHeaderBytes);
static_assert(sizeof(Slot) == kSlotBytes);
static_assert(std::atomic_ref<uint64_t>::is_always_lock_free);

inline constexpr size_t fileBytesFor(uint64_t capacity) { return kHeaderBytes + capacity * kSlotBytes; }

inline uint64_t load(const uint64_t& word, std::memory_order order = std::memory_order_relaxed) {
  return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(word)).load(order);
}
inline void store(uint64_t& word, uint64_t value, std::memory_order order = std::memory_order_relaxed) {
  std::atomic_ref<uint64_t>(word).store(value, order);
}

// A consistent copy of one slot (name included only when asked for).
struct SlotView {
  uint64_t generation = 0;
  uint64_t token = 0;
  uint64_t validUntilNs = 0;
  SlotState state = SlotState::kFree;
  uint64_t nameLength = 0;
  uint64_t name[kNameWords] = {};
  std::string_view nameView() const {
    return {reinterpret_cast<const char*>(name), nameLength <= kMaxNameBytes ? nameLength : 0};
  }
};

// Writer side (the sidecar's thread only): brackets every change of a slot.
inline void beginWrite(Slot& slot) {
  store(slot.seq, load(slot.seq) + 1);
  std::atomic_thread_fence(std::memory_order_release);
}
inline void endWrite(Slot& slot) { store(slot.seq, load(slot.seq) + 1, std::memory_order_release); }

// Reader side: a consistent view, or nullopt when the writer kept it busy for `maxTries` reads.
inline std::optional<SlotView> readConsistent(const Slot& slot, bool withName, int maxTries = 1000) {
  for (int i = 0; i < maxTries; ++i) {
    uint64_t before = load(slot.seq, std::memory_order_acquire);
    if (before & 1) continue;
    SlotView v;
    v.generation = load(slot.generation);
    v.token = load(slot.token);
    v.validUntilNs = load(slot.validUntilNs);
    v.state = static_cast<SlotState>(load(slot.state));
    if (withName) {
      v.nameLength = load(slot.nameLength);
      for (size_t w = 0; w < kNameWords; ++w) v.name[w] = load(slot.name[w]);
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (load(slot.seq) == before) return v;
  }
  return std::nullopt;
}

// Nanoseconds the lease in `v` stays valid at `nowNs` for a holder of (generation, token): 0 when
// it is not (another lease's slot, not held, past its TTL or the session's vouching).
inline uint64_t validForNs(const SlotView& v, uint64_t generation, uint64_t token, uint64_t safeUntilNs,
                           uint64_t nowNs) {
  if (v.state != SlotState::kHeld || v.generation != generation || v.token != token) return 0;
  uint64_t until = v.validUntilNs < safeUntilNs ? v.validUntilNs : safeUntilNs;
  return nowNs < until ? until - nowNs : 0;
}

}  // namespace fencekeeper::lease_table
