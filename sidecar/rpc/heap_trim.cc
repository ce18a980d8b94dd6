#include "sidecar/rpc/heap_trim.h"

#include <malloc.h>
#include <spdlog/spdlog.h>

namespace fencekeeper::rpc {

HeapTrim::~HeapTrim() { timer_.cancel(pending_); }

void HeapTrim::connectionClosed() {
  if (pending_) return;
  pending_ = timer_.schedule(timer_.now() + Millis(1'000), [this] {
    pending_ = 0;
    auto start = timer_.now();
    bool released = malloc_trim(0) != 0;
    spdlog::debug("heap trimmed after connections closed: {} in {} us",
                  released ? "memory returned" : "nothing to return",
                  std::chrono::duration_cast<std::chrono::microseconds>(timer_.now() - start)
                      .count());
  });
}

}  // namespace fencekeeper::rpc
