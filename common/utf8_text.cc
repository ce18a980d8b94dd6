#include "common/utf8_text.h"

#include <cstdint>
#include <cstdio>

namespace fencekeeper {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

TextUnit textUnitAt(std::string_view text, size_t at) {
  auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  uint8_t lead = byte(at);
  if (lead < 0x80) return {text.substr(at, 1), true, lead};
  size_t length = 0;
  uint8_t low = 0x80, high = 0xBF;  // the range of the second byte
  char32_t value = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    value = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    value = lead & 0x0F;
    if (lead == 0xE0) low = 0xA0;   // no overlong forms
    if (lead == 0xED) high = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    value = lead & 0x07;
    if (lead == 0xF0) low = 0x90;   // no overlong forms
    if (lead == 0xF4) high = 0x8F;  // nothing above U+10FFFF
  } else {
    return {text.substr(at, 1), false, 0};
  }
  for (size_t k = 1; k < length; ++k) {
    uint8_t lo = k == 1 ? low : 0x80, hi = k == 1 ? high : 0xBF;
    if (at + k >= text.size() || byte(at + k) < lo || byte(at + k) > hi) {
      return {text.substr(at, k), false, 0};
    }
    value = (value << 6) | (byte(at + k) & 0x3F);
  }
  return {text.substr(at, length), true, value};
}

std::optional<std::string> labelTextProblem(std::string_view text) {
  for (size_t at = 0; at < text.size();) {
    TextUnit unit = textUnitAt(text, at);
    char why[160];
    if (!unit.valid) {
      std::snprintf(why, sizeof why,
                    "byte %zu (\\x%02x) is not valid UTF-8 (overlong forms, surrogates and values "
                    "above U+10FFFF are not either)",
                    at, static_cast<unsigned>(static_cast<uint8_t>(text[at])));
      return why;
    }
    if (isControl(unit.codePoint)) {
      std::snprintf(why, sizeof why,
                    "byte %zu is the control character U+%04X (no C0 or C1 control or DEL)", at,
                    static_cast<unsigned>(unit.codePoint));
      return why;
    }
    at += unit.bytes.size();
  }
  return std::nullopt;
}

std::string repairedLabelText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    TextUnit unit = textUnitAt(text, at);
    bool fit = unit.valid && !isControl(unit.codePoint);
    out += fit ? unit.bytes : kReplacement;
    at += unit.bytes.size();
  }
  return out;
}

}  // namespace fencekeeper
