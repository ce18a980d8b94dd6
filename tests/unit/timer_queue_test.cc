// TimerQueue: deadline order with ties in the order added, ids that never match a later entry,
// entries added and removed while firing; and, against a plain ordered model, a random mix.
#include "common/timer_queue.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <vector>

namespace fencekeeper {
namespace {

using TimePoint = TimerQueue::TimePoint;
using std::chrono::nanoseconds;

TEST(TimerQueueTest, FiresInDeadlineOrderAndEqualDeadlinesInTheOrderAdded) {
  TimerQueue q;
  std::vector<int> fired;
  for (int tag : {30, 10, 11, 20, 12}) {
    q.add(nanoseconds(tag / 10), [&fired, tag] { fired.push_back(tag); });
  }
  EXPECT_EQ(q.nextDeadline(), nanoseconds(1));
  q.runDue(nanoseconds(2));
  EXPECT_EQ(fired, (std::vector<int>{10, 11, 12, 20}));
  q.runDue(nanoseconds(3));
  EXPECT_EQ(fired, (std::vector<int>{10, 11, 12, 20, 30}));
  EXPECT_EQ(q.nextDeadline(), std::nullopt);
}

TEST(TimerQueueTest, AnIdThatFiredOrWasRemovedNeverCancelsALaterEntryInItsSlot) {
  TimerQueue q;
  int ran = 0;
  uint64_t fired = q.add(nanoseconds(1), [&] { ++ran; });
  q.runDue(nanoseconds(1));
  uint64_t removed = q.add(nanoseconds(5), [&] { ran += 100; });
  q.remove(removed);
  uint64_t live = q.add(nanoseconds(5), [&] { ran += 10; });  // reuses the same slot
  EXPECT_NE(live, fired);
  EXPECT_NE(live, removed);
  EXPECT_NE(live, 0u);
  q.remove(fired);
  q.remove(removed);
  q.remove(0);
  q.remove(~uint64_t{0});
  EXPECT_EQ(q.size(), 1u);
  q.runDue(nanoseconds(5));
  EXPECT_EQ(ran, 11);
}

TEST(TimerQueueTest, EntriesAddedOrRemovedWhileFiringAreHonoured) {
  TimerQueue q;
  std::vector<int> fired;
  uint64_t doomed = 0;
  q.add(nanoseconds(1), [&] {
    fired.push_back(1);
    q.remove(doomed);
    q.add(nanoseconds(1), [&] { fired.push_back(3); });  // due now: runs in this runDue
    q.add(nanoseconds(9), [&] { fired.push_back(9); });
  });
  doomed = q.add(nanoseconds(2), [&] { fired.push_back(2); });
  q.runDue(nanoseconds(5));
  EXPECT_EQ(fired, (std::vector<int>{1, 3}));
  EXPECT_EQ(q.nextDeadline(), nanoseconds(9));
}

TEST(TimerQueueTest, ARandomMixFiresAsAnOrderedModelDoes) {
  std::mt19937_64 rng(20261206);
  TimerQueue q;
  // The model: (deadline, order added) -> tag, and each live tag's id.
  std::map<std::pair<int64_t, int>, int> model;
  std::map<int, std::pair<uint64_t, std::pair<int64_t, int>>> live;
  std::set<uint64_t> issued;
  std::vector<int> fired;
  int64_t now = 0;
  int added = 0;
  for (int step = 0; step < 20000; ++step) {
    auto pick = rng() % 10;
    if (pick < 5) {
      int tag = added++;
      int64_t when = now + static_cast<int64_t>(rng() % 50);
      uint64_t id = q.add(nanoseconds(when), [&fired, tag] { fired.push_back(tag); });
      ASSERT_TRUE(issued.insert(id).second) << "id issued twice";
      model[{when, tag}] = tag;
      live[tag] = {id, {when, tag}};
    } else if (pick < 8 && !live.empty()) {
      auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
      q.remove(it->second.first);
      model.erase(it->second.second);
      live.erase(it);
    } else {
      now += static_cast<int64_t>(rng() % 20);
      fired.clear();
      q.runDue(nanoseconds(now));
      std::vector<int> expected;
      while (!model.empty() && model.begin()->first.first <= now) {
        expected.push_back(model.begin()->second);
        live.erase(model.begin()->second);
        model.erase(model.begin());
      }
      ASSERT_EQ(fired, expected) << "at step " << step;
    }
    ASSERT_EQ(q.size(), model.size());
    if (!model.empty()) {
      ASSERT_EQ(q.nextDeadline(), nanoseconds(model.begin()->first.first));
    }
  }
}

}  // namespace
}  // namespace fencekeeper
