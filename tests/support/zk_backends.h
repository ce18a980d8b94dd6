// The two ZooKeepers a typed test runs on, behind one face: FakeBackend (the in-memory fake,
// manual time) and RealBackend (a real server started once per test suite, real time). Each
// drives its own loop on the test's thread: tests wait with until(), never sleep.
//
// Every test gets a fresh base path (base()) so tests on one shared server do not meet.
#pragma once

#include <gtest/gtest.h>

#include <kj/async-io.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/executor.h"
#include "common/kj_loop.h"
#include "sidecar/zk/credentials.h"
#include "sidecar/zk/fake_zk.h"
#include "sidecar/zk/zk_client.h"
#include "tests/support/manual_executor.h"

namespace fencekeeper::devzk {
class ZkServerProcess;
}

namespace fencekeeper::testing {

class FakeBackend {
 public:
  static constexpr const char* kName = "Fake";
  static void startServer() {}
  static void stopServer() {}
  FakeBackend();

  Executor& executor() { return executor_; }
  Timer& timer() { return timer_; }
  const std::string& base() const { return base_; }
  // A new client with its own session, connected (authenticated with `credentials`, if any).
  std::unique_ptr<zk::Client> newClient(
      std::optional<zk::DigestCredentials> credentials = std::nullopt);
  // Runs the loop, letting time pass in 10 ms steps, until `done` holds or `timeout` has passed.
  bool until(const std::function<bool()>& done, Millis timeout = Millis(10'000));
  // Lets `d` pass, running the loop.
  void pass(Millis d);
  // Runs what is due now; on the fake that is everything that will happen without time passing.
  void settle() { pass(Millis(0)); }
  // Ends the client's session as the server does when it hears nothing for the timeout.
  void expire(zk::Client& client);

  // Another session's view of the tree.
  std::vector<std::string> children(const std::string& path);
  bool exists(const std::string& path);
  zk::Stat stat(const std::string& path);
  void remove(const std::string& path);
  // Returns the created path. kEphemeralSequential nodes belong to a session no test client has.
  std::string create(const std::string& path, const std::string& data, zk::CreateMode mode);
  // Sets the ACL of a node whose ACL lets anyone administer it.
  void setAcl(const std::string& path, const std::vector<zk::Acl>& acl);

 private:
  ManualExecutor executor_;
  ManualTimer timer_;
  zk::FakeZkServer server_;
  std::string base_;
};

class RealBackend {
 public:
  static constexpr const char* kName = "Real";
  // One standalone server for the whole suite (tickTime 200 ms).
  static void startServer();
  static void stopServer();
  RealBackend();
  ~RealBackend();

  Executor& executor() { return executor_; }
  Timer& timer() { return timer_; }
  const std::string& base() const { return base_; }
  // Session timeout 2 s (the server allows 0.4-40 s).
  std::unique_ptr<zk::Client> newClient(
      std::optional<zk::DigestCredentials> credentials = std::nullopt);
  bool until(const std::function<bool()>& done, Millis timeout = Millis(10'000));
  void pass(Millis d);
  // There is no "nothing left to happen" on a real server: lets 200 ms pass.
  void settle() { pass(Millis(200)); }
  // Expires a RealZkClient's session for real: a second handle with the same id and password
  // connects, then closes the session.
  void expire(zk::Client& client);

  std::vector<std::string> children(const std::string& path);
  bool exists(const std::string& path);
  zk::Stat stat(const std::string& path);
  void remove(const std::string& path);
  std::string create(const std::string& path, const std::string& data, zk::CreateMode mode);
  void setAcl(const std::string& path, const std::vector<zk::Acl>& acl);

 private:
  // Runs the loop for a moment (2 ms), answers and timers included.
  void turn();
  // Sends a request of the other session and waits for its answer.
  template <typename Result>
  Result await(const std::function<void(std::function<void(const Result&)>)>& send);

  static devzk::ZkServerProcess* server_;
  // The daemon's loop, on the test's thread: the clients run as they run in the sidecar. (By
  // pointer: KJ's destructors may throw, this class's must not.)
  std::unique_ptr<kj::AsyncIoContext> io_;
  KjLoopExecutor executor_;
  KjTimer timer_;
  std::string base_;
  std::unique_ptr<zk::Client> other_;  // the other session (destroyed first: it needs the loop)
};

// For TYPED_TEST_SUITE(Suite, ZkBackends, ZkBackendNames): tests named .../Fake and .../Real.
using ZkBackends = ::testing::Types<FakeBackend, RealBackend>;
struct ZkBackendNames {
  template <typename T>
  static std::string GetName(int) {
    return T::kName;
  }
};

}  // namespace fencekeeper::testing
