// The deterministic randomness (random.cc): exp/log agree with the C library, the PRNG's ranges,
// and the alias table's proportions.
#include "gencrawl/random.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace neardup::gencrawl {
namespace {

TEST(RandomTest, DetLogAndDetExpAgreeWithTheLibrary) {
  for (double x = 1e-6; x < 1e6; x *= 1.37) {
    EXPECT_NEAR(DetLog(x), std::log(x), 1e-14 * std::max(1.0, std::fabs(std::log(x)))) << x;
  }
  for (double x = -50; x <= 50; x += 0.173) {
    EXPECT_NEAR(DetExp(x) / std::exp(x), 1.0, 1e-13) << x;
  }
  EXPECT_EQ(DetExp(-701), 0.0);
  EXPECT_EQ(DetExp(800), DetExp(700));
}

TEST(RandomTest, RngIsDeterministicAndStaysInRange) {
  Rng a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t x = a.Next();
    EXPECT_EQ(x, b.Next());
    differs |= x != c.Next();
  }
  EXPECT_TRUE(differs);
  for (int i = 0; i < 10000; ++i) {
    EXPECT_LT(a.Below(7), 7u);
    const double u = a.Uniform();
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
  EXPECT_NE(Mix(1, 2), Mix(2, 1));
}

TEST(RandomTest, AliasTableSamplesInProportion) {
  const std::vector<double> weights = {1, 2, 3, 4, 0};
  const AliasTable table(weights);
  Rng r(7);
  std::vector<int> count(weights.size());
  const int n = 200000;
  for (int i = 0; i < n; ++i) ++count[table.Sample(r)];
  for (size_t i = 0; i < weights.size(); ++i) {
    EXPECT_NEAR(static_cast<double>(count[i]) / n, weights[i] / 10, 0.005) << i;
  }
  EXPECT_EQ(count[4], 0);
}

}  // namespace
}  // namespace neardup::gencrawl
