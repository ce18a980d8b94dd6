// Parses the durations people type in flags: "250ms", "2s", "1m", "1h" (a bare number is ms).
#pragma once

#include <optional>
#include <string_view>

#include "common/clock.h"

namespace fencekeeper {

std::optional<Millis> parseDuration(std::string_view text);

}  // namespace fencekeeper
