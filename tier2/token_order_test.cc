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
// marked, the new ones are marked, and no other token is: the shard re-indexes only the pages
// that hold a token it marked. The order survives Serialize and Deserialize.
TEST(TokenOrder, WithFrequentMarksExactlyTheNewTokens) {
  std::mt19937_64 rng(5);
  std::vector<uint64_t> first(1000), more(5000), probe(200000);
  for (auto& t : first) t = rng();
  for (auto& t : more) t = rng();
  for (auto& t : probe) t = rng();
  more.push_back(0);  // the hash 0 is a token like any other
  const TokenOrder a = TokenOrder::FromFrequent(first);
  const TokenOrder b = a.WithFrequent(more);
  EXPECT_EQ(b.bitmap_bits(), a.bitmap_bits());
  for (uint64_t t : first) EXPECT_TRUE(b.Frequent(t));
  for (uint64_t t : more) EXPECT_TRUE(b.Frequent(t));
  for (uint64_t t : probe) EXPECT_EQ(b.Frequent(t), a.Frequent(t)) << t;
  // Stored and read back: the same order.
  auto back = TokenOrder::Deserialize(b.Serialize());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->Serialize(), b.Serialize());
  for (uint64_t t : more) EXPECT_TRUE(back->Frequent(t));
  for (uint64_t t : probe) EXPECT_EQ(back->Frequent(t), a.Frequent(t));
  // Marked already: nothing changes. With more, the earlier marks stay.
  EXPECT_EQ(b.WithFrequent(std::vector<uint64_t>(more.begin(), more.begin() + 10)).Serialize(), b.Serialize());
  const TokenOrder c = b.WithFrequent(std::vector<uint64_t>(probe.begin(), probe.begin() + 100));
  EXPECT_EQ(c.marked_tokens(), b.marked_tokens() + 100 - std::count_if(probe.begin(), probe.begin() + 100, [&](uint64_t t) {
                                   return a.Frequent(t);
                                 }));
  for (uint64_t t : more) EXPECT_TRUE(c.Frequent(t));
  for (size_t i = 0; i < 100; ++i) EXPECT_TRUE(c.Frequent(probe[i]));
  for (size_t i = 100; i < probe.size(); ++i) EXPECT_EQ(c.Frequent(probe[i]), a.Frequent(probe[i]));
  // On hash order too, exactly the tokens given; with nothing to add, the same order.
  const TokenOrder h = TokenOrder().WithFrequent(first);
  EXPECT_EQ(h.bitmap_bits(), 0u);
  for (uint64_t t : first) EXPECT_TRUE(h.Frequent(t));
  for (uint64_t t : probe) EXPECT_FALSE(h.Frequent(t));
  EXPECT_EQ(a.WithFrequent({}).Serialize(), a.Serialize());
  // A prefix skips the marked tokens while it can.
  std::vector<uint64_t> page(probe.begin(), probe.begin() + 50);
  page.insert(page.end(), more.begin(), more.begin() + 50);
  std::sort(page.begin(), page.end());
  std::vector<uint64_t> prefix;
  c.Prefix(page, 60, &prefix);
  ASSERT_EQ(prefix.size(), 60u);
  for (size_t i = 0; i < 50; ++i) EXPECT_FALSE(c.Frequent(prefix[i]) && !c.Frequent(prefix[i + 1]));
}

// What Deserialize refuses, by name.
TEST(TokenOrder, DeserializeRefusesWhatIsNotAnOrder) {
  EXPECT_EQ(TokenOrder::Deserialize("abc").status().code(), StatusCode::kCorruption);  // not a power of two
  std::vector<uint64_t> more = {3, 1, 2};
  std::string bytes = TokenOrder::FromFrequent(more).WithFrequent(std::vector<uint64_t>{7, 9}).Serialize();
  std::string short_count = bytes;
  short_count[short_count.size() - 10] = 1;  // says 2^48 + 2 tokens
  auto r = TokenOrder::Deserialize(short_count);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("says it marks 281474976710658 tokens"), std::string::npos) << r.status().ToString();
  std::string unsorted = bytes;
  std::swap_ranges(unsorted.end() - 32, unsorted.end() - 24, unsorted.end() - 24);  // 9 before 7
  r = TokenOrder::Deserialize(unsorted);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("ascending"), std::string::npos) << r.status().ToString();
}

}  // namespace
}  // namespace neardup::tier2
