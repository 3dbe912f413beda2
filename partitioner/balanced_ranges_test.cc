#include "partitioner/balanced_ranges.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

namespace neardup {
namespace {

using ::testing::ElementsAre;
constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

std::vector<WeightedValue> PaperFine(const std::vector<double>& w) {
  // One value at each fine-grain left bound of the paper's example, carrying that interval's weight.
  const uint64_t at[] = {1, 2, 3, 4, 6, 8};
  std::vector<WeightedValue> v;
  for (size_t i = 0; i < w.size(); ++i) v.push_back({at[i], w[i]});
  v.push_back({5, 0});  // values inside intervals, weight 0
  v.push_back({9, 0});
  v.push_back({10, 0});
  return v;
}

TEST(FineGrainBounds, PaperExample) {
  const std::vector<uint64_t> v{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_THAT(FineGrainBounds(v, 0.8), ElementsAre(1u, 2u, 3u, 4u, 6u, 8u));
}

TEST(BalanceRanges, PaperExampleBalanced) {
  auto r = BalanceRanges(PaperFine({2, 3, 4, 5, 2, 1}), {.ranges = 4, .tau = 0.8});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 4u);
  // [1,3) [3,4) [4,6) [6,10] with 5, 4, 5, 3 pages.
  EXPECT_EQ((*r)[0].lo, 0u);
  EXPECT_EQ((*r)[1].lo, 3u);
  EXPECT_EQ((*r)[2].lo, 4u);
  EXPECT_EQ((*r)[3].lo, 6u);
  EXPECT_EQ((*r)[3].hi, kMax);
  EXPECT_THAT(std::vector<double>({(*r)[0].weight, (*r)[1].weight, (*r)[2].weight, (*r)[3].weight}),
              ElementsAre(5, 4, 5, 3));
}

TEST(BalanceRanges, PaperExampleSkewedCannotSplitAHeavyInterval) {
  auto r = BalanceRanges(PaperFine({2, 3, 4, 10, 2, 1}), {.ranges = 4, .tau = 0.8});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 4u);
  double heaviest = 0;
  for (const auto& x : *r) heaviest = std::max(heaviest, x.weight);
  EXPECT_EQ(heaviest, 10);
  EXPECT_EQ((*r)[2].lo, 4u);
  EXPECT_EQ((*r)[2].weight, 10);
  EXPECT_NEAR(ImbalanceFactor(*r), 10 / (22.0 / 4), 1e-12);
}

// Exact min-max over contiguous partitions by dynamic programming (small n).
double OptimalMax(const std::vector<double>& w, size_t s) {
  const size_t n = w.size();
  std::vector<double> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + w[i];
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> dp(s + 1, std::vector<double>(n + 1, inf));
  dp[0][0] = 0;
  for (size_t p = 1; p <= s; ++p) {
    for (size_t i = 1; i <= n; ++i) {
      for (size_t j = 0; j < i; ++j) dp[p][i] = std::min(dp[p][i], std::max(dp[p - 1][j], prefix[i] - prefix[j]));
    }
  }
  double best = inf;
  for (size_t p = 1; p <= s; ++p) best = std::min(best, dp[p][n]);
  return best;
}

TEST(BalanceRanges, MatchesTheOptimumWithoutTau) {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 30; ++round) {
    const size_t n = 5 + rng() % 60, s = 1 + rng() % 12;
    std::vector<WeightedValue> v;
    std::vector<double> w;
    for (size_t i = 0; i < n; ++i) {
      w.push_back(static_cast<double>(rng() % 100));
      v.push_back({i * 10 + 3, w.back()});
    }
    std::shuffle(v.begin(), v.end(), rng);
    auto r = BalanceRanges(v, {.ranges = s});
    ASSERT_TRUE(r.ok());
    EXPECT_LE(r->size(), s);
    double heaviest = 0;
    for (const auto& x : *r) heaviest = std::max(heaviest, x.weight);
    EXPECT_NEAR(heaviest, OptimalMax(w, s), 1e-9) << "round " << round;
  }
}

TEST(BalanceRanges, ZipfKeySpaceCoversEverythingAndBalances) {
  std::vector<WeightedValue> v;
  for (uint64_t i = 1; i <= 10000; ++i) v.push_back({i * 7919 % 100003, 1.0 / static_cast<double>(i)});
  v.push_back({500, 0.25});  // a repeated value adds up
  auto r = BalanceRanges(v, {.ranges = 64});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 64u);
  double total = 0, heaviest = 0;
  for (size_t i = 0; i < r->size(); ++i) {
    total += (*r)[i].weight;
    heaviest = std::max(heaviest, (*r)[i].weight);
    if (i > 0) {
      EXPECT_EQ((*r)[i].lo, (*r)[i - 1].hi);  // no gaps
    }
  }
  EXPECT_EQ(r->front().lo, 0u);
  EXPECT_EQ(r->back().hi, kMax);
  // The heaviest single key weighs 1 (rank 1); nothing can beat max(total/S, 1).
  EXPECT_LE(heaviest, std::max(total / 64, 1.0) + 1.0);
  for (const auto& x : v) {
    const size_t i = FindRange(*r, x.value);
    EXPECT_LE((*r)[i].lo, x.value);
    EXPECT_TRUE(x.value < (*r)[i].hi || (*r)[i].hi == kMax);
  }
}

TEST(BalanceRanges, DeterministicAndOrderIndependent) {
  std::mt19937_64 rng(9);
  std::vector<WeightedValue> v;
  for (int i = 0; i < 5000; ++i) v.push_back({rng() % 2000, static_cast<double>(rng() % 10)});
  auto a = BalanceRanges(v, {.ranges = 16, .tau = 0.9});
  std::shuffle(v.begin(), v.end(), rng);
  auto b = BalanceRanges(v, {.ranges = 16, .tau = 0.9});
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->size(), b->size());
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].lo, (*b)[i].lo);
    EXPECT_DOUBLE_EQ((*a)[i].weight, (*b)[i].weight);
  }
}

TEST(BalanceRanges, FewerIntervalsThanRangesAndEmptyInput) {
  auto r = BalanceRanges({{5, 1}, {6, 1}}, {.ranges = 10, .tau = 0.5});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size(), 1u);  // 5/6 >= 0.5: one fine interval
  r = BalanceRanges({}, {.ranges = 4});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ(FindRange(*r, 12345), 0u);
}

TEST(BalanceRanges, BadOptionsAreRefused) {
  EXPECT_EQ(BalanceRanges({{1, 1}}, {.ranges = 0}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(BalanceRanges({{1, 1}}, {.ranges = 2, .tau = 1.0}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(BalanceRanges({{1, -1}}, {.ranges = 2}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(BalanceRanges({{1, std::numeric_limits<double>::quiet_NaN()}}, {.ranges = 2}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(BalanceRanges, AMillionValues) {
  std::mt19937_64 rng(1);
  std::vector<WeightedValue> v(1000000);
  for (auto& x : v) x = {rng(), 1.0};
  auto r = BalanceRanges(std::move(v), {.ranges = 64});
  ASSERT_TRUE(r.ok());
  EXPECT_LT(ImbalanceFactor(*r), 1.001);
}

}  // namespace
}  // namespace neardup
