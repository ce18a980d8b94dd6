// A JSON string literal for any bytes: log messages carry lock names, owner labels and peer
// input, which may hold quotes, control characters or invalid UTF-8.
#pragma once

#include <spdlog/common.h>

#include <string_view>

namespace fencekeeper::logging {

// Appends `text` as a quoted JSON string: `"` and `\` escaped, control characters as \n, \t, ...
// or \u00XX, each maximal invalid UTF-8 subpart replaced by U+FFFD (Unicode's recommended
// practice), valid UTF-8 kept as is.
void appendJsonString(std::string_view text, spdlog::memory_buf_t& out);

}  // namespace fencekeeper::logging
