#include "tests/fuzz/oracle.h"

#include <cstdio>
#include <cstdlib>

namespace fencekeeper::fuzz {

void oracleFailed(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz oracle failed: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace fencekeeper::fuzz
