#include "client_lib/cli/elect_command.h"

#include <csignal>
#include <cstdio>

#include "client_lib/cli/exit_codes.h"
#include "client_lib/cli/query_commands.h"

namespace fencekeeper {
int electCommand(const SidecarAddress& sidecar, const LockArgs& args, bool rerun) {
  // Blocked before any client thread starts: lockCommand takes them from its signalfd.
  sigset_t handled;
  sigemptyset(&handled);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&handled, sig);
  sigprocmask(SIG_BLOCK, &handled, nullptr);
  // Who leads, for the people watching the standbys: its own connection, kept while campaigning.
  auto observer = connectOrReport(sidecar);
  if (!observer) return kExitUnavailable;
  Status s;
  auto watch = observer->watchHolder(
      args.name,
      [name = args.name](const HolderChange& change) {
        std::string line = describeHolderChange(name, change, false);
        std::fprintf(stderr, "fencectl: elect: %s\n", line.c_str());
      },
      &s);
  if (!watch) {
    std::fprintf(stderr, "fencectl: elect %s: %s\n", args.name.c_str(), s.message.c_str());
    return exitCodeFor(s);
  }
  LockArgs campaign = args;
  campaign.wait = kWaitForever;  // standing by keeps its place in the queue
  while (true) {
    int code = lockCommand(sidecar, campaign);
    if (code != kExitLeaseLost || !rerun) return code;
    std::fprintf(stderr, "fencectl: elect %s: leadership lost; campaigning again\n",
                 args.name.c_str());
  }
}

}  // namespace fencekeeper
