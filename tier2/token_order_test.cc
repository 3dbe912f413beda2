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

}  // namespace
}  // namespace neardup::tier2
