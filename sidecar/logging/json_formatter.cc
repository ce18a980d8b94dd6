#include "sidecar/logging/json_formatter.h"

#include <spdlog/fmt/fmt.h>

#include <ctime>

#include "common/json_string.h"
#include "sidecar/logging/line_fields.h"

namespace fencekeeper::logging {

namespace {

void append(spdlog::memory_buf_t& out, std::string_view s) {
  out.append(s.data(), s.data() + s.size());
}

// RFC 3339 in UTC with milliseconds: 2026-12-03T16:50:56.123Z.
void appendTime(spdlog::log_clock::time_point time, spdlog::memory_buf_t& out) {
  auto sinceEpoch = time.time_since_epoch();
  auto seconds = std::chrono::floor<std::chrono::seconds>(sinceEpoch);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(sinceEpoch - seconds).count();
  std::time_t t = seconds.count();
  std::tm utc{};
  gmtime_r(&t, &utc);
  fmt::format_to(std::back_inserter(out), "\"{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z\"",
                 utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min,
                 utc.tm_sec, ms);
}

void appendMember(std::string_view key, spdlog::memory_buf_t& out) {
  out.push_back(',');
  appendJsonString(key, out);
  out.push_back(':');
}

}  // namespace

void JsonFormatter::format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) {
  const LineFields* line = currentLineFields();
  append(dest, "{\"time\":");
  appendTime(msg.time, dest);
  appendMember("level", dest);
  auto level = spdlog::level::to_string_view(msg.level);
  appendJsonString({level.data(), level.size()}, dest);
  appendMember("event", dest);
  appendJsonString(line ? line->event : "log", dest);
  appendMember("msg", dest);
  appendJsonString({msg.payload.data(), msg.payload.size()}, dest);
  if (line) {
    for (const LineField& field : line->fields) {
      appendMember(field.key, dest);
      if (auto* text = std::get_if<std::string_view>(&field.value)) {
        appendJsonString(*text, dest);
      } else if (auto* n = std::get_if<int64_t>(&field.value)) {
        fmt::format_to(std::back_inserter(dest), "{}", *n);
      } else {
        fmt::format_to(std::back_inserter(dest), "{}", std::get<uint64_t>(field.value));
      }
    }
  }
  append(dest, "}\n");
}

std::unique_ptr<spdlog::formatter> JsonFormatter::clone() const {
  return std::make_unique<JsonFormatter>();
}

}  // namespace fencekeeper::logging
