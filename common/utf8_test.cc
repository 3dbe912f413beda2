#include "common/utf8.h"

#include <gtest/gtest.h>

#include "common/json_write.h"

namespace neardup {
namespace {

TEST(Utf8, Validation) {
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8("caf\xC3\xA9 \xE6\x9D\xB1 \xF0\x9F\x98\x80"));
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_FALSE(IsValidUtf8("\xC3"));                  // truncated
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));          // surrogate
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));              // overlong
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));      // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xF8\x88\x80\x80\x80"));  // 5-byte form
}

TEST(Utf8, DecodeAdvancesOneByteOnError) {
  const std::string s = "a\xE2\x82z\xE2\x82\xAC";
  size_t i = 0;
  EXPECT_EQ(DecodeUtf8(s, &i), 'a');
  EXPECT_EQ(DecodeUtf8(s, &i), kInvalidCodePoint);
  EXPECT_EQ(i, 2u);
  EXPECT_EQ(DecodeUtf8(s, &i), kInvalidCodePoint);
  EXPECT_EQ(DecodeUtf8(s, &i), 'z');
  EXPECT_EQ(DecodeUtf8(s, &i), 0x20ACu);  // €
  EXPECT_EQ(i, s.size());
}

TEST(Utf8, RepairReplacesEachInvalidByte) {
  std::string out;
  AppendRepairedUtf8("ok\xFF\xC3\xA9\xC3", &out);
  EXPECT_EQ(out, "ok\xEF\xBF\xBD\xC3\xA9\xEF\xBF\xBD");
  EXPECT_TRUE(IsValidUtf8(out));
}

TEST(Utf8, AppendEncodesEveryLength) {
  std::string out;
  for (uint32_t cp : {0x41u, 0xE9u, 0x6771u, 0x1F600u}) AppendUtf8(cp, &out);
  EXPECT_EQ(out, "A\xC3\xA9\xE6\x9D\xB1\xF0\x9F\x98\x80");
}

TEST(JsonWrite, EscapesAndAlwaysProducesValidUtf8) {
  std::string out;
  AppendJsonString(&out, std::string("a\"b\\c\n\x01\xFF\xC3\xA9", 10));
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\n\\u0001\xEF\xBF\xBD\xC3\xA9\"");
  out.clear();
  AppendJsonNumber(&out, 0.923076923);
  EXPECT_EQ(out, "0.923077");
  out.clear();
  AppendJsonNumber(&out, 1.0);
  EXPECT_EQ(out, "1");
  out.clear();
  out.push_back('{');
  AppendJsonField(&out, "a", 0.5);
  AppendJsonField(&out, "b", 2);
  EXPECT_EQ(out, "{\"a\":0.5,\"b\":2");
}

}  // namespace
}  // namespace neardup
