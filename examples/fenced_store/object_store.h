// The fenced store's data: objects by key, guarded by a FenceGate, saved to its StateFile before
// any request is answered.
//
// One mutex covers check, apply and save of every request. That is what makes the fence mean
// something (see fence_gate.h: a check that is not atomic with its write lets a stale write land
// last), and it also orders the saves, so the file on disk never goes back to an older state.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "examples/fenced_store/fence_gate.h"
#include "examples/fenced_store/state_file.h"

namespace fencekeeper::store {

enum class StoreStatus {
  kOk,
  kNotFound,  // GET of a missing key; its fence was still raised
  kStale,     // token below `highest`; nothing changed
  kIoError,   // the state could not be saved; nothing changed in memory, `error` says why
};

struct StoreResult {
  StoreStatus status = StoreStatus::kIoError;
  uint64_t highest = 0;  // the lock's fence after the request
  std::string value;     // GET only
  std::string error;
  // kOk and kNotFound: the request's place in the order the store accepted requests (1, 2, ...,
  // over all locks, counted under the store's lock from this process's start), so that a log
  // written after the lock is released still tells that order. 0 otherwise.
  uint64_t sequence = 0;
};

class ObjectStore {
 public:
  ObjectStore(StateFile file, StoreState state);

  StoreResult put(std::string_view key, std::string value, std::string_view lock, uint64_t token);
  // Fenced like put(): the fence rises even when the key is missing, since the caller may act
  // on "absent" as much as on a value.
  StoreResult get(std::string_view key, std::string_view lock, uint64_t token);
  uint64_t fence(std::string_view lock) const;

 private:
  std::mutex mu_;
  StateFile file_;
  Objects objects_;
  FenceGate gate_;
  uint64_t accepted_ = 0;  // the last StoreResult::sequence handed out
};

}  // namespace fencekeeper::store
