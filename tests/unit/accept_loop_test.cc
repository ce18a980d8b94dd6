// The accept loop against a listening socket whose accept() fails as it does with the fds
// exhausted: it used to end for good on the first EMFILE (issue 9, defect 4).
#include "sidecar/rpc/accept_loop.h"

#include <gtest/gtest.h>
#include <kj/async.h>
#include <kj/debug.h>

#include <deque>

namespace fencekeeper::rpc {
namespace {

// accept() fails `failuresLeft` times, then waits until the test connects a client.
class ScriptedReceiver final : public kj::ConnectionReceiver {
 public:
  kj::Promise<kj::Own<kj::AsyncIoStream>> accept() override {
    ++calls;
    if (failuresLeft > 0) {
      --failuresLeft;
      // As KJ's receiver does: the failed accept(2) is thrown, not returned as a rejection.
      kj::throwFatalException(KJ_EXCEPTION(FAILED, "accept(): Too many open files"));
    }
    auto paf = kj::newPromiseAndFulfiller<kj::Own<kj::AsyncIoStream>>();
    pending.push_back(kj::mv(paf.fulfiller));
    return kj::mv(paf.promise);
  }
  uint getPort() override { return 0; }

  void connect() {
    ASSERT_FALSE(pending.empty()) << "nobody is accepting";
    auto pipe = kj::newTwoWayPipe();
    clients.push_back(kj::mv(pipe.ends[1]));
    pending.front()->fulfill(kj::mv(pipe.ends[0]));
    pending.pop_front();
  }

  int failuresLeft = 0;
  int calls = 0;
  std::deque<kj::Own<kj::PromiseFulfiller<kj::Own<kj::AsyncIoStream>>>> pending;
  std::deque<kj::Own<kj::AsyncIoStream>> clients;
};

// The loop, the time and the socket of one test (KJ members: no gtest fixture, whose
// destructor must not throw).
struct Harness {
  // Advances time 1 ms at a time until accept() is called again; returns how long that took.
  Millis untilNextAccept() {
    int before = receiver.calls;
    Millis waited{0};
    while (receiver.calls == before && waited < Millis(5'000)) {
      timer.advance(Millis(1));
      waitScope.poll();
      waited += Millis(1);
    }
    return waited;
  }

  kj::EventLoop loop;
  kj::WaitScope waitScope{loop};
  ManualTimer timer;
  ScriptedReceiver receiver;
  std::deque<kj::Own<kj::AsyncIoStream>> served;
  kj::Function<void(kj::AuthenticatedStream)> serve = [this](kj::AuthenticatedStream s) {
    served.push_back(kj::mv(s.stream));
  };
};

TEST(AcceptLoopTest, AnEmfileNoLongerEndsTheLoop) {
  Harness h;
  h.receiver.failuresLeft = 3;
  AcceptLoop accept(h.receiver, h.timer, kj::mv(h.serve));
  h.waitScope.poll();
  EXPECT_EQ(h.receiver.calls, 1);
  EXPECT_FALSE(accept.accepting());
  EXPECT_EQ(accept.failures(), 1u);

  EXPECT_EQ(h.untilNextAccept(), Millis(10));
  EXPECT_EQ(h.untilNextAccept(), Millis(20));
  EXPECT_EQ(h.untilNextAccept(), Millis(40));
  EXPECT_EQ(accept.failures(), 3u);
  EXPECT_TRUE(accept.accepting()) << "accept() waits for a client again: the fds are back";

  h.receiver.connect();
  h.waitScope.poll();
  EXPECT_EQ(h.served.size(), 1u);
  EXPECT_TRUE(accept.accepting());
  EXPECT_EQ(h.receiver.calls, 5) << "waits for the next client at once";
}

TEST(AcceptLoopTest, BackoffDoublesUpToOneSecondAndStartsOverAfterASuccess) {
  Harness h;
  h.receiver.failuresLeft = 10;
  AcceptLoop accept(h.receiver, h.timer, kj::mv(h.serve));
  h.waitScope.poll();
  for (int ms : {10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000})
    EXPECT_EQ(h.untilNextAccept(), Millis(ms));
  EXPECT_EQ(accept.failures(), 10u);
  h.receiver.connect();
  h.waitScope.poll();
  EXPECT_TRUE(accept.accepting());

  h.receiver.failuresLeft = 1;
  h.receiver.connect();
  h.waitScope.poll();
  EXPECT_EQ(h.served.size(), 2u);
  EXPECT_FALSE(accept.accepting());
  EXPECT_EQ(h.untilNextAccept(), Millis(10));
  EXPECT_EQ(accept.failures(), 11u);
}

TEST(AcceptLoopTest, StopCancelsTheBackoff) {
  Harness h;
  h.receiver.failuresLeft = 1;
  AcceptLoop accept(h.receiver, h.timer, kj::mv(h.serve));
  h.waitScope.poll();
  accept.stop();
  h.timer.advance(Millis(2'000));
  h.waitScope.poll();
  EXPECT_EQ(h.receiver.calls, 1);
}

}  // namespace
}  // namespace fencekeeper::rpc
