#include "common/url_hash_set.h"

#include <gtest/gtest.h>

#include <string>

namespace neardup {
namespace {

TEST(UrlHashSet, ContainsEveryInsertedKeyAndNoOtherAcrossGrowth) {
  UrlHashSet set;
  EXPECT_FALSE(set.Contains(UrlHashSet::Hash("http://a.example/")));  // empty: no table yet
  for (int i = 0; i < 5000; ++i) set.Insert(UrlHashSet::Hash("http://a.example/" + std::to_string(i)));
  set.Insert(UrlHashSet::Hash("http://a.example/7"));  // again: counted once
  EXPECT_EQ(set.size(), 5000u);
  for (int i = 0; i < 5000; ++i) EXPECT_TRUE(set.Contains(UrlHashSet::Hash("http://a.example/" + std::to_string(i))));
  for (int i = 5000; i < 10000; ++i) EXPECT_FALSE(set.Contains(UrlHashSet::Hash("http://a.example/" + std::to_string(i))));
}

TEST(UrlHashSet, HashIsNeverZero) {
  for (int i = 0; i < 1000; ++i) EXPECT_NE(UrlHashSet::Hash(std::to_string(i)), 0u);
  EXPECT_NE(UrlHashSet::Hash(""), 0u);
}

TEST(UrlHashMap, FindsTheLastValueOfEveryKeyAndNoOtherKeyAcrossGrowth) {
  UrlHashMap map;
  uint32_t v = 7;
  EXPECT_FALSE(map.Find(UrlHashSet::Hash("http://a.example/"), &v));  // empty: no table yet
  EXPECT_EQ(v, 7u);
  for (uint32_t i = 0; i < 5000; ++i) map.Insert(UrlHashSet::Hash("http://a.example/" + std::to_string(i)), i);
  for (uint32_t i = 0; i < 5000; i += 3) map.Insert(UrlHashSet::Hash("http://a.example/" + std::to_string(i)), i + 100000);
  EXPECT_EQ(map.size(), 5000u);
  for (uint32_t i = 0; i < 5000; ++i) {
    const uint64_t h = UrlHashSet::Hash("http://a.example/" + std::to_string(i));
    ASSERT_TRUE(map.Find(h, &v)) << i;
    EXPECT_EQ(v, i % 3 == 0 ? i + 100000 : i);
    EXPECT_TRUE(map.Contains(h));
  }
  for (int i = 5000; i < 10000; ++i) {
    const uint64_t h = UrlHashSet::Hash("http://a.example/" + std::to_string(i));
    EXPECT_FALSE(map.Find(h, &v));
    EXPECT_FALSE(map.Contains(h));
  }
}

}  // namespace
}  // namespace neardup
