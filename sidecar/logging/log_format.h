// --log-format: how every line of the sidecar's log is written (text or JSON, docs/operations.md).
#pragma once

#include <string_view>

namespace fencekeeper::logging {

// "text" (the default): `2026-12-03T16:50:56.123 info grant lock=...`, the time in local time;
// "json": one object a line (json_formatter.h). Call before anything logs.
void useLogFormat(std::string_view format);

// A line the operator needs whatever the log level (the --dev connect string), on stdout: as
// is in the text format, a JSON object (level info) in the JSON format.
void announce(std::string_view line);

}  // namespace fencekeeper::logging
