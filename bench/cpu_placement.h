// What-if rows on where the processes run: ZooKeeper on a core of its own, the sidecar and the
// bench on another, as in a deployment where the ensemble runs on other machines.
#pragma once

#include <sched.h>
#include <sys/types.h>

#include <vector>

namespace fencekeeper::bench {

// While it lives, every thread of `zk` runs on the first CPU this process may use, and every
// thread of `others` and of this process on the second; the destructor lets them all run on
// every CPU this process could use before. active() is false (nothing moved) with one CPU.
class SeparateZkCore {
 public:
  SeparateZkCore(pid_t zk, std::vector<pid_t> others);
  ~SeparateZkCore();
  SeparateZkCore(const SeparateZkCore&) = delete;
  SeparateZkCore& operator=(const SeparateZkCore&) = delete;

  bool active() const { return active_; }

 private:
  pid_t zk_;
  std::vector<pid_t> others_;
  cpu_set_t all_;
  bool active_ = false;
};

}  // namespace fencekeeper::bench
