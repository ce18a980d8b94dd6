// A flag that a poller can wait on: an eventfd readable while the flag is set, for poll(2), epoll,
// select and other runtimes' pollers (Go's, Python's asyncio, Java through JNA). The eventfd is
// made on first ask: nobody polls most leases, and they cost no system call. Thread-safe.
// Internal to the client library.
#pragma once

#include <mutex>

namespace fencekeeper::internal {

class PollableFlag {
 public:
  PollableFlag() = default;
  ~PollableFlag();
  PollableFlag(const PollableFlag&) = delete;
  PollableFlag& operator=(const PollableFlag&) = delete;

  void set();
  void clear();
  bool isSet() const;
  // The eventfd, readable while set; -1 if the system refused one. Owned here: never read or
  // close it.
  int fd();

 private:
  mutable std::mutex mutex_;
  int fd_ = -1;
  bool set_ = false;
};

}  // namespace fencekeeper::internal
