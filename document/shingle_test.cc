#include "document/shingle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <xxhash.h>

#include <algorithm>
#include <map>
#include <random>

#include "document/tokenizer.h"

namespace neardup {
namespace {

std::vector<uint64_t> Set(const std::string& text, int k = 5) {
  std::vector<uint64_t> w;
  HashWords(text, &w);
  return ShingleSet(w, k);
}

TEST(Shingle, OneShinglePerWordThanksToPadding) {
  EXPECT_EQ(Set("a b c d e f g h").size(), 8u);
  EXPECT_EQ(Set("one").size(), 1u);  // a one-word page still has a shingle
  EXPECT_TRUE(Set("").empty());
  EXPECT_TRUE(Set("!!!").empty());
}

TEST(Shingle, SetIsSortedAndUnique) {
  const auto s = Set("a b a b a b a b a b a b");
  EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
  EXPECT_EQ(std::adjacent_find(s.begin(), s.end()), s.end());
  // Windows: (a b a b a), (b a b a b) repeat; the last four are padded and distinct.
  EXPECT_EQ(s.size(), 2u + 4u);
}

TEST(Shingle, CaseAndPunctuationDoNotChangeTheSet) {
  EXPECT_EQ(Set("Hello, world! How are you today?"), Set("hello world how are you today"));
}

TEST(Shingle, KChangesTheSet) {
  EXPECT_NE(Set("a b c d e f", 3), Set("a b c d e f", 5));
  EXPECT_EQ(Set("a b c d e f", 1).size(), 6u);
}

TEST(Shingle, JaccardOfKnownSets) {
  const std::vector<uint64_t> a{1, 2, 3, 4}, b{3, 4, 5, 6}, empty;
  EXPECT_EQ(Overlap(a, b), 2u);
  EXPECT_DOUBLE_EQ(Jaccard(a, b), 2.0 / 6.0);
  EXPECT_DOUBLE_EQ(Jaccard(a, a), 1.0);
  EXPECT_DOUBLE_EQ(Jaccard(a, empty), 0.0);
  EXPECT_DOUBLE_EQ(Jaccard(empty, empty), 0.0);
}

TEST(Shingle, OneEditChangesAtMostKShinglesPerSide) {
  std::string base, edited;
  for (int i = 0; i < 100; ++i) {
    const std::string word = std::string("w").append(std::to_string(i));
    base.append(word).append(" ");
    edited.append(i == 50 ? std::string("changed") : word).append(" ");
  }
  const auto a = Set(base), b = Set(edited);
  EXPECT_EQ(a.size() - Overlap(a, b), 5u);
  EXPECT_DOUBLE_EQ(Jaccard(a, b), 95.0 / 105.0);
}

// Random sorted sets of many sizes and overlaps: the count is exact whenever it reaches `need`,
// and below `need` whenever the true overlap is.
TEST(Shingle, OverlapIfAtLeastIsExactFromNeedOn) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 2000; ++round) {
    const size_t na = rng() % 300, nb = rng() % 300;
    const uint64_t universe = 1 + rng() % 600;  // small universes share many elements
    auto make = [&](size_t n) {
      std::vector<uint64_t> v(n);
      for (auto& x : v) x = rng() % universe;
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
      return v;
    };
    const std::vector<uint64_t> a = make(na), b = make(nb);
    const size_t exact = Overlap(a, b);
    for (size_t need : {size_t{0}, size_t{1}, exact / 2, exact, exact + 1, a.size(), b.size() + 5}) {
      const size_t got = OverlapIfAtLeast(a, b, need);
      if (exact >= need) {
        ASSERT_EQ(got, exact) << "round " << round << " need " << need;
      } else {
        ASSERT_LT(got, need) << "round " << round << " need " << need;
      }
    }
  }
}

TEST(Shingle, JaccardAtLeastIsExactAtTheBoundary) {
  EXPECT_TRUE(JaccardAtLeast(9, 10, 9, 0.9));    // 9/10 == 0.9
  EXPECT_FALSE(JaccardAtLeast(8, 9, 9, 0.9));    // 8/10
  EXPECT_TRUE(JaccardAtLeast(7, 7, 7, 1.0));
  EXPECT_FALSE(JaccardAtLeast(6, 7, 7, 1.0));
  EXPECT_FALSE(JaccardAtLeast(0, 0, 0, 0.5));    // empty sets never match
  EXPECT_TRUE(JaccardAtLeast(1, 2, 1, 0.5));
}

TEST(Shingle, LengthVectorCountsEveryOccurrence) {
  std::vector<uint64_t> w;
  HashWords("a b c a b c a a a the the of", &w);
  const auto v = LengthVector(w, 3);
  ASSERT_EQ(v.size(), 3u);
  std::vector<uint32_t> expected(3, 0);
  const std::pair<const char*, uint32_t> counts[] = {{"a", 5}, {"b", 2}, {"c", 2}, {"the", 2}, {"of", 1}};
  for (const auto& [word, n] : counts) expected[SubDictionary(WordHash(word), 3)] += n;
  EXPECT_EQ(v, expected);
}

TEST(Shingle, SubDictionariesAreRoughlyBalancedOverAVocabulary) {
  std::vector<int> count(3, 0);
  for (int i = 0; i < 30000; ++i) ++count[SubDictionary(WordHash("word" + std::to_string(i)), 3)];
  for (int c : count) EXPECT_NEAR(c, 10000, 500);
}

TEST(Shingle, SubDictionariesPlaceEveryWordAsSubDictionaryDoes) {
  // The division-free form must give the documented mapping exactly, for every allowed dims.
  std::vector<uint64_t> hashes = {0, 1, UINT64_MAX, 0xFFFFFFFF00000000ull, 0x00000000FFFFFFFFull};
  for (uint32_t hi = 0; hi < 4096; ++hi) hashes.push_back((uint64_t{hi} * 0x10001ull << 32) | hi);
  for (int i = 0; i < 20000; ++i) hashes.push_back(WordHash("word" + std::to_string(i)));
  for (int dims = 1; dims <= 16; ++dims) {
    const SubDictionaries sub(dims);
    for (uint64_t h : hashes) ASSERT_EQ(sub(h), SubDictionary(h, dims)) << "dims " << dims << ", hash " << h;
  }
}

TEST(Shingle, ShingleVectorSumsToSetSize) {
  std::vector<uint64_t> w;
  HashWords("lorem ipsum dolor sit amet consectetur adipiscing elit lorem ipsum dolor sit amet", &w);
  std::vector<uint32_t> per_dim;
  const auto s = ShingleSetWithDims(w, 5, 4, &per_dim);
  EXPECT_EQ(s, ShingleSet(w, 5));
  ASSERT_EQ(per_dim.size(), 4u);
  EXPECT_EQ(per_dim[0] + per_dim[1] + per_dim[2] + per_dim[3], s.size());
}

TEST(Shingle, ShingleSetWithDimsMatchesAPlainSortAtEverySize) {
  // The bucketed sort behind ShingleSetWithDims must give exactly what sorting every (shingle,
  // dimension) pair would: the same set, and each shingle counted in the dimension of its first
  // occurrence in that order. Repeated words make repeated shingles.
  std::mt19937_64 rng(7);
  for (size_t n : {0u, 1u, 5u, 63u, 64u, 65u, 200u, 1000u, 4097u, 30000u}) {
    for (int vocabulary : {3, 50, 1000000}) {
      std::vector<uint64_t> w(n);
      for (auto& x : w) x = WordHash(std::to_string(rng() % static_cast<uint64_t>(vocabulary)));
      std::vector<uint32_t> per_dim;
      const auto got = ShingleSetWithDims(w, 5, 3, &per_dim);
      const auto set = ShingleSet(w, 5);
      EXPECT_EQ(got, set) << n << " words, vocabulary " << vocabulary;
      // The reference: per unique shingle, the smallest dimension it was seen with.
      std::map<uint64_t, uint32_t> dim;
      for (size_t i = 0; i < n; ++i) {
        uint64_t window[5];
        for (size_t j = 0; j < 5; ++j) window[j] = i + j < n ? w[i + j] : kDummyWordHash;
        const uint64_t h = XXH3_64bits(window, sizeof window);
        const uint32_t d = SubDictionary(w[i], 3);
        auto [it, fresh] = dim.emplace(h, d);
        if (!fresh) it->second = std::min(it->second, d);
      }
      std::vector<uint32_t> want(3, 0);
      for (const auto& [h, d] : dim) ++want[d];
      EXPECT_EQ(per_dim, want) << n << " words, vocabulary " << vocabulary;
    }
  }
}

TEST(Shingle, EveryKHashesThePaddedWindowsOfItsWords) {
  // k = 1..16 each have a path of their own (the hash length fixed at compile time, windows not
  // copied but at the end); larger k take the general one. All must hash exactly the padded
  // windows, with the library's XXH3, at every length around k.
  std::mt19937_64 rng(11);
  for (int k = 1; k <= 20; ++k) {
    for (size_t n : {size_t{0}, size_t{1}, static_cast<size_t>(k) - 1, static_cast<size_t>(k),
                     static_cast<size_t>(k) + 1, size_t{3} * static_cast<size_t>(k) + 2}) {
      std::vector<uint64_t> w(n);
      for (auto& x : w) x = rng();
      std::vector<uint64_t> want;
      std::vector<uint64_t> window(static_cast<size_t>(k));
      for (size_t i = 0; i < n; ++i) {
        for (size_t j = 0; j < window.size(); ++j) window[j] = i + j < n ? w[i + j] : kDummyWordHash;
        want.push_back(XXH3_64bits(window.data(), window.size() * sizeof(uint64_t)));
      }
      std::sort(want.begin(), want.end());
      want.erase(std::unique(want.begin(), want.end()), want.end());
      EXPECT_EQ(ShingleSet(w, k), want) << "k " << k << ", " << n << " words";
      std::vector<uint32_t> per_dim;
      EXPECT_EQ(ShingleSetWithDims(w, k, 2, &per_dim), want) << "k " << k << ", " << n << " words";
    }
  }
}

}  // namespace
}  // namespace neardup
