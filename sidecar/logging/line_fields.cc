#include "sidecar/logging/line_fields.h"

#include <spdlog/spdlog.h>

namespace fencekeeper::logging {

namespace {
thread_local const LineFields* current = nullptr;
}  // namespace

const LineFields* currentLineFields() { return current; }

void logWithFields(spdlog::level::level_enum level, const LineFields& fields,
                   std::string_view msg) {
  struct Scope {
    const LineFields* previous;
    ~Scope() { current = previous; }
  } scope{current};
  current = &fields;
  spdlog::log(level, "{}", msg);
}

}  // namespace fencekeeper::logging
