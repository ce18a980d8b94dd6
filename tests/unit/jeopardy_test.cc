// Jeopardy (sidecar/engine/jeopardy.h) on a manual clock: at risk when the connection drops while
// vouched for, or when vouching runs below the floor without an extension; safe again at an
// extension that leaves the floor while connected; a lapse ends it without "safe".
#include "sidecar/engine/jeopardy.h"

#include <gtest/gtest.h>

#include <vector>

namespace fencekeeper::engine {
namespace {

struct Told {
  bool atRisk;
  Millis left;
};

class JeopardyTest : public ::testing::Test {
 protected:
  ManualTimer timer;
  std::vector<Told> told;
  Jeopardy jeopardy{timer, [] { return Millis(1400); },
                    [this](bool atRisk, Millis left) { told.push_back({atRisk, left}); }};
  TimePoint at(int64_t ms) { return timer.now() + Millis(ms); }
};

TEST_F(JeopardyTest, SteadyHeartbeatsNeverPutALeaseAtRisk) {
  jeopardy.onConnection(true);
  for (int i = 0; i < 20; ++i) {
    jeopardy.onVouched(at(2900));  // right after an answer, ~3T/4
    timer.advance(Millis(1000));   // the next answer comes a spacing later: ~T/2 left
  }
  EXPECT_TRUE(told.empty());
  EXPECT_FALSE(jeopardy.atRisk());
}

TEST_F(JeopardyTest, AnOverdueAnswerPutsItAtRiskWithWhatIsLeftAndTheNextAnswerMakesItSafe) {
  jeopardy.onConnection(true);
  jeopardy.onVouched(at(2900));
  timer.advance(Millis(1499));
  EXPECT_TRUE(told.empty());
  timer.advance(Millis(1));
  ASSERT_EQ(told.size(), 1u);
  EXPECT_TRUE(told[0].atRisk);
  EXPECT_EQ(told[0].left, Millis(1400));
  jeopardy.onVouched(at(2900));
  ASSERT_EQ(told.size(), 2u);
  EXPECT_FALSE(told[1].atRisk);
  EXPECT_EQ(told[1].left, Millis(2900));
}

TEST_F(JeopardyTest, ADroppedConnectionIsAtRiskAtOnceAndSafeOnlyOnceVouchedAgainAfterIt) {
  jeopardy.onConnection(true);
  jeopardy.onVouched(at(2900));
  jeopardy.onConnection(false);
  ASSERT_EQ(told.size(), 1u);
  EXPECT_TRUE(told[0].atRisk);
  EXPECT_EQ(told[0].left, Millis(2900));
  jeopardy.onVouched(at(2950));  // (no extension while disconnected can make it safe)
  EXPECT_EQ(told.size(), 1u);
  jeopardy.onConnection(true);  // back, and still vouched for above the floor
  ASSERT_EQ(told.size(), 2u);
  EXPECT_FALSE(told[1].atRisk);
}

TEST_F(JeopardyTest, ALapseEndsItWithoutSafeAgain) {
  jeopardy.onConnection(true);
  jeopardy.onVouched(at(2900));
  jeopardy.onConnection(false);
  timer.advance(Millis(3000));
  jeopardy.onVouched(TimePoint{});  // the lapse
  EXPECT_FALSE(jeopardy.atRisk());
  ASSERT_EQ(told.size(), 1u);
  EXPECT_TRUE(told[0].atRisk);
}

TEST_F(JeopardyTest, NothingIsAtRiskBeforeTheSessionIsVouchedFor) {
  jeopardy.onConnection(false);
  jeopardy.onConnection(true);
  timer.advance(Millis(5000));
  EXPECT_TRUE(told.empty());
}

}  // namespace
}  // namespace fencekeeper::engine
