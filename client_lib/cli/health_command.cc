#include "client_lib/cli/health_command.h"

#include <cstdio>

#include "client_lib/cli/exit_codes.h"
#include "client_lib/cli/text_table.h"
#include "fencekeeper/status_socket.h"

namespace fencekeeper {

int healthCommand(const SidecarAddress& sidecar, const HealthArgs& args) {
  std::string path =
      args.statusSocket.empty() ? defaultStatusSocketPath(sidecar.socket) : args.statusSocket;
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

}  // namespace fencekeeper
