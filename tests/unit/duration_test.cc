#include "common/duration.h"

#include <gtest/gtest.h>

namespace fencekeeper {
namespace {

TEST(ParseDuration, AcceptsUnits) {
  EXPECT_EQ(parseDuration("250ms"), Millis(250));
  EXPECT_EQ(parseDuration("2s"), Millis(2000));
  EXPECT_EQ(parseDuration("1m"), Millis(60000));
  EXPECT_EQ(parseDuration("1h"), Millis(3600000));
  EXPECT_EQ(parseDuration("15"), Millis(15));
}

TEST(ParseDuration, RefusesGarbage) {
  EXPECT_FALSE(parseDuration(""));
  EXPECT_FALSE(parseDuration("s"));
  EXPECT_FALSE(parseDuration("-1s"));
  EXPECT_FALSE(parseDuration("1.5s"));
  EXPECT_FALSE(parseDuration("3 s"));
  EXPECT_FALSE(parseDuration("10parsecs"));
  EXPECT_FALSE(parseDuration("99999999999999999999ms"));
}

}  // namespace
}  // namespace fencekeeper
