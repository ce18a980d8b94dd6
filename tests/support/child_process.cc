#include "tests/support/child_process.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "sidecar/devzk/proc_state.h"
#include "sidecar/devzk/spawn.h"
#include "tests/support/wait.h"

extern char** environ;

namespace fencekeeper::testing {

namespace {
constexpr std::chrono::milliseconds kFreezeWait{5000};
}  // namespace

ChildProcess::ChildProcess(std::vector<std::string> argv, std::string logPath,
                           std::vector<std::string> extraEnv, bool newGroup)
    : logPath_(std::move(logPath)) {
  devzk::SpawnSpec spec;
  spec.argv = std::move(argv);
  // An extra entry replaces an inherited one of the same name (getenv finds the first).
  auto nameOf = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  for (char** e = environ; *e; ++e) {
    std::string entry = *e;
    bool replaced = std::any_of(extraEnv.begin(), extraEnv.end(), [&](const std::string& extra) {
      return nameOf(extra) == nameOf(entry);
    });
    if (!replaced) spec.env.push_back(std::move(entry));
  }
  spec.env.insert(spec.env.end(), extraEnv.begin(), extraEnv.end());
  spec.outputPath = logPath_;
  if (newGroup) spec.group = devzk::SpawnSpec::Group::kNewGroup;
  spec.dieWithParent = true;
  pid_ = devzk::spawnProcess(spec);
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

void ChildProcess::freeze() {
  signal(SIGSTOP);
  if (!devzk::waitAllThreadsStopped(pid_, std::chrono::steady_clock::now() + kFreezeWait)) {
    throw std::runtime_error("pid " + std::to_string(pid_) + " did not stop");
  }
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

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string ChildProcess::log() const { return readFile(logPath_); }

}  // namespace fencekeeper::testing
