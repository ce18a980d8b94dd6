// A real ZooKeeper and real `fencekeeper` daemons in a temp dir, for integration and fault tests.
// Owned by one test; everything it started is stopped by PID when it is destroyed, and the logs
// are printed when the test failed.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "fencekeeper/client.h"
#include "sidecar/devzk/zk_server.h"
#include "tests/support/child_process.h"

namespace fencekeeper::testing {

struct SidecarOptions {
  std::string zk{};  // connect string; empty: the cluster's ZooKeeper
  std::string sessionTimeout = "2s";
  std::vector<std::string> extraArgs{};
  std::string socket{};  // --socket; empty: socket(i), in the cluster's directory
  // No --status-socket (unless extraArgs give one): the sidecar's default, beside its socket.
  bool defaultStatusSocket = false;
  std::vector<std::string> env{};  // extra "KEY=VALUE" entries of its environment
};

class SidecarCluster {
 public:
  explicit SidecarCluster(devzk::ZkServerOptions zkOptions = {});
  ~SidecarCluster();

  devzk::ZkServerProcess& zk() { return *zk_; }
  const std::string& dir() const { return dir_; }

  // Starts a sidecar and waits until its ZooKeeper session is connected. Returns its index.
  size_t startSidecar(SidecarOptions options = {});
  // Kills sidecar i (SIGKILL: no goodbye to its clients) and starts it again with the same
  // arguments, socket and log (appended); waits until it is ready.
  void restartSidecar(size_t i);
  // Waits until sidecar i answers status() with a connected session it vouches for.
  bool waitReady(size_t i);
  ChildProcess& sidecar(size_t i) { return *sidecars_.at(i); }
  // Its lease socket as configured: SidecarOptions::socket, or "<dir>/s<i>.sock".
  std::string socket(size_t i) const;
  // The status socket the cluster gives it (--status-socket, unless the test's options say
  // otherwise).
  std::string statusSocket(size_t i) const;
  std::unique_ptr<Client> connect(size_t i);

  // Starts `fencectl --socket <sidecar i> ARGS...` in its own process group.
  std::unique_ptr<ChildProcess> fencectl(size_t i, std::vector<std::string> args);
  // A log file in the cluster's directory; printed (its end) with the sidecars' if the test fails.
  std::string newLogPath(const std::string& stem);

 private:
  std::string dir_;
  std::unique_ptr<devzk::ZkServerProcess> zk_;
  std::vector<std::unique_ptr<ChildProcess>> sidecars_;
  std::vector<std::vector<std::string>> sidecarArgv_;
  std::vector<std::vector<std::string>> sidecarEnv_;
  std::vector<std::string> sockets_;  // of the sidecars started
  std::vector<std::string> otherLogs_;
};

// `client.holder(name)`, the call expected to succeed.
HolderInfo holderOf(Client& client, const std::string& name);

// Options for a test's acquire: wait and TTL as given, owner label "test".
AcquireOptions acquireOptions(std::chrono::milliseconds wait, std::chrono::milliseconds ttl);

// The binaries under test (compile definitions from tests/CMakeLists.txt).
const char* fencekeeperBinary();
const char* fencectlBinary();
const char* fakeSidecarBinary();  // tests/support/fake_sidecar_main.cc

}  // namespace fencekeeper::testing
