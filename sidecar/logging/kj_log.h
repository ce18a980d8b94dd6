// What KJ and Cap'n Proto log (KJ_LOG, by default straight to stderr) goes through spdlog, so
// that every line of the sidecar's log has the one format --log-format chose.
#pragma once

#include <kj/exception.h>

namespace fencekeeper::logging {

// Active on the thread that constructs it (KJ keeps its callbacks per thread): the loop's.
class KjLogToSpdlog final : public kj::ExceptionCallback {
 public:
  void logMessage(kj::LogSeverity severity, const char* file, int line, int contextDepth,
                  kj::String&& text) override;
};

}  // namespace fencekeeper::logging
