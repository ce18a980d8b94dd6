// A child process for tests, started with devzk::spawnProcess (the ZooKeeper C client may run in
// the test process), stopped by PID, its output in a log file. It gets SIGKILL when the thread
// that started it ends (PR_SET_PDEATHSIG), so a crashed test leaves nothing running: start it
// from the test's own thread, not from a helper thread that ends before it should.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace fencekeeper::testing {

// The whole of a file (a log), empty if it cannot be read.
std::string readFile(const std::string& path);

class ChildProcess {
 public:
  // Starts argv[0] (looked up on PATH) with extra "KEY=VALUE" environment entries (replacing
  // inherited ones of those names), its stdout and stderr appended to `logPath` (or inherited
  // when empty). `newGroup` puts it in its own group.
  ChildProcess(std::vector<std::string> argv, std::string logPath,
               std::vector<std::string> extraEnv = {}, bool newGroup = false);
  // Kills (SIGKILL, after SIGCONT) and reaps the child if it still runs.
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  void signal(int sig);
  // SIGSTOP, and wait until every thread of it has stopped.
  void freeze();
  // Waits for the exit; returns the exit status (128 + signal when killed), or -1 on timeout.
  int wait(std::chrono::milliseconds timeout);
  // SIGTERM, wait; SIGKILL when it has not exited in `grace`. Returns the status.
  int stop(std::chrono::milliseconds grace = std::chrono::milliseconds(10000));
  const std::string& logPath() const { return logPath_; }
  std::string log() const;

 private:
  bool reap(bool block);
  pid_t pid_ = -1;
  int status_ = -1;
  std::string logPath_;
};

}  // namespace fencekeeper::testing
