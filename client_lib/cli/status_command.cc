#include "client_lib/cli/status_command.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <string>

#include "client_lib/cli/exit_codes.h"
#include "client_lib/cli/text_table.h"
#include "fencekeeper/client.h"

namespace fencekeeper {
namespace {

template <typename... Args>
std::string format(const char* fmt, Args... args) {
  char text[1024];
  std::snprintf(text, sizeof text, fmt, args...);
  return text;
}

unsigned long long ull(uint64_t n) { return static_cast<unsigned long long>(n); }

std::string verdict(bool yes, const std::string& reason) {
  return yes ? "yes" : "NO: " + printable(reason);
}

// A label for a table cell: "-" when there is none.
std::string label(const std::string& text) { return text.empty() ? "-" : printable(text); }

// "exclusive", "shared" or "permits/N".
std::string modeText(LockMode mode, uint32_t permits) {
  if (mode == LockMode::kPermits) return "permits/" + std::to_string(permits);
  return lockModeName(mode);
}

std::string leaseTable(const SidecarStatus& st) {
  TextTable table({{"LOCK"},
                   {"TOKEN", true},
                   {"MODE"},
                   {"OWNER"},
                   {"PID/UID"},
                   {"STATE"},
                   {"VALID FOR", true},
                   {"HELD FOR", true}});
  for (const auto& l : st.leases) {
    table.addRow({printable(l.name), std::to_string(l.token), modeText(l.mode, l.permits),
                  label(l.ownerLabel),
                  format("%d/%u", l.clientPid, l.clientUid), printable(l.state),
                  humanDuration(l.validMs), humanDuration(l.heldForMs)});
  }
  return table.render("  ");
}

std::string waiterTable(const SidecarStatus& st) {
  TextTable table(
      {{"LOCK"}, {"MODE"}, {"OWNER"}, {"PID/UID"}, {"STATE"}, {"POSITION", true}, {"WAITED", true}});
  for (const auto& w : st.waiterList) {
    table.addRow({printable(w.name), modeText(w.mode, w.permits), label(w.ownerLabel), format("%d/%u", w.clientPid, w.clientUid),
                  printable(w.state), std::to_string(w.position), humanDuration(w.waitedMs)});
  }
  return table.render("  ");
}

// The status for people: a summary, then the leases and the waiters as tables.
std::string statusText(const SidecarStatus& st) {
  std::string out;
  out += format("fencekeeper: %s (%s), instance %s, up %s\n", printable(st.version).c_str(),
                printable(st.build).c_str(), printable(st.instanceId).c_str(),
                humanDuration(st.uptimeMs).c_str());
  out += format("zookeeper:   %s, session %s, timeout %u ms, vouched for %u ms\n",
                st.zkState.c_str(), st.sessionId.c_str(), st.sessionTimeoutMs, st.safeForMs);
  out += "servers:     " + printable(st.zkServers) + "\n";
  out += "root:        " + printable(st.root) + "\n";
  out += "ready:       " + verdict(st.ready, st.notReadyReason) + "\n";
  out += "healthy:     " + verdict(st.healthy, st.notHealthyReason) + "\n";
  out += format("leases held: %u, waiting: %u, connections: %u, grants since start: %llu\n",
                st.leasesHeld, st.waiters, st.connections, ull(st.grantsTotal));
  out +=
      format("deletes:     %u pending, %llu dropped\n", st.pendingDeletes, ull(st.droppedDeletes));
  for (const auto& node : st.foreignNodes) {
    out +=
        "planted:     " + printable(node) + " (a persistent node blocking its lock: delete it)\n";
  }
  const auto& lim = st.limits;
  out += format(
      "limits:      %u connections per uid, %u leases and %u waiting per uid, %u calls per "
      "connection, %u leases in all (0: unlimited); %llu refused since start\n",
      lim.maxConnections, lim.maxLeasesPerPeer, lim.maxWaitingPerPeer, lim.maxCallsPerConnection,
      lim.maxLeases, ull(st.refusedTotal));
  if (!st.accepting) {
    out += format("accepting:   NO (accept() failing, %llu failures): new clients cannot connect\n",
                  ull(st.acceptFailures));
  }
  if (!st.peers.empty()) {
    TextTable peers({{"UID", true}, {"CONNECTIONS", true}, {"LEASES", true}, {"WAITING", true}});
    for (const auto& p : st.peers) {
      peers.addRow({std::to_string(p.uid), std::to_string(p.connections), std::to_string(p.leases),
                    std::to_string(p.waiting)});
    }
    out += "peers:\n" + peers.render("  ");
  }
  out += st.leases.empty() ? "leases:      none\n" : "leases:\n" + leaseTable(st);
  out += st.waiterList.empty() ? "waiters:     none\n" : "waiters:\n" + waiterTable(st);
  if (st.listingTruncated) {
    out += format("(listings cut at %u entries each: %zu of %u leases, %zu of %u waiters shown)\n",
                  st.listingCap, st.leases.size(), st.leasesHeld, st.waiterList.size(), st.waiters);
  }
  return out;
}

// One answer (the text for people, or the JSON line); false with `*text` saying why on failure.
bool fetch(Client& client, bool json, std::string* text) {
  Status s;
  if (json) {
    s = client.statusJson(text);
    *text += "\n";
  } else {
    SidecarStatus st;
    s = client.status(&st);
    if (s.ok()) *text = statusText(st);
  }
  if (!s.ok()) *text = "fencectl: status: " + s.message + "\n";
  return s.ok();
}

std::string clockTime() {
  time_t now = time(nullptr);
  struct tm tm {};
  localtime_r(&now, &tm);
  char text[16];
  std::strftime(text, sizeof text, "%H:%M:%S", &tm);
  return text;
}

// Refreshes until SIGINT or SIGTERM (blocked here, so that waiting for either is the pause
// between refreshes). A sidecar that stops answering is reconnected to at the next refresh.
int watch(const SidecarAddress& sidecar, const StatusArgs& args) {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);  // before the client's I/O thread starts
  const bool tty = isatty(STDOUT_FILENO) == 1;
  std::unique_ptr<Client> client;
  while (true) {
    std::string body;
    if (!client || !client->connected()) {
      Status s;
      client = Client::connect(sidecar.socket, sidecar.options, &s);
      if (!client) body = "fencectl: status: " + s.message + "\n";
    }
    if (client) fetch(*client, args.json, &body);
    std::string frame;
    if (args.json) {
      frame = body;  // one JSON document a line
    } else if (tty) {
      frame = "\x1b[H\x1b[2J" +
              format("every %s: fencectl status    %s    (^C ends)\n\n",
                     humanDuration(args.interval.count()).c_str(), clockTime().c_str()) +
              body;
    } else {
      frame = "--- " + clockTime() + "\n" + body;
    }
    std::fwrite(frame.data(), 1, frame.size(), stdout);
    std::fflush(stdout);
    struct timespec pause {
      static_cast<time_t>(args.interval.count() / 1000),
          static_cast<long>(args.interval.count() % 1000) * 1'000'000
    };
    int sig;
    do {
      sig = sigtimedwait(&stop, nullptr, &pause);
    } while (sig < 0 && errno == EINTR);
    if (sig > 0) return 0;
  }
}

}  // namespace

int statusCommand(const SidecarAddress& sidecar, const StatusArgs& args) {
  if (args.watch) return watch(sidecar, args);
  auto client = connectOrReport(sidecar);
  if (!client) return kExitUnavailable;
  std::string text;
  if (!fetch(*client, args.json, &text)) {
    std::fputs(text.c_str(), stderr);
    return kExitUnavailable;
  }
  std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace fencekeeper
