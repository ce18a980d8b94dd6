// One sidecar as the fuzz targets drive it: the production RpcListener, SidecarImpl and LockEngine
// on the in-memory ZooKeeper with a manual timer, serving one connection over a real Unix socket
// pair (so peer credentials read as they do on the lease socket). Single-threaded.
#pragma once

#include <kj/async-io.h>

#include <memory>
#include <string>

#include "common/clock.h"
#include "sidecar/engine/lock_engine.h"
#include "sidecar/rpc/sidecar_server.h"
#include "sidecar/zk/fake_zk.h"
#include "tests/fuzz/oracle.h"
#include "tests/support/manual_executor.h"

namespace fencekeeper::fuzz {

// The process's one KJ event loop: libFuzzer runs every input on the same thread.
kj::AsyncIoContext& asyncIo();

class SidecarUnderTest {
 public:
  static constexpr const char* kInstanceId = "fuzz";

  // Warmed up: the session is vouched for, so requests can be granted at once.
  SidecarUnderTest();
  ~SidecarUnderTest();

  // The client's end of the connection.
  kj::AsyncIoStream& client() { return *client_; }
  // Runs the event loop and the fake ZooKeeper's answers until neither has work left.
  void settle();
  // Moves time on (TTLs, waits, heartbeats fire), then settles.
  void advance(Millis by);
  void expireSession();
  zk::FakeZkServer& zkServer() { return server_; }
  engine::LockEngine& engine() { return engine_; }
  std::string lockPath(const std::string& name) const { return "/fencekeeper/locks/" + name; }

  // The engine's own view: at most one held lease per lock name, and only on valid names.
  void checkHeldLeases();
  // Closes the client's end, settles, and checks that the sidecar withdrew everything: no lease,
  // no waiter, no connection, and no lock node of this sidecar left in ZooKeeper.
  void disconnectAndCheckNothingLeft();

 private:
  void checkNoNodesUnder(const std::string& path);

  testing::ManualExecutor executor_;
  ManualTimer timer_;
  zk::FakeZkServer server_;
  zk::FakeZkClient zk_;
  engine::LockEngine engine_;
  rpc::ServerContext context_;
  kj::Own<kj::AsyncIoStream> client_;
  std::unique_ptr<rpc::RpcListener> listener_;
};

// Reads and drops everything the sidecar sends, so it never blocks on a full socket.
kj::Promise<void> discardAll(kj::AsyncInputStream& in);

}  // namespace fencekeeper::fuzz
