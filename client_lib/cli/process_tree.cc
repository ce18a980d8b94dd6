#include "client_lib/cli/process_tree.h"

#include <dirent.h>
#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

namespace fencekeeper {
namespace {

struct ProcessInfo {
  pid_t pid;
  pid_t ppid;
  bool zombie;
};

std::vector<ProcessInfo> readProcesses() {
  std::vector<ProcessInfo> out;
  DIR* proc = opendir("/proc");
  if (!proc) return out;
  while (dirent* entry = readdir(proc)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    std::ifstream stat(std::string("/proc/") + entry->d_name + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;  // gone meanwhile
    auto close = line.rfind(')');             // after "pid (comm) ", comm may hold anything
    if (close == std::string::npos || close + 2 > line.size()) continue;
    std::istringstream fields(line.substr(close + 2));
    char state;
    long ppid;
    if (!(fields >> state >> ppid)) continue;
    out.push_back(
        {static_cast<pid_t>(std::atol(entry->d_name)), static_cast<pid_t>(ppid), state == 'Z'});
  }
  closedir(proc);
  return out;
}

void signalAll(const std::vector<pid_t>& pids, int sig) {
  for (pid_t pid : pids) kill(pid, sig);
}

}  // namespace

std::vector<pid_t> liveDescendants(pid_t root) {
  auto processes = readProcesses();
  std::multimap<pid_t, const ProcessInfo*> children;
  for (auto& p : processes) children.emplace(p.ppid, &p);
  std::vector<pid_t> live;
  // A zombie's children were re-parented when it died: only live processes have descendants.
  std::vector<pid_t> todo{root};
  while (!todo.empty()) {
    pid_t parent = todo.back();
    todo.pop_back();
    auto [begin, end] = children.equal_range(parent);
    for (auto it = begin; it != end; ++it) {
      if (it->second->zombie) continue;
      live.push_back(it->second->pid);
      todo.push_back(it->second->pid);
    }
  }
  return live;
}

void killTree(pid_t root) {
  if (root <= 1) return;  // never init's tree, whoever asks
  // A process may fork until its SIGKILL lands: look again until nothing is left.
  for (auto live = liveDescendants(root); !live.empty(); live = liveDescendants(root)) {
    signalAll(live, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void endTree(pid_t root, std::chrono::milliseconds patience) {
  auto live = liveDescendants(root);
  if (live.empty()) return;
  signalAll(live, SIGTERM);
  signalAll(live, SIGCONT);
  auto deadline = std::chrono::steady_clock::now() + patience;
  while (!liveDescendants(root).empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  killTree(root);
}

}  // namespace fencekeeper
