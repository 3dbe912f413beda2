#include "common/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

namespace neardup {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(Config, EmptyTextMeansDefaults) {
  auto c = ParseConfig("", "empty");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->shingle().k(), 5u);
  EXPECT_EQ(c->shingle().dims(), 3u);
  EXPECT_EQ(c->reader().max_line_bytes(), 8u << 20);
  EXPECT_DOUBLE_EQ(c->baseline().threshold(), 0.9);
}

TEST(Config, ValuesAreRead) {
  auto c = ParseConfig("shingle { k: 4 dims: 2 }\nbaseline { threshold: 0.8 threads: 3 }\n", "t");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->shingle().k(), 4u);
  EXPECT_EQ(c->shingle().dims(), 2u);
  EXPECT_DOUBLE_EQ(c->baseline().threshold(), 0.8);
  EXPECT_EQ(c->baseline().threads(), 3u);
}

TEST(Config, Tier2DefaultsAndRanges) {
  auto c = ParseConfig("", "empty");
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->tier2().min_threshold(), 0.8);
  EXPECT_EQ(c->tier2().batch_pages(), 1000u);
  EXPECT_EQ(c->tier2().batch_millis(), 50u);
  EXPECT_TRUE(c->tier2().sync());
  c = ParseConfig("tier2 {\n  max_batch_pages: 500\n  batch_pages: 600\n}\n", "b.textproto");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "b.textproto:3:3: tier2.batch_pages: must be in 1..max_batch_pages (500) (got 600)");
  c = ParseConfig("tier2 { prefix_overlap: 0 }", "p");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), StartsWith("p:1:9: tier2.prefix_overlap"));
  EXPECT_FALSE(ParseConfig("tier2 { min_threshold: 1.2 }", "m").ok());
  EXPECT_FALSE(ParseConfig("tier2 { batch_millis: 0 }", "m").ok());
}

TEST(Config, UnknownFieldNamesFileLineAndColumn) {
  auto c = ParseConfig("shingle {\n  k: 5\n  kk: 3\n}\n", "my.textproto");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), StartsWith("my.textproto:3:"));
  EXPECT_THAT(c.status().message(), HasSubstr("kk"));
}

TEST(Config, SyntaxAndTypeErrorsAreLocated) {
  auto c = ParseConfig("shingle { k: \"five\" }", "f");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), StartsWith("f:1:"));
  c = ParseConfig("shingle { k: 5", "g");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), StartsWith("g:1:"));
}

TEST(Config, OutOfRangeValuesNameTheFieldAndItsPosition) {
  auto c = ParseConfig("shingle {\n  dims: 3\n  k: 40\n}\n", "r.textproto");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "r.textproto:3:3: shingle.k: must be in 1..16 (got 40)");
  c = ParseConfig("baseline { threshold: 1.5 }", "r");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), StartsWith("r:1:12: baseline.threshold"));
  c = ParseConfig("baseline { threshold: 0 }", "r");
  ASSERT_FALSE(c.ok());
  c = ParseConfig("shingle { k: 0 }", "r");
  ASSERT_FALSE(c.ok());
  c = ParseConfig("reader { max_line_bytes: 10 }", "r");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("reader.max_line_bytes"));
}

TEST(Config, ShippedConfigsAreValid) {
  auto c = LoadConfig(std::string(NEARDUP_SOURCE_DIR) + "/configs/embedded.textproto");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->shingle().k(), 5u);
}

TEST(Config, MissingFileIsAnIoError) {
  auto c = LoadConfig("/nonexistent.textproto");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kIoError);
}

}  // namespace
}  // namespace neardup
