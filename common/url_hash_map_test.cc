#include "common/url_hash_map.h"

#include <gtest/gtest.h>

#include <string>

namespace neardup {
namespace {

std::string Url(uint32_t i) { return "http://a.example/" + std::to_string(i); }

TEST(UrlHashMap, FindsTheLastValueOfEveryKeyAndNoOtherKeyAcrossGrowth) {
  UrlHashMap<uint32_t> map;
  uint32_t v = 7;
  EXPECT_FALSE(map.Find(UrlHash(Url(0)), &v));  // empty: no table yet
  EXPECT_FALSE(map.Contains(UrlHash(Url(0))));
  EXPECT_EQ(v, 7u);
  for (uint32_t i = 0; i < 5000; ++i) map.Insert(UrlHash(Url(i)), i);
  for (uint32_t i = 0; i < 5000; i += 3) map.Insert(UrlHash(Url(i)), i + 100000);  // again: counted once
  EXPECT_EQ(map.size(), 5000u);
  for (uint32_t i = 0; i < 5000; ++i) {
    ASSERT_TRUE(map.Find(UrlHash(Url(i)), &v)) << i;
    EXPECT_EQ(v, i % 3 == 0 ? i + 100000 : i);
    EXPECT_TRUE(map.Contains(UrlHash(Url(i))));
  }
  for (uint32_t i = 5000; i < 10000; ++i) {
    EXPECT_FALSE(map.Find(UrlHash(Url(i)), &v));
    EXPECT_FALSE(map.Contains(UrlHash(Url(i))));
  }
}

TEST(UrlHashMap, WideValuesSurviveGrowth) {
  UrlHashMap<uint64_t> map;
  for (uint64_t i = 0; i < 3000; ++i) map.Insert(UrlHash(Url(static_cast<uint32_t>(i))), i << 40 | i);
  uint64_t v = 0;
  for (uint64_t i = 0; i < 3000; ++i) {
    ASSERT_TRUE(map.Find(UrlHash(Url(static_cast<uint32_t>(i))), &v));
    EXPECT_EQ(v, i << 40 | i);
  }
  EXPECT_GE(map.MemoryBytes(), 3000u * 2 * 16);
}

TEST(UrlHasher, UrlSetIsFoundByStringView) {
  UrlSet urls;
  for (uint32_t i = 0; i < 500; ++i) urls.insert(Url(i));
  for (uint32_t i = 0; i < 500; ++i) {
    const std::string u = Url(i);
    EXPECT_TRUE(urls.contains(std::string_view(u))) << u;
    EXPECT_EQ(UrlHasher()(u), static_cast<size_t>(UrlHash(u)));
  }
  EXPECT_FALSE(urls.contains(std::string_view("http://never.example/")));
}

TEST(UrlHash, IsNeverZero) {
  for (uint32_t i = 0; i < 1000; ++i) EXPECT_NE(UrlHash(std::to_string(i)), 0u);
  EXPECT_NE(UrlHash(""), 0u);
}

}  // namespace
}  // namespace neardup
