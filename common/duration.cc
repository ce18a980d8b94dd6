#include "common/duration.h"

#include <charconv>
#include <cstdint>

namespace fencekeeper {

std::optional<Millis> parseDuration(std::string_view text) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data()) return std::nullopt;
  std::string_view unit(end, text.data() + text.size() - end);
  uint64_t factor;
  if (unit.empty() || unit == "ms") {
    factor = 1;
  } else if (unit == "s") {
    factor = 1000;
  } else if (unit == "m") {
    factor = 60'000;
  } else if (unit == "h") {
    factor = 3'600'000;
  } else {
    return std::nullopt;
  }
  constexpr uint64_t kMax = uint64_t{1} << 40;  // about 35 years: anything beyond is a typo
  if (value > kMax / factor) return std::nullopt;
  return Millis(value * factor);
}

}  // namespace fencekeeper
