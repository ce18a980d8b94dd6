#include "sidecar/shm/lease_table_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/interprocess/exceptions.hpp>
#include <boost/interprocess/file_mapping.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "common/socket_path.h"
#include "common/unique_fd.h"

namespace fencekeeper::shm {

namespace lt = lease_table;
namespace bip = boost::interprocess;

namespace {

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw std::runtime_error("lease table " + path + ": " + why);
}

[[noreturn]] void refuseErrno(const std::string& path, const std::string& what) {
  refuse(path, what + ": " + std::strerror(errno));
}

// The directory must be one only its owner changes: anyone else could swap the file for a table
// of their own under the readers.
void checkDirectory(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  struct stat st {};
  if (stat(dir.empty() ? "." : dir.c_str(), &st) != 0) refuseErrno(path, "its directory");
  if (writableByOthers(st.st_mode)) {
    refuse(path, "its directory is " + modeText(st.st_mode) +
                     ": writable by others, who could replace the table (give a directory only "
                     "this uid writes, e.g. the default beside the socket)");
  }
}

// Opens the file as the table may be: a regular file of this uid with one name, mode 0640: the
// socket's group reads it (as it may connect), others do not, --socket-world or not.
// `created`: whether this open made the file; `st`: the file's stat.
UniqueFd openTableFile(const std::string& path, bool& created, struct stat& st) {
  constexpr int kFlags = O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
  UniqueFd fd(open(path.c_str(), kFlags | O_CREAT | O_EXCL, 0640));
  created = fd.valid();
  if (!fd.valid() && errno == EEXIST) fd.reset(open(path.c_str(), kFlags));
  if (!fd.valid()) {
    if (errno == ELOOP) refuse(path, "is a symbolic link");
    refuseErrno(path, "cannot open");
  }
  if (fstat(fd.get(), &st) != 0) refuseErrno(path, "fstat");
  if (!S_ISREG(st.st_mode)) refuse(path, "is not a regular file");
  if (st.st_uid != geteuid()) {
    refuse(path, "is owned by uid " + std::to_string(st.st_uid) + ", not this sidecar's uid " +
                     std::to_string(geteuid()));
  }
  if (st.st_nlink != 1) refuse(path, "has " + std::to_string(st.st_nlink) + " names (hard links)");
  if (fchmod(fd.get(), 0640) != 0) refuseErrno(path, "fchmod 0640");
  return fd;
}

void copyName(lt::Slot& slot, std::string_view name) {
  uint64_t words[lt::kNameWords] = {};
  size_t length = std::min(name.size(), lt::kMaxNameBytes);
  // An empty view may carry a null data(): memcpy's source must not be null even for 0 bytes.
  if (length > 0) std::memcpy(words, name.data(), length);
  lt::store(slot.nameLength, length);
  for (size_t w = 0; w < lt::kNameWords; ++w) lt::store(slot.name[w], words[w]);
}

uint64_t ns(TimePoint t) { return t.count() > 0 ? static_cast<uint64_t>(t.count()) : 0; }

}  // namespace

LeaseTableWriter::LeaseTableWriter(const std::string& path, uint64_t capacity, uint64_t instance)
    : path_(path), instance_(instance) {
  checkDirectory(path);
  UniqueFd fd = openTableFile(path, created_, file_);
  try {
    mapTable(fd.get(), capacity);
  } catch (...) {
    removeIfCreated();  // a table this start made goes with the start
    throw;
  }
}

void LeaseTableWriter::mapTable(int fd, uint64_t capacity) {
  const std::string& path = path_;
  const struct stat& st = file_;
  uint64_t size = static_cast<uint64_t>(st.st_size);
  uint64_t slotsInFile = size > lt::kHeaderBytes ? (size - lt::kHeaderBytes) / lt::kSlotBytes : 0;
  capacity_ = std::min(std::max(capacity, slotsInFile), kMaxCapacity);
  uint64_t bytes = lt::fileBytesFor(capacity_);
  // Grown sparse, never shrunk: a reader mapped past a shrunk end would get SIGBUS.
  if (size < bytes && ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    refuseErrno(path, "ftruncate to " + std::to_string(bytes) + " bytes");
  }
  try {
    bip::file_mapping file(path.c_str(), bip::read_write);
    // Boost opens the path again: it must still name the file checked above.
    struct stat mapped {};
    if (fstat(file.get_mapping_handle().handle, &mapped) != 0) refuseErrno(path, "fstat");
    if (mapped.st_dev != st.st_dev || mapped.st_ino != st.st_ino) {
      refuse(path, "was replaced while it was being opened");
    }
    region_ = bip::mapped_region(file, bip::read_write, 0, bytes);
  } catch (const bip::interprocess_exception& e) {
    refuse(path, std::string("cannot map: ") + e.what());
  }
  header_ = static_cast<lt::Header*>(region_.get_address());
  slots_ =
      reinterpret_cast<lt::Slot*>(static_cast<char*>(region_.get_address()) + lt::kHeaderBytes);
  initialise(std::min(slotsInFile, capacity_));
}

// Instance first (a reader told the old one stops trusting any slot), then the slots, then magic
// and format: until they are written, a reader refuses the file.
void LeaseTableWriter::initialise(uint64_t slotsInFile) {
  lt::store(header_->instance, instance_, std::memory_order_release);
  lt::store(header_->safeUntilNs, 0);
  lt::store(header_->sessionState, static_cast<uint64_t>(lt::SessionState::kUnknown));
  lt::store(header_->writerPid, static_cast<uint64_t>(getpid()));
  // Slots past the old end are zero already: Free, generation 0, never given to a lease.
  for (uint64_t i = 0; i < slotsInFile; ++i) {
    lt::Slot& s = slots_[i];
    if (lt::load(s.seq) & 1) lt::store(s.seq, lt::load(s.seq) + 1);  // a writer died mid-write
    lt::beginWrite(s);
    lt::store(s.generation, lt::load(s.generation) + 1);
    lt::store(s.token, 0);
    lt::store(s.validUntilNs, 0);
    lt::store(s.state, static_cast<uint64_t>(lt::SlotState::kFree));
    copyName(s, {});
    lt::endWrite(s);
  }
  lt::store(header_->capacity, capacity_);
  lt::store(header_->format, lt::kFormat);
  lt::store(header_->magic, lt::kMagic, std::memory_order_release);
}

LeaseTableWriter::~LeaseTableWriter() { setSession(lt::SessionState::kUnknown, TimePoint{}); }

void LeaseTableWriter::removeIfCreated() const {
  struct stat now {};
  if (created_ && lstat(path_.c_str(), &now) == 0 && now.st_dev == file_.st_dev &&
      now.st_ino == file_.st_ino) {
    unlink(path_.c_str());
  }
}

std::optional<TablePlace> LeaseTableWriter::hold(uint64_t lease, uint64_t token,
                                                 TimePoint validUntil, std::string_view name) {
  uint32_t index;
  if (!free_.empty()) {
    index = free_.front();
    free_.pop_front();
  } else if (fresh_ < capacity_) {
    index = static_cast<uint32_t>(fresh_++);
  } else {
    return std::nullopt;
  }
  lt::Slot& s = slots_[index];
  uint64_t generation = lt::load(s.generation) + 1;
  lt::beginWrite(s);
  lt::store(s.generation, generation);
  lt::store(s.token, token);
  lt::store(s.validUntilNs, ns(validUntil));
  lt::store(s.state, static_cast<uint64_t>(lt::SlotState::kHeld));
  copyName(s, name);
  lt::endWrite(s);
  slotOf_[lease] = index;
  return TablePlace{index, generation};
}

void LeaseTableWriter::renew(uint64_t lease, TimePoint validUntil) {
  auto it = slotOf_.find(lease);
  if (it == slotOf_.end()) return;
  lt::Slot& s = slots_[it->second];
  lt::beginWrite(s);
  lt::store(s.validUntilNs, ns(validUntil));
  lt::endWrite(s);
}

void LeaseTableWriter::end(uint64_t lease, lt::SlotState how) {
  auto it = slotOf_.find(lease);
  if (it == slotOf_.end()) return;
  lt::Slot& s = slots_[it->second];
  lt::beginWrite(s);
  lt::store(s.state, static_cast<uint64_t>(how));
  lt::store(s.validUntilNs, 0);
  lt::endWrite(s);
  free_.push_back(it->second);
  slotOf_.erase(it);
}

std::optional<TablePlace> LeaseTableWriter::placeOf(uint64_t lease) const {
  auto it = slotOf_.find(lease);
  if (it == slotOf_.end()) return std::nullopt;
  return TablePlace{it->second, lt::load(slots_[it->second].generation)};
}

void LeaseTableWriter::setSession(lt::SessionState state, TimePoint safeUntil) {
  lt::store(header_->safeUntilNs, ns(safeUntil), std::memory_order_release);
  lt::store(header_->sessionState, static_cast<uint64_t>(state), std::memory_order_release);
}

}  // namespace fencekeeper::shm
