// `fencectl lock NAME ... -- CMD`: runs CMD under a fenced lease (exec mode).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "client_lib/cli/sidecar_errors.h"
#include "fencekeeper/client.h"

namespace fencekeeper {

struct LockArgs {
  std::string name;
  Millis ttl{30'000};
  Millis wait{0};
  std::string owner;
  // --shared, --permits N: the lease's mode (exclusive by default).
  LockMode mode = LockMode::kExclusive;
  uint32_t permits = 0;
  // --at-risk-signal SIG: sent to CMD's group when the lease gets at risk (jeopardy); 0: none.
  int atRiskSignal = 0;
  std::optional<Millis> grace;
  // false (--no-pid-namespace): the supervisor and CMD stay in fencectl's PID namespace.
  bool pidNamespace = true;
  std::vector<std::string> command;
};

// Runs CMD under the lease; returns fencectl's exit code (see the usage text).
int lockCommand(const SidecarAddress& sidecar, const LockArgs& args);

}  // namespace fencekeeper
