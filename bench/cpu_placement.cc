#include "bench/cpu_placement.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace fencekeeper::bench {
namespace {

// Every thread of `pid` (0: this process), each by its own id: an affinity is a thread's.
void placeProcess(pid_t pid, const cpu_set_t& cpus) {
  std::string tasks = "/proc/" + (pid == 0 ? std::string("self") : std::to_string(pid)) + "/task";
  DIR* dir = opendir(tasks.c_str());
  if (!dir) return;
  while (dirent* entry = readdir(dir)) {
    pid_t tid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (tid > 0) sched_setaffinity(tid, sizeof cpus, &cpus);  // a thread that ended meanwhile
  }
  closedir(dir);
}

}  // namespace

SeparateZkCore::SeparateZkCore(pid_t zk, std::vector<pid_t> others)
    : zk_(zk), others_(std::move(others)) {
  CPU_ZERO(&all_);
  if (sched_getaffinity(0, sizeof all_, &all_) != 0 || CPU_COUNT(&all_) < 2) return;
  cpu_set_t first, second;
  CPU_ZERO(&first);
  CPU_ZERO(&second);
  for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE && seen < 2; ++cpu) {
    if (!CPU_ISSET(cpu, &all_)) continue;
    CPU_SET(cpu, seen++ == 0 ? &first : &second);
  }
  placeProcess(zk_, first);
  for (pid_t pid : others_) placeProcess(pid, second);
  placeProcess(0, second);
  active_ = true;
}

SeparateZkCore::~SeparateZkCore() {
  if (!active_) return;
  placeProcess(zk_, all_);
  for (pid_t pid : others_) placeProcess(pid, all_);
  placeProcess(0, all_);
}

}  // namespace fencekeeper::bench
