#include "client_lib/cli/lock_command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <future>
#include <thread>

#include "client_lib/cli/exit_codes.h"
#include "client_lib/cli/process_tree.h"
#include "client_lib/cli/sidecar_errors.h"
#include "client_lib/cli/supervisor.h"
#include "client_lib/src/client_internal.h"
#include "common/unique_fd.h"

extern char** environ;

namespace fencekeeper {
namespace {

using Clock = std::chrono::steady_clock;

// Once CMD's processes are gone, no call to the sidecar may hold fencectl longer than this: a
// scheduler waits on fencectl, and the sidecar may be frozen, or waiting on a frozen ZooKeeper.
constexpr Millis kCallBoundAfterCommand{1000};

Millis until(Clock::time_point t) {
  auto d = std::chrono::duration_cast<Millis>(t - Clock::now());
  return d.count() < 0 ? Millis(0) : d;
}

// True for a lock that was granted but lost before CMD could start: not a grant, queue again.
bool lostBeforeStart(const Status& s) {
  return s.code == ErrorCode::kExpired || s.code == ErrorCode::kLost ||
         s.code == ErrorCode::kNotHeld;
}

// Queues without blocking, so that a signal while waiting is answered at once: fencectl exits
// 128+N, no CMD runs, and closing the connection withdraws the request. Then confirms the grant
// with a renew, which proves the lease is still held and dates its validity from now: a grant
// that came in while fencectl (or its host) was stopped may be lost, or have no validity left.
std::unique_ptr<Lease> waitForLease(Client& client, const std::string& name,
                                    const AcquireOptions& options, int sigFd, Status* status) {
  auto request = client.acquireAsync(name, options);
  while (true) {
    pollfd fds[2] = {{sigFd, POLLIN, 0}, {request->fd(), POLLIN, 0}};
    poll(fds, 2, -1);
    if (fds[1].revents & POLLIN) break;
    signalfd_siginfo info{};
    while (read(sigFd, &info, sizeof info) == sizeof info) {
      std::fprintf(stderr, "fencectl: signal %u while waiting for %s; giving up\n", info.ssi_signo,
                   name.c_str());
      std::fflush(stderr);
      _exit(kExitSignalBase + static_cast<int>(info.ssi_signo));
    }
  }
  auto lease = request->wait(Millis(0), status);
  if (!lease) return nullptr;
  *status = lease->renew();
  return status->ok() ? std::move(lease) : nullptr;
}

// Releases, waiting at most `bound` for the answer. False when none came: the call still runs
// on a thread of its own, so the caller must end the process without destroying lease or client.
bool releaseWithin(Lease& lease, Millis bound, Status* out) {
  auto done = std::make_shared<std::promise<Status>>();
  auto answer = done->get_future();
  std::thread([&lease, done] { done->set_value(lease.release()); }).detach();
  if (answer.wait_for(bound) != std::future_status::ready) return false;
  *out = answer.get();
  return true;
}

// Ends fencectl after CMD's processes are gone: releases the lease (unless lost) within the
// bound, and exits with `code` either way. Without an answer the process ends at once: its
// connection (and the supervisor's duplicate) closes, which releases the lease too.
int releaseAndReturn(Lease& lease, const std::string& name, bool release, int code) {
  if (!release) return code;
  Status r;
  if (!releaseWithin(lease, kCallBoundAfterCommand, &r)) {
    std::fprintf(stderr,
                 "fencectl: release %s: no answer within %lld ms; closing the connection "
                 "instead\n",
                 name.c_str(), static_cast<long long>(kCallBoundAfterCommand.count()));
    std::fflush(nullptr);
    _exit(code);
  }
  if (!r.ok() && r.code != ErrorCode::kNotHeld) {
    std::fprintf(stderr, "fencectl: release %s: %s\n", name.c_str(), r.message.c_str());
  }
  return code;
}

// The terminal fencectl runs in the foreground of, or -1. Only then does CMD's group take the
// foreground: a fencectl started in the background must not take the terminal.
int foregroundTerminal() {
  for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
    if (isatty(fd) && tcgetpgrp(fd) == getpgrp()) return fd;
  }
  return -1;
}

std::vector<std::string> commandEnvironment(const LockArgs& args, const Lease& lease) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "FENCE_TOKEN=", 12) && std::strncmp(*e, "FENCE_LOCK=", 11) &&
        std::strncmp(*e, "FENCE_TTL_MS=", 13)) {
      env.emplace_back(*e);
    }
  }
  env.push_back("FENCE_TOKEN=" + std::to_string(lease.token()));
  env.push_back("FENCE_LOCK=" + args.name);
  env.push_back("FENCE_TTL_MS=" + std::to_string(args.ttl.count()));
  return env;
}

// Forwarded signals are followed by SIGCONT: a stopped CMD must see them.
void signalGroup(pid_t group, int sig) {
  if (group <= 0) return;  // CMD ended before fencectl could read its number
  kill(-group, sig);
  kill(-group, SIGCONT);
}

struct CommandEnd {
  int waitStatus = 0;
  bool leaseLost = false;       // lost, or no validity left: CMD's processes were killed
  bool stopped = false;         // not renewed in time: CMD's group got SIGTERM at the grace
  bool supervisorGone = false;  // the supervisor died: fencectl killed what CMD started
};

// Watches CMD under the lease until it ends: SIGTERM to its group once the validity falls below
// `grace` without a renew, SIGKILL to all of it once the lease is lost or its validity gone;
// signals forwarded, and SIGKILL `grace` after a SIGTERM or SIGINT that CMD ignores. `tty` >= 0:
// the terminal whose foreground CMD's group holds.
// `riskFd`: the jeopardy pipe (a byte 1 at risk, 0 safe again), -1 without --at-risk-signal.
CommandEnd watchCommand(const Lease& lease, Supervisor& supervisor, Millis grace,
                        const std::string& name, int tty, int sigFd, int riskFd,
                        int atRiskSignal) {
  const pid_t group = supervisor.commandPid(), root = supervisor.pid();
  const int lossFd = lease.lossFd();  // (-1 if refused: the 50 ms wake-ups still see the loss)
  CommandEnd end;
  bool termSent = false, killSent = false;
  std::optional<Clock::time_point> killAt;  // set by a forwarded SIGTERM or SIGINT
  while (true) {
    // Validity is re-read after every wake-up: a frozen fencectl acts the moment it runs again.
    Millis valid = lease.validFor();
    if (lease.lost() || valid.count() == 0) {
      end.leaseLost = true;
      if (!killSent) {
        std::fprintf(stderr,
                     "fencectl: lease on %s lost; killing process group %d and all CMD started\n",
                     name.c_str(), group);
        killTree(root);
        killSent = termSent = true;
      }
    } else if (valid < grace && !termSent) {
      std::fprintf(stderr, "fencectl: lease on %s not renewed, %lld ms left; stopping %d\n",
                   name.c_str(), static_cast<long long>(valid.count()), group);
      signalGroup(group, SIGTERM);
      termSent = end.stopped = true;
    }
    if (killAt && Clock::now() >= *killAt && !killSent) {
      std::fprintf(stderr,
                   "fencectl: process group %d still runs %lld ms after the signal; "
                   "killing it\n",
                   group, static_cast<long long>(grace.count()));
      killTree(root);
      killSent = true;
    }
    int64_t timeout = std::min<int64_t>(50, std::max<int64_t>(1, valid.count()));
    if (killAt && !killSent) timeout = std::min<int64_t>(timeout, until(*killAt).count() + 1);
    // The loss fd stays readable once lost: polled only until the loss was acted on.
    pollfd fds[4] = {{sigFd, POLLIN, 0},
                     {end.leaseLost ? -1 : lossFd, POLLIN, 0},
                     {supervisor.fd(), POLLIN, 0},
                     {riskFd, POLLIN, 0}};
    poll(fds, riskFd >= 0 ? 4 : 3, static_cast<int>(timeout));
    if (riskFd >= 0 && (fds[3].revents & POLLIN)) {
      char risky;
      while (read(riskFd, &risky, 1) == 1) {
        if (risky && !killSent) signalGroup(group, atRiskSignal);
      }
    }
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info{};
      while (read(sigFd, &info, sizeof info) == sizeof info) {
        int sig = static_cast<int>(info.ssi_signo);
        signalGroup(group, sig);
        // CMD may ignore it: SIGKILL after the grace period, then release.
        if ((sig == SIGTERM || sig == SIGINT) && !killAt) killAt = Clock::now() + grace;
      }
    }
    auto event = supervisor.read(&end.waitStatus);
    if (event == Supervisor::Event::kExited) return end;
    if (event == Supervisor::Event::kStopped && tty >= 0) {
      // ^Z stopped CMD: stop too, so that the shell sees its job stopped and takes the terminal
      // (no renew meanwhile). On `fg` the terminal goes back to CMD's group, then a SIGCONT.
      tcsetpgrp(tty, getpgrp());
      raise(SIGTSTP);
      if (tcgetpgrp(tty) == getpgrp()) tcsetpgrp(tty, group);
      signalGroup(group, SIGCONT);
    }
    if (event == Supervisor::Event::kGone) {
      // Someone killed the supervisor: what it had adopted is fencectl's now (a subreaper too).
      std::fprintf(stderr, "fencectl: the supervisor of %s died; killing what CMD started\n",
                   name.c_str());
      killTree(getpid());
      while (waitpid(-1, nullptr, WNOHANG) > 0) {
      }
      end.supervisorGone = true;
      return end;
    }
  }
}

}  // namespace

int lockCommand(const SidecarAddress& sidecar, const LockArgs& args) {
  // CMD's group may hold the terminal's foreground: fencectl still writes to the terminal, and
  // takes the foreground back, from the background.
  signal(SIGTTOU, SIG_IGN);
  // Signals become events on a signalfd; the client's I/O thread inherits the blocked mask.
  sigset_t handled;
  sigemptyset(&handled);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&handled, sig);
  sigprocmask(SIG_BLOCK, &handled, nullptr);
  // Closed on return (fencectl elect runs this again and again); the client goes first.
  UniqueFd sigFd(signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!sigFd.valid()) {
    std::perror("fencectl");
    return kExitUnavailable;
  }

  auto client = connectOrReport(sidecar);
  if (!client) return kExitUnavailable;
  AcquireOptions options;
  options.ttl = args.ttl;
  options.mode = args.mode;
  options.permits = args.permits;
  options.wait = args.wait;
  options.ownerLabel = args.owner.empty() ? "fencectl pid " + std::to_string(getpid()) : args.owner;
  int riskPipe[2] = {-1, -1};
  if (args.atRiskSignal != 0 && pipe2(riskPipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    std::perror("fencectl");
    return kExitUnavailable;
  }
  UniqueFd riskRead(riskPipe[0]), riskWrite(riskPipe[1]);
  // Jeopardy: said on stderr in any case; forwarded to CMD as the signal it asked for.
  options.onRisk = [fd = riskWrite.get(), name = args.name](uint64_t token, bool atRisk,
                                                            Millis left) {
    if (atRisk) {
      std::fprintf(stderr,
                   "fencectl: lease on %s (token %llu) at risk: the sidecar cannot reach "
                   "ZooKeeper; lost in %lld ms unless it comes back\n",
                   name.c_str(), static_cast<unsigned long long>(token),
                   static_cast<long long>(left.count()));
    } else {
      std::fprintf(stderr, "fencectl: lease on %s (token %llu) safe again\n", name.c_str(),
                   static_cast<unsigned long long>(token));
    }
    if (fd < 0) return;
    char c = atRisk ? 1 : 0;
    ssize_t n = write(fd, &c, 1);
    (void)n;
  };
  // CMD never starts on a lease with no validity left: queue again, within the wait left.
  auto deadline = Clock::now() + args.wait;
  Status s;
  std::unique_ptr<Lease> lease;
  Millis granted{0};
  while (true) {
    lease = waitForLease(*client, args.name, options, sigFd.get(), &s);
    if (lease) {
      granted = lease->validFor();  // read again: fencectl may have been stopped since the renew
      if (granted.count() > 0) break;
      s = Status{ErrorCode::kExpired, "granted with no validity left"};
      lease.reset();
    } else if (!lostBeforeStart(s)) {
      std::fprintf(stderr, "fencectl: lock %s: %s\n", args.name.c_str(), s.message.c_str());
      return exitCodeFor(s);
    }
    if (args.wait != kWaitForever) options.wait = until(deadline);
    if (options.wait.count() == 0) {
      std::fprintf(stderr, "fencectl: lock %s: granted, but lost before CMD could start (%s)\n",
                   args.name.c_str(), s.message.c_str());
      return kExitNotAcquired;
    }
    std::fprintf(stderr,
                 "fencectl: lease on %s lost before CMD could start (%s); queueing again for "
                 "%lld ms\n",
                 args.name.c_str(), s.message.c_str(),
                 static_cast<long long>(options.wait.count()));
  }

  // The sidecar may vouch for less than the TTL (its ZooKeeper session bounds every lease): the
  // grace period must sit below the validity it actually grants, or CMD would be stopped at once.
  // That validity was just confirmed by a renew: it is what the sidecar grants at best.
  Millis grace = args.grace.value_or(std::min(args.ttl, granted) / 3);
  if (grace >= granted) {
    std::fprintf(stderr,
                 "fencectl: --grace %lld ms is not below the validity granted (%lld ms); "
                 "using %lld ms\n",
                 static_cast<long long>(grace.count()), static_cast<long long>(granted.count()),
                 static_cast<long long>(granted.count() / 3));
    grace = granted / 3;
  }

  // Should the supervisor be killed, what it adopted comes to fencectl, which kills it.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  int tty = foregroundTerminal();
  std::string error;
  auto supervisor = Supervisor::start(internal::connectionFd(*client), tty, args.command,
                                      commandEnvironment(args, *lease), args.pidNamespace, &error);
  if (!supervisor) {
    std::fprintf(stderr, "fencectl: %s\n", error.c_str());
    return releaseAndReturn(*lease, args.name, true, kExitInternal);
  }
  if (int e = supervisor->spawnError(); e != 0) {
    std::fprintf(stderr, "fencectl: cannot run %s: %s\n", args.command[0].c_str(),
                 std::strerror(e));
    return releaseAndReturn(*lease, args.name, true,
                            e == ENOENT ? kExitNotFound : kExitCannotExecute);
  }
  CommandEnd end =
      watchCommand(*lease, *supervisor, grace, args.name, tty, sigFd.get(), riskRead.get(),
                   args.atRiskSignal);
  // CMD is gone; what it left (in its group, or adopted by the supervisor) goes too, before the
  // lease does.
  // (Not after the supervisor died: fencectl killed its tree then, and reaped its pid, which may
  // be another process's by now.)
  if (!end.supervisorGone) {
    endTree(supervisor->pid(),
            end.leaseLost ? Millis(0) : std::min(Millis(1000), lease->validFor()));
  }
  if (tty >= 0) tcsetpgrp(tty, getpgrp());  // the terminal back to fencectl's group
  int code = end.supervisorGone             ? kExitInternal
             : end.leaseLost || end.stopped ? kExitLeaseLost
             : WIFEXITED(end.waitStatus)    ? WEXITSTATUS(end.waitStatus)
                                            : kExitSignalBase + WTERMSIG(end.waitStatus);
  code = releaseAndReturn(*lease, args.name, !end.leaseLost, code);
  supervisor.reset();  // the supervisor lets go of the connection and exits
  return code;
}

}  // namespace fencekeeper
