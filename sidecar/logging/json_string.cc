#include "sidecar/logging/json_string.h"

#include <cstdint>

namespace fencekeeper::logging {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

void append(spdlog::memory_buf_t& out, std::string_view s) {
  out.append(s.data(), s.data() + s.size());
}

// The length of the well-formed UTF-8 sequence at text[i] (Unicode table 3-7), or 0 when it is
// not one; `consumed` then says how many bytes form the maximal invalid subpart (at least 1).
size_t utf8Sequence(std::string_view text, size_t i, size_t& consumed) {
  auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  uint8_t lead = byte(i);
  size_t length = 0;
  uint8_t low = 0x80, high = 0xBF;  // the range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // no overlong forms
    if (lead == 0xED) high = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // no overlong forms
    if (lead == 0xF4) high = 0x8F;  // nothing above U+10FFFF
  } else {
    consumed = 1;
    return 0;
  }
  for (size_t k = 1; k < length; ++k) {
    uint8_t lo = k == 1 ? low : 0x80, hi = k == 1 ? high : 0xBF;
    if (i + k >= text.size() || byte(i + k) < lo || byte(i + k) > hi) {
      consumed = k;
      return 0;
    }
  }
  consumed = length;
  return length;
}

}  // namespace

void appendJsonString(std::string_view text, spdlog::memory_buf_t& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  size_t i = 0;
  while (i < text.size()) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      size_t consumed = 0;
      size_t length = utf8Sequence(text, i, consumed);
      append(out, length ? text.substr(i, length) : kReplacement);
      i += consumed;
      continue;
    }
    switch (c) {
      case '"':
        append(out, "\\\"");
        break;
      case '\\':
        append(out, "\\\\");
        break;
      case '\b':
        append(out, "\\b");
        break;
      case '\f':
        append(out, "\\f");
        break;
      case '\n':
        append(out, "\\n");
        break;
      case '\r':
        append(out, "\\r");
        break;
      case '\t':
        append(out, "\\t");
        break;
      default:
        if (c < 0x20) {
          append(out, "\\u00");
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 0xF]);
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
    ++i;
  }
  out.push_back('"');
}

}  // namespace fencekeeper::logging
