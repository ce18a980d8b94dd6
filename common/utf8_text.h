// Text that crosses a trust boundary (owner labels from peers, node data from other ZooKeeper
// clients): UTF-8 decoding by Unicode's rules, the label rule the sidecar enforces, and repair of
// text nobody checked. Shared by the sidecar and the clients; pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fencekeeper {

// One piece of text: a well-formed UTF-8 sequence (Unicode table 3-7: no overlongs, surrogates
// or values above U+10FFFF), or else the maximal invalid subpart starting there (at least 1 byte).
struct TextUnit {
  std::string_view bytes;
  bool valid = false;
  char32_t codePoint = 0;  // when valid
};
// REQUIRES: at < text.size().
TextUnit textUnitAt(std::string_view text, size_t at);

// C0 controls, DEL and C1 controls: they move a terminal's cursor or start escape sequences.
constexpr bool isControl(char32_t c) { return c < 0x20 || (c >= 0x7F && c <= 0x9F); }

// Why `text` is not a fit owner label (valid UTF-8 without control characters), naming the byte
// offset and the rule it breaks; nullopt when it is fit. Length is the caller's bound.
std::optional<std::string> labelTextProblem(std::string_view text);

// `text` made fit: each maximal invalid subpart and each control character becomes U+FFFD.
std::string repairedLabelText(std::string_view text);

}  // namespace fencekeeper
