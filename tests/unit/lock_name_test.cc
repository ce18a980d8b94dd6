#include "sidecar/engine/lock_name.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace fencekeeper::engine
