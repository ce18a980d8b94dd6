#include "sidecar/devzk/spawn.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace fencekeeper::devzk {
namespace {

// The executable for `name`, searched on PATH like execvp would, but before the fork.
std::string resolve(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  for (;;) {
    size_t end = dirs.find(':', start);
    std::string dir = dirs.substr(start, end == std::string::npos ? end : end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (end == std::string::npos) return name;  // exec fails with ENOENT: reported as such
    start = end + 1;
  }
}

// In the child: reports `err` through the pipe and ends. Async-signal-safe.
[[noreturn]] void fail(int pipeFd, int err) {
  ssize_t ignored = ::write(pipeFd, &err, sizeof err);
  (void)ignored;
  ::_exit(127);
}

// In the child, between fork and exec: async-signal-safe calls only.
[[noreturn]] void becomeChild(const SpawnSpec& spec, const char* file, char* const* argv,
                              char* const* envp, pid_t parent, int pipeFd) {
  if (spec.dieWithParent) {
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail(pipeFd, errno);
    if (::getppid() != parent) ::_exit(1);  // the parent died before the prctl
  }
  if (spec.group == SpawnSpec::Group::kNewSession && ::setsid() < 0) fail(pipeFd, errno);
  if (spec.group == SpawnSpec::Group::kNewGroup && ::setpgid(0, 0) != 0) fail(pipeFd, errno);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);  // EINVAL: reserved
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (!spec.stdinPath.empty()) {
    int fd = ::open(spec.stdinPath.c_str(), O_RDONLY);
    if (fd < 0 || ::dup2(fd, 0) < 0) fail(pipeFd, errno);
    if (fd != 0) ::close(fd);
  }
  if (!spec.outputPath.empty()) {
    int fd = ::open(spec.outputPath.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0 || ::dup2(fd, 1) < 0 || ::dup2(fd, 2) < 0) fail(pipeFd, errno);
    if (fd > 2) ::close(fd);
  }
  if (spec.runAsId >= 0) {
    auto id = static_cast<uid_t>(spec.runAsId);
    if (::setgroups(0, nullptr) != 0 || ::setgid(id) != 0 || ::setuid(id) != 0) {
      fail(pipeFd, errno);
    }
  }
  if (!spec.workDir.empty() && ::chdir(spec.workDir.c_str()) != 0) fail(pipeFd, errno);
  if (spec.closeOtherFds) {
    // Keeps the report pipe (close-on-exec) until the exec.
    if (pipeFd > 3) ::close_range(3, pipeFd - 1, 0);
    ::close_range(pipeFd + 1, ~0U, 0);
  }
  ::execve(file, argv, envp);
  fail(pipeFd, errno);
}

}  // namespace

pid_t spawnProcess(const SpawnSpec& spec) {
  if (spec.argv.empty()) throw std::invalid_argument("spawnProcess: empty argv");
  // Everything the child needs is built here: after the fork it may not allocate.
  std::string file = resolve(spec.argv[0]);
  std::vector<std::string> strings = spec.argv;
  strings.insert(strings.end(), spec.env.begin(), spec.env.end());
  std::vector<char*> argv, envp;
  for (size_t i = 0; i < spec.argv.size(); ++i) argv.push_back(strings[i].data());
  argv.push_back(nullptr);
  for (size_t i = spec.argv.size(); i < strings.size(); ++i) envp.push_back(strings[i].data());
  envp.push_back(nullptr);

  // The child writes its errno here if it cannot exec; the exec closes it otherwise.
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  }
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) becomeChild(spec, file.c_str(), argv.data(), envp.data(), parent, report[1]);
  int forkErr = errno;
  ::close(report[1]);
  if (pid < 0) {
    ::close(report[0]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(forkErr));
  }
  int childErr = 0;
  ssize_t n;
  do {
    n = ::read(report[0], &childErr, sizeof childErr);
  } while (n < 0 && errno == EINTR);
  ::close(report[0]);
  if (n == static_cast<ssize_t>(sizeof childErr)) {
    ::waitpid(pid, nullptr, 0);
    throw std::runtime_error("cannot start " + spec.argv[0] + ": " + std::strerror(childErr));
  }
  return pid;
}

}  // namespace fencekeeper::devzk
