// A JSON string literal for any bytes: log messages, owner labels and peer input may hold quotes,
// control characters or invalid UTF-8. Used by the sidecar's JSON log and fencectl's --json.
#pragma once

#include <string_view>

#include "common/utf8_text.h"

namespace fencekeeper {

// Appends `text` as a quoted JSON string: `"` and `\` escaped, control characters as \n, \t, ...
// or \u00XX, each maximal invalid UTF-8 subpart replaced by U+FFFD (Unicode's recommended
// practice), valid UTF-8 kept as is. `Buffer`: std::string or a fmt memory buffer (push_back and
// append(first, last)), so the log formatter writes in place.
template <typename Buffer>
void appendJsonString(std::string_view text, Buffer& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  auto append = [&](std::string_view s) { out.append(s.data(), s.data() + s.size()); };
  out.push_back('"');
  for (size_t at = 0; at < text.size();) {
    TextUnit unit = textUnitAt(text, at);
    at += unit.bytes.size();
    if (!unit.valid) {
      append(kReplacement);
    } else if (unit.codePoint >= 0x80) {
      append(unit.bytes);
    } else if (unit.codePoint == '"') {
      append("\\\"");
    } else if (unit.codePoint == '\\') {
      append("\\\\");
    } else if (unit.codePoint == '\b') {
      append("\\b");
    } else if (unit.codePoint == '\f') {
      append("\\f");
    } else if (unit.codePoint == '\n') {
      append("\\n");
    } else if (unit.codePoint == '\r') {
      append("\\r");
    } else if (unit.codePoint == '\t') {
      append("\\t");
    } else if (unit.codePoint < 0x20) {
      append("\\u00");
      out.push_back(kHex[unit.codePoint >> 4]);
      out.push_back(kHex[unit.codePoint & 0xF]);
    } else {
      out.push_back(static_cast<char>(unit.codePoint));
    }
  }
  out.push_back('"');
}

}  // namespace fencekeeper
