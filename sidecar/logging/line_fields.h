// The structured fields of one log line (an event's lock, token, client, ...). The JSON format
// writes them as members beside `msg`; the text format has them in its message already.
#pragma once

#include <spdlog/common.h>

#include <cstdint>
#include <string_view>
#include <variant>
#include <vector>

namespace fencekeeper::logging {

struct LineField {
  std::string_view key;
  std::variant<std::string_view, int64_t, uint64_t> value;
};

struct LineFields {
  std::string_view event;  // "grant", "lost", ...; a line logged without fields is a "log"
  std::vector<LineField> fields;
};

// The fields of the line this thread is logging now, or null. They travel beside spdlog, in a
// thread-local (as spdlog's own MDC does, which came after Debian 12's 1.10): its sinks are
// synchronous, so the formatter runs on the logging thread, inside the call.
const LineFields* currentLineFields();

// Logs `msg` at `level` with `fields` attached.
void logWithFields(spdlog::level::level_enum level, const LineFields& fields, std::string_view msg);

}  // namespace fencekeeper::logging
