#include "partitioner/rebalance.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <utility>

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

// Cell weights of a sample under a map.
std::vector<double> CellWeights(const PartitionMap& map, const LengthSample& s) {
  std::vector<double> w(map.cells(), 0.0);
  for (size_t i = 0; i < s.size(); ++i) w[map.Home(s.Vector(i, map.proto().feature()))] += 1;
  return w;
}

TEST(ReassignCells, GrowingFillsTheNewShardsAndKeepsEveryCell) {
  auto map = BuildPartitionMap(Sample(30000, 300, 1), Options());
  ASSERT_TRUE(map.ok());
  const std::vector<double> w = CellWeights(*map, Sample(30000, 300, 2));
  auto r = ReassignCells(*map, w, 20, {.max_move = 0.4, .target_imbalance = 1.10});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->map.shards(), 20u);
  EXPECT_EQ(r->map.cells(), map->cells());
  EXPECT_EQ(r->map.proto().generation(), map->proto().generation() + 1);
  std::vector<double> load(20, 0.0);
  for (uint32_t c = 0; c < map->cells(); ++c) load[r->map.ShardOf(c)] += w[c];
  for (uint32_t m = 16; m < 20; ++m) EXPECT_GT(load[m], 0) << "new shard " << m << " took nothing";
  EXPECT_NEAR(Imbalance(load), r->imbalance_after, 1e-12);
  double moved = 0;
  for (const auto& m : r->moves) {
    EXPECT_EQ(m.from_cell, m.to_cell);
    EXPECT_EQ(m.from_shard, map->ShardOf(m.from_cell));
    EXPECT_EQ(m.to_shard, r->map.ShardOf(m.from_cell));
    moved += m.pages;
  }
  double total = 0;
  for (double x : w) total += x;
  EXPECT_NEAR(moved / total, r->moved_share, 1e-12);
  EXPECT_LE(r->moved_share, 0.4 + 1e-12);
  // Routing is the same cell by cell: only the shards change.
  std::vector<uint32_t> a, b;
  const uint32_t v[3] = {100, 120, 90};
  map->RouteCells(v, &a);
  r->map.RouteCells(v, &b);
  EXPECT_EQ(a, b);
}

TEST(ReassignCells, DrainingEmptiesTheLastShardsWhateverTheBudget) {
  auto map = BuildPartitionMap(Sample(30000, 300, 1), Options());
  ASSERT_TRUE(map.ok());
  const std::vector<double> w = CellWeights(*map, Sample(30000, 300, 2));
  auto r = ReassignCells(*map, w, 14, {.max_move = 0, .target_imbalance = 1.10});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->map.shards(), 14u);
  for (uint32_t c = 0; c < map->cells(); ++c) {
    EXPECT_LT(r->map.ShardOf(c), 14u);
    if (map->ShardOf(c) < 14) {
      EXPECT_EQ(r->map.ShardOf(c), map->ShardOf(c)) << "no budget: only drained cells move";
    }
  }
  EXPECT_LT(r->imbalance_after, 1.4);
}

// A fifth shard needs a fifth of the pages: growing 4 -> 5 shards within a 10% budget leaves the
// new shard at half the mean. The change takes the budget it needs (move_budget above max_move)
// and reaches the target; with resize_within_max_move it keeps to max_move. The old shards'
// weights drift from balanced (median 300) to skewed (median 340-380, as the store of the issue).
TEST(ReassignCells, AddingAShardTakesTheBudgetItNeedsToReachTheTarget) {
  auto map = BuildPartitionMap(Sample(30000, 300, 1), {.dims = 3, .shards = 4, .threshold = 0.9,
                                                       .routing = pb::PartitionMap::EXACT_L1});
  ASSERT_TRUE(map.ok());
  for (const auto& [median, seed] : {std::pair<double, uint64_t>{300, 2}, {340, 3}, {380, 4}}) {
    SCOPED_TRACE("sample median " + std::to_string(median) + ", seed " + std::to_string(seed));
    const std::vector<double> w = CellWeights(*map, Sample(30000, median, seed));
    const RebalanceOptions o{.max_move = 0.1, .target_imbalance = 1.05};
    auto capped = ReassignCells(*map, w, 5, {.max_move = 0.1, .target_imbalance = 1.05, .resize_within_max_move = true});
    ASSERT_TRUE(capped.ok()) << capped.status().message();
    EXPECT_LE(capped->moved_share, 0.1 + 1e-12);
    EXPECT_DOUBLE_EQ(capped->move_budget, 0.1);
    EXPECT_GT(capped->imbalance_after, 1.05) << "10% cannot fill a fifth shard";

    auto r = ReassignCells(*map, w, 5, o);
    ASSERT_TRUE(r.ok()) << r.status().message();
    std::printf("[ grow 4-5 ] median %.0f: imbalance %.4f -> %.4f within max_move 0.1 (moved %.4f), %.4f with "
                "budget %.4f (moved %.4f)\n",
                median, r->imbalance_before, capped->imbalance_after, capped->moved_share, r->imbalance_after,
                r->move_budget, r->moved_share);
    EXPECT_LE(r->imbalance_after, 1.05 + 1e-9);
    EXPECT_GT(r->move_budget, 0.1);
    EXPECT_LE(r->moved_share, r->move_budget + 1e-12);
    std::vector<double> load(5, 0.0);
    for (uint32_t c = 0; c < map->cells(); ++c) load[r->map.ShardOf(c)] += w[c];
    EXPECT_NEAR(Imbalance(load), r->imbalance_after, 1e-12);
    EXPECT_LE(r->move_budget, 0.4) << "twice what the new shard needs";
    // A smaller budget given explicitly, and kept to, does not reach the target (the budget is
    // bisected: just under it fails).
    auto under = ReassignCells(*map, w, 5, {.max_move = r->move_budget - 1.0 / 4096, .target_imbalance = 1.05,
                                            .resize_within_max_move = true});
    ASSERT_TRUE(under.ok());
    EXPECT_GT(under->imbalance_after, 1.05 + 1e-9);
  }
}

// The same shard count keeps to max_move: only a shard-count change raises the budget.
TEST(ReassignCells, AnUnchangedShardCountKeepsToMaxMove) {
  auto map = BuildPartitionMap(Sample(30000, 300, 1), Options());
  ASSERT_TRUE(map.ok());
  const std::vector<double> w = CellWeights(*map, Sample(30000, 380, 4));
  auto r = ReassignCells(*map, w, 16, {.max_move = 0.02, .target_imbalance = 1.0001});
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->move_budget, 0.02);
  EXPECT_LE(r->moved_share, 0.02 + 1e-12);
  EXPECT_GT(r->imbalance_after, 1.0001);
}

TEST(ReassignCells, RefusesBadArguments) {
  auto map = BuildPartitionMap(Sample(1000, 300, 1), Options());
  ASSERT_TRUE(map.ok());
  std::vector<double> w(map->cells(), 1.0);
  EXPECT_EQ(ReassignCells(*map, w, 0, {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ReassignCells(*map, std::vector<double>(3, 1.0), 16, {}).status().code(), StatusCode::kInvalidArgument);
  w[0] = -1;
  EXPECT_EQ(ReassignCells(*map, w, 16, {}).status().code(), StatusCode::kInvalidArgument);
  w[0] = 1;
  EXPECT_EQ(ReassignCells(*map, w, 16, {.max_move = 2}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace neardup::partitioner

namespace neardup::partitioner {
namespace {

MapBuildOptions Coarse(uint32_t shards) {
  MapBuildOptions o = Options();
  o.shards = shards;
  o.cells_per_shard = 2;
  return o;
}

TEST(SplitCells, KeepsEveryOtherCellsNumberAndTheSplitCellsLowestPart) {
  const LengthSample s = Sample(20000, 300, 5);
  auto map = BuildPartitionMap(s, Coarse(4));
  ASSERT_TRUE(map.ok()) << map.status().message();
  const uint32_t cell = map->Home(s.Vector(0, map->proto().feature()));
  // A cut inside the cell's last interval: the median of its pages' last length.
  std::vector<uint64_t> last;
  for (size_t i = 0; i < s.size(); ++i) {
    if (map->Home(s.Vector(i, map->proto().feature())) == cell) last.push_back(s.Vector(i, map->proto().feature())[2]);
  }
  std::sort(last.begin(), last.end());
  const uint64_t cut = last[last.size() / 2];
  ASSERT_GT(cut, last.front());
  const std::vector<CellCut> cuts{{cell, {cut}}};
  auto split = SplitCells(*map, cuts);
  ASSERT_TRUE(split.ok()) << split.status().message();
  ASSERT_EQ(split->cells(), map->cells() + 1);
  EXPECT_EQ(split->ShardOf(map->cells()), map->ShardOf(cell));
  size_t moved = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto v = s.Vector(i, map->proto().feature());
    const uint32_t before = map->Home(v), after = split->Home(v);
    if (before != cell) {
      EXPECT_EQ(after, before) << "page " << i << " left an uncut cell";
    } else if (v[2] < cut) {
      EXPECT_EQ(after, cell);
    } else {
      EXPECT_EQ(after, map->cells());
      ++moved;
    }
  }
  EXPECT_GT(moved, 0u);
  // The split map survives its own encoding, and names its parents.
  auto again = PartitionMap::FromProto(split->proto());
  ASSERT_TRUE(again.ok()) << again.status().message();
  auto parent = CellParents(*split, *map);
  ASSERT_TRUE(parent.ok()) << parent.status().message();
  for (uint32_t c = 0; c < map->cells(); ++c) EXPECT_EQ((*parent)[c], c);
  EXPECT_EQ((*parent)[map->cells()], cell);
  // Exact routing still finds the home cell of every page it is asked about.
  std::vector<uint32_t> routed;
  for (size_t i = 0; i < 200; ++i) {
    const auto v = s.Vector(i, map->proto().feature());
    split->RouteCells(v, &routed);
    EXPECT_TRUE(std::binary_search(routed.begin(), routed.end(), split->Home(v)));
  }
}

TEST(SplitCells, RefusesCutsOutsideTheCellAndMapsThatDoNotRefine) {
  auto map = BuildPartitionMap(Sample(20000, 300, 5), Coarse(4));
  ASSERT_TRUE(map.ok());
  const std::vector<CellCut> outside{{0, {0}}};
  EXPECT_EQ(SplitCells(*map, outside).status().code(), StatusCode::kInvalidArgument);
  const std::vector<CellCut> unknown{{map->cells(), {10}}};
  EXPECT_EQ(SplitCells(*map, unknown).status().code(), StatusCode::kInvalidArgument);
  auto other = BuildPartitionMap(Sample(20000, 500, 6), Coarse(4));
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(CellParents(*other, *map).status().code(), StatusCode::kInvalidArgument);
  // A leaf_cell that numbers a cell twice is refused, naming the field.
  pb::PartitionMap p = map->proto();
  for (uint32_t c = 0; c < map->cells(); ++c) p.add_leaf_cell(0);
  auto bad = PartitionMap::FromProto(p);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("leaf_cell"), std::string::npos);
}

TEST(ReassignOrSplitCells, SplitsCellsWhenWholeCellsCannotFillTheNewShards) {
  // A map of 64 cells (the least a map has) grown to 48 shards: whole cells cannot balance them.
  const LengthSample s = Sample(30000, 300, 7);
  auto map = BuildPartitionMap(s, Coarse(4));
  ASSERT_TRUE(map.ok());
  const RebalanceOptions o{.max_move = 1, .target_imbalance = 1.10};
  ASSERT_EQ(map->cells(), 64u);
  auto whole = ReassignCells(*map, CellWeights(*map, s), 48, o);
  ASSERT_TRUE(whole.ok());
  EXPECT_GT(whole->imbalance_after, 1.2);
  auto r = ReassignOrSplitCells(*map, s, 48, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->resliced);
  EXPECT_GT(r->cells_split, 0u);
  EXPECT_LE(r->imbalance_after, 1.10 + 1e-9);
  EXPECT_EQ(r->map.shards(), 48u);
  EXPECT_LE(r->map.cells(), 2u * 48 * 2);
  EXPECT_NEAR(EvaluateMap(r->map, s).imbalance, r->imbalance_after, 1e-9);
  auto parent = CellParents(r->map, *map);
  ASSERT_TRUE(parent.ok()) << parent.status().message();
  double moved = 0;
  for (const CellMove& m : r->moves) {
    EXPECT_EQ(m.from_cell, (*parent)[m.to_cell]);
    EXPECT_EQ(m.from_shard, map->ShardOf(m.from_cell));
    EXPECT_EQ(m.to_shard, r->map.ShardOf(m.to_cell));
    moved += m.pages;
  }
  EXPECT_NEAR(moved / static_cast<double>(s.size()), r->moved_share, 1e-12);
  // Every page stays in its old cell or in a part of it.
  for (size_t i = 0; i < s.size(); ++i) {
    const auto v = s.Vector(i, map->proto().feature());
    EXPECT_EQ((*parent)[r->map.Home(v)], map->Home(v));
  }
}

TEST(ReassignOrSplitCells, WholeCellsThatReachTheTargetSplitNothing) {
  const LengthSample s = Sample(30000, 300, 7);
  auto map = BuildPartitionMap(s, Options());
  ASSERT_TRUE(map.ok());
  auto r = ReassignOrSplitCells(*map, s, 17, {.max_move = 0.5, .target_imbalance = 1.15});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->resliced);
  EXPECT_EQ(r->map.cells(), map->cells());
}

}  // namespace
}  // namespace neardup::partitioner
