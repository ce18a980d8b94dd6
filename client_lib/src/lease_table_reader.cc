#include "client_lib/src/lease_table_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/interprocess/file_mapping.hpp>
#include <boost/interprocess/mapped_region.hpp>
#include <cerrno>
#include <cstring>

#include "common/socket_path.h"

namespace fencekeeper::internal {

namespace lt = lease_table;
namespace bip = boost::interprocess;

struct LeaseTableReader::Mapping {
  bip::file_mapping file;
  bip::mapped_region region;
};

namespace {

bool fail(std::string* why, const std::string& path, const std::string& reason) {
  if (why) *why = "lease table " + path + ": " + reason;
  return false;
}

// The file as a table may be: checked on an fd of our own before anything is mapped.
bool checkFile(int fd, const std::string& path, uid_t ownerUid, struct stat* st, std::string* why) {
  if (fstat(fd, st) != 0) return fail(why, path, std::string("fstat: ") + std::strerror(errno));
  if (!S_ISREG(st->st_mode)) return fail(why, path, "not a regular file");
  if (st->st_uid != ownerUid) {
    return fail(why, path,
                "owned by uid " + std::to_string(st->st_uid) + ", not the sidecar's uid " +
                    std::to_string(ownerUid));
  }
  if ((st->st_mode & 022) != 0) {
    return fail(why, path,
                "mode " + modeText(st->st_mode) + ": writable by others, who could forge it");
  }
  if (static_cast<uint64_t>(st->st_size) < lt::kHeaderBytes) {
    return fail(why, path, std::to_string(st->st_size) + " bytes: shorter than its header");
  }
  return true;
}

}  // namespace

std::unique_ptr<LeaseTableReader> LeaseTableReader::open(const std::string& path, uint64_t instance,
                                                         uid_t ownerUid, std::string* why) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    fail(why, path, std::string("cannot open: ") + std::strerror(errno));
    return nullptr;
  }
  struct stat st {};
  bool ok = checkFile(fd, path, ownerUid, &st, why);
  ::close(fd);
  if (!ok) return nullptr;
  auto mapping = std::make_unique<Mapping>();
  try {
    mapping->file = bip::file_mapping(path.c_str(), bip::read_only);
    // Boost opens the path again: it must still name the file checked above.
    struct stat mapped {};
    if (fstat(mapping->file.get_mapping_handle().handle, &mapped) != 0 ||
        mapped.st_dev != st.st_dev || mapped.st_ino != st.st_ino) {
      fail(why, path, "replaced while it was being opened");
      return nullptr;
    }
    mapping->region =
        bip::mapped_region(mapping->file, bip::read_only, 0, static_cast<size_t>(st.st_size));
  } catch (const bip::interprocess_exception& e) {
    fail(why, path, std::string("cannot map: ") + e.what());
    return nullptr;
  }
  const auto* header = static_cast<const lt::Header*>(mapping->region.get_address());
  if (lt::load(header->magic) != lt::kMagic) {
    fail(why, path, "no lease table (wrong magic)");
    return nullptr;
  }
  if (lt::load(header->format) != lt::kFormat) {
    fail(why, path,
         "layout " + std::to_string(lt::load(header->format)) + ", this client reads " +
             std::to_string(lt::kFormat));
    return nullptr;
  }
  uint64_t capacity = lt::load(header->capacity, std::memory_order_acquire);
  if (capacity > (static_cast<uint64_t>(st.st_size) - lt::kHeaderBytes) / lt::kSlotBytes) {
    fail(why, path,
         "truncated: " + std::to_string(st.st_size) + " bytes hold fewer than its " +
             std::to_string(capacity) + " slots");
    return nullptr;
  }
  if (lt::load(header->instance) != instance) {
    fail(why, path, "written by another sidecar instance");
    return nullptr;
  }
  return std::unique_ptr<LeaseTableReader>(
      new LeaseTableReader(path, std::move(mapping), instance, capacity));
}

LeaseTableReader::LeaseTableReader(std::string path, std::unique_ptr<Mapping> mapping,
                                   uint64_t instance, uint64_t capacity)
    : path_(std::move(path)),
      mapping_(std::move(mapping)),
      base_(static_cast<const char*>(mapping_->region.get_address())),
      instance_(instance),
      capacity_(capacity) {}

LeaseTableReader::~LeaseTableReader() = default;

uint64_t LeaseTableReader::validForNs(uint32_t index, uint64_t generation, uint64_t token,
                                      uint64_t nowNs) const {
  if (index >= capacity_) return 0;
  // The slot first, then the header: a restart's new instance is written before any slot is.
  auto view = lt::readConsistent(slot(index), false);
  if (!view) return 0;  // the writer kept the slot busy: err on the side of "not valid"
  std::atomic_thread_fence(std::memory_order_acquire);
  if (lt::load(header().instance) != instance_) return 0;
  return lt::validForNs(*view, generation, token, lt::load(header().safeUntilNs), nowNs);
}

bool LeaseTableReader::anyValid(std::string_view name, uint64_t token, uint64_t nowNs) const {
  if (lt::load(header().instance) != instance_) return false;
  uint64_t safeUntil = lt::load(header().safeUntilNs);
  for (uint32_t i = 0; i < capacity_; ++i) {
    auto view = lt::readConsistent(slot(i), true);
    if (!view || view->state != lt::SlotState::kHeld || view->token != token) continue;
    if (view->nameView() != name) continue;
    if (lt::validForNs(*view, view->generation, token, safeUntil, nowNs) > 0) return true;
  }
  return false;
}

}  // namespace fencekeeper::internal
