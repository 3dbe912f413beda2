#include "partitioner/map_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace neardup {
namespace {

// A spiky, skewed sample like the paper's Fig. 1: a log-normal body plus one big spike.
// Each page's words are split over `dims` sub-dictionaries multinomially.
LengthSample SpikySample(uint32_t dims, size_t pages, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> body(std::log(300.0), 0.7);
  LengthSample s(dims);
  std::vector<uint32_t> v(dims);
  for (size_t i = 0; i < pages; ++i) {
    uint32_t len = rng() % 100 < 30 ? 237 : static_cast<uint32_t>(std::clamp(body(rng), 20.0, 1700.0));
    std::fill(v.begin(), v.end(), 0);
    for (uint32_t w = 0; w < len; ++w) ++v[rng() % dims];
    s.Add(v, v);
  }
  return s;
}

TEST(AssignCellsLargestFirst, KeepsTheHeaviestMachineWithinOneCellOfTheMean) {
  std::mt19937_64 rng(1);
  std::vector<double> w(500);
  for (auto& x : w) x = static_cast<double>(rng() % 1000);
  w[7] = 0;
  const auto machine_of = AssignCellsLargestFirst(w, 16);
  std::vector<double> load(16, 0);
  for (size_t c = 0; c < w.size(); ++c) load[machine_of[c]] += w[c];
  const double mean = std::accumulate(load.begin(), load.end(), 0.0) / 16;
  EXPECT_LE(*std::max_element(load.begin(), load.end()), mean + *std::max_element(w.begin(), w.end()));
  EXPECT_LT(Imbalance(load), 1.05);
}

TEST(BuildPartitionMap, MoreDimensionsBalanceASpikyDistributionBetter) {
  for (uint32_t machines : {8u, 32u, 64u}) {
    double imbalance[4] = {0, 0, 0, 0};
    for (uint32_t dims : {1u, 3u}) {
      const LengthSample sample = SpikySample(dims, 100000, 7);
      auto map = BuildPartitionMap(sample, {.dims = dims, .machines = machines, .threshold = 0.9,
                                            .routing = pb::PartitionMap::RHO_BOX, .rho = 1.0});
      ASSERT_TRUE(map.ok()) << map.status().message();
      imbalance[dims] = EvaluateMap(*map, sample).imbalance;
    }
    EXPECT_LT(imbalance[3], imbalance[1]) << machines << " machines";
    // The 30% spike sits in one 1D fine-grain interval: 1D cannot do better than 0.3 * machines.
    EXPECT_GT(imbalance[1], 0.25 * machines);
  }
}

TEST(BuildPartitionMap, EveryPageHasAHomeAndRoutesThere) {
  const LengthSample sample = SpikySample(3, 20000, 3);
  for (auto routing : {pb::PartitionMap::RHO_BOX, pb::PartitionMap::EXACT_L1}) {
    auto map = BuildPartitionMap(sample, {.dims = 3, .machines = 16, .routing = routing, .rho = 1.1});
    ASSERT_TRUE(map.ok());
    std::vector<uint32_t> cells;
    for (size_t i = 0; i < sample.size(); ++i) {
      const auto v = sample.Vector(i, map->proto().feature());
      map->RouteCells(v, &cells);
      ASSERT_TRUE(std::binary_search(cells.begin(), cells.end(), map->Home(v)));
    }
    const MapEvaluation e = EvaluateMap(*map, sample);
    EXPECT_EQ(e.pages, sample.size());
    EXPECT_GT(e.communication_reduction, 0.1);
    EXPECT_LE(e.communication_reduction, 1.0);
    EXPECT_DOUBLE_EQ(std::accumulate(e.machine_pages.begin(), e.machine_pages.end(), 0.0), sample.size());
  }
}

TEST(BuildPartitionMap, RefusesBadOptions) {
  const LengthSample sample = SpikySample(2, 100, 1);
  EXPECT_FALSE(BuildPartitionMap(sample, {.dims = 3}).ok());  // sample has 2 dimensions
  EXPECT_FALSE(BuildPartitionMap(sample, {.dims = 2, .machines = 0}).ok());
  EXPECT_FALSE(BuildPartitionMap(sample, {.dims = 2, .threshold = 1.5}).ok());
  EXPECT_FALSE(BuildPartitionMap(sample, {.dims = 2, .routing = pb::PartitionMap::RHO_BOX, .rho = 0.5}).ok());
  EXPECT_EQ(BuildPartitionMap(LengthSample(2), {.dims = 2}).status().code(), StatusCode::kFailedPrecondition);
}

TEST(EstimateRho, FromKnownDeviations) {
  LengthSample s(2);
  // 100 words split 60/40: delta = |2*60/100 - 1| = 0.2; 110 shingles: epsilon = 0.1.
  for (int i = 0; i < 10; ++i) {
    const uint32_t words[] = {60, 40}, shingles[] = {70, 40};
    s.Add(words, shingles);
  }
  const RhoEstimate r = EstimateRho(s, 90);
  EXPECT_NEAR(r.delta, 0.2, 1e-12);
  EXPECT_NEAR(r.epsilon, 0.1, 1e-12);
  EXPECT_NEAR(r.rho, 1.2 * 1.1 / (0.8 * 0.9), 1e-12);
  EXPECT_EQ(r.pages, 10u);
}

}  // namespace
}  // namespace neardup
