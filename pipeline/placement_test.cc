#include "pipeline/placement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <set>

#include "partitioner/map_builder.h"
#include "testing/temp_dir.h"

namespace neardup::pipeline {
namespace {

// The maps' sample's seed: NEARDUP_PLACEMENT_SEED=S runs another.
uint64_t Seed() {
  static const uint64_t seed = [] {
    const char* s = std::getenv("NEARDUP_PLACEMENT_SEED");
    const uint64_t v = s != nullptr ? std::strtoull(s, nullptr, 10) : 1;
    std::printf("placement_test: seed %llu (NEARDUP_PLACEMENT_SEED)\n", static_cast<unsigned long long>(v));
    return v;
  }();
  return seed;
}

// Pages whose words split evenly over 3 sub-dictionaries around a log-normal length.
partitioner::LengthSample Sample(size_t pages, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> len(std::log(300.0), 0.6);
  partitioner::LengthSample s(3);
  for (size_t i = 0; i < pages; ++i) {
    const uint32_t n = static_cast<uint32_t>(std::clamp(len(rng), 20.0, 1700.0));
    uint32_t v[3] = {0, 0, 0};
    for (uint32_t w = 0; w < n; ++w) ++v[rng() % 3];
    s.Add(v, v);
  }
  return s;
}

partitioner::PartitionMap Build(uint32_t shards) {
  auto map = partitioner::BuildPartitionMap(
      Sample(5000, Seed()),
      {.dims = 3, .shards = shards, .threshold = 0.9, .routing = pb::PartitionMap::EXACT_L1, .cells_per_shard = 4});
  EXPECT_TRUE(map.ok()) << map.status().ToString();
  return std::move(*map);
}

// `map` with its generation + 1 and cells `moved` each given to the next shard of `shards`.
partitioner::PartitionMap Moved(const partitioner::PartitionMap& map, const std::set<uint32_t>& moved, uint32_t shards) {
  pb::PartitionMap p = map.proto();
  p.set_generation(p.generation() + 1);
  p.set_shards(shards);
  for (uint32_t c : moved) p.set_cell_shard(static_cast<int>(c), (p.cell_shard(static_cast<int>(c)) + 1) % shards);
  auto m = partitioner::PartitionMap::FromProto(std::move(p));
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return std::move(*m);
}

std::string Bytes(const partitioner::PartitionMap& map) {
  std::string b;
  map.proto().SerializeToString(&b);
  return b;
}

pb::StoreParams ParamsFor(const partitioner::PartitionMap& map) {
  pb::StoreParams p;
  p.set_threshold(0.9);
  p.set_shards(map.shards());
  p.set_map_generation(map.proto().generation());
  p.set_map_digest(MapDigest(map));
  return p;
}

// A store serving `map`, no move.
void Serve(MemoryPlacementState* s, const partitioner::PartitionMap& map) {
  s->maps[MapFile::kServed] = Bytes(map);
  s->rows["params"] = ParamsFor(map).SerializeAsString();
}

pb::MoveJournal JournalFor(const partitioner::PartitionMap& before, const partitioner::PartitionMap& after) {
  pb::MoveJournal j;
  j.set_state(pb::MoveJournal::COPY);
  j.set_generation_before(before.proto().generation());
  j.set_generation_after(after.proto().generation());
  j.set_digest_before(MapDigest(before));
  j.set_digest_after(MapDigest(after));
  j.set_shards_before(before.shards());
  j.set_shards_after(after.shards());
  return j;
}

// Some vectors of pages, for routing.
std::vector<std::vector<uint32_t>> Vectors(size_t n) {
  const partitioner::LengthSample s = Sample(n, Seed() + 100);
  std::vector<std::vector<uint32_t>> out;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto v = s.Vector(i, pb::PartitionMap::SHINGLE_COUNTS);
    out.emplace_back(v.begin(), v.end());
  }
  return out;
}

void ExpectRoutesOn(const Placement& p, const partitioner::PartitionMap& map) {
  std::vector<uint32_t> got, want;
  for (const auto& v : Vectors(300)) {
    p.Route(v, &got);
    map.RouteShards(v, &want);
    ASSERT_EQ(got, want);
  }
}

TEST(Placement, OneMapServesEveryCellAndRoutesOnIt) {
  const partitioner::PartitionMap map = Build(4);
  Placement p(map);
  EXPECT_FALSE(p.moving());
  EXPECT_FALSE(p.flipped());
  EXPECT_EQ(p.generation(), map.proto().generation());
  EXPECT_EQ(p.shard_count(), 4u);
  EXPECT_EQ(MapDigest(p.served()), MapDigest(map));
  EXPECT_EQ(MapDigest(p.map()), MapDigest(map));
  for (uint32_t c = 0; c < map.cells(); ++c) {
    EXPECT_EQ(p.ShardOf(c), map.ShardOf(c));
    uint32_t out[2];
    ASSERT_EQ(p.StoreShards(c, out), 1);
    EXPECT_EQ(out[0], map.ShardOf(c));
    ASSERT_EQ(p.RemovalShards(c, out), 1);
    EXPECT_EQ(out[0], map.ShardOf(c));
    EXPECT_FALSE(p.ClearsOldShard(c));
  }
  ExpectRoutesOn(p, map);
}

TEST(Placement, LoadsTheMapTheParametersName) {
  const partitioner::PartitionMap map = Build(4);
  MemoryPlacementState s;
  Serve(&s, map);
  auto p = Placement::Load(s);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_FALSE((*p)->moving());
  EXPECT_EQ(MapDigest((*p)->served()), MapDigest(map));
  EXPECT_EQ((*p)->generation(), map.proto().generation());
  // A crash between a flip and its rename: the parameters name map-next.pb's map.
  const partitioner::PartitionMap next = Moved(map, {0, 1}, 4);
  s.maps[MapFile::kNext] = Bytes(next);
  s.rows["params"] = ParamsFor(next).SerializeAsString();
  p = Placement::Load(s);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(MapDigest((*p)->served()), MapDigest(next));
  EXPECT_EQ((*p)->generation(), next.proto().generation());
}

// A move of two cells (one to a new fifth shard), step by step: where a cell's pages are, where a
// batch stores and removes them, the routing, and the state saved at each step loads back the same.
// A new store's first commit writes the map, then the parameters that name it; a start that
// crashed between the two leaves a map no parameters name, which the next start finds.
TEST(Placement, ANewStoresFirstCommitAndTheMapACrashLeft) {
  const partitioner::PartitionMap map = Build(3);
  MemoryPlacementState s;
  auto none = Placement::LeftoverMap(s);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE(none->has_value());

  s.maps[MapFile::kServed] = Bytes(map);  // the map written, the parameters not
  auto left = Placement::LeftoverMap(s);
  ASSERT_TRUE(left.ok()) << left.status().ToString();
  ASSERT_TRUE(left->has_value());
  EXPECT_EQ(MapDigest(**left), MapDigest(map));
  EXPECT_EQ(Placement::Load(s).status().code(), StatusCode::kNotFound);

  s.maps[MapFile::kServed] = "not a map";
  EXPECT_EQ(Placement::LeftoverMap(s).status().code(), StatusCode::kCorruption);

  MemoryPlacementState fresh;
  pb::StoreParams params;
  params.set_threshold(0.9);
  auto created = Placement::Create(&fresh, map, &params, /*sync=*/false);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(params.shards(), 3u);
  EXPECT_EQ(params.map_generation(), map.proto().generation());
  EXPECT_EQ(params.map_digest(), MapDigest(map));
  EXPECT_EQ(MapDigest((*created)->served()), MapDigest(map));
  EXPECT_FALSE((*created)->moving());
  EXPECT_EQ(fresh.maps.at(MapFile::kServed), Bytes(map));
  auto loaded = Placement::Load(fresh);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(MapDigest((*loaded)->served()), MapDigest(map));
  EXPECT_EQ((*loaded)->generation(), map.proto().generation());

  MemoryPlacementState failing;
  failing.fail_writes = true;
  EXPECT_FALSE(Placement::Create(&failing, map, &params, /*sync=*/false).ok());
  EXPECT_FALSE(failing.rows.count("params"));  // no parameters name a map that was not written
}

TEST(Placement, AMoveServesTheOldMapUntilItsFlipAndTheNewOneFromThen) {
  const partitioner::PartitionMap before = Build(4);
  std::set<uint32_t> moved = {0, before.cells() - 1};
  const partitioner::PartitionMap after = Moved(before, moved, 5);
  MemoryPlacementState s;
  Serve(&s, before);
  ASSERT_TRUE(Placement::BeginMove(&s, before, after, JournalFor(before, after), /*sync=*/false).ok());
  EXPECT_EQ(s.maps.at(MapFile::kPrev), Bytes(before));
  EXPECT_EQ(s.maps.at(MapFile::kNext), Bytes(after));
  ASSERT_TRUE(s.rows.count("move"));

  auto loaded = Placement::Load(s);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  Placement& p = **loaded;
  ASSERT_TRUE(p.moving());
  EXPECT_FALSE(p.flipped());
  EXPECT_FALSE(p.done());
  EXPECT_EQ(p.generation(), before.proto().generation());
  EXPECT_EQ(p.shard_count(), 5u);
  EXPECT_EQ(MapDigest(p.map()), MapDigest(after));
  EXPECT_EQ(MapDigest(p.served()), MapDigest(before));
  ExpectRoutesOn(p, before);
  for (uint32_t c = 0; c < before.cells(); ++c) {
    EXPECT_EQ(p.ShardOf(c), before.ShardOf(c)) << "cell " << c;
    EXPECT_EQ(p.OldShard(c), before.ShardOf(c));
    uint32_t out[2];
    // Until the flip: stored and removed on both maps' shards.
    const int n = p.StoreShards(c, out);
    ASSERT_EQ(n, moved.count(c) ? 2 : 1) << "cell " << c;
    EXPECT_EQ(out[0], before.ShardOf(c));
    if (n == 2) {
      EXPECT_EQ(out[1], after.ShardOf(c));
    }
    ASSERT_EQ(p.RemovalShards(c, out), n);
    EXPECT_FALSE(p.ClearsOldShard(c));
  }

  p.CountMoved(7, 700);
  ASSERT_TRUE(p.Flip(&s).ok());
  EXPECT_TRUE(p.flipped());
  EXPECT_EQ(MapDigest(p.served()), MapDigest(after));
  EXPECT_EQ(MapDigest(p.served(false)), MapDigest(before));  // a batch routed before the flip
  ExpectRoutesOn(p, after);
  pb::StoreParams params;
  ASSERT_TRUE(params.ParseFromString(s.rows.at("params")));
  EXPECT_EQ(params.map_generation(), after.proto().generation());
  EXPECT_EQ(params.map_digest(), MapDigest(after));
  EXPECT_EQ(params.shards(), 5u);
  EXPECT_DOUBLE_EQ(params.threshold(), 0.9);  // the other parameters as they were
  pb::MoveJournal j;
  ASSERT_TRUE(j.ParseFromString(s.rows.at("move")));
  EXPECT_EQ(j.state(), pb::MoveJournal::DROP);
  EXPECT_EQ(j.pages_moved(), 7u);
  EXPECT_EQ(j.bytes_moved(), 700u);
  for (uint32_t c = 0; c < before.cells(); ++c) {
    EXPECT_EQ(p.ShardOf(c), after.ShardOf(c));
    uint32_t out[2];
    // From the flip: stored on the new shard only, removed from both; a moved cell's page stored
    // is removed from its old shard too.
    ASSERT_EQ(p.StoreShards(c, out), 1);
    EXPECT_EQ(out[0], after.ShardOf(c));
    const int n = p.RemovalShards(c, out);
    ASSERT_EQ(n, moved.count(c) ? 2 : 1);
    if (n == 2) {
      EXPECT_EQ(out[1], before.ShardOf(c));
    }
    EXPECT_EQ(p.ClearsOldShard(c), moved.count(c) == 1);
  }

  // The flipped state loads back flipped, serving the new map.
  auto again = Placement::Load(s);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE((*again)->flipped());
  EXPECT_EQ((*again)->generation(), after.proto().generation());
  EXPECT_EQ(MapDigest((*again)->served()), MapDigest(after));

  bool renamed = false;
  ASSERT_TRUE(p.Rename(&s, &renamed).ok());
  EXPECT_TRUE(renamed);
  EXPECT_EQ(s.maps.at(MapFile::kServed), Bytes(after));
  EXPECT_FALSE(s.maps.count(MapFile::kNext));
  ASSERT_TRUE(p.Rename(&s, &renamed).ok());  // once more, as after a restart: nothing to rename
  EXPECT_FALSE(renamed);
  again = Placement::Load(s);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE((*again)->flipped());

  ASSERT_TRUE(p.End(&s).ok());
  EXPECT_TRUE(p.done());
  EXPECT_FALSE(s.rows.count("move"));
  EXPECT_FALSE(s.maps.count(MapFile::kPrev));
  for (uint32_t c = 0; c < before.cells(); ++c) {
    uint32_t out[2];
    ASSERT_EQ(p.RemovalShards(c, out), 1);
    EXPECT_EQ(out[0], after.ShardOf(c));
    EXPECT_FALSE(p.ClearsOldShard(c));
  }
  again = Placement::Load(s);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_FALSE((*again)->moving());
  EXPECT_EQ(MapDigest((*again)->served()), MapDigest(after));
}

TEST(Placement, ASplitCellsPartsAreOnItsOldShardUntilTheFlip) {
  const partitioner::PartitionMap before = Build(4);
  const partitioner::LengthSample s = Sample(5000, Seed());
  // Cut the home cell of the first page at the median of its pages' last length.
  const auto feature = before.proto().feature();
  const uint32_t cell = before.Home(s.Vector(0, feature));
  std::vector<uint64_t> last;
  for (size_t i = 0; i < s.size(); ++i) {
    if (before.Home(s.Vector(i, feature)) == cell) last.push_back(s.Vector(i, feature)[2]);
  }
  std::sort(last.begin(), last.end());
  const uint64_t cut = last[last.size() / 2];
  if (cut == last.front()) GTEST_SKIP() << "the cell's pages have one last length: seed " << Seed();
  const std::vector<partitioner::CellCut> cuts{{cell, {cut}}};
  auto split = partitioner::SplitCells(before, cuts);
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  const uint32_t part = before.cells();  // the new cell
  const partitioner::PartitionMap after = Moved(*split, {part}, 4);
  MemoryPlacementState st;
  Serve(&st, before);
  ASSERT_TRUE(Placement::BeginMove(&st, before, after, JournalFor(before, after), false).ok());
  auto p = Placement::Load(st);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ((*p)->ParentCell(part), cell);
  EXPECT_TRUE((*p)->Split(cell));
  for (uint32_t c = 0; c < before.cells(); ++c) EXPECT_EQ((*p)->Split(c), c == cell) << "cell " << c;
  EXPECT_EQ((*p)->ShardOf(part), before.ShardOf(cell));
  EXPECT_EQ((*p)->OldShard(part), before.ShardOf(cell));
  ASSERT_TRUE((*p)->Flip(&st).ok());
  EXPECT_EQ((*p)->ShardOf(part), after.ShardOf(part));
  EXPECT_NE((*p)->ShardOf(part), before.ShardOf(cell));
}

TEST(Placement, MissingOrCorruptStateIsAnError) {
  const partitioner::PartitionMap map = Build(4);
  const partitioner::PartitionMap next = Moved(map, {0}, 4);
  {
    MemoryPlacementState s;  // nothing recorded
    EXPECT_EQ(Placement::Load(s).status().code(), StatusCode::kNotFound);
  }
  {
    MemoryPlacementState s;
    Serve(&s, map);
    s.rows["params"] = "\xff\xff not a message";
    EXPECT_EQ(Placement::Load(s).status().code(), StatusCode::kCorruption);
  }
  {
    MemoryPlacementState s;
    Serve(&s, map);
    s.maps.erase(MapFile::kServed);
    const Status st = Placement::Load(s).status();
    EXPECT_EQ(st.code(), StatusCode::kCorruption);
    EXPECT_NE(st.message().find("none of map.pb, map-next.pb"), std::string::npos) << st.message();
  }
  {
    MemoryPlacementState s;
    Serve(&s, map);
    s.maps[MapFile::kServed] = "garbage";
    EXPECT_EQ(Placement::Load(s).status().code(), StatusCode::kCorruption);
  }
  {
    MemoryPlacementState s;  // map.pb is another map than the parameters name
    Serve(&s, map);
    s.maps[MapFile::kServed] = Bytes(next);
    EXPECT_EQ(Placement::Load(s).status().code(), StatusCode::kCorruption);
  }
  {
    MemoryPlacementState s;
    Serve(&s, map);
    s.rows["move"] = "\xff\xff not a journal";
    EXPECT_EQ(Placement::Load(s).status().code(), StatusCode::kCorruption);
  }
  {
    MemoryPlacementState s;
    Serve(&s, map);
    pb::MoveJournal j = JournalFor(map, next);
    j.set_state(pb::MoveJournal::UNKNOWN);
    s.rows["move"] = j.SerializeAsString();
    s.maps[MapFile::kPrev] = Bytes(map);
    s.maps[MapFile::kNext] = Bytes(next);
    EXPECT_EQ(Placement::Load(s).status().code(), StatusCode::kCorruption);
  }
  {
    MemoryPlacementState s;  // the journal's new map is missing
    Serve(&s, map);
    s.rows["move"] = JournalFor(map, next).SerializeAsString();
    const Status st = Placement::Load(s).status();
    EXPECT_EQ(st.code(), StatusCode::kCorruption);
    EXPECT_NE(st.message().find("move journal's new map"), std::string::npos) << st.message();
  }
  {
    MemoryPlacementState s;  // a new map that does not refine the old one
    Serve(&s, map);
    auto other = partitioner::BuildPartitionMap(
        Sample(5000, Seed() + 7),
        {.dims = 3, .shards = 4, .threshold = 0.9, .routing = pb::PartitionMap::EXACT_L1, .cells_per_shard = 4});
    ASSERT_TRUE(other.ok());
    ASSERT_TRUE(Placement::BeginMove(&s, map, *other, JournalFor(map, *other), false).ok());
    const Status st = Placement::Load(s).status();
    EXPECT_EQ(st.code(), StatusCode::kCorruption) << st.ToString();
  }
  {
    // A flip that cannot be written leaves the placement unflipped; no move: nothing to flip.
    MemoryPlacementState s;
    Serve(&s, map);
    ASSERT_TRUE(Placement::BeginMove(&s, map, next, JournalFor(map, next), false).ok());
    auto p = Placement::Load(s);
    ASSERT_TRUE(p.ok());
    s.fail_writes = true;
    EXPECT_EQ((*p)->Flip(&s).code(), StatusCode::kIoError);
    EXPECT_FALSE((*p)->flipped());
    Placement one(map);
    EXPECT_EQ(one.Flip(&s).code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(Placement::BeginMove(&s, map, next, JournalFor(map, next), false).code(), StatusCode::kIoError);
  }
}

TEST(ShardServers, RoundTripAndAMovesUnion) {
  MemoryPlacementState s;
  auto none = ReadShardServers(s);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  const ShardServers plain{{}, {"a:1", "b:2"}};
  ASSERT_TRUE(WriteShardServers(&s, plain).ok());
  EXPECT_EQ(s.rows.at("tier2_servers"), "after=a:1,b:2");
  auto got = ReadShardServers(s);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ(**got, plain);
  const ShardServers moving{{"a:1", "b:2", "c:3"}, {"a:1", "b:2"}};
  ASSERT_TRUE(WriteShardServers(&s, moving).ok());
  EXPECT_EQ(s.rows.at("tier2_servers"), "before=a:1,b:2,c:3\nafter=a:1,b:2");
  got = ReadShardServers(s);
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ(**got, moving);
  s.rows["tier2_servers"] = "after=a:1\nsomething else";
  EXPECT_EQ(ReadShardServers(s).status().code(), StatusCode::kCorruption);

  // Draining a server: 3 shards on a, b, c become 2 on a, b; shard 2 stays on c until the end.
  std::vector<std::string> servers;
  std::vector<uint32_t> placement;
  MoveServerPlacement({"a", "b", "c"}, 3, {"a", "b"}, 2, &servers, &placement);
  EXPECT_EQ(servers, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(placement, (std::vector<uint32_t>{0, 1, 2}));
  // Adding one: 4 shards on a, b (two each) become 6 on a, b, c.
  MoveServerPlacement({"a", "b"}, 4, {"a", "b", "c"}, 6, &servers, &placement);
  EXPECT_EQ(servers, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(placement, (std::vector<uint32_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(JoinServers(servers), "a,b,c");
}

// The store's state: map files in its directory, rows in its group store.
TEST(StorePlacementState, KeepsTheMapsInTheStoresFilesAndTheRowsInItsGroupStore) {
  test::TempDir dir;
  const StoreLayout layout{dir.str()};
  tier1::GroupStore::Options go;
  go.path = layout.tier1();
  auto groups = tier1::GroupStore::Open(go);
  ASSERT_TRUE(groups.ok()) << groups.status().ToString();
  StorePlacementState s(layout, groups->get());
  const partitioner::PartitionMap before = Build(4);
  const partitioner::PartitionMap after = Moved(before, {1}, 4);
  ASSERT_TRUE(s.WriteMap(MapFile::kServed, Bytes(before), false).ok());
  const PlacementState::RowWrite params{"params", ParamsFor(before).SerializeAsString()};
  ASSERT_TRUE(s.WriteRows(std::span(&params, 1)).ok());
  ASSERT_TRUE(Placement::BeginMove(&s, before, after, JournalFor(before, after), false).ok());
  EXPECT_TRUE(std::filesystem::exists(dir.File("map-prev.pb")));
  EXPECT_TRUE(std::filesystem::exists(dir.File("map-next.pb")));
  EXPECT_TRUE(ReadMoveJournal(**groups).ok());
  auto p = Placement::Load(s);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE((*p)->moving());
  ASSERT_TRUE((*p)->Flip(&s).ok());
  bool renamed = false;
  ASSERT_TRUE((*p)->Rename(&s, &renamed).ok());
  EXPECT_TRUE(renamed);
  EXPECT_FALSE(std::filesystem::exists(dir.File("map-next.pb")));
  auto on_disk = partitioner::PartitionMap::Load(dir.File("map.pb"));
  ASSERT_TRUE(on_disk.ok());
  EXPECT_EQ(MapDigest(*on_disk), MapDigest(after));
  ASSERT_TRUE((*p)->End(&s).ok());
  EXPECT_FALSE(std::filesystem::exists(dir.File("map-prev.pb")));
  EXPECT_EQ(ReadMoveJournal(**groups).status().code(), StatusCode::kNotFound);
  auto params_read = ReadStoreParams(**groups);
  ASSERT_TRUE(params_read.ok());
  EXPECT_EQ(params_read->map_digest(), MapDigest(after));
  // Read only: no write.
  const tier1::GroupStore& read_only = **groups;
  StorePlacementState reader(layout, &read_only);
  EXPECT_EQ(reader.WriteRows(std::span(&params, 1)).code(), StatusCode::kFailedPrecondition);
  auto loaded = Placement::Load(reader);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(MapDigest((*loaded)->served()), MapDigest(after));
}

}  // namespace
}  // namespace neardup::pipeline
