#include "email/templates/lru_cache.h"

#include <gtest/gtest.h>

namespace neardup::email {
namespace {

TEST(LruTtlSet, EvictsTheLeastRecentlyUsed) {
  LruTtlSet s(2, 1000);
  s.Insert(1, 0);
  s.Insert(2, 0);
  EXPECT_TRUE(s.Contains(1, 10));  // 1 is now the most recent
  s.Insert(3, 10);                 // evicts 2
  EXPECT_TRUE(s.Contains(1, 20));
  EXPECT_FALSE(s.Contains(2, 20));
  EXPECT_TRUE(s.Contains(3, 20));
  EXPECT_EQ(s.size(), 2u);
  EXPECT_EQ(s.evictions(), 1u);
}

TEST(LruTtlSet, EntriesExpireAfterTheirTtl) {
  LruTtlSet s(10, 100);
  s.Insert(1, 0);
  s.Insert(2, 50);
  EXPECT_TRUE(s.Contains(1, 99));
  EXPECT_FALSE(s.Contains(1, 100));
  EXPECT_EQ(s.size(), 1u);
  s.Insert(2, 120);  // renewed
  EXPECT_TRUE(s.Contains(2, 200));
}

}  // namespace
}  // namespace neardup::email
