// FaultyZkClient's own promises, on the in-memory ZooKeeper with a manual loop: the session states
// its listener hears keep the order the wrapped client lived them in.
#include <gtest/gtest.h>

#include <vector>

#include "sidecar/zk/fake_zk.h"
#include "sidecar/zk/faulty_zk_client.h"
#include "tests/support/manual_executor.h"

namespace fencekeeper::zk {
namespace {

// CI (TSan pass) saw "connecting connected connected connecting expired connecting" from a real
// client: the new session's "connected", already on the loop when the test reconnected, was told
// at once, ahead of the missed "expired" the reconnect had queued, and the listener ended on a
// stale "connecting" while the client was connected.
TEST(FaultyZkClientTest, AStateArrivingJustAfterAReconnectIsToldAfterTheMissedOnes) {
  testing::ManualExecutor ex;
  ManualTimer timer;
  FakeZkServer server;
  FakeZkClient inner(server, ex);
  FaultyZkClient faults(inner, ex, timer, [&] { server.expireSession(inner); });
  std::vector<SessionState> seen;
  faults.setSessionListener([&](SessionState s) { seen.push_back(s); });
  ex.runAll();
  ASSERT_EQ(inner.sessionState(), SessionState::kConnected);

  faults.disconnect();
  timer.advance(Millis(inner.negotiatedTimeoutMs()));  // the server ends the session
  // Run the loop until the new session is open but its "connected" not yet delivered.
  while (inner.sessionState() != SessionState::kConnected) ASSERT_TRUE(ex.runOne());
  faults.reconnect();
  ex.runAll();

  EXPECT_EQ(seen, (std::vector<SessionState>{SessionState::kConnecting, SessionState::kExpired,
                                             SessionState::kConnected}));
  EXPECT_EQ(faults.sessionState(), SessionState::kConnected);
}

}  // namespace
}  // namespace fencekeeper::zk
