// A client's read-only view of the sidecar's shared-memory lease table (ipc/lease_table_layout.h):
// the validity of a lease without a round trip, and without a syscall but the vDSO clock read.
//
// Opened once per connection and shared by its leases (which may outlive the client). Safe from
// any thread: it only reads the mapping. Internal to the client library.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ipc/lease_table_layout.h"

namespace fencekeeper::internal {

class LeaseTableReader {
 public:
  // Maps the table at `path` if it is one this client may trust: a regular file owned by
  // `ownerUid` (the sidecar's), writable by no one else, at least as large as its header says,
  // of this layout, and written by sidecar instance `instance`. nullptr otherwise, with the
  // reason in `*why`: the caller then falls back to what the sidecar last told it.
  static std::unique_ptr<LeaseTableReader> open(const std::string& path, uint64_t instance,
                                                uid_t ownerUid, std::string* why);
  ~LeaseTableReader();
  LeaseTableReader(const LeaseTableReader&) = delete;
  LeaseTableReader& operator=(const LeaseTableReader&) = delete;

  // Nanoseconds the lease (slot, generation, token) stays valid after `nowNs` (CLOCK_BOOTTIME):
  // 0 when its slot holds another lease, is not held, is past its TTL or the sidecar's vouching,
  // or the table is another sidecar instance's now (it restarted). REQUIRES: generation != 0.
  uint64_t validForNs(uint32_t slot, uint64_t generation, uint64_t token, uint64_t nowNs) const;

  // Whether any slot holds a valid lease on `name` with `token` at `nowNs` (a scan: for
  // `fencectl valid`, not for a hot path).
  bool anyValid(std::string_view name, uint64_t token, uint64_t nowNs) const;

  uint64_t instance() const { return instance_; }
  uint64_t capacity() const { return capacity_; }
  const std::string& path() const { return path_; }

 private:
  struct Mapping;
  LeaseTableReader(std::string path, std::unique_ptr<Mapping> mapping, uint64_t instance,
                   uint64_t capacity);
  // Defined here so that they inline into validForNs(): out of line, -fPIC keeps them calls.
  const lease_table::Header& header() const {
    return *reinterpret_cast<const lease_table::Header*>(base_);
  }
  const lease_table::Slot& slot(uint32_t index) const {
    return *reinterpret_cast<const lease_table::Slot*>(base_ + lease_table::kHeaderBytes +
                                                       index * lease_table::kSlotBytes);
  }

  std::string path_;
  std::unique_ptr<Mapping> mapping_;
  const char* base_ = nullptr;
  uint64_t instance_ = 0;
  uint64_t capacity_ = 0;  // slots mapped (the file may grow later; those are not read)
};

}  // namespace fencekeeper::internal
