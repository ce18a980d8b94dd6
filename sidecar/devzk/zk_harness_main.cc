// fk-zk-harness: starts and stops a development ZooKeeper for shell and Python tests.
//
//   fk-zk-harness start --dir DIR [--ensemble N] [--tick MS] [--container-check MS] [--no-fsync]
//                       [--heap SIZE] [--timeout MS] [--uids U1,U2,...]
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
// While it serves, it takes one command a line on standard input and answers each with one line,
// `ok [VALUE]` or `error WHY`: `kill I`, `freeze I`, `thaw I`, `stop I`, `restart I` (returns at
// once; poll `mode I`), `mode I` (leader, follower, standalone, or empty), `leader` (its index or
// -1), `pid I`, `ports I` (client, peer and election ports). Nodes count from 0.
// --uids runs node i's JVM as uid and gid Ui (root only), for iptables' owner match.
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
#include <sstream>
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
               "                           [--timeout MS] [--uids U1,U2,...]\n"
               "       fk-zk-harness serve --dir DIR [the flags of start]\n"
               "       fk-zk-harness stop --dir DIR [--grace MS]\n");
  return 2;
}

// Flags as name -> value ("" for a switch). Nullopt on a malformed command line.
std::optional<std::map<std::string, std::string>> parseFlags(int argc, char** argv) {
  static const std::map<std::string, bool> kTakesValue = {
      {"--dir", true},  {"--ensemble", true}, {"--tick", true},  {"--container-check", true},
      {"--heap", true}, {"--timeout", true},  {"--grace", true}, {"--no-fsync", false},
      {"--uids", true},
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

// "1,2,3" -> {1, 2, 3}; nullopt unless every item is a non-negative integer.
std::optional<std::vector<int>> idList(const std::string& text) {
  std::vector<int> ids;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    char* end = nullptr;
    long id = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || id < 0 || id > 0x7fffffff) return std::nullopt;
    ids.push_back(static_cast<int>(id));
  }
  return ids;
}

void writePids(const fs::path& dir, const ZkServerProcess& servers) {
  std::string pids;
  for (size_t i = 0; i < servers.size(); ++i) pids += std::to_string(servers.pid(i)) + "\n";
  writeAtomically(dir / "pids", pids);
}

// One command line of `serve` (see the top of this file): its answer, without the newline.
std::string runCommand(const std::string& line, ZkServerProcess& servers, const fs::path& dir) {
  std::istringstream in(line);
  std::string verb;
  in >> verb;
  if (verb == "leader") return "ok " + std::to_string(servers.leaderIndex());
  long node = -1;
  if (!(in >> node) || node < 0 || static_cast<size_t>(node) >= servers.size()) {
    return "error '" + line + "': wants a verb and a node from 0 to " +
           std::to_string(servers.size() - 1);
  }
  auto i = static_cast<size_t>(node);
  try {
    if (verb == "mode") return "ok " + servers.mode(i);
    if (verb == "pid") return "ok " + std::to_string(servers.pid(i));
    if (verb == "ports") {
      return "ok " + std::to_string(servers.clientPort(i)) + " " +
             std::to_string(servers.peerPort(i)) + " " + std::to_string(servers.electionPort(i));
    }
    if (verb == "freeze") servers.freeze(i);
    else if (verb == "thaw") servers.thaw(i);
    else if (verb == "kill") servers.kill(i);
    else if (verb == "stop") servers.stop(i);
    else if (verb == "restart") servers.restart(i, false);
    else return "error unknown command '" + verb + "'";
    writePids(dir, servers);
    return "ok";
  } catch (const std::exception& e) {
    return std::string("error ") + e.what();
  }
}

// Answers commands on standard input until it closes or SIGTERM/SIGINT arrives.
void serveCommands(ZkServerProcess& servers, const fs::path& dir) {
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGTERM);
  sigaddset(&stopSignals, SIGINT);
  sigprocmask(SIG_BLOCK, &stopSignals, nullptr);
  int sfd = signalfd(-1, &stopSignals, SFD_CLOEXEC);
  pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {sfd, POLLIN, 0}};
  std::string pending;
  char buf[256];
  for (;;) {
    if (poll(fds, 2, -1) < 0) continue;  // EINTR
    if (fds[1].revents) break;
    if (!fds[0].revents) continue;
    ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
    if (n <= 0) break;
    pending.append(buf, static_cast<size_t>(n));
    for (size_t end; (end = pending.find('\n')) != std::string::npos;) {
      std::string line = pending.substr(0, end);
      pending.erase(0, end + 1);
      if (line.empty()) continue;
      std::printf("%s\n", runCommand(line, servers, dir).c_str());
      std::fflush(stdout);
    }
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
  if (flags.count("--uids")) {
    auto ids = idList(flags.at("--uids"));
    if (!ids || ids->size() != options.ensembleSize) {
      std::fprintf(stderr, "fk-zk-harness: --uids wants one id per node, comma-separated\n");
      return 2;
    }
    options.nodeIds = *ids;
  }
  options.newSession = !foreground;
  options.dieWithParent = foreground;

  auto begin = std::chrono::steady_clock::now();
  ZkServerProcess servers(options);
  servers.start();
  std::string ports;
  for (size_t i = 0; i < servers.size(); ++i) ports += std::to_string(servers.clientPort(i)) + "\n";
  writePids(dir, servers);
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
  serveCommands(servers, dir);
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
