// A real ZooKeeper server (standalone or a small ensemble) run from Debian's jars, for the daemon's
// --dev mode and for tests, with the faults tests need: stop, kill, freeze, restart one node.
// Every node listens on 127.0.0.1 only.
//
// Not thread-safe: one thread owns an instance. The JVMs are started with spawnProcess (spawn.h):
// a ZooKeeper C client running in this process holds locks that a forked child would inherit
// locked, so nothing between the fork and the exec may take one.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace fencekeeper::devzk {

struct ZkServerOptions {
  // Where the nodes keep config, data and logs (one subdirectory per node). Empty: a fresh
  // directory under /tmp, removed when the servers are destroyed unless keepLogs(true). A given
  // directory is created if missing and never removed; data left in it from a previous run is
  // reused.
  std::string dataDir;
  // Small by default so tests can ask for short sessions: ZooKeeper bounds session timeouts to
  // [2, 20] x tickTime unless minSessionTimeoutMs/maxSessionTimeoutMs say otherwise.
  int tickTimeMs = 200;
  // How often CONTAINER znodes without children are reaped (ZooKeeper's default is 60 s).
  int containerCheckIntervalMs = 1000;
  // 1: a standalone server; more: an ensemble of that many nodes (3 is the usual).
  size_t ensembleSize = 1;
  std::string javaHeap = "128m";
  // false: -Dzookeeper.forceSync=no (about half the write latency, no durability). Keep true for
  // any latency figure that gets reported.
  bool forceSync = true;
  int maxSessionTimeoutMs = 60000;
  // How many ticks a follower waits for its leader before it drops it and its clients, and the
  // leader for its followers (ZooKeeper's syncLimit). 0: about 3 s, at least 5 ticks.
  int syncLimitTicks = 0;
  // false: the leader accepts no client connections (zookeeper.leaderServes=no), so every
  // session is on a follower.
  bool leaderServes = true;
  int minSessionTimeoutMs = 0;  // 0: ZooKeeper's default, 2 x tickTime
  // How long start() and restart() wait for the nodes to serve.
  std::chrono::milliseconds startTimeout{30000};
  // Put the JVMs in their own session so a terminal's Ctrl-C or hangup doesn't reach them: for
  // servers meant to outlive this process (see detach()). Off, they share the caller's process
  // group and die with it on Ctrl-C.
  bool newSession = false;
  // SIGKILL the JVMs when the thread that started them (or restarted one) ends: for tests, so a
  // crashed test leaves no server running. Never with detach().
  bool dieWithParent = false;
  // Non-empty: node i's JVM runs as uid and gid nodeIds[i] (its directory is given to it), so
  // that a test can cut one node's traffic with iptables' owner match. Needs root.
  std::vector<int> nodeIds;
  std::string javaBinary = "java";  // looked up on PATH
  std::string jarDir = "/usr/share/java";
};

class ZkServerProcess {
 public:
  explicit ZkServerProcess(ZkServerOptions options = {});
  // Stops every node still owned (thawing frozen ones first), then removes the temporary
  // directory unless logs are kept, in which case it says on stderr where they are.
  ~ZkServerProcess();
  ZkServerProcess(const ZkServerProcess&) = delete;
  ZkServerProcess& operator=(const ZkServerProcess&) = delete;

  // Picks free ports, writes each node's config and starts the JVMs, then waits until every node
  // answers `srvr` with a Mode line. Throws std::runtime_error with the log tail on failure (after
  // stopping what it started; the logs are then kept). Call once.
  void start();

  // "127.0.0.1:p1,127.0.0.1:p2,..." over every node, running or not.
  std::string connectString() const;
  int clientPort(size_t i) const;
  // The quorum ports of node i: followers connect to their leader's peer port; elections run
  // over the election ports.
  int peerPort(size_t i) const { return nodes_.at(i).peerPort; }
  int electionPort(size_t i) const { return nodes_.at(i).electionPort; }
  // -1 when node i is not running.
  pid_t pid(size_t i) const;
  size_t size() const { return nodes_.size(); }
  const std::string& dir() const { return dir_; }
  std::string nodeDir(size_t i) const;
  // ZooKeeper's own log of node i (the JVM's stdout and stderr go to console.log beside it).
  std::string logPath(size_t i) const;
  // The last `lines` lines of node i's logs, for failure messages.
  std::string logTail(size_t i, size_t lines = 40) const;

  // Fault helpers. stop: SIGTERM, wait for the process to be gone (SIGKILL after a grace period).
  // kill: SIGKILL and reap. freeze/thaw: SIGSTOP/SIGCONT (a frozen node keeps its sockets: peers
  // and clients see silence, not a closed connection). restart: stop if running, start again on
  // the same ports and directory, and by default wait until it serves (an ensemble node serves
  // only while a quorum is up).
  void stop(size_t i);
  void kill(size_t i);
  void freeze(size_t i);
  void thaw(size_t i);
  void restart(size_t i, bool waitUntilServing = true);
  // Stops every running node, in parallel.
  void stopAll();

  bool running(size_t i) const { return nodes_.at(i).pid > 0; }
  bool frozen(size_t i) const { return nodes_.at(i).frozen; }
  // Polls node i until it serves or `timeout` passes.
  bool waitServing(size_t i, std::chrono::milliseconds timeout) const;
  // The Mode node i reports to `srvr` ("standalone", "leader", "follower"), or "" when it is
  // stopped, frozen or not serving.
  std::string mode(size_t i) const;
  // The node whose Mode is leader, or -1 (always -1 for a standalone server).
  int leaderIndex() const;

  // Keep the directory when destroyed (tests call this when they failed). Also forced on by a
  // non-empty FK_KEEP_ZK_LOGS environment variable.
  void keepLogs(bool keep) { keepLogs_ = keep; }
  // Forgets the processes without stopping them and keeps the directory, so the servers outlive
  // this object (fk-zk-harness start). Start with options.newSession for that.
  void detach();

 private:
  struct Node {
    std::string dir;
    int clientPort = 0;
    int peerPort = 0;
    int electionPort = 0;
    pid_t pid = -1;
    bool frozen = false;
  };

  void assignPortsAndWriteConfig();
  void writeNodeConfig(size_t i) const;
  void spawn(size_t i);
  // Empty when every node serves; otherwise why not, with the log tail.
  std::string waitAllServing();
  void reapIfExited(size_t i);
  bool standalone() const { return options_.ensembleSize == 1; }
  std::string classPath() const;

  ZkServerOptions options_;
  std::string dir_;
  bool ownsDir_ = false;
  bool keepLogs_ = false;
  bool started_ = false;
  std::vector<Node> nodes_;
};

// Stops servers that are not this process's children (fk-zk-harness stop): for each pid that is
// still a ZooKeeper JVM (checked in /proc, so a reused pid is left alone) SIGCONT, SIGTERM, then
// SIGKILL for those still there after `grace`. Returns how many were running.
// True when `pid` is a live (not zombie) ZooKeeper server JVM.
bool isRunningZooKeeper(pid_t pid);
size_t stopDetachedServers(const std::vector<pid_t>& pids, std::chrono::milliseconds grace);

}  // namespace fencekeeper::devzk
