// KjTimer: every deadline on one KJ wake, in deadline order, never early; cancelled entries and
// callbacks that throw do not stop the others.
#include <gtest/gtest.h>
#include <kj/async-io.h>

#include <vector>

#include "common/kj_loop.h"

namespace fencekeeper {
namespace {

using std::chrono::milliseconds;

// Runs the loop until `done()` or 5 s of real time.
template <typename Done>
void runUntil(kj::AsyncIoContext& io, Done done) {
  auto deadline = bootTimeNow() + std::chrono::seconds(5);
  while (!done() && bootTimeNow() < deadline) {
    io.provider->getTimer().afterDelay(1 * kj::MILLISECONDS).wait(io.waitScope);
  }
}

TEST(KjTimerTest, FiresInDeadlineOrderAndNeverEarly) {
  auto io = kj::setupAsyncIo();
  KjTimer timer(io.provider->getTimer());
  std::vector<int> fired;
  std::vector<TimePoint> lateBy;
  auto at = [&](int ms, int tag) {
    TimePoint when = timer.now() + milliseconds(ms);
    timer.schedule(when, [&, when, tag] {
      lateBy.push_back(timer.now() - when);
      fired.push_back(tag);
    });
  };
  at(30, 3);
  at(10, 1);  // earlier than the armed wake: it must interrupt it
  at(20, 2);
  runUntil(io, [&] { return fired.size() == 3; });
  EXPECT_EQ(fired, (std::vector<int>{1, 2, 3}));
  for (auto late : lateBy) EXPECT_GE(late.count(), 0);
}

TEST(KjTimerTest, ACancelledEntryNeverRunsAndOthersStillDo) {
  auto io = kj::setupAsyncIo();
  KjTimer timer(io.provider->getTimer());
  bool cancelledRan = false;
  bool laterRan = false;
  uint64_t first = timer.schedule(timer.now() + milliseconds(5), [&] { cancelledRan = true; });
  timer.schedule(timer.now() + milliseconds(15), [&] { laterRan = true; });
  timer.cancel(first);
  runUntil(io, [&] { return laterRan; });
  EXPECT_TRUE(laterRan);
  EXPECT_FALSE(cancelledRan);
}

TEST(KjTimerTest, ACallbackThatThrowsDoesNotStopTheTimer) {
  auto io = kj::setupAsyncIo();
  KjTimer timer(io.provider->getTimer());
  bool afterRan = false;
  bool scheduledFromCallbackRan = false;
  timer.schedule(timer.now(), [] { throw std::runtime_error("a failing callback"); });
  timer.schedule(timer.now() + milliseconds(2), [&] {
    afterRan = true;
    timer.schedule(timer.now() + milliseconds(2), [&] { scheduledFromCallbackRan = true; });
  });
  runUntil(io, [&] { return scheduledFromCallbackRan; });
  EXPECT_TRUE(afterRan);
  EXPECT_TRUE(scheduledFromCallbackRan);
}

}  // namespace
}  // namespace fencekeeper
