// The JSON log format: every line one JSON object, {"time", "level", "event", "msg", and the
// line's fields (line_fields.h)}. Installed as the sinks' formatter, it covers every spdlog call.
#pragma once

#include <spdlog/formatter.h>

namespace fencekeeper::logging {

class JsonFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override;
  std::unique_ptr<spdlog::formatter> clone() const override;
};

}  // namespace fencekeeper::logging
