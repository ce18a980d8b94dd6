// fk-zk-harness: starts and stops a development ZooKeeper for shell and Python tests.
//
//   fk-zk-harness start --dir DIR [--ensemble N] [--tick MS] [--container-check MS] [--no-fsync]
//                       [--heap SIZE] [--timeout MS]
//   fk-zk-harness serve --dir DIR [the flags of start]
//   fk-zk-harness stop --dir DIR [--grace MS]
//
// start returns once every node serves and leaves the servers running (in their own session, so
// they outlive this process and the shell's Ctrl-C). It writes DIR/connect (the connect string),
// DIR/pids and DIR/ports (one per line, node order). stop stops every pid in DIR/pids that is
// still a ZooKeeper JVM and removes those three files; the logs stay in DIR/nodeN/.
// serve writes the same files but stays in the foreground: it stops the servers when its standard
// input closes or it gets SIGTERM/SIGINT, and they die with it however it ends (PR_SET_PDEATHSIG),
// so a test that runs it under `setpriv --pdeathsig KILL` leaves nothing behind when it crashes.
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sidecar/devzk/zk_server.h"

namespace fencekeeper::devzk {
namespace {

namespace fs = std::filesystem;

int usage() {
  std::fprintf(stderr,
               "usage: fk-zk-harness start --dir DIR [--ensemble N] [--tick MS]\n"
               "                           [--container-check MS] [--no-fsync] [--heap SIZE]\n"
               "                           [--timeout MS]\n"
               "       fk-zk-harness serve --dir DIR [the flags of start]\n"
               "       fk-zk-harness stop --dir DIR [--grace MS]\n");
  return 2;
}

// Flags as name -> value ("" for a switch). Nullopt on a malformed command line.
std::optional<std::map<std::string, std::string>> parseFlags(int argc, char** argv) {
  static const std::map<std::string, bool> kTakesValue = {
      {"--dir", true},  {"--ensemble", true}, {"--tick", true},  {"--container-check", true},
      {"--heap", true}, {"--timeout", true},  {"--grace", true}, {"--no-fsync", false},
  };
  std::map<std::string, std::string> flags;
  for (int i = 2; i < argc; ++i) {
    auto it = kTakesValue.find(argv[i]);
    if (it == kTakesValue.end()) {
      std::fprintf(stderr, "fk-zk-harness: unknown flag %s\n", argv[i]);
      return std::nullopt;
    }
    if (!it->second) {
      flags[it->first] = "";
    } else if (i + 1 < argc) {
      flags[it->first] = argv[++i];
    } else {
      std::fprintf(stderr, "fk-zk-harness: %s needs a value\n", argv[i]);
      return std::nullopt;
    }
  }
  return flags;
}

std::optional<long> intFlag(const std::map<std::string, std::string>& flags,
                            const std::string& name, long fallback) {
  auto it = flags.find(name);
  if (it == flags.end()) return fallback;
  char* end = nullptr;
  long value = std::strtol(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end != '\0' || value <= 0) {
    std::fprintf(stderr, "fk-zk-harness: %s wants a positive integer\n", name.c_str());
    return std::nullopt;
  }
  return value;
}

// Written beside and renamed into place, so a test polling for the file never reads half of it.
void writeAtomically(const fs::path& path, const std::string& text) {
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out.flush()) throw std::runtime_error("cannot write " + tmp.string());
  }
  fs::rename(tmp, path);
}

std::vector<pid_t> readPids(const fs::path& path) {
  std::vector<pid_t> pids;
  std::ifstream in(path);
  long pid = 0;
  while (in >> pid) pids.push_back(static_cast<pid_t>(pid));
  return pids;
}

// Until standard input closes or SIGTERM/SIGINT arrives.
void waitForTheEnd() {
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGTERM);
  sigaddset(&stopSignals, SIGINT);
  sigprocmask(SIG_BLOCK, &stopSignals, nullptr);
  int sfd = signalfd(-1, &stopSignals, SFD_CLOEXEC);
  pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {sfd, POLLIN, 0}};
  char buf[256];
  for (;;) {
    if (poll(fds, 2, -1) < 0) continue;  // EINTR
    if (fds[1].revents) break;
    if (fds[0].revents && read(STDIN_FILENO, buf, sizeof buf) <= 0) break;
  }
  close(sfd);
}

int start(const std::map<std::string, std::string>& flags, bool foreground) {
  const fs::path dir = flags.at("--dir");
  auto ensemble = intFlag(flags, "--ensemble", 1);
  auto tick = intFlag(flags, "--tick", 200);
  auto containerCheck = intFlag(flags, "--container-check", 1000);
  auto timeout = intFlag(flags, "--timeout", 30000);
  if (!ensemble || !tick || !containerCheck || !timeout) return 2;

  // One harness per directory: a second start would orphan the first one's servers.
  for (pid_t pid : readPids(dir / "pids")) {
    if (isRunningZooKeeper(pid)) {
      std::fprintf(stderr, "fk-zk-harness: %s/pids lists pid %d, still serving: stop it first\n",
                   dir.c_str(), pid);
      return 1;
    }
  }

  ZkServerOptions options;
  options.dataDir = dir.string();
  options.ensembleSize = static_cast<size_t>(*ensemble);
  options.tickTimeMs = static_cast<int>(*tick);
  options.containerCheckIntervalMs = static_cast<int>(*containerCheck);
  options.startTimeout = std::chrono::milliseconds(*timeout);
  options.forceSync = flags.count("--no-fsync") == 0;
  if (flags.count("--heap")) options.javaHeap = flags.at("--heap");
  options.newSession = !foreground;
  options.dieWithParent = foreground;

  auto begin = std::chrono::steady_clock::now();
  ZkServerProcess servers(options);
  servers.start();
  std::string pids;
  std::string ports;
  for (size_t i = 0; i < servers.size(); ++i) {
    pids += std::to_string(servers.pid(i)) + "\n";
    ports += std::to_string(servers.clientPort(i)) + "\n";
  }
  writeAtomically(dir / "pids", pids);
  writeAtomically(dir / "ports", ports);
  // Last: tests wait for this file, and the other two are in place by then.
  writeAtomically(dir / "connect", servers.connectString() + "\n");
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  begin);
  std::fprintf(stderr, "fk-zk-harness: %zu node(s) serving at %s after %lld ms (logs in %s)\n",
               servers.size(), servers.connectString().c_str(), static_cast<long long>(ms.count()),
               servers.dir().c_str());
  std::printf("%s\n", servers.connectString().c_str());
  std::fflush(stdout);
  if (!foreground) {
    servers.detach();
    return 0;
  }
  waitForTheEnd();
  std::error_code ec;
  fs::remove(dir / "connect", ec);  // first: a test that sees it gone knows the servers go
  servers.stopAll();
  fs::remove(dir / "ports", ec);
  fs::remove(dir / "pids", ec);
  return 0;
}

int stop(const std::map<std::string, std::string>& flags) {
  const fs::path dir = flags.at("--dir");
  auto grace = intFlag(flags, "--grace", 10000);
  if (!grace) return 2;
  std::vector<pid_t> pids = readPids(dir / "pids");
  size_t stopped = stopDetachedServers(pids, std::chrono::milliseconds(*grace));
  std::error_code ec;
  // connect first: a test that sees it gone knows the servers are.
  fs::remove(dir / "connect", ec);
  fs::remove(dir / "ports", ec);
  fs::remove(dir / "pids", ec);
  std::fprintf(stderr, "fk-zk-harness: stopped %zu of %zu server(s) listed in %s/pids\n", stopped,
               pids.size(), dir.c_str());
  return 0;
}

int run(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string command = argv[1];
  auto flags = parseFlags(argc, argv);
  if (!flags) return usage();
  if (!flags->count("--dir") || flags->at("--dir").empty()) {
    std::fprintf(stderr, "fk-zk-harness: --dir is required\n");
    return usage();
  }
  if (command == "start") return start(*flags, false);
  if (command == "serve") return start(*flags, true);
  if (command == "stop") return stop(*flags);
  return usage();
}

}  // namespace
}  // namespace fencekeeper::devzk

int main(int argc, char** argv) {
  try {
    return fencekeeper::devzk::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fk-zk-harness: %s\n", e.what());
    return 1;
  }
}
