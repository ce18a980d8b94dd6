// The sidecar's side of the shared-memory lease table (ipc/lease_table_layout.h): the file beside
// the lease socket, mapped read-write with Boost.Interprocess, one seqlocked slot per held lease.
//
// Opening refuses what a reader could not trust: a symlink, anything but a regular file, a file of
// another uid or with a second name, a directory others may write. The file is made 0640 (its
// group reads, as the socket's group connects; only this uid writes) and never shrinks. Starting over an old file writes the new
// instance first, frees every slot with a bumped generation, and writes magic and format last, so a
// reader of a half-initialised table refuses it.
//
// Capacity is fixed at start: a lease beyond it gets no slot (generation 0: its client falls back
// to its own check). Loop thread only: the one writer the seqlocks allow.
#pragma once

#include <sys/stat.h>

#include <boost/interprocess/mapped_region.hpp>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/clock.h"
#include "ipc/lease_table_layout.h"

namespace fencekeeper::shm {

// Where a lease is in the table, as its acquire answer tells the client.
struct TablePlace {
  uint32_t slot = 0;
  uint64_t generation = 0;
};

class LeaseTableWriter {
 public:
  static constexpr uint64_t kMaxCapacity = 1'000'000;  // 256 MB of (sparse) file

  // Opens or creates the table at `path` with room for `capacity` leases (capped at kMaxCapacity;
  // a larger existing file keeps its size and its slots) and initialises it for `instance`.
  // Throws std::runtime_error with a message meant for a person.
  LeaseTableWriter(const std::string& path, uint64_t capacity, uint64_t instance);
  // Vouches for nothing any more: a stopped sidecar's leases are invalid at once.
  ~LeaseTableWriter();
  LeaseTableWriter(const LeaseTableWriter&) = delete;
  LeaseTableWriter& operator=(const LeaseTableWriter&) = delete;

  const std::string& path() const { return path_; }
  // Unlinks the file if this writer created it and the path still names it: a failed start
  // leaves no table behind (readers that mapped it keep their mapping).
  void removeIfCreated() const;
  uint64_t instance() const { return instance_; }
  uint64_t capacity() const { return capacity_; }

  // Gives `lease` a slot (a new generation), Held with its token, deadline and lock name; nullopt
  // when the table is full.
  std::optional<TablePlace> hold(uint64_t lease, uint64_t token, TimePoint validUntil,
                                 std::string_view name);
  // A held lease's new TTL deadline. No-op for a lease without a slot.
  void renew(uint64_t lease, TimePoint validUntil);
  // The lease ended (`how`: kLost or kReleased): its slot says so, and is free for reuse.
  void end(uint64_t lease, lease_table::SlotState how);
  std::optional<TablePlace> placeOf(uint64_t lease) const;
  // The session's state and the deadline up to which the sidecar vouches for it (0: none).
  void setSession(lease_table::SessionState state, TimePoint safeUntil);

  // For tests: the slot as a reader sees it.
  const lease_table::Slot& slot(uint32_t index) const { return slots_[index]; }
  const lease_table::Header& header() const { return *header_; }

 private:
  void mapTable(int fd, uint64_t capacity);  // the constructor's rest, once the file is open
  void initialise(uint64_t slotsInFile);

  std::string path_;
  bool created_ = false;  // the constructor created the file
  struct stat file_ {};   // the file opened (its st_dev and st_ino name it)
  uint64_t instance_;
  uint64_t capacity_ = 0;
  boost::interprocess::mapped_region region_;
  lease_table::Header* header_ = nullptr;
  lease_table::Slot* slots_ = nullptr;
  std::unordered_map<uint64_t, uint32_t> slotOf_;  // lease id -> slot
  std::deque<uint32_t> free_;                      // freed slots, oldest first
  uint64_t fresh_ = 0;  // slots from here on were never given out by this instance
};

}  // namespace fencekeeper::shm
