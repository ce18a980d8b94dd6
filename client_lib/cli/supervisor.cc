#include "client_lib/cli/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include "client_lib/cli/exit_codes.h"
#include "client_lib/cli/process_tree.h"

extern char** environ;

namespace fencekeeper {
namespace {

// One datagram from the supervisor: CMD started (its pid), could not start (errno), or ended or
// stopped (its wait status).
struct Report {
  enum Kind : int32_t { kStarted, kSpawnFailed, kWaitStatus } kind;
  int32_t value;
};

void send(int socket, Report::Kind kind, int32_t value) {
  Report r{kind, value};
  ssize_t n = ::send(socket, &r, sizeof r, MSG_NOSIGNAL);  // fencectl may be gone: no matter
  (void)n;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// CMD in a new process group (the terminal's foreground group, when `ttyFd` >= 0, before it
// runs: an interactive CMD reads stdin instead of stopping on SIGTTIN), signals as fencectl's
// caller left them but for those the supervisor or fencectl changed. Returns 0 or an errno.
int spawnCommand(char** command, int ttyFd, pid_t* pid) {
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty, defaults;
  sigemptyset(&empty);
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGTTOU, SIGPIPE, SIGCHLD}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_USEVFORK);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // The child runs it with every signal blocked, so SIGTTOU does not stop it from the background.
  if (ttyFd >= 0) posix_spawn_file_actions_addtcsetpgrp_np(&actions, ttyFd);
  int rc = posix_spawnp(pid, command[0], &actions, &attr, command, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return rc;
}

// The supervisor as the init of a new PID namespace (and mount namespace, for its own /proc):
// a fork-like clone, then exec, as posix_spawn would. The child makes only async-signal-safe
// calls: fencectl runs the client's I/O thread. -1 with `*err` when the kernel refuses.
pid_t spawnInOwnPidNamespace(char* const* argv, char* const* envp, int socket, int connection,
                             int* err) {
  long pid = syscall(SYS_clone, CLONE_NEWPID | CLONE_NEWNS | SIGCHLD, nullptr, nullptr, nullptr,
                     nullptr);
  if (pid == 0) {
    if (fcntl(socket, F_SETFD, 0) != 0 || fcntl(connection, F_SETFD, 0) != 0 ||
        setpgid(0, 0) != 0) {
      _exit(kExitInternal);
    }
    execve("/proc/self/exe", argv, envp);
    _exit(kExitInternal);
  }
  if (pid < 0) *err = errno;
  return static_cast<pid_t>(pid);
}

// The first child of single-threaded `parent`, as fencectl numbers it; -1 when it has none.
pid_t firstChild(pid_t parent) {
  std::ifstream in("/proc/" + std::to_string(parent) + "/task/" + std::to_string(parent) +
                   "/children");
  pid_t child = -1;
  return in >> child ? child : -1;
}

void reapAll(int socket, pid_t command) {
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG | WUNTRACED)) > 0) {
    if (pid == command) send(socket, Report::kWaitStatus, status);
  }
}

}  // namespace

std::unique_ptr<Supervisor> Supervisor::start(int connectionFd, int ttyFd,
                                              const std::vector<std::string>& command,
                                              const std::vector<std::string>& env,
                                              bool pidNamespace, std::string* error) {
  int pair[2];
  if (connectionFd < 0 || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    *error = std::string("cannot start the supervisor: ") +
             (connectionFd < 0 ? "no connection to the sidecar" : std::strerror(errno));
    return nullptr;
  }
  std::vector<std::string> args{"fencectl",
                                "__supervise",
                                std::to_string(pair[1]),
                                std::to_string(connectionFd),
                                std::to_string(ttyFd),
                                "--"};
  args.insert(args.end(), command.begin(), command.end());
  std::vector<std::string> envCopy = env;
  auto argv = pointers(args);
  auto envp = pointers(envCopy);
  pid_t pid = -1;
  int rc = 0;
  // On a terminal the supervisor gives the terminal back to fencectl's group should fencectl die:
  // from inside a namespace of its own it could not name that group.
  bool ownNamespace = pidNamespace && ttyFd < 0;
  if (ownNamespace) {
    pid = spawnInOwnPidNamespace(argv.data(), envp.data(), pair[1], connectionFd, &rc);
    if (pid < 0) {
      static bool warned = false;  // once a process: elect --rerun starts one a term
      if (!warned) {
        std::fprintf(stderr,
                     "fencectl: CMD runs without a PID namespace of its own (%s): should "
                     "fencectl and its supervisor both be killed, what CMD started outlives "
                     "them (docs/failure-modes.md)\n",
                     std::strerror(rc));
      }
      warned = true;
      ownNamespace = false;
    }
  }
  if (!ownNamespace) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    // dup2 onto itself clears close-on-exec, in the child only (glibc 2.29, POSIX.1-2024).
    posix_spawn_file_actions_adddup2(&actions, pair[1], pair[1]);
    posix_spawn_file_actions_adddup2(&actions, connectionFd, connectionFd);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setpgroup(&attr, 0);  // out of reach of a signal to fencectl's group
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    rc = posix_spawn(&pid, "/proc/self/exe", &actions, &attr, argv.data(), envp.data());
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
  }
  close(pair[1]);
  if (rc != 0) {
    close(pair[0]);
    *error = std::string("cannot start the supervisor: ") + std::strerror(rc);
    return nullptr;
  }
  std::unique_ptr<Supervisor> supervisor(new Supervisor(pid, pair[0]));
  supervisor->ownPidNamespace_ = ownNamespace;
  Report first{};
  ssize_t n;
  do {
    n = recv(pair[0], &first, sizeof first, 0);
  } while (n < 0 && errno == EINTR);
  if (n != sizeof first || first.kind == Report::kWaitStatus) {
    *error = "the supervisor ended before it started CMD";
    return nullptr;
  }
  if (first.kind == Report::kSpawnFailed) supervisor->spawnError_ = first.value;
  if (first.kind == Report::kStarted) {
    // From inside its namespace the supervisor knows CMD as 2: fencectl reads its own number.
    supervisor->commandPid_ = ownNamespace ? firstChild(pid) : first.value;
  }
  return supervisor;
}

Supervisor::~Supervisor() {
  close(socket_);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (waitpid(pid_, nullptr, WNOHANG) == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

Supervisor::Event Supervisor::read(int* waitStatus) {
  Report r{};
  ssize_t n = recv(socket_, &r, sizeof r, MSG_DONTWAIT);
  if (n == sizeof r && r.kind == Report::kWaitStatus) {
    *waitStatus = r.value;
    return WIFSTOPPED(r.value) ? Event::kStopped : Event::kExited;
  }
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return Event::kGone;
  return Event::kNone;
}

int superviseMain(int argc, char** argv) {
  if (argc < 7 || std::strcmp(argv[5], "--") != 0) {
    std::fprintf(stderr, "fencectl: __supervise is fencectl's own mode\n");
    return kExitUsage;
  }
  int socket = std::atoi(argv[2]), connection = std::atoi(argv[3]), tty = std::atoi(argv[4]);
  char** command = argv + 6;
  // Only fencectl's end ends the supervisor; CMD must not inherit its descriptors.
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGTTOU, SIGPIPE}) signal(sig, SIG_IGN);
  sigset_t children;
  sigemptyset(&children);
  sigaddset(&children, SIGCHLD);
  sigprocmask(SIG_SETMASK, &children, nullptr);
  int sigFd = signalfd(-1, &children, SFD_CLOEXEC | SFD_NONBLOCK);
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0 || sigFd < 0 ||
      fcntl(socket, F_SETFD, FD_CLOEXEC) != 0 || fcntl(connection, F_SETFD, FD_CLOEXEC) != 0) {
    std::perror("fencectl supervisor");
    return kExitInternal;  // without a report: fencectl says so and ends
  }
  // The init of a PID namespace of its own (Supervisor::start): a /proc of that namespace, so
  // that CMD's /proc/$$ is CMD, in mounts private to it, so that nothing of it reaches the host.
  const bool init = getpid() == 1;
  if (init && mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0) {
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
  }
  pid_t home = tty >= 0 ? tcgetpgrp(tty) : -1;  // fencectl's group, in the foreground
  pid_t pid = -1;
  if (int rc = spawnCommand(command, tty, &pid); rc != 0) {
    send(socket, Report::kSpawnFailed, rc);
    return 0;
  }
  send(socket, Report::kStarted, pid);
  while (true) {
    pollfd fds[2] = {{socket, POLLIN, 0}, {sigFd, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
    signalfd_siginfo info;
    while (::read(sigFd, &info, sizeof info) == sizeof info) {
    }
    reapAll(socket, pid);
    if (fds[0].revents) break;  // fencectl never writes: its end closed, it is done or dead
  }
  if (init) {
    kill(-1, SIGKILL);  // from a namespace's init: every other process of the namespace
    int status;
    for (pid_t p; (p = waitpid(-1, &status, 0)) > 0 || (p < 0 && errno == EINTR);) {
      if (p == pid) send(socket, Report::kWaitStatus, status);
    }
  } else {
    killTree(getpid());
  }
  reapAll(socket, pid);
  // fencectl gives the terminal back when it ends; if it died, its group gets it (if it lives).
  if (tty >= 0 && tcgetpgrp(tty) == pid) tcsetpgrp(tty, home);
  close(connection);  // only now may the sidecar see the connection close and release the lease
  return 0;
}

}  // namespace fencekeeper
