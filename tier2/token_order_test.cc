#include "tier2/token_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

namespace neardup::tier2 {
namespace {

// Tokens in at least min_pages of the sets, counted one by one.
std::vector<uint64_t> CountedFrequent(const std::vector<std::vector<uint64_t>>& sets, uint32_t min_pages) {
  std::map<uint64_t, uint32_t> pages;
  for (const auto& s : sets) {
    for (uint64_t t : s) ++pages[t];
  }
  std::vector<uint64_t> out;
  for (const auto& [t, n] : pages) {
    if (n >= std::max<uint32_t>(min_pages, 1)) out.push_back(t);
  }
  return out;
}

TEST(FrequentTokens, AreTheTokensInAtLeastMinPagesOfTheSets) {
  std::mt19937_64 rng(3);
  // A shared vocabulary (boilerplate) and tokens of each page's own, sets of 0 to 3,000.
  std::vector<uint64_t> shared(500);
  for (auto& t : shared) t = rng();
  for (size_t pages : {0, 1, 5, 200}) {
    std::vector<std::vector<uint64_t>> sets(pages);
    for (auto& s : sets) {
      const size_t n = rng() % 3000;
      for (size_t k = 0; k < n; ++k) s.push_back(rng() % 3 == 0 ? shared[rng() % shared.size()] : rng());
      std::sort(s.begin(), s.end());
      s.erase(std::unique(s.begin(), s.end()), s.end());
    }
    for (uint32_t min_pages : {0u, 1u, 4u, 50u}) {
      EXPECT_EQ(FrequentTokens(sets, min_pages), CountedFrequent(sets, min_pages))
          << pages << " pages, min_pages " << min_pages;
    }
  }
}

// More tokens marked on top of an order: every token it marked (collisions included) stays
// marked, the new ones are marked, and the bitmap grows to at least 256 bits per new token, so
// innocent tokens stay rare among the marked.
TEST(TokenOrder, WithFrequentKeepsEveryMarkAndMarksTheNewTokens) {
  std::mt19937_64 rng(5);
  std::vector<uint64_t> first(1000), more(5000), probe(200000);
  for (auto& t : first) t = rng();
  for (auto& t : more) t = rng();
  for (auto& t : probe) t = rng();
  const TokenOrder a = TokenOrder::FromFrequent(first);
  const TokenOrder b = a.WithFrequent(more);
  EXPECT_GE(b.bitmap_bits(), 256u * more.size());
  EXPECT_EQ(b.bitmap_bits() & (b.bitmap_bits() - 1), 0u);
  for (uint64_t t : first) EXPECT_TRUE(b.Frequent(t));
  for (uint64_t t : more) EXPECT_TRUE(b.Frequent(t));
  size_t innocent = 0;
  for (uint64_t t : probe) {
    if (a.Frequent(t)) {
      EXPECT_TRUE(b.Frequent(t)) << "a token the first order marked is unmarked";
    }
    innocent += b.Frequent(t);
  }
  EXPECT_LT(innocent, probe.size() / 40);
  // A few more tokens fit the bitmap as it is.
  const TokenOrder c = b.WithFrequent(std::vector<uint64_t>(more.begin(), more.begin() + 10));
  EXPECT_EQ(c.bitmap_bits(), b.bitmap_bits());
  EXPECT_EQ(c.Serialize(), b.Serialize());  // already marked: nothing changes
  // On hash order it is FromFrequent; with nothing to add, the same order.
  EXPECT_EQ(TokenOrder().WithFrequent(first).Serialize(), a.Serialize());
  EXPECT_EQ(a.WithFrequent({}).Serialize(), a.Serialize());
}

}  // namespace
}  // namespace neardup::tier2
