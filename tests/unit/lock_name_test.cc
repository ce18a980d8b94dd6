#include "sidecar/engine/lock_name.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstdio>
#include <cstring>

namespace fencekeeper::engine {
namespace {

TEST(LockName, AcceptsSegments) {
  EXPECT_TRUE(isValidLockName("reconcile"));
  EXPECT_TRUE(isValidLockName("team-a/jobs/nightly.v2_x"));
  EXPECT_TRUE(isValidLockName(std::string(200, 'a')));
}

TEST(LockName, RefusesMalformed) {
  for (const char* bad : {"", "/a", "a/", "a//b", ".", "..", "a/../b", "a/./b", "a b", "a\nb", "é",
                          "a:b", "a*", "a\\b", "a/x__lock__0000000001", "r__rlock__"}) {
    EXPECT_FALSE(isValidLockName(bad)) << bad;
  }
  EXPECT_FALSE(isValidLockName(std::string(201, 'a')));
  EXPECT_FALSE(isValidLockName(std::string("a\0b", 3)));
}

TEST(QueueNode, OrdersBySuffixLikeKazoo) {
  auto ours = parseQueueNode("fk0123-1__lock__0000000007");
  ASSERT_TRUE(ours);
  EXPECT_EQ(ours->sequence, 7);
  auto kazoo = parseQueueNode("9f1e2d3c4b5a69788796a5b4c3d2e1f0__lock__0000000012");
  ASSERT_TRUE(kazoo);
  EXPECT_EQ(kazoo->sequence, 12);
  auto reader = parseQueueNode("abc__rlock__0000000003");
  ASSERT_TRUE(reader);
  EXPECT_EQ(reader->sequence, 3);
  auto negative = parseQueueNode("abc__lock__-0000000003");
  ASSERT_TRUE(negative);
  EXPECT_EQ(negative->sequence, -3);
  EXPECT_FALSE(parseQueueNode("abc__lock__123"));
  EXPECT_FALSE(parseQueueNode("abc__other__0000000001"));
  EXPECT_FALSE(parseQueueNode("leader0000000001"));
}

// Queue order holds across the wrap of ZooKeeper's int32 counter, and sorting is total.
TEST(QueueNode, QueueOrderHoldsAcrossTheCountersWrap) {
  EXPECT_LT(sequenceOffset(INT32_MAX, INT32_MIN), 0);  // made before the wrap: ahead
  EXPECT_GT(sequenceOffset(INT32_MIN + 1, INT32_MAX), 0);
  EXPECT_LT(sequenceOffset(5, 7), 0);
  EXPECT_EQ(sequenceOffset(7, 7), 0);
  std::vector<QueueNode> queue{{"c", INT32_MIN + 1}, {"a", INT32_MAX - 1}, {"d", INT32_MIN + 2},
                               {"b", INT32_MAX}};
  sortQueue(queue);
  std::string order;
  for (auto& q : queue) order += q.name;
  EXPECT_EQ(order, "abcd");
  // Sequences spread over the whole circle have no true order; the sort is still a total one,
  // by offset from the first entry.
  std::vector<QueueNode> spread{{"x", 0}, {"y", 1'500'000'000}, {"z", -1'500'000'000}};
  sortQueue(spread);
  order.clear();
  for (auto& q : spread) order += q.name;
  EXPECT_EQ(order, "zxy");
}

// A node's sequence read back from its path, in ZooKeeper's own form only ("%010d").
TEST(QueueNode, SequenceSuffixRoundTripsInZooKeepersFormOnly) {
  for (int32_t seq : {0, 7, 1234567890, INT32_MAX, -3, INT32_MIN}) {
    std::string path = "/r/locks/a/fk1-2__lock__";
    appendSequenceSuffix(path, seq);
    char expected[16];
    std::snprintf(expected, sizeof expected, "%010d", seq);
    EXPECT_EQ(path.substr(path.size() - std::strlen(expected)), expected);
    EXPECT_EQ(sequenceAfter(path, "/r/locks/a/fk1-2__lock__"), seq) << path;
  }
  EXPECT_FALSE(sequenceAfter("/r/locks/a/fk1-2__lock__0000000007", "/r/locks/a/fk1-3__lock__"));
  for (const char* suffix : {"", "7", "00000000007", "+000000007", "000000007x", "9999999999"}) {
    EXPECT_FALSE(sequenceAfter(std::string("p") + suffix, "p")) << suffix;
  }
}

// The detail a refused name is answered with says what is wrong, quoting the name safely.
TEST(LockName, ProblemSaysWhatIsWrongAndQuotesTheNameSafely) {
  EXPECT_FALSE(lockNameProblem("jobs/nightly"));
  EXPECT_EQ(*lockNameProblem(""), "the lock name is empty");
  EXPECT_NE(lockNameProblem(std::string(201, 'a'))->find("201 bytes, above the maximum 200"),
            std::string::npos);
  EXPECT_NE(lockNameProblem("a//b")->find("empty, '.' or '..' segment"), std::string::npos);
  EXPECT_NE(lockNameProblem("a/x__lock__1")->find("__lock__"), std::string::npos);
  auto nul = lockNameProblem(std::string("jobs\0-tenant-b", 14));
  ASSERT_TRUE(nul);
  EXPECT_NE(nul->find("'jobs\\x00-tenant-b'"), std::string::npos) << *nul;
  EXPECT_NE(nul->find("outside [A-Za-z0-9._-/]: '\\x00'"), std::string::npos) << *nul;
  EXPECT_EQ(printable("a'b\\c\n"), "a\\x27b\\x5cc\\x0a");
  EXPECT_EQ(printable(std::string(70, 'x'), 64), std::string(64, 'x') + "...");
}

}  // namespace
}  // namespace fencekeeper::engine
