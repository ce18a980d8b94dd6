// The values the lock engine hands to its callers (the RPC layer maps them onto the schema).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/clock.h"

namespace fencekeeper::engine {

using LeaseId = uint64_t;

// How a request shares its lock (ipc::LockMode). Exclusive: alone (kazoo's WriteLock, `__lock__`).
// Shared: with other shared holders, never with an exclusive one (kazoo's ReadLock, `__rlock__`).
// Permits: one of at most N holders of a semaphore (`__sem<N>__`, fencekeeper's own).
enum class LockMode : uint8_t { kExclusive, kShared, kPermits };
const char* lockModeName(LockMode mode);
constexpr uint32_t kMaxPermits = 10'000;

// Mirrors ipc::Error one to one (rpc/error_mapping.cc keeps them in step).
enum class LeaseError {
  kOk,
  kInvalidName,
  kInvalidArgument,
  kTimedOut,
  kNotHeld,
  kExpired,
  kLost,
  kZkUnavailable,
  kShuttingDown,
  kLimitReached,
  kInternal,
  kPermissionDenied,
  kInvalidOwner,
  kModeConflict,  // the lock's queue holds requests of another mode or permit count
};
const char* errorName(LeaseError error);

enum class LossReason : uint8_t {
  kTtlExpired,
  kSessionLost,
  kSessionUncertain,
  kSidecarShutdown,
  kReleasedElsewhere,
};
const char* lossReasonName(LossReason reason);

struct AcquireSpec {
  std::string name;
  std::string ownerLabel;
  int32_t clientPid = 0;
  // The principal limits count against (processes of one uid are one) and its connection.
  uint32_t clientUid = 0;
  uint64_t connection = 0;
  Millis ttl{0};   // 0: the engine's default
  Millis wait{0};  // 0: try once; kWaitForever: no deadline
  LockMode mode = LockMode::kExclusive;
  uint32_t permits = 0;  // kPermits: N, in [1, kMaxPermits]; 0 otherwise
  // Called on the loop when a granted lease is lost (never after withdraw or release). `told` is
  // to be called once the holder has taken the notice in (or can no longer be told).
  std::function<void(uint64_t token, LossReason, std::function<void()> told)> onLost;
  // Called on the loop while a granted lease is held, when it gets at risk (the ZooKeeper
  // connection is down, or a heartbeat is overdue, while the session is still vouched for:
  // `left` is how long) and when it is safe again (Jeopardy). May be empty.
  std::function<void(uint64_t token, bool atRisk, Millis left)> onRisk;
};

struct AcquireOutcome {
  LeaseError error = LeaseError::kInternal;
  LeaseId id = 0;
  uint64_t token = 0;
  Millis valid{0};
  std::string detail;  // for people: what was wrong (e.g. the path whose ACL refused us)
};

struct ReleaseOutcome {
  LeaseError error = LeaseError::kInternal;
  // True when ZooKeeper confirmed the node gone before the answer was due; false when the answer
  // came first: the delete is queued (sent again after a reconnect, dropped with the session).
  bool confirmed = false;
  std::string detail;  // for people, when error is not kOk
};

struct Validity {
  LeaseError error = LeaseError::kInternal;
  uint64_t token = 0;
  Millis valid{0};
  std::string detail;  // for people, when error is not kOk
  LossReason reason = LossReason::kTtlExpired;  // why, when error is kExpired or kLost
};

// An acquire's wait with no deadline (waitMs 4294967295): a campaign for leadership stands by as
// long as it takes, keeping its place in the queue.
constexpr Millis kWaitForever{0xFFFFFFFF};

// One of a lock's holders (several: shared holders, or a semaphore's permits).
struct HolderEntry {
  uint64_t token = 0;
  std::string ownerLabel;
  int64_t sinceUnixMs = 0;
  bool thisSidecar = false;
  LockMode mode = LockMode::kExclusive;
  uint32_t permits = 0;
};

// `token`, `ownerLabel`, `sinceUnixMs` and `thisSidecar` are the first holder's (the oldest):
// what a caller that knows only exclusive locks reads; `holders` lists every holder, oldest first.
struct HolderInfo {
  bool held = false;
  uint64_t token = 0;
  std::string ownerLabel;
  int64_t sinceUnixMs = 0;
  uint32_t waiters = 0;
  bool thisSidecar = false;
  // The first queue entry is a persistent node planted in the queue (see ForeignNodes).
  bool foreign = false;
  std::string foreignNode;  // path of the first planted entry known in the queue, if any
  std::vector<HolderEntry> holders;
};

// What a holder watch reports: the holder, no holder, or kUnknown while this sidecar cannot vouch
// for its session or read the lock (then `detail` says why). A hint for people and standbys,
// never a fence: only the storage's token check is one.
enum class HolderState { kHeld, kFree, kUnknown };
struct HolderChange {
  HolderState state = HolderState::kUnknown;
  HolderInfo info;     // kHeld: the holder (token, owner label, since)
  std::string detail;  // kUnknown: why
};
using HolderWatchId = uint64_t;

struct LeaseSummary {
  std::string name;
  uint64_t token = 0;
  std::string ownerLabel;
  int32_t clientPid = 0;
  Millis valid{0};
  uint32_t clientUid = 0;
  uint64_t connection = 0;
  Millis heldFor{0};
  LockMode mode = LockMode::kExclusive;
  uint32_t permits = 0;
};

// A request not granted yet.
struct WaiterSummary {
  std::string name;
  std::string ownerLabel;
  int32_t clientPid = 0;
  uint32_t clientUid = 0;
  uint64_t connection = 0;
  bool queued = false;    // its node exists and its queue was listed (false: being created)
  uint32_t position = 0;  // nodes ahead of it at the engine's last look at its queue
  Millis waitedFor{0};
  LockMode mode = LockMode::kExclusive;
  uint32_t permits = 0;
};

struct EngineStatus {
  uint32_t held = 0;
  uint32_t waiting = 0;
  uint64_t grantsTotal = 0;
  uint32_t pendingDeletes = 0;  // node deletions ZooKeeper has not confirmed yet
  uint64_t droppedDeletes = 0;  // unconfirmed deletions given up at the bound (left to the session)
  std::vector<LeaseSummary> leases;
  std::vector<WaiterSummary> waiters;
  std::vector<std::string> foreignNodes;  // planted queue entries seen and still there (paths)
  // `leases` and `waiters` hold at most the number asked for; `held` and `waiting` count all.
  bool truncated = false;
};

}  // namespace fencekeeper::engine
