#include "baseline/all_pairs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "document/shingle.h"
#include "document/tokenizer.h"

namespace neardup::baseline {
namespace {

using Sets = std::vector<std::vector<uint64_t>>;

std::vector<uint64_t> Normalize(std::vector<uint64_t> s) {
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  return s;
}

// Families of near-copies: a base set and mutants that drop/replace a few elements, plus noise.
Sets Families(std::mt19937_64& rng, int families, int per_family, int min_size, int max_size, uint64_t universe) {
  Sets sets;
  std::uniform_int_distribution<int> size(min_size, max_size);
  std::uniform_int_distribution<uint64_t> token(1, universe);
  for (int f = 0; f < families; ++f) {
    std::vector<uint64_t> base;
    const int n = size(rng);
    for (int i = 0; i < n; ++i) base.push_back(token(rng));
    for (int m = 0; m < per_family; ++m) {
      std::vector<uint64_t> s = base;
      const int edits = std::uniform_int_distribution<int>(0, std::max(1, n / 4))(rng);
      for (int e = 0; e < edits && !s.empty(); ++e) {
        const size_t at = std::uniform_int_distribution<size_t>(0, s.size() - 1)(rng);
        if (rng() % 3 == 0) s.erase(s.begin() + at); else s[at] = token(rng);
      }
      if (rng() % 4 == 0) s.push_back(token(rng));
      sets.push_back(Normalize(std::move(s)));
    }
  }
  std::shuffle(sets.begin(), sets.end(), rng);
  return sets;
}

void ExpectSameAsBruteForce(const Sets& sets, double t, const std::string& what) {
  const auto expected = BruteForceAllPairs(sets, t);
  for (int threads : {1, 3}) {
    AllPairsStats st;
    const auto got = ExactAllPairs(sets, {.threshold = t, .threads = threads}, &st);
    ASSERT_EQ(got.size(), expected.size()) << what << " t=" << t << " threads=" << threads;
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], expected[i]) << what << " t=" << t;
      ASSERT_DOUBLE_EQ(got[i].similarity, expected[i].similarity);
    }
    EXPECT_EQ(st.pairs, got.size());
  }
}

const double kThresholds[] = {0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.99, 1.0};

TEST(ExactAllPairs, RandomFamiliesMatchBruteForce) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 4; ++round) {
    const Sets sets = Families(rng, 40, 6, 5, 120, round % 2 ? 300 : 100000);
    for (double t : kThresholds) ExpectSameAsBruteForce(sets, t, "families round " + std::to_string(round));
  }
}

// Tokens spread over the whole 64-bit range, as real shingle hashes are.
TEST(ExactAllPairs, FullRangeHashesMatchBruteForce) {
  std::mt19937_64 rng(17);
  for (int round = 0; round < 3; ++round) {
    Sets sets = Families(rng, 60, 8, 10, 400, round == 0 ? 500 : 1000000);
    for (auto& s : sets) {
      for (auto& v : s) v = (v * 0x9E3779B97F4A7C15ull) ^ (v << 41);
      s = Normalize(s);
    }
    for (double t : kThresholds) ExpectSameAsBruteForce(sets, t, "full range round " + std::to_string(round));
  }
}

TEST(ExactAllPairs, EqualLengthSetsMatchBruteForce) {
  std::mt19937_64 rng(11);
  Sets sets;
  for (int i = 0; i < 200; ++i) {
    std::vector<uint64_t> s;
    while (s.size() < 20) {
      s.push_back(rng() % 40);
      s = Normalize(s);
    }
    sets.push_back(s);
  }
  for (double t : kThresholds) ExpectSameAsBruteForce(sets, t, "equal length");
}

TEST(ExactAllPairs, TinySetsMatchBruteForce) {
  std::mt19937_64 rng(3);
  Sets sets;
  for (int i = 0; i < 300; ++i) {
    std::vector<uint64_t> s;
    const int n = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < n; ++k) s.push_back(rng() % 6);
    sets.push_back(Normalize(s));
  }
  for (double t : kThresholds) ExpectSameAsBruteForce(sets, t, "tiny");
}

TEST(ExactAllPairs, IdenticalAndEmptySets) {
  Sets sets(50, std::vector<uint64_t>{1, 2, 3, 4, 5});
  sets.push_back({});
  sets.push_back({});
  sets.push_back({9});
  for (double t : kThresholds) ExpectSameAsBruteForce(sets, t, "identical");
  const auto pairs = ExactAllPairs(sets, {.threshold = 1.0});
  EXPECT_EQ(pairs.size(), 50u * 49u / 2u);  // empty sets never pair
}

TEST(ExactAllPairs, ExtremeHashValuesAndSkewedFrequencies) {
  std::mt19937_64 rng(5);
  Sets sets;
  for (int i = 0; i < 150; ++i) {
    std::vector<uint64_t> s{0, ~0ull, 1ull << 63};  // in every set: highest frequency
    for (int k = 0; k < 10; ++k) s.push_back(rng() % 64);
    sets.push_back(Normalize(s));
  }
  for (double t : kThresholds) ExpectSameAsBruteForce(sets, t, "skewed");
}

TEST(ExactAllPairs, RealShingleSetsOfEditedText) {
  std::mt19937_64 rng(9);
  std::vector<std::string> vocab;
  for (int i = 0; i < 300; ++i) vocab.push_back(std::string("w").append(std::to_string(i)));
  Sets sets;
  for (int f = 0; f < 30; ++f) {
    std::vector<std::string> words(20 + rng() % 200);
    for (auto& w : words) w = vocab[rng() % vocab.size()];
    for (int m = 0; m < 5; ++m) {
      auto copy = words;
      for (int e = 0; e < m; ++e) copy[rng() % copy.size()] = vocab[rng() % vocab.size()];
      std::string text;
      for (const auto& w : copy) text.append(w).append(" ");
      std::vector<uint64_t> hashes;
      HashWords(text, &hashes);
      sets.push_back(ShingleSet(hashes, 5));
    }
  }
  for (double t : kThresholds) ExpectSameAsBruteForce(sets, t, "shingles");
}

TEST(ExactAllPairs, FiltersPruneMostPairs) {
  std::mt19937_64 rng(13);
  const Sets sets = Families(rng, 200, 5, 50, 200, 1000000);
  AllPairsStats st;
  const auto pairs = ExactAllPairs(sets, {.threshold = 0.8}, &st);
  const uint64_t all = sets.size() * (sets.size() - 1) / 2;
  EXPECT_LT(st.candidates * 50, all) << "prefix and length filters should avoid almost every comparison";
  EXPECT_GE(st.candidates, pairs.size());
}

TEST(ExactAllPairs, ReportsWork) {
  Sets sets{{1, 2, 3}, {1, 2, 3}, {7, 8}};
  AllPairsStats st;
  const auto pairs = ExactAllPairs(sets, {.threshold = 0.9}, &st);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_EQ(pairs[0].a, 0u);
  EXPECT_EQ(pairs[0].b, 1u);
  EXPECT_DOUBLE_EQ(pairs[0].similarity, 1.0);
  EXPECT_EQ(st.sets, 3u);
  EXPECT_EQ(st.tokens, 8u);
  EXPECT_EQ(st.frequent_tokens, 3u);
  EXPECT_GE(st.candidates, 1u);
}

}  // namespace
}  // namespace neardup::baseline
