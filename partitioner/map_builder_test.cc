#include "partitioner/map_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace neardup::partitioner {
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

TEST(AssignCellsLargestFirst, KeepsTheHeaviestShardWithinOneCellOfTheMean) {
  std::mt19937_64 rng(1);
  std::vector<double> w(500);
  for (auto& x : w) x = static_cast<double>(rng() % 1000);
  w[7] = 0;
  const auto shard_of = AssignCellsLargestFirst(w, 16);
  std::vector<double> load(16, 0);
  for (size_t c = 0; c < w.size(); ++c) load[shard_of[c]] += w[c];
  const double mean = std::accumulate(load.begin(), load.end(), 0.0) / 16;
  EXPECT_LE(*std::max_element(load.begin(), load.end()), mean + *std::max_element(w.begin(), w.end()));
  EXPECT_LT(Imbalance(load), 1.05);
}

std::vector<double> Loads(const std::vector<double>& w, const std::vector<uint32_t>& shard_of, uint32_t shards) {
  std::vector<double> load(shards, 0.0);
  for (size_t c = 0; c < w.size(); ++c) load[shard_of[c]] += w[c];
  return load;
}

TEST(RefineAssignment, FindsASwapWithAShardOtherThanTheLightest) {
  // Shard 0 is heaviest (12); the lightest (2: 7) only takes a cell that overshoots, but
  // swapping the 5 of shard 0 with the 4 of shard 1 (10) levels 0 and 1 at 11.
  const std::vector<double> w = {7, 5, 6, 4, 7};
  std::vector<uint32_t> shard_of = {0, 0, 1, 1, 2};
  RefineAssignment(w, &shard_of, 3, {.moves = false});
  const auto load = Loads(w, shard_of, 3);
  EXPECT_EQ(*std::max_element(load.begin(), load.end()), 11);
}

TEST(RefineAssignment, NeverRaisesTheMaximumAndKeepsItsBudgetAndTarget) {
  std::mt19937_64 rng(3);
  for (int round = 0; round < 20; ++round) {
    std::vector<double> w(200);
    for (auto& x : w) x = static_cast<double>(rng() % 500);
    std::vector<uint32_t> shard_of(w.size());
    for (auto& m : shard_of) m = static_cast<uint32_t>(rng() % 4 == 0 ? 0 : rng() % 12);  // shard 0 overloaded
    const auto before = Loads(w, shard_of, 12);
    auto moved_to = shard_of;
    const double budget = 1500;
    const double moved = RefineAssignment(w, &moved_to, 12, {.move_budget = budget});
    const auto after = Loads(w, moved_to, 12);
    EXPECT_LE(*std::max_element(after.begin(), after.end()), *std::max_element(before.begin(), before.end()));
    double changed = 0;
    for (size_t c = 0; c < w.size(); ++c) changed += moved_to[c] != shard_of[c] ? w[c] : 0;
    EXPECT_LE(changed, moved + 1e-9);
    EXPECT_LE(moved, budget);
    auto free = shard_of;
    RefineAssignment(w, &free, 12, {.target_imbalance = 1.2});
    const double reached = Imbalance(Loads(w, free, 12));
    auto full = shard_of;
    RefineAssignment(w, &full, 12, {});
    EXPECT_LE(Imbalance(Loads(w, full, 12)), reached + 1e-12);
    EXPECT_LT(Imbalance(Loads(w, full, 12)), 1.02);
  }
}

TEST(RefineAssignment, CompoundExchangesLevelFewShardsToWithinAPage) {
  // Like a 3D map on 2-8 shards: 64 cells of 5,000-20,000 pages. Single moves and swaps stall
  // when no two cells differ by less than the gap; exchanging pairs levels the shards.
  std::mt19937_64 rng(11);
  for (uint32_t shards : {2u, 3u, 4u, 8u}) {
    for (int round = 0; round < 5; ++round) {
      std::vector<double> w(64);
      for (auto& x : w) x = 5000 + static_cast<double>(rng() % 15000);
      const double total = std::accumulate(w.begin(), w.end(), 0.0);
      const auto shard_of = AssignCellsLargestFirst(w, shards);
      const auto load = Loads(w, shard_of, shards);
      // Within a page of the integer optimum on up to 4 shards (16+ cells each), within 0.01%
      // on 8.
      const double slack = shards <= 4 ? 1 : 1e-4 * total / shards;
      EXPECT_LE(*std::max_element(load.begin(), load.end()), std::ceil(total / shards) + slack)
          << shards << " shards, round " << round;
    }
  }
}

TEST(RefineAssignment, BandsKeepEachShardsCellsPerBand) {
  std::mt19937_64 rng(5);
  std::vector<double> w(120);
  RefineOptions o;
  o.band.resize(w.size());
  std::vector<uint32_t> shard_of(w.size());
  for (size_t c = 0; c < w.size(); ++c) {
    w[c] = 1 + static_cast<double>(rng() % 100);
    o.band[c] = static_cast<uint32_t>(c / 10);  // 12 bands of 10 cells, one per shard
    shard_of[c] = static_cast<uint32_t>(c % 10);
  }
  RefineAssignment(w, &shard_of, 10, o);
  for (uint32_t b = 0; b < 12; ++b) {
    std::vector<int> per_shard(10, 0);
    for (size_t c = 0; c < w.size(); ++c) per_shard[shard_of[c]] += o.band[c] == b;
    EXPECT_THAT(per_shard, ::testing::Each(1)) << "band " << b;
  }
}

TEST(AssignCellsSpread, OneCellPerBandAndShardAndABalancedTotal) {
  std::mt19937_64 rng(2);
  const uint32_t shards = 16;
  std::vector<double> w(shards * 12);
  for (auto& x : w) x = 900 + static_cast<double>(rng() % 200);
  w[5] = 0;  // an empty cell goes somewhere valid
  const auto shard_of = AssignCellsSpread(w, shards);
  ASSERT_EQ(shard_of.size(), w.size());
  for (uint32_t m : shard_of) EXPECT_LT(m, shards);
  EXPECT_LT(Imbalance(Loads(w, shard_of, shards)), 1.01);
  // Every shard holds cells from the whole index range: at least one in each quarter.
  for (uint32_t m = 0; m < shards; ++m) {
    for (size_t q = 0; q < 4; ++q) {
      bool has = false;
      for (size_t c = q * w.size() / 4; c < (q + 1) * w.size() / 4; ++c) has |= shard_of[c] == m && w[c] > 0;
      EXPECT_TRUE(has) << "shard " << m << " quarter " << q;
    }
  }
}

TEST(AssignCellsSpread, ARegionThatGrowsLoadsEveryShardAlike) {
  std::mt19937_64 rng(4);
  const uint32_t shards = 16;
  std::vector<double> w(shards * 12);
  for (auto& x : w) x = 500 + static_cast<double>(rng() % 1000);
  const auto spread = AssignCellsSpread(w, shards), lpt = AssignCellsLargestFirst(w, shards);
  // Content drift: the pages of one region of the length order (a spike) grow by half.
  std::vector<double> drifted = w;
  for (size_t c = 40; c < 70; ++c) drifted[c] *= 1.5;
  const double spread_imbalance = Imbalance(Loads(drifted, spread, shards));
  const double lpt_imbalance = Imbalance(Loads(drifted, lpt, shards));
  EXPECT_LT(spread_imbalance, lpt_imbalance);
  EXPECT_LT(spread_imbalance, 1.1);
}

TEST(AssignCellsSpread, TooFewCellsForBandsIsLargestFirst) {
  const std::vector<double> w = {5, 3, 8, 1, 9, 2};
  EXPECT_EQ(AssignCellsSpread(w, 4), AssignCellsLargestFirst(w, 4));
}

TEST(BuildPartitionMap, MoreDimensionsBalanceASpikyDistributionBetter) {
  for (uint32_t shards : {8u, 32u, 64u}) {
    double imbalance[4] = {0, 0, 0, 0};
    for (uint32_t dims : {1u, 3u}) {
      const LengthSample sample = SpikySample(dims, 100000, 7);
      auto map = BuildPartitionMap(sample, {.dims = dims, .shards = shards, .threshold = 0.9,
                                            .routing = pb::PartitionMap::RHO_BOX, .rho = 1.0});
      ASSERT_TRUE(map.ok()) << map.status().message();
      imbalance[dims] = EvaluateMap(*map, sample).imbalance;
    }
    EXPECT_LT(imbalance[3], imbalance[1]) << shards << " shards";
    // The 30% spike sits in one 1D fine-grain interval: 1D cannot do better than 0.3 * shards.
    EXPECT_GT(imbalance[1], 0.25 * shards);
  }
}

TEST(BuildPartitionMap, EveryPageHasAHomeAndRoutesThere) {
  const LengthSample sample = SpikySample(3, 20000, 3);
  for (auto routing : {pb::PartitionMap::RHO_BOX, pb::PartitionMap::EXACT_L1}) {
    auto map = BuildPartitionMap(sample, {.dims = 3, .shards = 16, .routing = routing, .rho = 1.1});
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
    EXPECT_DOUBLE_EQ(std::accumulate(e.shard_pages.begin(), e.shard_pages.end(), 0.0), sample.size());
  }
}

// Weighing each page by its length gives the shard of the longest pages fewer of them, and
// evens out the load it was given; without loads, the same cells hold about equal page counts.
TEST(BuildPartitionMap, PageLoadsBalanceTheLoadInsteadOfThePages) {
  const LengthSample sample = SpikySample(3, 20000, 5);
  const MapBuildOptions o{.dims = 3, .shards = 4, .routing = pb::PartitionMap::EXACT_L1, .contiguous_shards = true};
  std::vector<double> load(sample.size());
  for (size_t i = 0; i < sample.size(); ++i) load[i] = 100.0 + sample.shingle_count(i);
  auto by_pages = BuildPartitionMap(sample, o);
  auto by_load = BuildPartitionMap(sample, o, load);
  ASSERT_TRUE(by_pages.ok() && by_load.ok());
  auto per_shard = [&](const PartitionMap& map, bool weigh) {
    std::vector<double> m(4, 0.0);
    for (size_t i = 0; i < sample.size(); ++i) {
      m[map.ShardOf(map.Home(sample.Vector(i, map.proto().feature())))] += weigh ? load[i] : 1.0;
    }
    return m;
  };
  auto spread = [](const std::vector<double>& m) {
    return *std::max_element(m.begin(), m.end()) / *std::min_element(m.begin(), m.end());
  };
  const auto pages_a = per_shard(*by_pages, false), load_a = per_shard(*by_pages, true);
  const auto pages_b = per_shard(*by_load, false), load_b = per_shard(*by_load, true);
  EXPECT_LT(spread(pages_a), spread(pages_b));
  EXPECT_LT(spread(load_b), spread(load_a));
  EXPECT_LT(spread(load_b), 1.25);
  // Contiguous runs go from short to long pages: the last shard has the longest, so fewer.
  EXPECT_LT(pages_b[3], pages_a[3]);
  // The slicing itself is by pages either way.
  EXPECT_EQ(by_pages->proto().slice_size(), by_load->proto().slice_size());
  EXPECT_EQ(by_pages->proto().cell_weight_size(), by_load->proto().cell_weight_size());
  for (int c = 0; c < by_pages->proto().cell_weight_size(); ++c) {
    EXPECT_DOUBLE_EQ(by_pages->proto().cell_weight(c), by_load->proto().cell_weight(c));
  }
}

TEST(BuildPartitionMap, RefusesBadOptions) {
  const LengthSample sample = SpikySample(2, 100, 1);
  EXPECT_FALSE(BuildPartitionMap(sample, {.dims = 3}).ok());  // sample has 2 dimensions
  EXPECT_FALSE(BuildPartitionMap(sample, {.dims = 2, .shards = 0}).ok());
  EXPECT_FALSE(BuildPartitionMap(sample, {.dims = 2, .threshold = 1.5}).ok());
  EXPECT_FALSE(BuildPartitionMap(sample, {.dims = 2, .routing = pb::PartitionMap::RHO_BOX, .rho = 0.5}).ok());
  EXPECT_EQ(BuildPartitionMap(LengthSample(2), {.dims = 2}).status().code(), StatusCode::kFailedPrecondition);
  std::vector<double> load(sample.size(), 1.0);
  EXPECT_TRUE(BuildPartitionMap(sample, {.dims = 2}, load).ok());
  EXPECT_FALSE(BuildPartitionMap(sample, {.dims = 2}, std::span<const double>(load).first(99)).ok());
  load[7] = -1;
  EXPECT_FALSE(BuildPartitionMap(sample, {.dims = 2}, load).ok());
  load[7] = std::nan("");
  EXPECT_FALSE(BuildPartitionMap(sample, {.dims = 2}, load).ok());
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
}  // namespace neardup::partitioner
