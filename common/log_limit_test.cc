#include "common/log_limit.h"

#include <gtest/gtest.h>

namespace neardup {
namespace {

TEST(LogLimit, AllowsAFewASecondAndCountsTheRest) {
  ManualClock clock(10'000);
  LogLimit limit(3, &clock);
  uint64_t skipped = 99;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(limit.Allow(&skipped));
    EXPECT_EQ(skipped, 0u);
  }
  for (int i = 0; i < 1000; ++i) EXPECT_FALSE(limit.Allow(&skipped));
  clock.Advance(999);  // still the same second
  EXPECT_FALSE(limit.Allow(&skipped));
  clock.Advance(1);
  ASSERT_TRUE(limit.Allow(&skipped));
  EXPECT_EQ(skipped, 1001u);  // what was not logged, reported once
  ASSERT_TRUE(limit.Allow(&skipped));
  EXPECT_EQ(skipped, 0u);
}

}  // namespace
}  // namespace neardup
