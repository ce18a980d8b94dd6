#include "sidecar/devzk/proc_state.h"

#include <signal.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace fencekeeper::devzk {
namespace {

namespace fs = std::filesystem;

constexpr std::chrono::milliseconds kPollInterval{20};

char stateIn(const fs::path& statPath) {
  std::ifstream in(statPath);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string stat = ss.str();
  // The command name in parentheses may hold spaces: the state follows the last ')'.
  size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return 0;
  return stat[close + 2];
}

}  // namespace

char procState(pid_t pid) { return stateIn("/proc/" + std::to_string(pid) + "/stat"); }

bool processGone(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  char state = procState(pid);
  return state == 0 || state == 'Z' || state == 'X';
}

bool waitAllThreadsStopped(pid_t pid, std::chrono::steady_clock::time_point deadline) {
  fs::path tasks = "/proc/" + std::to_string(pid) + "/task";
  for (;;) {
    bool allStopped = true;
    std::error_code ec;
    for (const auto& task : fs::directory_iterator(tasks, ec)) {
      char state = stateIn(task.path() / "stat");
      if (state != 'T' && state != 't' && state != 0) {
        allStopped = false;
        break;
      }
    }
    if (ec) return false;
    if (allStopped) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(kPollInterval);
  }
}

long procStatusKiB(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::atol(line.c_str() + field.size() + 1);
  }
  return 0;
}

}  // namespace fencekeeper::devzk
