// The status server's pools (issue 24): who is closed to make room, and who is refused.
#include "sidecar/status/connection_slots.h"

#include <gtest/gtest.h>

namespace fencekeeper::status {
namespace {

using std::chrono::seconds;

class ConnectionSlotsTest : public ::testing::Test {
 protected:
  // A connection of `uid` accepted `at` seconds in.
  ConnectionSlots::Slot& open(int at, std::optional<uint32_t> uid, Pool pool = Pool::kWaiting) {
    return slots.open(&streams[at], uid, pool, TimePoint(seconds(at)));
  }
  ConnectionSlots slots{SlotLimits{3, 2, 3, 2, 1}, "test"};
  int streams[16];
};

TEST_F(ConnectionSlotsTest, AFullWaitingPoolClosesTheFirstOpenedOfTheUidHoldingTheMost) {
  auto& a = open(0, 1);
  auto& b = open(1, 2);
  auto& c = open(2, 2);
  auto& d = open(3, 1);  // the newest is never the one closed
  EXPECT_EQ(b.pool, Pool::kClosed) << "uid 2 holds the most; b was opened first";
  EXPECT_EQ(a.pool, Pool::kWaiting);
  EXPECT_EQ(c.pool, Pool::kWaiting);
  EXPECT_EQ(d.pool, Pool::kWaiting);
  EXPECT_EQ(slots.count(Pool::kWaiting), 3u);
}

TEST_F(ConnectionSlotsTest, AFullProbePoolClosesTheFirstOpenedHoweverRecentlyItsRequestCame) {
  auto& a = open(0, 1);
  auto& b = open(1, 1);
  auto& c = open(2, 1);
  EXPECT_EQ(slots.enter(b, Pool::kProbe), "");
  EXPECT_EQ(slots.enter(a, Pool::kProbe), "");  // a pipelined request: a's is the latest
  EXPECT_EQ(slots.enter(c, Pool::kProbe), "");
  EXPECT_EQ(a.pool, Pool::kClosed);
  EXPECT_EQ(b.pool, Pool::kProbe);
  EXPECT_EQ(c.pool, Pool::kProbe);
}

TEST_F(ConnectionSlotsTest, TheOtherRoutesRefuseBeyondAUidsShareAndTheirSize) {
  auto& a = open(0, 1);
  auto& b = open(1, 1);
  auto& c = open(2, 1);
  EXPECT_EQ(slots.enter(a, Pool::kOther), "");
  EXPECT_EQ(slots.enter(b, Pool::kOther), "");
  EXPECT_EQ(slots.enter(c, Pool::kOther),
            "uid 1 has 2 status requests being answered, its share; read their answers first");
  EXPECT_EQ(c.pool, Pool::kWaiting) << "refused, not closed by the pool";
  auto& d = open(3, 2);
  EXPECT_EQ(slots.enter(d, Pool::kOther), "");
  auto& e = open(4, std::nullopt);
  EXPECT_EQ(slots.enter(e, Pool::kOther), "3 status requests are being answered; try again");
  slots.answered(a);
  EXPECT_EQ(a.pool, Pool::kWaiting);
  EXPECT_EQ(slots.enter(e, Pool::kOther), "") << "room again once an answer is written";
}

TEST_F(ConnectionSlotsTest, RefusedPeersHaveTheirOwnPoolAndTakeNoWaitingSlot) {
  auto& a = open(0, 1);
  auto& r1 = open(1, 9, Pool::kRefused);
  auto& r2 = open(2, 9, Pool::kRefused);
  EXPECT_EQ(r1.pool, Pool::kClosed);
  EXPECT_EQ(r2.pool, Pool::kRefused);
  EXPECT_EQ(a.pool, Pool::kWaiting);
  EXPECT_EQ(slots.count(Pool::kWaiting), 1u);
}

TEST_F(ConnectionSlotsTest, AConnectionIsFoundByItsStreamAndErased) {
  auto& a = open(0, 1);
  EXPECT_EQ(slots.find(&streams[0]), &a);
  EXPECT_EQ(slots.find(&streams[1]), nullptr);
  slots.closed(a);
  EXPECT_EQ(slots.count(Pool::kWaiting), 0u);
  slots.erase(a);
  EXPECT_EQ(slots.find(&streams[0]), nullptr);
}

}  // namespace
}  // namespace fencekeeper::status
