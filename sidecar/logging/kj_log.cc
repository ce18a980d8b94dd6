#include "sidecar/logging/kj_log.h"

#include <spdlog/spdlog.h>

namespace fencekeeper::logging {

namespace {

spdlog::level::level_enum levelOf(kj::LogSeverity severity) {
  switch (severity) {
    case kj::LogSeverity::INFO:
      return spdlog::level::info;
    case kj::LogSeverity::WARNING:
      return spdlog::level::warn;
    case kj::LogSeverity::ERROR:
      return spdlog::level::err;
    case kj::LogSeverity::FATAL:
      return spdlog::level::critical;
    case kj::LogSeverity::DBG:
      return spdlog::level::debug;
  }
  return spdlog::level::err;
}

}  // namespace

void KjLogToSpdlog::logMessage(kj::LogSeverity severity, const char* file, int line,
                               int /*contextDepth*/, kj::String&& text) {
  spdlog::log(levelOf(severity), "kj {}:{}: {}", file, line, text.cStr());
}

}  // namespace fencekeeper::logging
