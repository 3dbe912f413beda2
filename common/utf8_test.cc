#include "common/utf8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

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


// The escaping a byte at a time, as JSON's grammar says it: what the run-at-a-time copy must equal.
std::string ReferenceJsonString(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const size_t at = i;
      if (DecodeUtf8(s, &i) == kInvalidCodePoint) out += "\xEF\xBF\xBD";
      else out.append(s.substr(at, i - at));
      continue;
    }
    ++i;
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out + "\"";
}

TEST(JsonWrite, StringsAreEscapedAsAByteAtATime) {
  std::mt19937_64 rng(11);
  const std::string alphabet = std::string("ab/:.?=&\"\\\n\r\t\x01\x1F\x7F ") + "\xC3\xA9\xE6\x9D\xB1\xFF\x80";
  for (int round = 0; round < 20000; ++round) {
    std::string s;
    const size_t n = rng() % 40;
    for (size_t k = 0; k < n; ++k) s.push_back(alphabet[rng() % alphabet.size()]);
    std::string out;
    AppendJsonString(&out, s);
    ASSERT_EQ(out, ReferenceJsonString(s)) << round;
  }
}

TEST(JsonWrite, NumbersArePrintfsSixSignificantDigits) {
  std::mt19937_64 rng(5);
  std::vector<double> values = {0.0, -0.0, 1.0, 0.5, 0.1, 1e-7, 123456.5, 1234567.0, 1e21, -3.25e-300,
                                std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::max()};
  for (int k = 0; k < 100000; ++k) {
    const double mantissa = std::uniform_real_distribution<double>(-1, 1)(rng);
    values.push_back(std::ldexp(mantissa, static_cast<int>(rng() % 200) - 100));
    values.push_back(static_cast<double>(rng() % 1000001) / 1000000.0);  // similarities
  }
  for (double v : values) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    std::string out;
    AppendJsonNumber(&out, v);
    ASSERT_EQ(out, buf) << v;
  }
  std::string out;
  AppendJsonNumber(&out, std::nan(""));
  EXPECT_EQ(out, "null");
}

}  // namespace
}  // namespace neardup
