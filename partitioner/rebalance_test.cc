#include "partitioner/rebalance.h"

#include <gtest/gtest.h>

#include <random>

#include "partitioner/map_builder.h"

namespace neardup::partitioner {
namespace {

// Pages whose words split evenly over `dims` sub-dictionaries around a log-normal length.
LengthSample Sample(size_t pages, double median, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> len(std::log(median), 0.6);
  LengthSample s(3);
  for (size_t i = 0; i < pages; ++i) {
    const uint32_t n = static_cast<uint32_t>(std::clamp(len(rng), 20.0, 1700.0));
    uint32_t v[3] = {0, 0, 0};
    for (uint32_t w = 0; w < n; ++w) ++v[rng() % 3];
    s.Add(v, v);
  }
  return s;
}

MapBuildOptions Options() {
  return {.dims = 3, .shards = 16, .threshold = 0.9, .routing = pb::PartitionMap::EXACT_L1};
}

TEST(Rebalance, UnchangedContentMovesNothing) {
  const LengthSample train = Sample(30000, 300, 1);
  auto map = BuildPartitionMap(train, Options());
  ASSERT_TRUE(map.ok());
  auto r = Rebalance(*map, Sample(30000, 300, 2), {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->resliced);
  EXPECT_LE(r->imbalance_after, r->imbalance_before + 1e-12);
  EXPECT_LT(r->moved_share, 0.1);
  EXPECT_EQ(r->map.proto().generation(), 2u);
}

TEST(Rebalance, DriftIsRepairedAndMovesAreCounted) {
  auto map = BuildPartitionMap(Sample(30000, 300, 1), Options());
  ASSERT_TRUE(map.ok());
  const LengthSample drifted = Sample(30000, 520, 3);  // pages got much longer
  auto r = Rebalance(*map, drifted, {.max_move = 0.1, .target_imbalance = 1.15});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GT(r->imbalance_before, 1.3);
  EXPECT_LT(r->imbalance_after, r->imbalance_before);
  EXPECT_LE(r->imbalance_after, 1.3);
  double moved = 0;
  for (const auto& m : r->moves) {
    EXPECT_NE(m.from_shard, m.to_shard);
    moved += m.pages;
  }
  EXPECT_DOUBLE_EQ(moved / drifted.size(), r->moved_share);
  // The new map is consistent with what the result claims.
  EXPECT_NEAR(EvaluateMap(r->map, drifted).imbalance, r->imbalance_after, 1e-9);
}

TEST(Rebalance, StepOneRespectsTheMoveBudget) {
  auto map = BuildPartitionMap(Sample(30000, 300, 1), Options());
  ASSERT_TRUE(map.ok());
  auto r = Rebalance(*map, Sample(30000, 340, 4), {.max_move = 0.02, .target_imbalance = 1.0001});
  ASSERT_TRUE(r.ok());
  if (!r->resliced) {
    EXPECT_LE(r->moved_share, 0.02 + 1e-12);
  }
}

TEST(Rebalance, RefusesAnIncompatibleSample) {
  auto map = BuildPartitionMap(Sample(1000, 300, 1), Options());
  ASSERT_TRUE(map.ok());
  auto r = Rebalance(*map, LengthSample(2), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Rebalance(*map, LengthSample(3), {}).status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace neardup::partitioner
