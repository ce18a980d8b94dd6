#include "tests/support/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/support/wait.h"

extern char** environ;

namespace fencekeeper::testing {

ChildProcess::ChildProcess(std::vector<std::string> argv, std::string logPath,
                           std::vector<std::string> extraEnv, bool newGroup)
    : logPath_(std::move(logPath)) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.emplace_back(*e);
  for (auto& e : extraEnv) env.push_back(e);
  std::vector<char*> envp, args;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!logPath_.empty()) {
    posix_spawn_file_actions_addopen(&actions, 1, logPath_.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                     0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty, defaults;
  sigemptyset(&empty);
  sigfillset(&defaults);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (newGroup) {
    posix_spawnattr_setpgroup(&attr, 0);
    flags |= POSIX_SPAWN_SETPGROUP;
  }
  posix_spawnattr_setflags(&attr, flags);
  int rc = posix_spawnp(&pid_, args[0], &actions, &attr, args.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && status_ < 0) {
    ::kill(pid_, SIGCONT);
    ::kill(pid_, SIGKILL);
    reap(true);
  }
}

bool ChildProcess::reap(bool block) {
  if (status_ >= 0) return true;
  int status = 0;
  pid_t r = waitpid(pid_, &status, block ? 0 : WNOHANG);
  if (r != pid_) return false;
  status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return true;
}

bool ChildProcess::running() { return !reap(false); }

void ChildProcess::signal(int sig) {
  if (status_ < 0) ::kill(pid_, sig);
}

int ChildProcess::wait(std::chrono::milliseconds timeout) {
  if (!waitUntil([&] { return reap(false); }, timeout)) return -1;
  return status_;
}

int ChildProcess::stop(std::chrono::milliseconds grace) {
  signal(SIGCONT);
  signal(SIGTERM);
  if (wait(grace) >= 0) return status_;
  signal(SIGKILL);
  reap(true);
  return status_;
}

std::string ChildProcess::log() const {
  std::ifstream in(logPath_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace fencekeeper::testing
