// Starting a child process from a process that may run a ZooKeeper C client (or any threads):
// fork, then only async-signal-safe calls until exec, so no lock another thread held is needed.
// Shared by the ZooKeeper servers here and the tests' child processes.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace fencekeeper::devzk {

struct SpawnSpec {
  std::vector<std::string> argv;  // argv[0] looked up on PATH unless it holds a '/'
  std::vector<std::string> env;   // the whole environment ("KEY=VALUE")
  std::string stdinPath;          // opened read-only as stdin; empty: inherited
  std::string outputPath;         // stdout and stderr appended to it; empty: inherited
  std::string workDir;            // empty: the caller's
  bool closeOtherFds = false;     // close every fd above 2
  enum class Group { kInherit, kNewGroup, kNewSession } group = Group::kInherit;
  // SIGKILL the child when the spawning *thread* ends (PR_SET_PDEATHSIG), so a test that crashes
  // leaves nothing running. Only for children that must not outlive their parent; spawn them
  // from a thread that lives as long as they should (a test's main thread).
  bool dieWithParent = false;
  // >= 0: the child runs as this uid, with the same number as its gid and no supplementary
  // groups (set after its output file is opened), so that iptables can tell its packets apart.
  int runAsId = -1;
};

// Starts the child with an empty signal mask and default dispositions (the caller may block
// signals for a signalfd or ignore SIGPIPE). Throws std::runtime_error when it cannot be
// started (exec failed, say), after reaping it.
pid_t spawnProcess(const SpawnSpec& spec);

}  // namespace fencekeeper::devzk
