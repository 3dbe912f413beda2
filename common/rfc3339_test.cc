#include "common/rfc3339.h"

#include <gtest/gtest.h>

namespace neardup {
namespace {

TEST(Rfc3339, ParsesOffsetsAndFractions) {
  EXPECT_EQ(*ParseRfc3339("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(*ParseRfc3339("1970-01-01T01:00:00+01:00"), 0);
  EXPECT_EQ(*ParseRfc3339("1970-01-01T00:00:01.5Z"), 1500);
  EXPECT_EQ(*ParseRfc3339("2000-03-01T00:00:00Z"), 951868800000);
  EXPECT_FALSE(ParseRfc3339("2024-02-30T00:00:00Z").has_value());
  EXPECT_FALSE(ParseRfc3339("2024-06-03 00:09").has_value());
  EXPECT_FALSE(ParseRfc3339("2024-06-03T00:09:48").has_value());  // no zone
  EXPECT_FALSE(ParseRfc3339("2024-06-03T00:09:48Zjunk").has_value());
}

TEST(Rfc3339, FormatRoundTrips) {
  for (int64_t secs : {int64_t{0}, int64_t{951868800}, int64_t{1717373388}, int64_t{4102444799}}) {
    std::string s;
    AppendRfc3339(&s, secs);
    ASSERT_EQ(*ParseRfc3339(s), secs * 1000) << s;
  }
  std::string s;
  AppendRfc3339(&s, 1717373388);
  EXPECT_EQ(s, "2024-06-03T00:09:48Z");
  EXPECT_EQ(DaysFromCivil(2024, 6, 3), 19877);
}

}  // namespace
}  // namespace neardup
