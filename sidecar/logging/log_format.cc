#include "sidecar/logging/log_format.h"

#include <spdlog/spdlog.h>

#include <cstdio>

#include "sidecar/logging/json_formatter.h"

namespace fencekeeper::logging {

namespace {
bool json = false;
}  // namespace

void useLogFormat(std::string_view format) {
  json = format == "json";
  if (json) {
    spdlog::set_formatter(std::make_unique<JsonFormatter>());
  } else {
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  }
}

void announce(std::string_view line) {
  spdlog::memory_buf_t out;
  if (json) {
    JsonFormatter().format(spdlog::details::log_msg("", spdlog::level::info, line), out);
  } else {
    out.append(line.data(), line.data() + line.size());
    out.push_back('\n');
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
}

}  // namespace fencekeeper::logging
