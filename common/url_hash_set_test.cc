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

}  // namespace
}  // namespace neardup
