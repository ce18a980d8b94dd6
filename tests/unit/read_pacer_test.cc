// ReadPacer: at most N reads out, at most R a second per uid, uids with reads waiting take
// turns, and a read never starts inside submit().
#include "sidecar/engine/read_pacer.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace fencekeeper::engine {
namespace {

struct Reads {
  std::vector<std::string> started;               // in order
  std::vector<std::function<void()>> finishers;  // of the reads out
  ReadPacer::Read read(std::string name) {
    return [this, name](std::function<void()> finished) {
      started.push_back(name);
      finishers.push_back(std::move(finished));
    };
  }
  void finishAll() {
    auto out = std::move(finishers);
    finishers.clear();
    for (auto& f : out) f();
  }
};

TEST(ReadPacer, NeverStartsInsideSubmitAndKeepsAtMostTheWindowOut) {
  ManualTimer timer;
  ReadPacer pacer(timer, 2, 1'000);
  Reads reads;
  for (int i = 0; i < 5; ++i) pacer.submit(7, reads.read("r" + std::to_string(i)));
  EXPECT_TRUE(reads.started.empty()) << "started inside submit()";
  timer.runDue();
  EXPECT_EQ(reads.started.size(), 2u);
  EXPECT_EQ(pacer.inFlight(), 2u);
  EXPECT_EQ(pacer.waiting(), 3u);
  reads.finishAll();
  timer.runDue();
  EXPECT_EQ(reads.started.size(), 4u);
  reads.finishAll();
  reads.finishAll();  // a second call of a finisher counts once: nothing more is out
  timer.runDue();
  EXPECT_EQ(reads.started.size(), 5u);
  EXPECT_EQ(pacer.inFlight(), 1u);
}

TEST(ReadPacer, AUidPastItsRateWaitsForItsBucketWhileAnotherUidGoesOn) {
  ManualTimer timer;
  ReadPacer pacer(timer, 100, 10);  // 10 a second per uid, a bucket of 10
  Reads reads;
  for (int i = 0; i < 25; ++i) pacer.submit(1, reads.read("a"));
  timer.runDue();
  EXPECT_EQ(reads.started.size(), 10u) << "the first second's bucket";
  reads.finishAll();
  pacer.submit(2, reads.read("b"));
  timer.runDue();
  ASSERT_EQ(reads.started.size(), 11u);
  EXPECT_EQ(reads.started.back(), "b") << "another uid is not held back by the first's wait";
  timer.advance(Millis(500));  // half a second: 5 more tokens
  EXPECT_EQ(reads.started.size(), 16u);
  timer.advance(Millis(1000));
  EXPECT_EQ(reads.started.size(), 26u);
  EXPECT_EQ(pacer.waiting(), 0u);
}

TEST(ReadPacer, UidsWithReadsWaitingTakeTurns) {
  ManualTimer timer;
  ReadPacer pacer(timer, 1, 1'000);
  Reads reads;
  for (int i = 0; i < 3; ++i) pacer.submit(1, reads.read("a"));
  for (int i = 0; i < 3; ++i) pacer.submit(2, reads.read("b"));
  for (int i = 0; i < 6; ++i) {
    timer.runDue();
    reads.finishAll();
  }
  EXPECT_EQ(reads.started, (std::vector<std::string>{"a", "b", "a", "b", "a", "b"}));
}

}  // namespace
}  // namespace fencekeeper::engine
