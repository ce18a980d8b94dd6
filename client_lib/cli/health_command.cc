#include "client_lib/cli/health_command.h"

#include <cstdio>

#include "client_lib/cli/exit_codes.h"
#include "client_lib/cli/text_table.h"
#include "fencekeeper/status_socket.h"

namespace fencekeeper {
namespace {

// A whole answer of `get`: /status lists 1,000 leases by default (about 270 KiB), and /metrics
// with --metrics-lock-labels has series for 1,000 locks; the limit only stops a runaway.
constexpr size_t kMaxGetBody = 64 * 1024 * 1024;

std::string statusSocketOf(const SidecarAddress& sidecar, const std::string& given) {
  return given.empty() ? defaultStatusSocketPath(sidecar.socket) : given;
}

}  // namespace

int healthCommand(const SidecarAddress& sidecar, const HealthArgs& args) {
  std::string path = statusSocketOf(sidecar, args.statusSocket);
  const char* target = args.ready ? "/readyz" : "/healthz";
  HttpAnswer answer;
  Status s = getFromStatusSocket(path, target, args.timeout, &answer);
  if (!s.ok()) {
    std::fprintf(stderr, "fencectl: health: %s\n", s.message.c_str());
    return kExitUnhealthy;
  }
  std::string line = printable(answer.body.substr(0, answer.body.find('\n')));
  std::printf("%s\n", line.c_str());
  if (answer.code == 200) return 0;
  std::fprintf(stderr, "fencectl: health: %s answered %d on %s\n", path.c_str(), answer.code,
               target);
  return kExitUnhealthy;
}

int getCommand(const SidecarAddress& sidecar, const GetArgs& args) {
  std::string path = statusSocketOf(sidecar, args.statusSocket);
  HttpAnswer answer;
  Status s = getFromStatusSocket(path, args.target, args.timeout, kMaxGetBody, &answer);
  if (!s.ok()) {
    std::fprintf(stderr, "fencectl: get: %s\n", s.message.c_str());
    return kExitUnavailable;
  }
  // The body as served (a 503's says why), for a pipe as much as for a person.
  std::fwrite(answer.body.data(), 1, answer.body.size(), stdout);
  std::fflush(stdout);
  if (answer.code == 200) return 0;
  std::fprintf(stderr, "fencectl: get: %s answered %d on %s\n", path.c_str(), answer.code,
               args.target.c_str());
  return kExitUnhealthy;
}

}  // namespace fencekeeper
