#include "partitioner/balanced_ranges.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

namespace neardup::partitioner {
namespace {

using ::testing::ElementsAre;
constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

// The ranges start at 0, end at UINT64_MAX, follow one another without gaps, and never go back.
void ExpectCoversEverything(const std::vector<ValueRange>& r) {
  ASSERT_FALSE(r.empty());
  EXPECT_EQ(r.front().lo, 0u);
  EXPECT_EQ(r.back().hi, kMax);
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_GE(r[i].weight, 0.0) << "range " << i;
    if (i > 0) {
      EXPECT_EQ(r[i].lo, r[i - 1].hi) << "gap before range " << i;
      EXPECT_LT(r[i - 1].lo, r[i].lo) << "range " << i;
    }
  }
}

double Heaviest(const std::vector<ValueRange>& r) {
  double h = 0;
  for (const auto& x : r) h = std::max(h, x.weight);
  return h;
}

double Total(const std::vector<ValueRange>& r) {
  double t = 0;
  for (const auto& x : r) t += x.weight;
  return t;
}

std::vector<uint64_t> Los(const std::vector<ValueRange>& r) {
  std::vector<uint64_t> los;
  for (const auto& x : r) los.push_back(x.lo);
  return los;
}

std::vector<double> Weights(const std::vector<ValueRange>& r) {
  std::vector<double> w;
  for (const auto& x : r) w.push_back(x.weight);
  return w;
}

// The smallest possible heaviest range over every split of w into at most s contiguous runs,
// by dynamic programming over all split points (small n only).
double OptimalMax(const std::vector<double>& w, size_t s) {
  const size_t n = w.size();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> dp(s + 1, std::vector<double>(n + 1, inf));
  dp[0][0] = 0;
  for (size_t p = 1; p <= s; ++p) {
    for (size_t i = 1; i <= n; ++i) {
      double run = 0;
      for (size_t j = i; j-- > 0;) {
        run += w[j];
        dp[p][i] = std::min(dp[p][i], std::max(dp[p - 1][j], run));
      }
    }
  }
  double best = inf;
  for (size_t p = 1; p <= s; ++p) best = std::min(best, dp[p][n]);
  return best;
}

// The SpotSigs fine intervals of v at tau, built independently of BalanceRanges.
struct Fine {
  std::vector<uint64_t> bounds;
  std::vector<double> weights;
};
Fine FineIntervals(const std::vector<WeightedValue>& v, double tau) {
  std::vector<uint64_t> distinct;
  for (const auto& x : v) distinct.push_back(x.value);
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  Fine f{FineGrainBounds(distinct, tau), {}};
  f.weights.assign(f.bounds.size(), 0);
  for (const auto& x : v) {
    f.weights[std::upper_bound(f.bounds.begin(), f.bounds.end(), x.value) - f.bounds.begin() - 1] += x.weight;
  }
  return f;
}

// The paper's example: page lengths 1..10 at tau 0.8, with the given weight on each of the six
// fine intervals [1,2) [2,3) [3,4) [4,6) [6,8) [8,10], spread over the lengths inside them.
std::vector<WeightedValue> PaperPages(const std::vector<double>& fine) {
  return {{1, fine[0]},        {2, fine[1]},       {3, fine[2]},        {4, fine[3] - 1}, {5, 1},
          {6, fine[4] - 0.5},  {7, 0.5},           {8, fine[5] - 0.25}, {9, 0.25},        {10, 0}};
}

TEST(FineGrainBounds, PaperExample) {
  const std::vector<uint64_t> v{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_THAT(FineGrainBounds(v, 0.8), ElementsAre(1u, 2u, 3u, 4u, 6u, 8u));
}

TEST(FineGrainBounds, EdgeCases) {
  EXPECT_TRUE(FineGrainBounds({}, 0.8).empty());
  const std::vector<uint64_t> one{42};
  EXPECT_THAT(FineGrainBounds(one, 0.8), ElementsAre(42u));
  // 0 / v is 0 < tau: zero is a bound of its own.
  const std::vector<uint64_t> zero{0, 1, 2};
  EXPECT_THAT(FineGrainBounds(zero, 0.6), ElementsAre(0u, 1u, 2u));
  EXPECT_THAT(FineGrainBounds(zero, 0.5), ElementsAre(0u, 1u));  // 1/2 is not < 0.5
  // A tau close to 1 separates neighbours; a small tau merges a lot (100/1000 = 0.1 is not < 0.1).
  const std::vector<uint64_t> v{100, 101, 102, 1000, 1001};
  EXPECT_THAT(FineGrainBounds(v, 0.9999), ElementsAre(100u, 101u, 102u, 1000u, 1001u));
  EXPECT_THAT(FineGrainBounds(v, 0.999), ElementsAre(100u, 101u, 102u, 1000u));  // 1000/1001 > 0.999
  EXPECT_THAT(FineGrainBounds(v, 0.1), ElementsAre(100u, 1001u));
  const std::vector<uint64_t> big{kMax - 2, kMax - 1, kMax};
  EXPECT_THAT(FineGrainBounds(big, 0.9), ElementsAre(kMax - 2));
}

TEST(BalanceRanges, PaperExampleBalanced) {
  auto r = BalanceRanges(PaperPages({2, 3, 4, 5, 2, 1}), {.ranges = 4, .tau = 0.8});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectCoversEverything(*r);
  // [1,3) [3,4) [4,6) [6,10] holding 5, 4, 5, 3 pages; the outer ends open to 0 and UINT64_MAX.
  EXPECT_THAT(Los(*r), ElementsAre(0u, 3u, 4u, 6u));
  EXPECT_THAT(Weights(*r), ElementsAre(5, 4, 5, 3));
  EXPECT_NEAR(ImbalanceFactor(*r), 5 / (17.0 / 4), 1e-12);
}

TEST(BalanceRanges, PaperExampleSkewedCannotSplitAHeavyInterval) {
  auto r = BalanceRanges(PaperPages({2, 3, 4, 10, 2, 1}), {.ranges = 4, .tau = 0.8});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ExpectCoversEverything(*r);
  EXPECT_EQ(Heaviest(*r), 10);
  EXPECT_THAT(Los(*r), ElementsAre(0u, 3u, 4u, 6u));
  EXPECT_THAT(Weights(*r), ElementsAre(5, 4, 10, 3));  // the paper's 5, 4, 10, 3
  EXPECT_NEAR(ImbalanceFactor(*r), 10 / (22.0 / 4), 1e-12);
  // More ranges cannot help: [4,6) alone weighs 10.
  auto more = BalanceRanges(PaperPages({2, 3, 4, 10, 2, 1}), {.ranges = 6, .tau = 0.8});
  ASSERT_TRUE(more.ok());
  EXPECT_EQ(more->size(), 6u);
  EXPECT_EQ(Heaviest(*more), 10);
}

TEST(BalanceRanges, MatchesTheOptimumWithoutTau) {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 300; ++round) {
    const size_t n = 1 + rng() % 40, s = 1 + rng() % 12;
    std::vector<WeightedValue> v;
    std::vector<double> w;
    for (size_t i = 0; i < n; ++i) {
      // Integers, tenths with zeros (non-integer sums that round), and wide dynamic range.
      double x = 0;
      switch (round % 3) {
        case 0: x = static_cast<double>(rng() % 100); break;
        case 1: x = rng() % 3 == 0 ? 0.0 : 0.1 * static_cast<double>(rng() % 10); break;
        case 2: x = std::ldexp(1.0 + static_cast<double>(rng() % 7) / 3, -static_cast<int>(rng() % 40)); break;
      }
      w.push_back(x);
      v.push_back({i * 10 + 3, x});
    }
    std::shuffle(v.begin(), v.end(), rng);
    auto r = BalanceRanges(v, {.ranges = s});
    ASSERT_TRUE(r.ok());
    ExpectCoversEverything(*r);
    EXPECT_EQ(r->size(), std::min(s, n)) << "round " << round;
    const double opt = OptimalMax(w, s);
    EXPECT_LE(Heaviest(*r), opt * (1 + 1e-12)) << "round " << round;
    EXPECT_GE(Heaviest(*r), opt * (1 - 1e-12)) << "round " << round;
  }
}

TEST(BalanceRanges, MatchesTheOptimumWithTau) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 100; ++round) {
    const double tau = 0.5 + 0.45 * static_cast<double>(rng() % 100) / 100;
    const size_t s = 1 + rng() % 8;
    std::vector<WeightedValue> v;
    for (int i = 0; i < 200; ++i) v.push_back({1 + rng() % 500, static_cast<double>(rng() % 10) / 4});
    const auto [bounds, fine] = FineIntervals(v, tau);
    auto r = BalanceRanges(v, {.ranges = s, .tau = tau});
    ASSERT_TRUE(r.ok());
    ExpectCoversEverything(*r);
    EXPECT_EQ(r->size(), std::min(s, bounds.size()));
    for (size_t i = 1; i < r->size(); ++i) {
      EXPECT_TRUE(std::binary_search(bounds.begin(), bounds.end(), (*r)[i].lo)) << (*r)[i].lo;
    }
    EXPECT_NEAR(Heaviest(*r), OptimalMax(fine, s), 1e-9) << "round " << round;
  }
}

// Weights of k tenths computed as 0.1 * k (0.1 * 7 is 0.7000000000000001), so sums round: the cap
// search, the feasibility counts and the cut placement must agree on what a run weighs, or a
// range can overshoot the optimum by a whole element.
TEST(BalanceRanges, RoundedSumsStayOptimal) {
  struct Case {
    std::vector<int> tenths;
    size_t s;
    double opt;
  };
  const Case cases[] = {
      {{9, 9, 4, 6, 7, 9}, 2, 2.2},
      {{5, 7, 4, 0, 1, 8, 7}, 2, 1.6},
      {{2, 0, 0, 0, 7, 9, 5, 7, 3, 0, 1, 0, 1, 0, 1, 0}, 2, 1.8},
  };
  for (const Case& c : cases) {
    std::vector<WeightedValue> v;
    std::vector<double> w;
    for (size_t i = 0; i < c.tenths.size(); ++i) {
      w.push_back(0.1 * c.tenths[i]);
      v.push_back({i, w.back()});
    }
    auto r = BalanceRanges(v, {.ranges = c.s});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->size(), c.s);
    EXPECT_NEAR(Heaviest(*r), c.opt, 1e-12);
    EXPECT_NEAR(Heaviest(*r), OptimalMax(w, c.s), 1e-12);
  }
}

// Zipf weights (1/rank) on keys scattered over the key space, as MinHash keys would be.
std::vector<WeightedValue> ZipfKeys(uint64_t n) {
  std::vector<WeightedValue> v;
  for (uint64_t rank = 1; rank <= n; ++rank) {
    v.push_back({rank * 0x9E3779B97F4A7C15ull, 1.0 / static_cast<double>(rank)});  // odd multiplier: distinct keys
  }
  return v;
}

TEST(BalanceRanges, ZipfKeySpaceNearTheLowerBound) {
  const std::vector<WeightedValue> v = ZipfKeys(10000);
  double total = 0;
  for (const auto& x : v) total += x.weight;
  // S = 64: the heaviest key (weight 1) dominates; S = 4: total / S (about 2.45) does.
  for (size_t s : {64u, 4u}) {
    auto r = BalanceRanges(v, {.ranges = s});
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r->size(), s);
    ExpectCoversEverything(*r);
    EXPECT_NEAR(Total(*r), total, 1e-9);
    // Nothing beats max(total / S, heaviest key), and a min-max partition is within one key of it.
    const double bound = std::max(total / static_cast<double>(s), 1.0);
    EXPECT_GE(Heaviest(*r), bound * (1 - 1e-12)) << "S " << s;
    EXPECT_LE(Heaviest(*r), bound + 1.0) << "S " << s;
    // Every key lands in the range that counted its weight.
    std::vector<double> recount(r->size(), 0);
    for (const auto& x : v) recount[FindRange(*r, x.value)] += x.weight;
    for (size_t i = 0; i < r->size(); ++i) EXPECT_NEAR(recount[i], (*r)[i].weight, 1e-9) << "range " << i;
  }
}

TEST(BalanceRanges, ZipfSmallInstanceMatchesTheOptimum) {
  std::vector<WeightedValue> v = ZipfKeys(300);
  std::vector<WeightedValue> sorted = v;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.value < b.value; });
  std::vector<double> w;
  for (const auto& x : sorted) w.push_back(x.weight);
  for (size_t s : {2u, 4u, 16u}) {
    auto r = BalanceRanges(v, {.ranges = s});
    ASSERT_TRUE(r.ok());
    EXPECT_NEAR(Heaviest(*r), OptimalMax(w, s), 1e-12) << "S " << s;
  }
}

TEST(BalanceRanges, DeterministicBitForBitAndOrderIndependent) {
  std::mt19937_64 rng(9);
  std::vector<WeightedValue> v;
  std::uniform_real_distribution<double> weight(0, 1);
  for (int i = 0; i < 5000; ++i) v.push_back({rng() % 2000, weight(rng)});  // many repeats, in any order
  for (std::optional<double> tau : {std::optional<double>(), std::optional<double>(0.9)}) {
    auto a = BalanceRanges(v, {.ranges = 16, .tau = tau});
    auto again = BalanceRanges(v, {.ranges = 16, .tau = tau});
    std::vector<WeightedValue> shuffled = v;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    auto b = BalanceRanges(shuffled, {.ranges = 16, .tau = tau});
    ASSERT_TRUE(a.ok() && again.ok() && b.ok());
    for (const auto* other : {&*again, &*b}) {
      ASSERT_EQ(a->size(), other->size());
      for (size_t i = 0; i < a->size(); ++i) {
        EXPECT_EQ((*a)[i].lo, (*other)[i].lo);
        EXPECT_EQ((*a)[i].hi, (*other)[i].hi);
        EXPECT_EQ((*a)[i].weight, (*other)[i].weight);  // exactly, not nearly
      }
    }
  }
}

TEST(BalanceRanges, RepeatedValuesAddUp) {
  const std::vector<WeightedValue> repeated{{30, 1}, {10, 2}, {30, 2}, {20, 1}, {10, 1}, {40, 3}, {20, 2}};
  const std::vector<WeightedValue> merged{{10, 3}, {20, 3}, {30, 3}, {40, 3}};
  for (std::optional<double> tau : {std::optional<double>(), std::optional<double>(0.9)}) {
    auto a = BalanceRanges(repeated, {.ranges = 4, .tau = tau});
    auto b = BalanceRanges(merged, {.ranges = 4, .tau = tau});
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_THAT(Los(*a), ElementsAre(0u, 20u, 30u, 40u));
    EXPECT_THAT(Weights(*a), ElementsAre(3, 3, 3, 3));
    EXPECT_EQ(Los(*a), Los(*b));
    EXPECT_EQ(Weights(*a), Weights(*b));
  }
  // At tau 0.5 the four values make the fine intervals [10,30) and [30,40].
  auto c = BalanceRanges(repeated, {.ranges = 4, .tau = 0.5});
  ASSERT_TRUE(c.ok());
  EXPECT_THAT(Los(*c), ElementsAre(0u, 30u));
  EXPECT_THAT(Weights(*c), ElementsAre(6, 6));
}

TEST(FindRange, EveryBoundaryAndBetween) {
  std::mt19937_64 rng(3);
  std::vector<WeightedValue> v{{0, 1}, {kMax, 1}, {kMax - 1, 1}, {1, 1}};
  for (int i = 0; i < 1000; ++i) v.push_back({rng(), 1.0 + static_cast<double>(rng() % 5)});
  auto r = BalanceRanges(v, {.ranges = 32});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 32u);
  ExpectCoversEverything(*r);
  EXPECT_EQ(FindRange(*r, 0), 0u);
  EXPECT_EQ(FindRange(*r, kMax), 31u);
  for (size_t i = 0; i < r->size(); ++i) {
    const ValueRange& x = (*r)[i];
    EXPECT_EQ(FindRange(*r, x.lo), i);
    EXPECT_EQ(FindRange(*r, x.lo + (x.hi - x.lo) / 2), i);
    if (i > 0) {
      EXPECT_EQ(FindRange(*r, x.lo - 1), i - 1);
    }
    if (i + 1 < r->size()) {
      EXPECT_EQ(FindRange(*r, x.hi - 1), i);
      EXPECT_EQ(FindRange(*r, x.hi), i + 1);
    }
  }
  std::vector<double> recount(r->size(), 0);
  for (const auto& x : v) recount[FindRange(*r, x.value)] += x.weight;
  EXPECT_EQ(recount, Weights(*r));
}

TEST(BalanceRanges, UsesEveryRangeEvenWithZeroWeights) {
  std::vector<WeightedValue> v;
  for (uint64_t i = 0; i < 10; ++i) v.push_back({100 + i, 0.0});
  auto r = BalanceRanges(v, {.ranges = 4});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 4u);
  ExpectCoversEverything(*r);
  EXPECT_EQ(Heaviest(*r), 0);
  EXPECT_EQ(ImbalanceFactor(*r), 1.0);
  // -0.0 is a valid weight and comes back as a plain zero.
  auto z = BalanceRanges({{5, -0.0}}, {.ranges = 1});
  ASSERT_TRUE(z.ok());
  EXPECT_FALSE(std::signbit((*z)[0].weight));
}

TEST(BalanceRanges, FewerIntervalsThanRangesAndEmptyInput) {
  auto r = BalanceRanges({{5, 1}, {6, 1}}, {.ranges = 10, .tau = 0.5});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 1u);  // 5/6 >= 0.5: one fine interval
  EXPECT_EQ((*r)[0].lo, 0u);
  EXPECT_EQ((*r)[0].hi, kMax);
  EXPECT_EQ((*r)[0].weight, 2);
  r = BalanceRanges({{5, 1}, {6, 1}, {7, 1}}, {.ranges = 10});
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(Los(*r), ElementsAre(0u, 6u, 7u));
  r = BalanceRanges({}, {.ranges = 4, .tau = 0.9});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].lo, 0u);
  EXPECT_EQ((*r)[0].hi, kMax);
  EXPECT_EQ((*r)[0].weight, 0);
  EXPECT_EQ(FindRange(*r, 12345), 0u);
}

TEST(BalanceRanges, BadOptionsAreRefused) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<WeightedValue> ok{{1, 1}, {2, 1}};
  EXPECT_EQ(BalanceRanges(ok, {.ranges = 0}).status().code(), StatusCode::kInvalidArgument);
  for (double tau : {0.0, 1.0, -0.5, 1.5, nan, inf}) {
    EXPECT_EQ(BalanceRanges(ok, {.ranges = 2, .tau = tau}).status().code(), StatusCode::kInvalidArgument) << tau;
  }
  for (double w : {-1.0, -1e-300, nan, inf, -inf}) {
    EXPECT_EQ(BalanceRanges({{1, 1}, {2, w}}, {.ranges = 2}).status().code(), StatusCode::kInvalidArgument) << w;
  }
  EXPECT_EQ(BalanceRanges({{1, 1e308}, {2, 1e308}}, {.ranges = 2}).status().code(), StatusCode::kInvalidArgument);
  // Refused even when there is nothing to slice.
  EXPECT_EQ(BalanceRanges({}, {.ranges = 0}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(BalanceRanges({}, {.ranges = 1, .tau = 2.0}).status().code(), StatusCode::kInvalidArgument);
}

TEST(ImbalanceFactor, Definition) {
  EXPECT_EQ(ImbalanceFactor({}), 1.0);
  const std::vector<ValueRange> one{{0, kMax, 7}};
  EXPECT_EQ(ImbalanceFactor(one), 1.0);
  const std::vector<ValueRange> three{{0, 10, 1}, {10, 20, 2}, {20, kMax, 3}};
  EXPECT_DOUBLE_EQ(ImbalanceFactor(three), 3 / 2.0);
}

TEST(BalanceRanges, AMillionValues) {
  std::mt19937_64 rng(1);
  std::vector<WeightedValue> v(1000000);
  for (auto& x : v) x = {rng(), 1.0};
  auto r = BalanceRanges(std::move(v), {.ranges = 64});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 64u);
  ExpectCoversEverything(*r);
  EXPECT_EQ(Total(*r), 1000000);
  EXPECT_EQ(Heaviest(*r), 15625);  // 1,000,000 / 64 exactly: unit weights split evenly
}

TEST(BalanceRanges, AMillionPageLengthsWithTau) {
  std::mt19937_64 rng(2);
  std::lognormal_distribution<double> length(6, 1);
  std::vector<WeightedValue> v(1000000);
  for (auto& x : v) x = {static_cast<uint64_t>(length(rng)) + 1, 1.0};
  const Fine fine = FineIntervals(v, 0.9);
  auto r = BalanceRanges(std::move(v), {.ranges = 64, .tau = 0.9});
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), std::min<size_t>(64, fine.bounds.size()));
  ExpectCoversEverything(*r);
  EXPECT_EQ(Total(*r), 1000000);
  const double heaviest_fine = *std::max_element(fine.weights.begin(), fine.weights.end());
  const double bound = std::max(1000000.0 / static_cast<double>(r->size()), heaviest_fine);
  EXPECT_GE(Heaviest(*r), bound);
  EXPECT_LE(Heaviest(*r), bound + heaviest_fine);
}

}  // namespace
}  // namespace neardup::partitioner
