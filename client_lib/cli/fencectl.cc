// fencectl: the shell's way to fenced leases.
//   fencectl [--socket PATH] lock NAME [--ttl DUR] [--wait DUR] [--owner LABEL] [--grace DUR]
//            -- CMD [ARG...]
//   fencectl [--socket PATH] holder NAME [--json]
//   fencectl [--socket PATH] status [--json]
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fencekeeper/client.h"
#include "sidecar/common/duration.h"

extern char** environ;

namespace fencekeeper {
namespace {

// Exit codes (sysexits.h where one fits).
constexpr int kExitUsage = 64;
constexpr int kExitUnavailable = 69;
constexpr int kExitNotAcquired = 75;
constexpr int kExitLeaseLost = 76;

constexpr const char* kUsage = R"(usage:
  fencectl [--socket PATH] lock NAME [--ttl DUR] [--wait DUR] [--owner LABEL] [--grace DUR] -- CMD [ARG...]
      Acquires NAME, runs CMD in its own process group with FENCE_TOKEN, FENCE_LOCK and
      FENCE_TTL_MS in its environment, renews the lease while CMD runs, releases it after.
      If the lease is lost, or its validity falls below --grace without a renew, CMD's
      group gets SIGTERM, and SIGKILL once the validity has run out.
      Defaults: --ttl 30s, --wait 0 (try once), --grace a third of the validity granted
      (the TTL, or less when the sidecar's ZooKeeper session bounds it).
  fencectl [--socket PATH] holder NAME [--json]   who holds NAME now
  fencectl [--socket PATH] status [--json]        the sidecar's state

The socket defaults to $FENCEKEEPER_SOCKET, else /run/fencekeeper/fencekeeper.sock.
Exit codes: CMD's own status; 64 invalid arguments; 69 sidecar unreachable;
75 lock not acquired within --wait (held, or ZooKeeper out of reach); 76 lease lost
while CMD ran (its group killed). Whatever CMD leaves running in its group is ended before
the lease is released. A signal while waiting ends fencectl (128+signal) without running CMD.
)";

int usage(const std::string& message) {
  std::fprintf(stderr, "fencectl: %s\n%s", message.c_str(), kUsage);
  return kExitUsage;
}

int exitCodeFor(const Status& s) {
  switch (s.code) {
    case ErrorCode::kInvalidName:
    case ErrorCode::kInvalidArgument:
      return kExitUsage;
    case ErrorCode::kSidecarUnavailable:
    case ErrorCode::kInternal:
    case ErrorCode::kWrongThread:
      return kExitUnavailable;
    default:
      return kExitNotAcquired;  // timed out, ZooKeeper out of reach, limits, shutting down
  }
}

// True while some process of group `pgid` is alive (zombies, which nobody may reap here, aside).
bool groupAlive(pid_t pgid) {
  DIR* proc = opendir("/proc");
  if (!proc) return kill(-pgid, 0) == 0;
  bool alive = false;
  while (dirent* entry = readdir(proc)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    std::ifstream stat(std::string("/proc/") + entry->d_name + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(line.substr(close + 2));
    char state;
    long ppid, pgrp;
    if (fields >> state >> ppid >> pgrp && pgrp == pgid && state != 'Z') {
      alive = true;
      break;
    }
  }
  closedir(proc);
  return alive;
}

// Ends what is left of CMD's process group (a grandchild behind `sh -c`, a background job):
// SIGTERM, then SIGKILL after `patience`. Nothing of the group outlives the lease.
void endGroup(pid_t pgid, Millis patience) {
  if (!groupAlive(pgid)) return;
  kill(-pgid, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + patience;
  while (groupAlive(pgid) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (groupAlive(pgid)) kill(-pgid, SIGKILL);
}

std::string jsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

std::string isoTime(int64_t unixMs) {
  time_t secs = static_cast<time_t>(unixMs / 1000);
  struct tm tm {};
  gmtime_r(&secs, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return std::string(buf) + "." + std::to_string(1000 + unixMs % 1000).substr(1) + "Z";
}

std::unique_ptr<Client> connectOrReport(const std::string& socket) {
  Status s;
  auto client = Client::connect(socket, &s);
  if (!client) std::fprintf(stderr, "fencectl: %s\n", s.message.c_str());
  return client;
}

int holderCommand(const std::string& socket, const std::string& name, bool json) {
  auto client = connectOrReport(socket);
  if (!client) return kExitUnavailable;
  HolderInfo info;
  Status s = client->holder(name, &info);
  if (!s.ok()) {
    std::fprintf(stderr, "fencectl: holder %s: %s\n", name.c_str(), s.message.c_str());
    return exitCodeFor(s);
  }
  if (json) {
    std::printf(
        "{\"lock\":\"%s\",\"held\":%s,\"token\":%llu,\"owner\":\"%s\",\"sinceUnixMs\":%lld,"
        "\"waiters\":%u,\"thisSidecar\":%s}\n",
        jsonEscape(name).c_str(), info.held ? "true" : "false",
        static_cast<unsigned long long>(info.token), jsonEscape(info.ownerLabel).c_str(),
        static_cast<long long>(info.sinceUnixMs), info.waiters,
        info.thisSidecar ? "true" : "false");
  } else if (!info.held) {
    std::printf("%s: not held\n", name.c_str());
  } else {
    std::printf("%s: held, token %llu, owner '%s', since %s, %u waiting%s\n", name.c_str(),
                static_cast<unsigned long long>(info.token), info.ownerLabel.c_str(),
                isoTime(info.sinceUnixMs).c_str(), info.waiters,
                info.thisSidecar ? " (through this sidecar)" : "");
  }
  return 0;
}

int statusCommand(const std::string& socket, bool json) {
  auto client = connectOrReport(socket);
  if (!client) return kExitUnavailable;
  SidecarStatus st;
  Status s = client->status(&st);
  if (!s.ok()) {
    std::fprintf(stderr, "fencectl: status: %s\n", s.message.c_str());
    return kExitUnavailable;
  }
  if (json) {
    std::printf(
        "{\"zkState\":\"%s\",\"sessionId\":\"%s\",\"sessionTimeoutMs\":%u,\"safeForMs\":%u,"
        "\"leasesHeld\":%u,\"waiters\":%u,\"connections\":%u,\"uptimeMs\":%llu,"
        "\"grantsTotal\":%llu,\"root\":\"%s\",\"pendingDeletes\":%u,\"droppedDeletes\":%llu,"
        "\"leases\":[",
        jsonEscape(st.zkState).c_str(), jsonEscape(st.sessionId).c_str(), st.sessionTimeoutMs,
        st.safeForMs, st.leasesHeld, st.waiters, st.connections,
        static_cast<unsigned long long>(st.uptimeMs),
        static_cast<unsigned long long>(st.grantsTotal), jsonEscape(st.root).c_str(),
        st.pendingDeletes, static_cast<unsigned long long>(st.droppedDeletes));
    for (size_t i = 0; i < st.leases.size(); ++i) {
      auto& l = st.leases[i];
      std::printf("%s{\"name\":\"%s\",\"token\":%llu,\"owner\":\"%s\",\"pid\":%d,\"validMs\":%u}",
                  i ? "," : "", jsonEscape(l.name).c_str(),
                  static_cast<unsigned long long>(l.token), jsonEscape(l.ownerLabel).c_str(),
                  l.clientPid, l.validMs);
    }
    std::printf("]}\n");
    return 0;
  }
  std::printf("zookeeper:   %s, session %s, timeout %u ms, vouched for %u ms\n", st.zkState.c_str(),
              st.sessionId.c_str(), st.sessionTimeoutMs, st.safeForMs);
  std::printf("root:        %s\n", st.root.c_str());
  std::printf("leases held: %u, waiting: %u, connections: %u, grants since start: %llu\n",
              st.leasesHeld, st.waiters, st.connections,
              static_cast<unsigned long long>(st.grantsTotal));
  std::printf("uptime:      %llu s\n", static_cast<unsigned long long>(st.uptimeMs / 1000));
  std::printf("deletes:     %u pending, %llu dropped\n", st.pendingDeletes,
              static_cast<unsigned long long>(st.droppedDeletes));
  for (auto& l : st.leases) {
    std::printf("  %-30s token %-14llu owner '%s' pid %d valid %u ms\n", l.name.c_str(),
                static_cast<unsigned long long>(l.token), l.ownerLabel.c_str(), l.clientPid,
                l.validMs);
  }
  return 0;
}

struct LockArgs {
  std::string name;
  Millis ttl{30'000};
  Millis wait{0};
  std::string owner;
  std::optional<Millis> grace;
  std::vector<std::string> command;
};

// Runs CMD under the lease; see the usage text.
int lockCommand(const std::string& socket, const LockArgs& args) {
  // Signals become events on a signalfd; the client's I/O thread inherits the blocked mask.
  sigset_t handled;
  sigemptyset(&handled);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&handled, sig);
  sigprocmask(SIG_BLOCK, &handled, nullptr);
  int sigFd = signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK);
  int lossPipe[2];
  if (sigFd < 0 || pipe2(lossPipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    std::perror("fencectl");
    return kExitUnavailable;
  }

  auto client = connectOrReport(socket);
  if (!client) return kExitUnavailable;
  AcquireOptions options;
  options.ttl = args.ttl;
  options.wait = args.wait;
  options.ownerLabel = args.owner.empty() ? "fencectl pid " + std::to_string(getpid()) : args.owner;
  options.onLost = [fd = lossPipe[1]](uint64_t, LossReason) {
    char c = 1;
    ssize_t n = write(fd, &c, 1);
    (void)n;
  };
  // Queue on a helper thread so that a signal while waiting is answered at once: no CMD runs,
  // and closing the connection on exit withdraws the request.
  Status s;
  std::unique_ptr<Lease> lease;
  int acquired[2];
  if (pipe2(acquired, O_CLOEXEC) != 0) return kExitUnavailable;
  std::thread queue([&] {
    lease = client->acquire(args.name, options, &s);
    char c = 1;
    ssize_t n = write(acquired[1], &c, 1);
    (void)n;
  });
  while (true) {
    pollfd fds[2] = {{sigFd, POLLIN, 0}, {acquired[0], POLLIN, 0}};
    poll(fds, 2, -1);
    if (fds[1].revents & POLLIN) break;
    signalfd_siginfo info{};
    while (read(sigFd, &info, sizeof info) == sizeof info) {
      if (info.ssi_signo == SIGCHLD) continue;
      std::fprintf(stderr, "fencectl: signal %u while waiting for %s; giving up\n", info.ssi_signo,
                   args.name.c_str());
      std::fflush(stderr);
      _exit(128 + static_cast<int>(info.ssi_signo));  // the thread still waits: no unwinding
    }
  }
  queue.join();
  if (!lease) {
    std::fprintf(stderr, "fencectl: lock %s: %s\n", args.name.c_str(), s.message.c_str());
    return exitCodeFor(s);
  }

  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "FENCE_TOKEN=", 12) && std::strncmp(*e, "FENCE_LOCK=", 11) &&
        std::strncmp(*e, "FENCE_TTL_MS=", 13)) {
      env.emplace_back(*e);
    }
  }
  env.push_back("FENCE_TOKEN=" + std::to_string(lease->token()));
  env.push_back("FENCE_LOCK=" + args.name);
  env.push_back("FENCE_TTL_MS=" + std::to_string(args.ttl.count()));
  std::vector<char*> envp, argv;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> command = args.command;
  for (auto& a : command) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty, defaults;
  sigemptyset(&empty);
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_USEVFORK);
  pid_t child = 0;
  int rc = posix_spawnp(&child, argv[0], nullptr, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    std::fprintf(stderr, "fencectl: cannot run %s: %s\n", argv[0], std::strerror(rc));
    lease->release();
    return 127;
  }

  // The sidecar may vouch for less than the TTL (its ZooKeeper session bounds every lease): the
  // grace period must sit below the validity it actually grants, or CMD would be stopped at once.
  Millis granted = lease->validFor();
  Millis grace = args.grace.value_or(std::min(args.ttl, granted) / 3);
  if (grace >= granted) {
    std::fprintf(stderr,
                 "fencectl: --grace %lld ms is not below the validity granted (%lld ms); "
                 "using %lld ms\n",
                 static_cast<long long>(grace.count()), static_cast<long long>(granted.count()),
                 static_cast<long long>(granted.count() / 3));
    grace = granted / 3;
  }
  bool leaseLost = false, stopped = false, termSent = false, killSent = false;
  int status = 0;
  while (true) {
    // Validity is re-read after every wake-up: a frozen fencectl acts the moment it runs again.
    Millis valid = lease->validFor();
    if (lease->lost() || valid.count() == 0) {
      if (!killSent) {
        std::fprintf(stderr, "fencectl: lease on %s lost; killing process group %d\n",
                     args.name.c_str(), child);
        kill(-child, SIGTERM);
        kill(-child, SIGKILL);
        killSent = termSent = leaseLost = true;
      }
    } else if (valid < grace && !termSent) {
      std::fprintf(stderr, "fencectl: lease on %s not renewed, %lld ms left; stopping %d\n",
                   args.name.c_str(), static_cast<long long>(valid.count()), child);
      kill(-child, SIGTERM);
      termSent = stopped = true;
    }
    pollfd fds[2] = {{sigFd, POLLIN, 0}, {lossPipe[0], POLLIN, 0}};
    int timeout = static_cast<int>(std::min<int64_t>(50, std::max<int64_t>(1, valid.count())));
    poll(fds, 2, timeout);
    if (fds[1].revents & POLLIN) {
      char buf[16];
      while (read(lossPipe[0], buf, sizeof buf) > 0) {
      }
    }
    if (fds[0].revents & POLLIN) {
      signalfd_siginfo info{};
      while (read(sigFd, &info, sizeof info) == sizeof info) {
        if (info.ssi_signo != SIGCHLD) kill(-child, static_cast<int>(info.ssi_signo));
      }
    }
    pid_t done = waitpid(child, &status, WNOHANG);
    if (done == child) break;
  }
  // CMD is gone; what it left in its group goes too, before the lease does.
  endGroup(child, leaseLost ? Millis(0) : std::min(Millis(1000), lease->validFor()));
  if (!leaseLost) {
    Status r = lease->release();
    if (!r.ok() && r.code != ErrorCode::kNotHeld) {
      std::fprintf(stderr, "fencectl: release %s: %s\n", args.name.c_str(), r.message.c_str());
    }
  }
  if (leaseLost || stopped) return kExitLeaseLost;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

int run(int argc, char** argv) {
  std::string socket = defaultSocketPath();
  int i = 1;
  auto next = [&](const char* flag) -> std::optional<std::string> {
    if (i + 1 >= argc) return std::nullopt;
    (void)flag;
    return std::string(argv[++i]);
  };
  for (; i < argc && argv[i][0] == '-'; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf("%s", kUsage);
      return 0;
    }
    if (a == "--socket") {
      auto v = next("--socket");
      if (!v) return usage("--socket needs a path");
      socket = *v;
    } else {
      return usage("unknown option " + a);
    }
  }
  if (i >= argc) return usage("missing command");
  std::string command = argv[i++];
  if (command == "holder" || command == "status") {
    bool json = false;
    std::string name;
    for (; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--json") {
        json = true;
      } else if (a == "--socket" && i + 1 < argc) {
        socket = argv[++i];
      } else if (command == "holder" && name.empty() && a[0] != '-') {
        name = a;
      } else {
        return usage("unexpected argument " + a);
      }
    }
    if (command == "status") return statusCommand(socket, json);
    if (name.empty()) return usage("holder needs a lock NAME");
    return holderCommand(socket, name, json);
  }
  if (command != "lock") return usage("unknown command " + command);

  LockArgs args;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      for (++i; i < argc; ++i) args.command.emplace_back(argv[i]);
      break;
    }
    auto duration = [&](Millis& out) {
      auto v = next(a.c_str());
      auto d = v ? parseDuration(*v) : std::nullopt;
      if (!d) return false;
      out = *d;
      return true;
    };
    if (a == "--ttl") {
      if (!duration(args.ttl) || args.ttl.count() == 0) return usage("bad --ttl");
    } else if (a == "--wait") {
      if (!duration(args.wait)) return usage("bad --wait");
    } else if (a == "--grace") {
      Millis g;
      if (!duration(g)) return usage("bad --grace");
      args.grace = g;
    } else if (a == "--owner") {
      auto v = next("--owner");
      if (!v) return usage("--owner needs a label");
      args.owner = *v;
    } else if (a == "--socket") {
      auto v = next("--socket");
      if (!v) return usage("--socket needs a path");
      socket = *v;
    } else if (args.name.empty() && a[0] != '-') {
      args.name = a;
    } else {
      return usage("unexpected argument " + a);
    }
  }
  if (args.name.empty()) return usage("lock needs a NAME");
  if (args.command.empty()) return usage("lock needs -- CMD [ARG...]");
  return lockCommand(socket, args);
}

}  // namespace
}  // namespace fencekeeper

int main(int argc, char** argv) { return fencekeeper::run(argc, argv); }
