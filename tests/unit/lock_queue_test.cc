// The queue policy (sidecar/engine/lock_queue.h) from a table of queues: no ZooKeeper.
#include "sidecar/engine/lock_queue.h"

#include <gtest/gtest.h>

#include <random>

namespace fencekeeper::engine {
namespace {

// A queue written as tokens, oldest first: "W" exclusive, "R" shared, "S3" one of 3 permits.
// Node i is named "<i><marker><i>".
std::vector<QueueNode> queueOf(const std::vector<std::string>& kinds) {
  std::vector<QueueNode> queue;
  for (size_t i = 0; i < kinds.size(); ++i) {
    LockMode mode = kinds[i] == "W"   ? LockMode::kExclusive
                    : kinds[i] == "R" ? LockMode::kShared
                                      : LockMode::kPermits;
    uint32_t permits = mode == LockMode::kPermits ? std::stoul(kinds[i].substr(1)) : 0;
    std::string name = "n" + std::to_string(i) + queueMarker(mode, permits);
    appendSequenceSuffix(name, static_cast<int32_t>(i));
    auto node = parseQueueNode(name);
    EXPECT_TRUE(node) << name;
    queue.push_back(*node);
  }
  return queue;
}

struct Row {
  std::vector<std::string> queue;
  size_t request;  // index of the request's node
  QueueDecision::Kind kind;
  std::vector<size_t> waitsBehind;
  bool grantedByAnyDeletion;
};

using K = QueueDecision::Kind;
const Row kRows[] = {
    // Exclusive: alone, behind the node just ahead; one ahead means its deletion grants.
    {{"W"}, 0, K::kGranted, {}, false},
    {{"W", "W"}, 1, K::kWaiting, {0}, true},
    {{"W", "W", "W"}, 2, K::kWaiting, {1}, false},
    {{"R", "R", "W"}, 2, K::kWaiting, {1}, false},
    {{"R", "W"}, 1, K::kWaiting, {0}, true},
    // Shared: with readers, behind the last writer ahead.
    {{"R"}, 0, K::kGranted, {}, false},
    {{"R", "R", "R"}, 2, K::kGranted, {}, false},
    {{"W", "R"}, 1, K::kWaiting, {0}, true},
    {{"W", "R", "R"}, 2, K::kWaiting, {0}, true},
    {{"W", "R", "W", "R"}, 3, K::kWaiting, {2}, false},
    {{"R", "W", "R"}, 2, K::kWaiting, {1}, true},
    {{"R", "W", "R"}, 0, K::kGranted, {}, false},
    // Permits: the first N hold; a waiter watches the N nodes just ahead.
    {{"S2"}, 0, K::kGranted, {}, false},
    {{"S2", "S2"}, 1, K::kGranted, {}, false},
    {{"S2", "S2", "S2"}, 2, K::kWaiting, {0, 1}, true},
    {{"S2", "S2", "S2", "S2"}, 3, K::kWaiting, {1, 2}, false},
    {{"S1", "S1"}, 1, K::kWaiting, {0}, true},
    {{"S3", "S3", "S3", "S3", "S3"}, 4, K::kWaiting, {1, 2, 3}, false},
    // Modes that never share a lock refuse, whoever is ahead.
    {{"S2", "S3"}, 1, K::kConflict, {}, false},
    {{"S2", "S3"}, 0, K::kGranted, {}, false},
    {{"W", "S2"}, 1, K::kConflict, {}, false},
    {{"R", "S2"}, 1, K::kConflict, {}, false},
    {{"S2", "W"}, 1, K::kConflict, {}, false},
    {{"S2", "R"}, 1, K::kConflict, {}, false},
};

TEST(LockQueue, DecidesEveryRowOfTheTable) {
  for (const Row& row : kRows) {
    auto queue = queueOf(row.queue);
    std::string label = ::testing::PrintToString(row.queue) + " request " +
                        std::to_string(row.request);
    QueueDecision d = decide(queue, queue[row.request].name);
    EXPECT_EQ(d.kind, row.kind) << label;
    EXPECT_EQ(d.ahead, row.request) << label;
    std::vector<std::string> behind;
    for (size_t i : row.waitsBehind) behind.push_back(queue[i].name);
    EXPECT_EQ(d.waitsBehind, behind) << label;
    EXPECT_EQ(d.grantedByAnyDeletion, row.grantedByAnyDeletion) << label;
    if (row.kind == K::kConflict) {
      EXPECT_FALSE(d.conflict.empty()) << label;
    }
  }
}

TEST(LockQueue, AConflictNamesBothModes) {
  auto queue = queueOf({"S2", "S3"});
  QueueDecision d = decide(queue, queue[1].name);
  EXPECT_NE(d.conflict.find("3 permits"), std::string::npos) << d.conflict;
  EXPECT_NE(d.conflict.find("2 permits"), std::string::npos) << d.conflict;
  EXPECT_NE(d.conflict.find(queue[0].name), std::string::npos) << d.conflict;
}

TEST(LockQueue, ANodeNotInTheQueueIsMissing) {
  auto queue = queueOf({"W", "R"});
  EXPECT_EQ(decide(queue, "gone__lock__0000000009").kind, K::kMissing);
}

TEST(LockQueue, HoldersAreTheNodesDecideGrants) {
  EXPECT_EQ(holdersOf(queueOf({"W", "R", "R"})), (std::vector<size_t>{0}));
  EXPECT_EQ(holdersOf(queueOf({"R", "R", "W", "R"})), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(holdersOf(queueOf({"S2", "S2", "S2"})), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(holdersOf(queueOf({})), (std::vector<size_t>{}));
  // The one-pass listing agrees with decide() on every queue of up to 6 nodes of 5 kinds.
  const std::vector<std::string> kinds = {"W", "R", "S1", "S2", "S3"};
  std::mt19937 random(20261207);
  for (int round = 0; round < 20'000; ++round) {
    std::vector<std::string> tokens(random() % 7);
    for (auto& t : tokens) t = kinds[random() % kinds.size()];
    auto queue = queueOf(tokens);
    std::vector<size_t> expected;
    for (size_t i = 0; i < queue.size(); ++i) {
      if (decide(queue, queue[i].name).kind == K::kGranted) expected.push_back(i);
    }
    ASSERT_EQ(holdersOf(queue), expected) << ::testing::PrintToString(tokens);
  }
}

// Never two holders where the modes forbid it, on any queue.
TEST(LockQueue, NoQueueHasAWriterWithAnotherHolderOrMorePermitHoldersThanN) {
  const std::vector<std::string> kinds = {"W", "R", "S1", "S2", "S3"};
  std::mt19937 random(7);
  for (int round = 0; round < 20'000; ++round) {
    std::vector<std::string> tokens(random() % 8);
    for (auto& t : tokens) t = kinds[random() % kinds.size()];
    auto queue = queueOf(tokens);
    auto holders = holdersOf(queue);
    for (size_t i : holders) {
      if (queue[i].mode == LockMode::kExclusive) {
        ASSERT_EQ(holders.size(), 1u);
      }
      if (queue[i].mode == LockMode::kPermits) {
        ASSERT_LE(holders.size(), queue[i].permits);
        for (size_t j : holders) ASSERT_EQ(queue[j].permits, queue[i].permits);
      }
    }
  }
}

}  // namespace
}  // namespace fencekeeper::engine
