#include "client_lib/src/pollable_flag.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

namespace fencekeeper::internal {

namespace {
void raise(int fd) {
  uint64_t one = 1;
  (void)!write(fd, &one, sizeof one);  // (a full counter is readable anyway)
}

void drain(int fd) {
  uint64_t count;
  (void)!read(fd, &count, sizeof count);  // nonblocking: EAGAIN when not set
}
}  // namespace

PollableFlag::~PollableFlag() {
  if (fd_ >= 0) close(fd_);
}

void PollableFlag::set() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (set_) return;
  set_ = true;
  if (fd_ >= 0) raise(fd_);
}

void PollableFlag::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!set_) return;
  set_ = false;
  if (fd_ >= 0) drain(fd_);
}

bool PollableFlag::isSet() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return set_;
}

int PollableFlag::fd() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ < 0) {
    fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd_ >= 0 && set_) raise(fd_);
  }
  return fd_;
}

}  // namespace fencekeeper::internal
