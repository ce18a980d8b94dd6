#include "sidecar/zk/c_client_log.h"

#include <spdlog/spdlog.h>
#include <zookeeper/zookeeper.h>

#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>

namespace fencekeeper::zk {

namespace {

// A stdio stream whose complete lines go to spdlog (glibc's fopencookie). glibc calls it under
// the stream's lock, which TSan does not see: `pending` gets a lock of its own too.
ssize_t writeLines(void* cookie, const char* data, size_t size) {
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  auto& pending = *static_cast<std::string*>(cookie);
  pending.append(data, size);
  size_t start = 0;
  for (size_t end; (end = pending.find('\n', start)) != std::string::npos; start = end + 1) {
    logCClientLine(pending.substr(start, end - start).c_str());
  }
  pending.erase(0, start);
  return static_cast<ssize_t>(size);
}

}  // namespace

void logCClientLine(const char* message) { spdlog::debug("zookeeper client: {}", message); }

void routeCClientLogStream() {
  static std::once_flag once;
  std::call_once(once, [] {
    static std::string pending;  // lives as long as the stream: the process
    FILE* stream =
        fopencookie(&pending, "w", cookie_io_functions_t{nullptr, writeLines, nullptr, nullptr});
    if (!stream) return;  // the library keeps stderr
    setvbuf(stream, nullptr, _IOLBF, 0);
    zoo_set_log_stream(stream);
  });
}

}  // namespace fencekeeper::zk
