// fencectl: the shell's way to fenced leases.
//   fencectl [--socket PATH] [--expect-uid UID] lock NAME [--ttl DUR] [--wait DUR] [--owner LABEL]
//            [--grace DUR] -- CMD [ARG...]
//   fencectl [--socket PATH] [--expect-uid UID] elect NAME --owner LABEL [--ttl DUR] [--grace DUR]
//            [--rerun] -- CMD [ARG...]
//   fencectl [--socket PATH] [--expect-uid UID] holder NAME [--json] [--watch]
//   fencectl [--socket PATH] [--expect-uid UID] status [--json] [--watch [--interval DUR]]
//   fencectl [--socket PATH] [--expect-uid UID] valid NAME TOKEN
//   fencectl [--socket PATH] health [--ready] [--status-socket PATH] [--timeout DUR]
//   fencectl [--socket PATH] get TARGET [--status-socket PATH] [--timeout DUR]
#include <cctype>
#include <charconv>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "client_lib/cli/exit_codes.h"
#include "client_lib/cli/elect_command.h"
#include "client_lib/cli/health_command.h"
#include "client_lib/cli/lock_command.h"
#include "client_lib/cli/query_commands.h"
#include "client_lib/cli/status_command.h"
#include "client_lib/cli/supervisor.h"
#include "common/duration.h"
#include "fencekeeper/client.h"

namespace fencekeeper {
namespace {

// A signal by name (USR1, SIGUSR1, usr1) or number; 0 when it is none.
int signalNumber(const std::string& text) {
  int number = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec == std::errc() && end == text.data() + text.size()) {
    return number > 0 && number < NSIG ? number : 0;
  }
  std::string name = text;
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (name.rfind("SIG", 0) == 0) name = name.substr(3);
  for (int sig = 1; sig < NSIG; ++sig) {
    const char* abbrev = sigabbrev_np(sig);
    if (abbrev && name == abbrev) return sig;
  }
  return 0;
}

constexpr const char* kUsage = R"(usage:
  fencectl [--socket PATH] lock NAME [--ttl DUR] [--wait DUR] [--owner LABEL] [--grace DUR]
                [--shared | --permits N] [--at-risk-signal SIG] [--no-pid-namespace]
                -- CMD [ARG...]
      Acquires NAME, runs CMD in its own process group with FENCE_TOKEN, FENCE_LOCK and
      FENCE_TTL_MS in its environment, renews the lease while CMD runs, releases it after.
      CMD starts only on a lease just confirmed valid; a grant lost before that is dropped
      and NAME queued for again within what is left of --wait.
      If the lease is lost, or its validity falls below --grace without a renew, CMD's
      group gets SIGTERM, and SIGKILL once the validity has run out. SIGINT, SIGTERM and
      SIGHUP are forwarded to the group (each followed by SIGCONT); if CMD still runs
      --grace after a SIGINT or SIGTERM, it is killed. On a terminal (fencectl in its
      foreground) CMD's group is the foreground group while it runs; ^Z stops fencectl
      with CMD (no renew while stopped), and fg gives CMD the terminal again.
      Nothing CMD started outlives the lease: what is left when CMD ends (in its group, or
      gone off with setsid) is ended before the release, and if fencectl dies, even by
      SIGKILL, its supervisor process kills all of it before the sidecar lets the lease go.
      Where the kernel allows (root, CAP_SYS_ADMIN) and not on a terminal, the supervisor is
      the init of a PID namespace of its own (CMD is its pid 2, with its own /proc), so that
      the kernel kills all of CMD should fencectl and the supervisor both be killed; else
      fencectl says so at start. --no-pid-namespace keeps CMD in fencectl's.
      Once CMD's processes are gone, fencectl waits at most 1 s for the release.
      --shared holds NAME with other --shared holders (a read lock; kazoo's ReadLock on the
      same path shares it, its WriteLock excludes it); --permits N holds one of N permits
      (a semaphore): each permit its own lease and token. A queue of another mode or N
      refuses with exit 64 and a message naming both.
      While the lease stands but the sidecar cannot reach ZooKeeper (jeopardy: lost within
      the time it says unless ZooKeeper comes back), fencectl says so on stderr, and with
      --at-risk-signal SIG (a name, USR1 or SIGUSR1, or a number) sends SIG to CMD's group:
      the time to checkpoint. It says so again if the lease is safe again.
      Defaults: --ttl 30s, --wait 0 (try once), --grace a third of the validity granted
      (the TTL, or less when the sidecar's ZooKeeper session bounds it).
  fencectl [--socket PATH] elect NAME --owner LABEL [--ttl DUR] [--grace DUR] [--rerun] -- CMD [ARG...]
      Leader election on NAME's queue (kazoo's Election on the same path takes its turn in
      the same queue). Stands by, printing each leader change to stderr, until it leads;
      then runs CMD exactly as lock does: CMD gets the leader's token in FENCE_TOKEN and is
      stopped when leadership is lost. After a loss fencectl exits 76, or with --rerun
      campaigns again. CMD ending by itself resigns: fencectl exits with its status.
  fencectl [--socket PATH] holder NAME [--json] [--watch]
      Who holds NAME now. --watch: the holder now, then one line per change, pushed by the
      sidecar from its ZooKeeper watch (changes may be coalesced; "unknown" while the
      sidecar cannot vouch for its session or the connection is down), until SIGINT, SIGTERM
      or SIGHUP (exit 0). With --json each line is one JSON object with "state" (held, free,
      unknown) and "detail". Hints, never a fence.
  fencectl [--socket PATH] valid NAME TOKEN
      Exits 0 when the sidecar's shared-memory lease table shows NAME held with TOKEN and
      valid now, else 1 (69: no table to read). For shell users, and advisory: the lease can
      be lost right after the check; the storage's token check is the fence.
  fencectl [--socket PATH] status [--json] [--watch [--interval DUR]]
      The sidecar's state: a summary, then its leases and waiters as tables. --json: the
      status socket's /status document instead (Cap'n Proto's JSON of the schema's Status).
      --watch: again every --interval (default 2s) until SIGINT or SIGTERM (exit 0); on a
      terminal the screen is cleared each time, else each refresh starts with a "---" line
      (with --json: one document a line).
  fencectl [--socket PATH] health [--ready] [--status-socket PATH] [--timeout DUR]
      Asks the status socket's /healthz (--ready: /readyz), prints the answer's line and
      exits 0 on 200, 1 on any other answer, none within --timeout (default 2s), or no
      socket: for Kubernetes exec probes. --status-socket defaults to
      $FENCEKEEPER_STATUS_SOCKET, else the sidecar's default: NAME.status beside the lease
      socket where the sidecar binds it (/run/fk/fk.sock.status for /run/fk/fk.sock, and
      /tmp/fk.sock.d/fk.sock.status for /tmp/fk.sock: in NAME.d/ like the lease socket).
  fencectl [--socket PATH] get TARGET [--status-socket PATH] [--timeout DUR]
      GETs TARGET (/healthz, /readyz, /status or /metrics) from the status socket (found as
      for health) and prints the body as served: curl for a container without one. Exits 0
      on 200, 1 on any other answer (its status on stderr), 69 when no answer comes (no
      socket, not HTTP, or none within --timeout, default 2s).

The socket defaults to $FENCEKEEPER_SOCKET, else /run/fencekeeper/fencekeeper.sock (in
its subdirectory NAME.d/ when the socket's directory is writable by others, as the sidecar
does). Before sending anything fencectl checks who serves it: by default the server's uid
must own the socket file, in a directory no one else can write, and where that directory
sits in one others can write (a Kubernetes emptyDir, /tmp), be root or fencectl's own uid.
  --expect-uid UID   the sidecar must run as UID instead (env FENCEKEEPER_EXPECT_UID)
A server that fails the check is refused (exit 69) with both uids named.
Exit codes: (health: 0 on 200, else 1; get: 0 on 200, 1 on another answer, 69 on none;
valid: 0 valid, 1 not; 64 for invalid arguments)
  CMD's own exit status when it ended by itself
  128+N  CMD killed by signal N (137: still running --grace after a SIGINT or SIGTERM);
         or fencectl got signal N while waiting for the lock, and CMD never ran
  64     invalid arguments
  69     sidecar unreachable
  70     fencectl's supervisor could not start or died (all of CMD killed)
  75     lock not acquired within --wait (held, or ZooKeeper out of reach)
  76     lease lost, or not renewed in time, while CMD ran (its processes killed)
  126    CMD found but not executable
  127    CMD not found
)";

int usage(const std::string& message) {
  std::fprintf(stderr, "fencectl: %s\n%s", message.c_str(), kUsage);
  return kExitUsage;
}

std::optional<int64_t> parseUid(const std::string& text) {
  int64_t uid = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), uid);
  if (ec != std::errc() || end != text.data() + text.size() || uid < 0 || uid >= UINT32_MAX) {
    return std::nullopt;
  }
  return uid;
}

int run(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "__supervise") == 0) return superviseMain(argc, argv);
  SidecarAddress sidecar{defaultSocketPath(), {}};
  std::string& socket = sidecar.socket;
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
    } else if (a == "--expect-uid") {
      auto v = next("--expect-uid");
      auto uid = v ? parseUid(*v) : std::nullopt;
      if (!uid) return usage("--expect-uid needs a uid");
      sidecar.options.expectUid = *uid;
    } else {
      return usage("unknown option " + a);
    }
  }
  if (i >= argc) return usage("missing command");
  std::string command = argv[i++];
  auto duration = [&](const std::string& flag, Millis& out) {
    auto v = next(flag.c_str());
    auto d = v ? parseDuration(*v) : std::nullopt;
    if (!d) return false;
    out = *d;
    return true;
  };
  if (command == "holder") {
    bool json = false, watch = false;
    std::string name;
    for (; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--json") {
        json = true;
      } else if (a == "--watch") {
        watch = true;
      } else if (a == "--socket" && i + 1 < argc) {
        socket = argv[++i];
      } else if (name.empty() && a[0] != '-') {
        name = a;
      } else {
        return usage("unexpected argument " + a);
      }
    }
    if (name.empty()) return usage("holder needs a lock NAME");
    return watch ? holderWatchCommand(sidecar, name, json) : holderCommand(sidecar, name, json);
  }
  if (command == "valid") {
    std::vector<std::string> operands;
    for (; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--socket" && i + 1 < argc) {
        socket = argv[++i];
      } else {
        operands.push_back(a);
      }
    }
    if (operands.size() != 2) return usage("valid needs a lock NAME and a TOKEN");
    uint64_t token = 0;
    const std::string& t = operands[1];
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), token);
    if (ec != std::errc() || end != t.data() + t.size() || token == 0) {
      return usage("valid: TOKEN must be a positive integer, not '" + t + "'");
    }
    return validCommand(sidecar, operands[0], token);
  }
  if (command == "status") {
    StatusArgs args;
    bool interval = false;
    for (; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--json") {
        args.json = true;
      } else if (a == "--watch") {
        args.watch = true;
      } else if (a == "--interval") {
        if (!duration(a, args.interval) || args.interval.count() == 0) {
          return usage("bad --interval");
        }
        interval = true;
      } else if (a == "--socket" && i + 1 < argc) {
        socket = argv[++i];
      } else {
        return usage("unexpected argument " + a);
      }
    }
    if (interval && !args.watch) return usage("--interval needs --watch");
    return statusCommand(sidecar, args);
  }
  // The options of the status socket's commands (health, get): nullopt when `a` is none of them,
  // else 0, or the usage error's exit code.
  auto statusSocketOption = [&](const std::string& a, std::string& statusSocket,
                                Millis& timeout) -> std::optional<int> {
    if (a == "--timeout") {
      if (!duration(a, timeout) || timeout.count() == 0) return usage("bad --timeout");
    } else if (a == "--status-socket") {
      auto v = next("--status-socket");
      if (!v || v->empty()) return usage("--status-socket needs a path");
      statusSocket = *v;
    } else if (a == "--socket" && i + 1 < argc) {
      socket = argv[++i];
    } else {
      return std::nullopt;
    }
    return 0;
  };
  if (command == "health") {
    HealthArgs args;
    for (; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--ready") {
        args.ready = true;
      } else if (auto rc = statusSocketOption(a, args.statusSocket, args.timeout)) {
        if (*rc != 0) return *rc;
      } else {
        return usage("unexpected argument " + a);
      }
    }
    return healthCommand(sidecar, args);
  }
  if (command == "get") {
    GetArgs args;
    bool target = false;
    for (; i < argc; ++i) {
      std::string a = argv[i];
      if (auto rc = statusSocketOption(a, args.statusSocket, args.timeout)) {
        if (*rc != 0) return *rc;
      } else if (!target && a[0] != '-') {
        args.target = a;
        target = true;
      } else {
        return usage("unexpected argument " + a);
      }
    }
    std::string allowed;
    bool known = false;
    for (const char* t : kGetTargets) {
      allowed += (allowed.empty() ? "" : ", ") + std::string(t);
      known = known || args.target == t;
    }
    if (!target) return usage("get needs a TARGET: " + allowed);
    if (!known) return usage("get: TARGET '" + args.target + "' is none of " + allowed);
    return getCommand(sidecar, args);
  }
  if (command != "lock" && command != "elect") return usage("unknown command " + command);
  const bool elect = command == "elect";
  constexpr const char* kSharedOrPermits = "--shared or --permits N: a lease is one or the other";
  bool rerun = false;
  LockArgs args;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      for (++i; i < argc; ++i) args.command.emplace_back(argv[i]);
      break;
    }
    if (a == "--ttl") {
      if (!duration(a, args.ttl) || args.ttl.count() == 0) return usage("bad --ttl");
    } else if (a == "--wait" && !elect) {
      if (!duration(a, args.wait)) return usage("bad --wait");
    } else if (a == "--rerun" && elect) {
      rerun = true;
    } else if (a == "--shared" && !elect) {
      if (args.mode == LockMode::kPermits) return usage(kSharedOrPermits);
      args.mode = LockMode::kShared;
    } else if (a == "--permits" && !elect) {
      auto v = next("--permits");
      char* end = nullptr;
      unsigned long n = v ? std::strtoul(v->c_str(), &end, 10) : 0;
      if (!v || *end != '\0' || v->empty() || n < 1 || n > 10'000) {
        return usage("--permits needs N in [1, 10000]");
      }
      if (args.mode == LockMode::kShared) return usage(kSharedOrPermits);
      args.mode = LockMode::kPermits;
      args.permits = static_cast<uint32_t>(n);
    } else if (a == "--at-risk-signal" && !elect) {
      auto v = next("--at-risk-signal");
      args.atRiskSignal = v ? signalNumber(*v) : 0;
      if (args.atRiskSignal <= 0) return usage("--at-risk-signal needs a signal: USR1, SIGUSR1, 10");
    } else if (a == "--no-pid-namespace") {
      args.pidNamespace = false;
    } else if (a == "--grace") {
      Millis g;
      if (!duration(a, g)) return usage("bad --grace");
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
  if (args.name.empty()) return usage(command + " needs a NAME");

  if (args.command.empty()) return usage(command + " needs -- CMD [ARG...]");
  if (elect && args.owner.empty()) return usage("elect needs --owner LABEL: standbys show it");
  return elect ? electCommand(sidecar, args, rerun) : lockCommand(sidecar, args);
}

}  // namespace
}  // namespace fencekeeper

int main(int argc, char** argv) { return fencekeeper::run(argc, argv); }
