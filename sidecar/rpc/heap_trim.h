// Gives the heap a closed connection freed back to the system. glibc returns freed memory only
// from the top of its heap, so what a connection's kept capabilities and queued replies held
// stayed resident after it closed (issue 24: 5.5 of 6 MiB after 5,000 capabilities), reused by
// the next connections but counted against the pod's memory limit. Loop thread.
#pragma once

#include <cstdint>

#include "common/clock.h"

namespace fencekeeper::rpc {

class HeapTrim {
 public:
  explicit HeapTrim(Timer& timer) : timer_(timer) {}
  ~HeapTrim();
  HeapTrim(const HeapTrim&) = delete;
  HeapTrim& operator=(const HeapTrim&) = delete;

  // A connection closed: trims once, a second later, however many close meanwhile (a flood of
  // connections costs one trim a second: malloc_trim walks every free chunk).
  void connectionClosed();

 private:
  Timer& timer_;
  uint64_t pending_ = 0;  // the scheduled trim's timer, 0: none
};

}  // namespace fencekeeper::rpc
