// What a fuzz target does when one of its oracles does not hold: say which, and abort (libFuzzer
// then keeps the input, and the corpus replay test fails).
#pragma once

#include <string>

namespace fencekeeper::fuzz {

[[noreturn]] void oracleFailed(const char* what, const std::string& detail);

}  // namespace fencekeeper::fuzz

#define FK_FUZZ_CHECK(cond, detail) \
  ((cond) ? (void)0 : ::fencekeeper::fuzz::oracleFailed(#cond, (detail)))
