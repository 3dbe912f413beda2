// A move in progress during a run (pipeline/run_move.h): the move's share of the tiers' time, the
// removals a batch adds between the flip and the end, and a batch routed again past the flip.
#include "pipeline/run_move.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "partitioner/map_builder.h"

namespace neardup::pipeline::internal {
namespace {

using tier1::Classification;

std::string Url(uint32_t cell) {
  std::string url = "u";
  url += std::to_string(cell);
  return url;
}

TEST(MovePacerTest, TheWarmupBatchesGiveARecordsCostAndLaterBatchesBuyTheMoveTime) {
  MovePacer pacer(0.5);
  EXPECT_FALSE(pacer.BatchDone(0, 5.0));  // a redo counts for nothing
  for (int i = 0; i < MovePacer::kWarmup; ++i) EXPECT_FALSE(pacer.BatchDone(100, 1.0));  // 10 ms a record
  EXPECT_EQ(pacer.credit(), 0);
  // 100 records at half the throughput may take 2 s; the batch took 1.5 s: 0.5 s for the move.
  EXPECT_TRUE(pacer.BatchDone(100, 1.5));
  EXPECT_NEAR(pacer.credit(), 0.5, 1e-9);
  pacer.Spend(0.7);
  EXPECT_NEAR(pacer.credit(), -0.2, 1e-9);
  // A batch slower than the share leaves the move in debt; the credit never passes its cap.
  EXPECT_TRUE(pacer.BatchDone(100, 2.5));
  EXPECT_NEAR(pacer.credit(), -0.7, 1e-9);
  for (int i = 0; i < 10; ++i) pacer.BatchDone(1000, 0.0);
  EXPECT_EQ(pacer.credit(), MovePacer::kMaxCredit);
}

// A 4-shard map over pages whose words split over 3 sub-dictionaries, and the same map with
// cells `moved` given to the next shard of 5.
partitioner::PartitionMap Build() {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> len(std::log(300.0), 0.6);
  partitioner::LengthSample s(3);
  for (int i = 0; i < 5000; ++i) {
    const uint32_t n = static_cast<uint32_t>(std::clamp(len(rng), 20.0, 1700.0));
    uint32_t v[3] = {0, 0, 0};
    for (uint32_t w = 0; w < n; ++w) ++v[rng() % 3];
    s.Add(v, v);
  }
  auto map = partitioner::BuildPartitionMap(
      s, {.dims = 3, .shards = 4, .threshold = 0.9, .routing = pb::PartitionMap::EXACT_L1, .cells_per_shard = 4});
  EXPECT_TRUE(map.ok()) << map.status().ToString();
  return std::move(*map);
}

partitioner::PartitionMap Moved(const partitioner::PartitionMap& map, const std::set<uint32_t>& moved) {
  pb::PartitionMap p = map.proto();
  p.set_generation(p.generation() + 1);
  p.set_shards(5);
  for (uint32_t c : moved) p.set_cell_shard(static_cast<int>(c), (p.cell_shard(static_cast<int>(c)) + 1) % 5);
  auto m = partitioner::PartitionMap::FromProto(std::move(p));
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return std::move(*m);
}

// A store moving from `before` to `after`, loaded.
std::unique_ptr<Placement> Moving(MemoryPlacementState* s, const partitioner::PartitionMap& before,
                                  const partitioner::PartitionMap& after) {
  std::string bytes;
  before.proto().SerializeToString(&bytes);
  s->maps[MapFile::kServed] = bytes;
  pb::StoreParams params;
  params.set_shards(before.shards());
  params.set_map_generation(before.proto().generation());
  params.set_map_digest(MapDigest(before));
  s->rows["params"] = params.SerializeAsString();
  pb::MoveJournal j;
  j.set_state(pb::MoveJournal::COPY);
  j.set_generation_before(before.proto().generation());
  j.set_generation_after(after.proto().generation());
  j.set_digest_before(MapDigest(before));
  j.set_digest_after(MapDigest(after));
  j.set_shards_before(before.shards());
  j.set_shards_after(after.shards());
  EXPECT_TRUE(Placement::BeginMove(s, before, after, j, /*sync=*/false).ok());
  auto p = Placement::Load(*s);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return std::move(*p);
}

// A batch of one record per cell of `map` ("u<cell>").
Batch OnePerCell(const partitioner::PartitionMap& map) {
  Batch b;
  for (uint32_t cell = 0; cell < map.cells(); ++cell) {
    CrawlRecord r;
    r.url = Url(cell);
    b.records.push_back(r);
    b.cell.push_back(cell);
  }
  return b;
}

TEST(MoveRemovalsTest, FromTheFlipToTheEndAPageStoredInAMovedCellLeavesItsOldShard) {
  const partitioner::PartitionMap before = Build();
  const std::set<uint32_t> moved = {1, 3, before.cells() - 2};
  const partitioner::PartitionMap after = Moved(before, moved);
  const Batch b = OnePerCell(after);
  std::vector<Classification> classes(b.records.size(), Classification::kTier2);
  classes[1] = Classification::kUnchanged;  // not stored: no removal
  classes[3] = Classification::kEmpty;      // removed from its home: from its old shard too
  classes[2] = Classification::kRedirect;  // not stored

  Placement still(before);
  google::protobuf::RepeatedPtrField<pb::Tier2Removal> removals;
  AddMoveRemovals(still, b, classes, &removals);
  EXPECT_TRUE(removals.empty());  // no move

  MemoryPlacementState s;
  auto p = Moving(&s, before, after);
  AddMoveRemovals(*p, b, classes, &removals);
  EXPECT_TRUE(removals.empty());  // before the flip the old shards stay complete
  ASSERT_TRUE(p->Flip(&s).ok());
  AddMoveRemovals(*p, b, classes, &removals);
  std::set<uint32_t> cells;
  for (const auto& r : removals) {
    EXPECT_EQ(r.url(), Url(r.cell()));
    cells.insert(r.cell());
  }
  EXPECT_EQ(cells, (std::set<uint32_t>{3, before.cells() - 2}));
  removals.Clear();
  ASSERT_TRUE(p->End(&s).ok());
  AddMoveRemovals(*p, b, classes, &removals);
  EXPECT_TRUE(removals.empty());  // the drop took them
}

TEST(RouteAgainTest, ABatchRoutedBeforeTheFlipIsRoutedOnTheNewMapAfterIt) {
  const partitioner::PartitionMap before = Build();
  std::set<uint32_t> moved;
  for (uint32_t c = 0; c < before.cells(); c += 2) moved.insert(c);
  const partitioner::PartitionMap after = Moved(before, moved);
  MemoryPlacementState s;
  auto p = Moving(&s, before, after);
  Batch b;
  const uint32_t vs[][3] = {{100, 100, 100}, {10, 200, 30}, {300, 5, 90}, {0, 0, 0}};
  for (const auto& v : vs) {
    b.records.emplace_back();
    b.vectors.insert(b.vectors.end(), v, v + 3);
    b.shards.emplace_back();
    if (v[0] + v[1] + v[2] > 0) p->Route(false, v, &b.shards.back());  // the last one: compared nowhere
  }
  const auto routed_before = b.shards;
  RouteAgain(*p, b);
  EXPECT_EQ(b.shards, routed_before);  // the same side of the flip
  ASSERT_TRUE(p->Flip(&s).ok());
  RouteAgain(*p, b);
  EXPECT_TRUE(b.routed_flipped);
  std::vector<uint32_t> want;
  bool changed = false;
  for (size_t i = 0; i < 3; ++i) {
    after.RouteShards(std::span<const uint32_t>(vs[i], 3), &want);
    EXPECT_EQ(b.shards[i], want) << "record " << i;
    changed |= b.shards[i] != routed_before[i];
  }
  EXPECT_TRUE(changed) << "no page changed shard: the test shows nothing";
  EXPECT_TRUE(b.shards[3].empty());
}

}  // namespace
}  // namespace neardup::pipeline::internal
