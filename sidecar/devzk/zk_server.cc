#include "sidecar/devzk/zk_server.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "sidecar/devzk/loopback.h"
#include "sidecar/devzk/proc_state.h"
#include "sidecar/devzk/spawn.h"

extern char** environ;

namespace fencekeeper::devzk {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kPollInterval{20};
// A JVM takes 1-2 s to exit after SIGTERM; past this it gets SIGKILL.
constexpr milliseconds kTermGrace{10000};
constexpr milliseconds kKillWait{5000};
constexpr int kProbeTimeoutMs = 2000;
constexpr int kStartAttempts = 3;

[[noreturn]] void throwErrno(const std::string& what, int err = errno) {
  throw std::runtime_error(what + ": " + std::strerror(err));
}

void writeFile(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  if (!out.flush()) throw std::runtime_error("cannot write " + path.string());
}

std::string readFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The last `lines` lines of a file without its final newline, reading at most its last 64 KiB.
std::string tailOf(const fs::path& path, size_t lines) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  in.seekg(std::max<std::streamoff>(0, size - 64 * 1024));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && text.back() == '\n') text.pop_back();
  size_t start = text.size();
  size_t found = 0;
  for (; start > 0; --start) {
    if (text[start - 1] == '\n' && ++found == lines) break;
  }
  return text.substr(start);
}

// Waits until `pid` is gone, reaping it when it is our child. A child already reaped elsewhere
// (a SIGCHLD handler) makes waitpid fail with ECHILD: then fall back to /proc.
bool waitGone(pid_t pid, Clock::time_point deadline) {
  bool child = true;
  for (;;) {
    if (child) {
      int status = 0;
      pid_t r = ::waitpid(pid, &status, WNOHANG);
      if (r == pid) return true;
      if (r < 0 && errno == ECHILD) child = false;
    }
    if (!child && processGone(pid)) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(kPollInterval);
  }
}

// SIGCONT (a stopped process can't act on SIGTERM), SIGTERM, wait; SIGKILL whoever is left.
void terminateAll(const std::vector<pid_t>& pids, milliseconds grace) {
  for (pid_t pid : pids) {
    ::kill(pid, SIGCONT);
    ::kill(pid, SIGTERM);
  }
  auto deadline = Clock::now() + grace;
  std::vector<pid_t> left;
  for (pid_t pid : pids) {
    if (!waitGone(pid, deadline)) left.push_back(pid);
  }
  for (pid_t pid : left) ::kill(pid, SIGKILL);
  deadline = Clock::now() + kKillWait;
  for (pid_t pid : left) {
    if (!waitGone(pid, deadline)) {
      std::fprintf(stderr, "devzk: pid %d survived SIGKILL for %lld ms\n", pid,
                   static_cast<long long>(kKillWait.count()));
    }
  }
}

bool isZooKeeperJvm(pid_t pid) {
  std::string cmdline = readFile("/proc/" + std::to_string(pid) + "/cmdline");
  return cmdline.find("org.apache.zookeeper.server") != std::string::npos;
}

std::string parseMode(const std::string& srvr) {
  static const std::string kTag = "Mode: ";
  size_t at = srvr.find(kTag);
  if (at == std::string::npos) return "";
  size_t end = srvr.find('\n', at);
  return srvr.substr(at + kTag.size(), end == std::string::npos ? end : end - at - kTag.size());
}

}  // namespace

ZkServerProcess::ZkServerProcess(ZkServerOptions options) : options_(std::move(options)) {
  if (options_.ensembleSize == 0) throw std::invalid_argument("ensembleSize must be at least 1");
  if (options_.tickTimeMs <= 0) throw std::invalid_argument("tickTimeMs must be positive");
  const char* keep = std::getenv("FK_KEEP_ZK_LOGS");
  keepLogs_ = keep != nullptr && *keep != '\0';
}

ZkServerProcess::~ZkServerProcess() {
  try {
    stopAll();
    if (dir_.empty()) return;
    if (ownsDir_ && !keepLogs_) {
      std::error_code ec;
      fs::remove_all(dir_, ec);
    } else if (ownsDir_ || keepLogs_) {
      std::fprintf(stderr, "devzk: ZooKeeper logs kept in %s\n", dir_.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "devzk: cleanup failed: %s\n", e.what());
  }
}

void ZkServerProcess::start() {
  if (started_) throw std::logic_error("ZkServerProcess::start called twice");
  started_ = true;
  if (options_.dataDir.empty()) {
    std::string tmpl = "/tmp/fk-zk-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) throwErrno("mkdtemp " + tmpl);
    dir_ = tmpl;
    ownsDir_ = true;
  } else {
    dir_ = fs::absolute(options_.dataDir).lexically_normal().string();
    fs::create_directories(dir_);
  }
  nodes_.resize(options_.ensembleSize);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    nodes_[i].dir = (fs::path(dir_) / ("node" + std::to_string(i))).string();
    fs::create_directories(fs::path(nodes_[i].dir) / "data");
  }

  for (int attempt = 1;; ++attempt) {
    std::string failure;
    try {
      assignPortsAndWriteConfig();
      for (size_t i = 0; i < nodes_.size(); ++i) spawn(i);
      failure = waitAllServing();
    } catch (...) {
      stopAll();
      keepLogs_ = true;
      throw;
    }
    if (failure.empty()) return;
    stopAll();
    // Another process may take a chosen port between our probe and the JVM's bind: that alone is
    // worth another try with fresh ports.
    bool portClash = false;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      portClash = portClash || logTail(i, 200).find("Address already in use") != std::string::npos;
    }
    if (!portClash || attempt == kStartAttempts) {
      keepLogs_ = true;
      throw std::runtime_error("ZooKeeper did not start (logs kept in " + dir_ + "): " + failure);
    }
    std::fprintf(stderr, "devzk: a port was taken before ZooKeeper bound it; retrying\n");
    for (const auto& node : nodes_) {
      std::error_code ec;
      fs::remove(fs::path(node.dir) / "zookeeper.log", ec);
      fs::remove(fs::path(node.dir) / "console.log", ec);
    }
  }
}

void ZkServerProcess::assignPortsAndWriteConfig() {
  std::vector<int> ports = freeLoopbackPorts(standalone() ? 1 : 3 * nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    nodes_[i].clientPort = ports[standalone() ? 0 : 3 * i];
    nodes_[i].peerPort = standalone() ? 0 : ports[3 * i + 1];
    nodes_[i].electionPort = standalone() ? 0 : ports[3 * i + 2];
  }
  for (size_t i = 0; i < nodes_.size(); ++i) writeNodeConfig(i);
}

void ZkServerProcess::writeNodeConfig(size_t i) const {
  const Node& node = nodes_[i];
  const int tick = options_.tickTimeMs;
  std::ostringstream cfg;
  cfg << "tickTime=" << tick << "\n"
      << "dataDir=" << node.dir << "/data\n"
      << "clientPort=" << node.clientPort << "\n"
      << "clientPortAddress=127.0.0.1\n"
      // Jetty's admin server would take port 8080 on every interface.
      << "admin.enableServer=false\n"
      << "4lw.commands.whitelist=*\n"
      // Tests open many sessions from 127.0.0.1; the default caps one address at 60.
      << "maxClientCnxns=0\n"
      << "maxSessionTimeout=" << options_.maxSessionTimeoutMs << "\n";
  if (options_.minSessionTimeoutMs > 0) {
    cfg << "minSessionTimeout=" << options_.minSessionTimeoutMs << "\n";
  }
  if (!standalone()) {
    // Limits are counted in ticks; fix them in time instead, so a small tick doesn't make JVM
    // start-up (initLimit, about 10 s) or a busy two-core machine (syncLimit, about 3 s) look like
    // a dead peer.
    cfg << "initLimit=" << std::max(10, 10000 / tick) << "\n"
        << "syncLimit="
        << (options_.syncLimitTicks > 0 ? options_.syncLimitTicks : std::max(5, 3000 / tick))
        << "\n";
    for (size_t j = 0; j < nodes_.size(); ++j) {
      cfg << "server." << j + 1 << "=127.0.0.1:" << nodes_[j].peerPort << ":"
          << nodes_[j].electionPort << "\n";
    }
    writeFile(fs::path(node.dir) / "data" / "myid", std::to_string(i + 1) + "\n");
  }
  writeFile(fs::path(node.dir) / "zoo.cfg", cfg.str());

  // Without a log4j configuration on the class path's binding ZooKeeper logs nothing at all.
  std::ostringstream log4j;
  log4j << "log4j.rootLogger=INFO, FILE\n"
        << "log4j.appender.FILE=org.apache.log4j.FileAppender\n"
        << "log4j.appender.FILE.File=" << logPath(i) << "\n"
        << "log4j.appender.FILE.Append=true\n"
        << "log4j.appender.FILE.layout=org.apache.log4j.PatternLayout\n"
        << "log4j.appender.FILE.layout.ConversionPattern="
        << "%d{ISO8601} [myid:%X{myid}] %-5p [%t:%c{1}] - %m%n\n";
  writeFile(fs::path(node.dir) / "log4j.properties", log4j.str());
}

std::string ZkServerProcess::classPath() const {
  const fs::path jars = options_.jarDir;
  // zookeeper.jar's manifest names the rest of ZooKeeper's dependencies.
  if (!fs::exists(jars / "zookeeper.jar")) {
    throw std::runtime_error((jars / "zookeeper.jar").string() +
                             " is missing: install Debian's zookeeper (scripts/setup.sh)");
  }
  std::string cp = (jars / "zookeeper.jar").string();
  for (const char* jar : {"slf4j-log4j12.jar", "log4j-1.2.jar"}) {
    if (fs::exists(jars / jar)) {
      cp += ":" + (jars / jar).string();
    } else {
      std::fprintf(stderr, "devzk: %s missing: ZooKeeper will log nothing\n", jar);
    }
  }
  return cp;
}

namespace {

// The node's directory and everything in it (config, data, logs) to `id`, and the way to it
// open to it.
void giveTo(const std::string& nodeDir, int id) {
  auto owner = static_cast<uid_t>(id);
  fs::permissions(fs::path(nodeDir).parent_path(), fs::perms::others_exec, fs::perm_options::add);
  if (::chown(nodeDir.c_str(), owner, owner) != 0) throwErrno("chown " + nodeDir);
  for (const auto& entry : fs::recursive_directory_iterator(nodeDir)) {
    if (::lchown(entry.path().c_str(), owner, owner) != 0) {
      throwErrno("chown " + entry.path().string());
    }
  }
}

}  // namespace

void ZkServerProcess::spawn(size_t i) {
  Node& node = nodes_[i];
  std::vector<std::string> args = {
      options_.javaBinary,
      "-Xmx" + options_.javaHeap,
      // One small heap: the serial collector needs no GC threads competing for two cores.
      "-XX:+UseSerialGC",
      // No hsperfdata files left under /tmp by every test.
      "-XX:-UsePerfData",
      "-Dlog4j.configuration=file:" + node.dir + "/log4j.properties",
      // Log times in UTC, so tests can set them beside their own clock.
      "-Duser.timezone=UTC",
      "-Dznode.container.checkIntervalMs=" + std::to_string(options_.containerCheckIntervalMs),
  };
  if (!options_.forceSync) args.push_back("-Dzookeeper.forceSync=no");
  if (!options_.leaderServes) args.push_back("-Dzookeeper.leaderServes=no");
  args.push_back("-cp");
  args.push_back(classPath());
  args.push_back(standalone() ? "org.apache.zookeeper.server.ZooKeeperServerMain"
                              : "org.apache.zookeeper.server.quorum.QuorumPeerMain");
  args.push_back(node.dir + "/zoo.cfg");
  SpawnSpec spec;
  spec.argv = std::move(args);
  if (!options_.nodeIds.empty()) {
    spec.runAsId = options_.nodeIds.at(i);
    giveTo(node.dir, spec.runAsId);
  }
  for (char** e = environ; *e; ++e) spec.env.emplace_back(*e);
  spec.stdinPath = "/dev/null";
  spec.outputPath = node.dir + "/console.log";
  spec.workDir = node.dir;
  // Our sockets (a ZooKeeper client's, the daemon's) must not live on in the JVM.
  spec.closeOtherFds = true;
  // Ctrl-C or a hangup must not reach servers meant to outlive us (see detach()).
  if (options_.newSession) spec.group = SpawnSpec::Group::kNewSession;
  spec.dieWithParent = options_.dieWithParent;
  pid_t pid = spawnProcess(spec);
  node.pid = pid;
  node.frozen = false;
}

std::string ZkServerProcess::waitAllServing() {
  auto deadline = Clock::now() + options_.startTimeout;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    for (;;) {
      reapIfExited(i);
      if (!running(i)) {
        return "node " + std::to_string(i) + " exited while starting; its log ends:\n" + logTail(i);
      }
      if (!mode(i).empty()) break;
      if (Clock::now() >= deadline) {
        return "node " + std::to_string(i) + " did not serve within " +
               std::to_string(options_.startTimeout.count()) + " ms; its log ends:\n" + logTail(i);
      }
      std::this_thread::sleep_for(milliseconds(50));
    }
  }
  return "";
}

void ZkServerProcess::reapIfExited(size_t i) {
  Node& node = nodes_[i];
  if (node.pid <= 0) return;
  int status = 0;
  pid_t r = ::waitpid(node.pid, &status, WNOHANG);
  if (r == node.pid || (r < 0 && errno == ECHILD && processGone(node.pid))) {
    node.pid = -1;
    node.frozen = false;
  }
}

std::string ZkServerProcess::connectString() const {
  std::string out;
  for (const auto& node : nodes_) {
    if (!out.empty()) out += ",";
    out += "127.0.0.1:" + std::to_string(node.clientPort);
  }
  return out;
}

int ZkServerProcess::clientPort(size_t i) const { return nodes_.at(i).clientPort; }

pid_t ZkServerProcess::pid(size_t i) const { return nodes_.at(i).pid; }

std::string ZkServerProcess::nodeDir(size_t i) const { return nodes_.at(i).dir; }

std::string ZkServerProcess::logPath(size_t i) const { return nodes_.at(i).dir + "/zookeeper.log"; }

std::string ZkServerProcess::logTail(size_t i, size_t lines) const {
  std::string out;
  std::string log = tailOf(logPath(i), lines);
  if (!log.empty()) out += "--- " + logPath(i) + " ---\n" + log + "\n";
  std::string console = tailOf(nodes_.at(i).dir + "/console.log", lines);
  if (!console.empty()) out += "--- " + nodes_.at(i).dir + "/console.log ---\n" + console + "\n";
  return out.empty() ? "(no log output)\n" : out;
}

void ZkServerProcess::stop(size_t i) {
  Node& node = nodes_.at(i);
  if (node.pid <= 0) return;
  terminateAll({node.pid}, kTermGrace);
  node.pid = -1;
  node.frozen = false;
}

void ZkServerProcess::stopAll() {
  std::vector<pid_t> pids;
  for (const auto& node : nodes_) {
    if (node.pid > 0) pids.push_back(node.pid);
  }
  if (pids.empty()) return;
  terminateAll(pids, kTermGrace);
  for (auto& node : nodes_) {
    node.pid = -1;
    node.frozen = false;
  }
}

void ZkServerProcess::kill(size_t i) {
  Node& node = nodes_.at(i);
  if (node.pid <= 0) return;
  ::kill(node.pid, SIGKILL);
  if (!waitGone(node.pid, Clock::now() + kKillWait)) {
    std::fprintf(stderr, "devzk: pid %d survived SIGKILL\n", node.pid);
  }
  node.pid = -1;
  node.frozen = false;
}

void ZkServerProcess::freeze(size_t i) {
  Node& node = nodes_.at(i);
  if (node.pid <= 0) throw std::logic_error("freeze: node " + std::to_string(i) + " not running");
  if (::kill(node.pid, SIGSTOP) != 0) throwErrno("SIGSTOP");
  node.frozen = true;
  if (!waitAllThreadsStopped(node.pid, Clock::now() + kKillWait)) {
    throw std::runtime_error("freeze: node " + std::to_string(i) + " did not stop");
  }
}

void ZkServerProcess::thaw(size_t i) {
  Node& node = nodes_.at(i);
  if (node.pid <= 0) return;
  ::kill(node.pid, SIGCONT);
  node.frozen = false;
}

void ZkServerProcess::restart(size_t i, bool waitUntilServing) {
  if (!started_) throw std::logic_error("restart before start");
  stop(i);
  spawn(i);
  if (waitUntilServing && !waitServing(i, options_.startTimeout)) {
    throw std::runtime_error("node " + std::to_string(i) + " did not serve again within " +
                             std::to_string(options_.startTimeout.count()) +
                             " ms; its log ends:\n" + logTail(i));
  }
}

bool ZkServerProcess::waitServing(size_t i, milliseconds timeout) const {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    if (!running(i) || processGone(pid(i))) return false;
    if (!mode(i).empty()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(50));
  }
}

std::string ZkServerProcess::mode(size_t i) const {
  const Node& node = nodes_.at(i);
  // A frozen JVM's kernel still accepts the connection, but nothing answers: don't wait for it.
  if (node.pid <= 0 || node.frozen) return "";
  auto reply = fourLetterWord(node.clientPort, "srvr", kProbeTimeoutMs);
  if (!reply) return "";
  std::string mode = parseMode(*reply);
  if (mode.empty() && !options_.leaderServes &&
      reply->find("not currently serving") != std::string::npos) {
    // A leader that serves no clients says only that: its own log tells whether it leads.
    std::ifstream log(logPath(i));
    std::string line, last;
    const std::string tag = "Peer state changed: ";
    while (std::getline(log, line)) {
      if (auto at = line.find(tag); at != std::string::npos) last = line.substr(at + tag.size());
    }
    if (last == "leading - broadcast") return "leader";
  }
  return mode;
}

int ZkServerProcess::leaderIndex() const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (mode(i) == "leader") return static_cast<int>(i);
  }
  return -1;
}

void ZkServerProcess::detach() {
  for (auto& node : nodes_) {
    node.pid = -1;
    node.frozen = false;
  }
  ownsDir_ = false;
  keepLogs_ = false;  // the directory stays anyway; nothing to announce
}

bool isRunningZooKeeper(pid_t pid) { return pid > 0 && !processGone(pid) && isZooKeeperJvm(pid); }

size_t stopDetachedServers(const std::vector<pid_t>& pids, milliseconds grace) {
  std::vector<pid_t> alive;
  for (pid_t pid : pids) {
    if (isRunningZooKeeper(pid)) alive.push_back(pid);
  }
  terminateAll(alive, grace);
  return alive.size();
}

}  // namespace fencekeeper::devzk
