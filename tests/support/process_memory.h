// A process's resident memory, from /proc, for tests that bound what a flood costs the sidecar.
#pragma once

#include <sys/types.h>

#include <fstream>
#include <string>

namespace fencekeeper::testing {

// VmRSS of `pid` in KiB; 0 when it cannot be read (the process is gone).
inline long rssKiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

}  // namespace fencekeeper::testing
