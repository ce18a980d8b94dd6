// Lock names as clients give them, and lock-queue node names as kazoo and fencekeeper write them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sidecar/engine/lease_types.h"

namespace fencekeeper::engine {

constexpr size_t kMaxLockNameBytes = 200;

// `[A-Za-z0-9._-]` segments separated by '/', no empty, "." or ".." segment, at most 200 bytes,
// and no segment containing "__lock__", "__rlock__" or "__sem" (it would join its parent lock's
// queue).
bool isValidLockName(std::string_view name);
// What is wrong with `name`, for the caller (nullopt: valid).
std::optional<std::string> lockNameProblem(std::string_view name);

// `bytes` safe to quote in a log line or an error detail: non-printable bytes as \xNN, at most
// `max` bytes shown.
std::string printable(std::string_view bytes, size_t max = 64);

// A child of a lock's node that takes part in the queue: `<guid><marker><seq>`, the marker saying
// its mode (queueMarker()), ordered by the 10-digit sequence suffix alone, as kazoo orders them.
struct QueueNode {
  std::string name;
  int64_t sequence;
  LockMode mode = LockMode::kExclusive;
  uint32_t permits = 0;  // kPermits: the N its request asked for
};
std::optional<QueueNode> parseQueueNode(std::string_view childName);
// `__lock__` (exclusive, kazoo's Lock and WriteLock), `__rlock__` (shared, kazoo's ReadLock) or
// `__sem<N>__` (one of N permits).
std::string queueMarker(LockMode mode, uint32_t permits);
// Where the marker starts in a queue node's name (npos: none): the guid is what comes before.
size_t markerStart(std::string_view childName);

// Queue order. ZooKeeper's counter is an int32 that wraps (2147483647, then -2147483648), so a
// sequence's place is its offset from another of the same queue, as serial numbers compare
// (RFC 1982): right while a queue spans fewer than 2^31 creates. Plain comparison would put the
// first node made after the wrap ahead of the holder: two holders.
int32_t sequenceOffset(int64_t sequence, int64_t reference);
// `queue` oldest first. (Offsets from one reference, its first entry: a total order, so the sort
// is well defined whatever names are planted in a queue.)
void sortQueue(std::vector<QueueNode>& queue);

// The suffix ZooKeeper gives a sequential node, "%010d" of its parent's counter (the sign, once
// the counter wraps negative, counts in the width), appended to `out`.
void appendSequenceSuffix(std::string& out, int32_t seq);
// The sequence ZooKeeper appended to `prefix` to name `path`, if that is what it did.
std::optional<int32_t> sequenceAfter(std::string_view path, std::string_view prefix);

}  // namespace fencekeeper::engine
