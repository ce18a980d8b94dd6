#include "client_lib/cli/sidecar_errors.h"

#include <cstdio>

#include "client_lib/cli/exit_codes.h"

namespace fencekeeper {

int exitCodeFor(const Status& s) {
  switch (s.code) {
    case ErrorCode::kInvalidName:
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kInvalidOwner:
    case ErrorCode::kModeConflict:
      return kExitUsage;
    case ErrorCode::kSidecarUnavailable:
    case ErrorCode::kInternal:
    case ErrorCode::kWrongThread:
      return kExitUnavailable;
    default:
      return kExitNotAcquired;  // timed out, ZooKeeper out of reach, limits, shutting down
  }
}

std::unique_ptr<Client> connectOrReport(const SidecarAddress& sidecar) {
  Status s;
  auto client = Client::connect(sidecar.socket, sidecar.options, &s);
  if (!client) std::fprintf(stderr, "fencectl: %s\n", s.message.c_str());
  return client;
}

}  // namespace fencekeeper
