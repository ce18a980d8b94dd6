// fencectl's supervisor: the process that runs CMD, so that nothing of CMD outlives fencectl.
//
// fencectl starts it once the lease is granted, as its own binary in the hidden mode
// `fencectl __supervise` (posix_spawn then exec: fencectl already runs the client's I/O thread, and
// a fork without exec of a threaded process may only call async-signal-safe functions). The
// supervisor is a child subreaper in a process group of its own (a signal to fencectl's group
// does not reach it), starts CMD in a new process group, reaps everything, and keeps a duplicate
// of fencectl's connection to the sidecar. When fencectl dies in any way, its end of their socket
// closes; the supervisor SIGKILLs CMD's group and every descendant (those that left the group
// with setsid, and orphans, are re-parented to it), and only once all of them are dead closes its
// duplicate: the sidecar sees the connection close, and releases the lease, no earlier.
//
// Where the kernel allows it (root, or CAP_SYS_ADMIN), the supervisor is the init of a PID
// namespace of its own, with its own /proc: should fencectl and the supervisor both die (a
// `kill -9` of both, an OOM kill of the group), the kernel kills everything CMD started, which no
// process of ours could do any more. Elsewhere it runs without, and fencectl says so once.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

namespace fencekeeper {

// fencectl's side: owns the supervisor and its socket. Not thread-safe; one thread uses it.
class Supervisor {
 public:
  // Starts the supervisor, which runs `command` (found on PATH) with `env`, and waits for CMD's
  // start. `ttyFd` >= 0: CMD's group becomes that terminal's foreground group before CMD runs.
  // nullptr (with `*error`) when the supervisor itself could not start or answer.
  // `pidNamespace`: try a PID namespace of its own (see above).
  static std::unique_ptr<Supervisor> start(int connectionFd, int ttyFd,
                                           const std::vector<std::string>& command,
                                           const std::vector<std::string>& env, bool pidNamespace,
                                           std::string* error);
  // Closes the socket (the supervisor then kills what is left, lets go of the connection and
  // exits) and reaps the supervisor, waiting for that at most a second.
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // 0 when CMD runs; else the errno of its spawn (ENOENT: not found).
  int spawnError() const { return spawnError_; }
  pid_t pid() const { return pid_; }                // the supervisor's, the root of CMD's tree
  // CMD's pid, and its process group, in fencectl's PID namespace; -1 when CMD ended before
  // fencectl could read its number (from outside the supervisor's namespace).
  pid_t commandPid() const { return commandPid_; }
  bool inOwnPidNamespace() const { return ownPidNamespace_; }
  int fd() const { return socket_; }                // readable: read() has news

  enum class Event { kNone, kExited, kStopped, kGone };
  // kExited (once) or kStopped with CMD's wait status; kGone when the supervisor died (nothing
  // then watches over CMD's tree); kNone otherwise. Does not block.
  Event read(int* waitStatus);

 private:
  Supervisor(pid_t pid, int socket) : pid_(pid), socket_(socket) {}
  pid_t pid_;
  int socket_;
  int spawnError_ = 0;
  pid_t commandPid_ = -1;
  bool ownPidNamespace_ = false;
};

// The supervisor's side: `fencectl __supervise CTL_FD CONNECTION_FD TTY_FD -- CMD [ARG...]`, with
// CMD's environment. Returns its exit status.
int superviseMain(int argc, char** argv);

}  // namespace fencekeeper
