// Rebalancing a store: a move leaves every page on the shard the new map gives its cell (check
// clean, the same groups after a later run); a move stopped after any of its steps is finished
// by the next rebalance with the same shard contents as an uninterrupted one; a batch compared
// while a move is half done, routed on the map the move serves, finds every exact pair; and a
// run that decides batches while it moves pages decides them as a run without a move.
#include "pipeline/rebalance_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <simdjson.h>

#include "common/json_write.h"
#include "document/crawl_signer.h"
#include "document/shingle.h"
#include "pipeline/pipeline_test_util.h"

namespace neardup::pipeline {
namespace {

namespace fs = std::filesystem;
using test_util::ReadFile;
using test_util::SampleRun;

StoreRebalanceOptions Options(const std::string& dir, uint32_t shards) {
  StoreRebalanceOptions o;
  o.dir = dir;
  o.config = DefaultConfig();
  o.config.mutable_tier2()->set_sync(false);
  o.config.mutable_tier1()->set_sync(false);
  o.shards = shards;
  o.max_move = 0.5;
  return o;
}

// Every shard's resident URLs, read through Tier 1's pages and each shard's Get.
std::map<uint32_t, std::set<std::string>> ShardContents(const std::string& dir) {
  StoreLayout layout{dir};
  pb::NeardupConfig config = DefaultConfig();
  double threshold = 0.9;
  SignerOptions signer;
  auto opened = OpenStoreReadOnly(layout, {}, &config, &threshold, &signer);
  EXPECT_TRUE(opened.ok()) << opened.status().ToString();
  std::vector<std::string> urls;
  EXPECT_TRUE(opened->groups->rows()
                  .ScanFamily(opened->groups->page_family(),
                              [&](std::string_view url, std::string_view, std::string_view) {
                                urls.emplace_back(url);
                                return true;
                              })
                  .ok());
  ShardSetOptions so;
  so.layout = layout;
  so.config = config;
  so.shards = opened->placement->served().shards();
  so.read_only = true;
  auto shards = OpenLocalShardSet(so);
  EXPECT_TRUE(shards.ok());
  std::map<uint32_t, std::set<std::string>> out;
  for (uint32_t m = 0; m < so.shards; ++m) {
    for (const std::string& u : urls) {
      if ((*shards)->Get(m, u).ok()) out[m].insert(u);
    }
    EXPECT_EQ((*shards)->Stats(m).resident_pages, out[m].size()) << "shard " << m;
  }
  return out;
}

// A store opened read-only (the default configuration, `threshold`) with the move its journal
// records: the journal and both maps. Fails the test when there is none.
struct OpenedMove {
  pb::NeardupConfig config = DefaultConfig();
  OpenedStore store;
  pb::MoveJournal journal;
  std::optional<partitioner::PartitionMap> before, after;
};
void OpenMove(const std::string& dir, double threshold, OpenedMove* out) {
  StoreLayout layout{dir};
  SignerOptions signer;
  auto opened = OpenStoreReadOnly(layout, {}, &out->config, &threshold, &signer);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  out->store = std::move(*opened);
  auto journal = ReadMoveJournal(*out->store.groups);
  ASSERT_TRUE(journal.ok()) << journal.status().ToString();
  out->journal = *journal;
  auto maps = LoadMoveMaps(StorePlacementState(layout, out->store.groups.get()), out->journal);
  ASSERT_TRUE(maps.ok()) << maps.status().ToString();
  out->before = std::move(maps->first);
  out->after = std::move(maps->second);
}

// Deletes the group store's meta row `row` (as if the store had never written it).
void DeleteMetaRow(const std::string& dir, const char* row) {
  tier1::GroupStore::Options go;
  go.path = StoreLayout{dir}.tier1();
  auto gs = tier1::GroupStore::Open(go);
  ASSERT_TRUE(gs.ok());
  RowBatch b;
  b.Delete((*gs)->meta_family(), row, "");
  ASSERT_TRUE((*gs)->rows().Write(b).ok());
}

class RebalanceStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir();
    PipelineOptions o = SampleRun(*dir_, "base");
    ASSERT_TRUE(RunPipeline(o).ok());
    base_ = o.store;
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string CopyOfBase(const std::string& name) {
    const std::string to = dir_->File(name);
    fs::remove_all(to);
    fs::copy(base_, to, fs::copy_options::recursive);
    return to;
  }
  // For each step in `stops`: a copy of the base store whose move (to `shards`, within
  // `max_move`) is stopped after that step, then finished by a plain rebalance, ends with the
  // shard contents `expected` and a clean check.
  static void ExpectStoppedMovesFinish(const std::string& name, uint32_t shards, double max_move,
                                       const std::set<uint64_t>& stops,
                                       const std::map<uint32_t, std::set<std::string>>& expected) {
    for (uint64_t stop : stops) {
      SCOPED_TRACE("stopped after step " + std::to_string(stop));
      const std::string dir = CopyOfBase(name + std::to_string(stop));
      uint64_t calls = 0;
      StoreRebalanceOptions s = Options(dir, shards);
      s.max_move = max_move;
      s.on_step = [&](uint64_t) { return ++calls < stop; };
      EXPECT_FALSE(RebalanceStore(s).ok());
      // The next rebalance finishes the move it finds, whatever its own plan would be.
      auto resumed = RebalanceStore(Options(dir, 0));
      ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
      EXPECT_TRUE(resumed->resumed);
      EXPECT_EQ(ShardContents(dir), expected);
      auto p = CheckPlacement(StoreLayout{dir}, DefaultConfig());
      ASSERT_TRUE(p.ok());
      EXPECT_EQ(p->violation_count, 0u) << (p->violations.empty() ? "" : p->violations[0]);
    }
  }
  static test::TempDir* dir_;
  static std::string base_;
};
test::TempDir* RebalanceStoreTest::dir_ = nullptr;
std::string RebalanceStoreTest::base_;

TEST_F(RebalanceStoreTest, AddingAShardMovesWholeCellsAndCheckIsClean) {
  const std::string dir = CopyOfBase("grow");
  auto r = RebalanceStore(Options(dir, 4));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->applied);
  EXPECT_EQ(r->generation_after, r->generation_before + 1);
  EXPECT_EQ(r->shards_after, 4u);
  EXPECT_GT(r->pages_moved, 0u);
  EXPECT_EQ(r->pages_moved, r->planned_pages);
  EXPECT_GT(r->bytes_moved, 0u);
  EXPECT_EQ(r->shard_pages_after.size(), 4u);
  EXPECT_GT(r->shard_pages_after[3], 0u);  // the new shard took cells
  EXPECT_LT(r->imbalance_after, r->imbalance_before);
  auto p = CheckPlacement(StoreLayout{dir}, DefaultConfig());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->violation_count, 0u) << (p->violations.empty() ? "" : p->violations[0]);
  EXPECT_EQ(p->map_generation, r->generation_after);
  EXPECT_EQ(p->shard_pages, r->shard_pages_after);
  EXPECT_FALSE(fs::exists(dir + "/map-next.pb"));
  EXPECT_FALSE(fs::exists(dir + "/map-prev.pb"));

  // Draining it again: back to 3 shards, the fourth's directory gone.
  auto d = RebalanceStore(Options(dir, 3));
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->shard_pages_after.size(), 3u);
  EXPECT_FALSE(fs::exists(StoreLayout{dir}.shard(3)));
  p = CheckPlacement(StoreLayout{dir}, DefaultConfig());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->violation_count, 0u) << (p->violations.empty() ? "" : p->violations[0]);
}

// The sample crawl on 4 shards is skewed (1.23: 238 248 166 154 pages). A fifth shard with the
// default --max-move (0.1) and target: the change takes the budget it needs (a fifth of the pages
// at least), and the store ends balanced, the new shard near the mean, the report saying so.
// Within 10% the new shard got 80 pages and the imbalance rose to 1.28.
TEST_F(RebalanceStoreTest, AddingAShardWithDefaultFlagsReachesTheTarget) {
  PipelineOptions run = SampleRun(*dir_, "four");
  run.config.mutable_pipeline()->set_shards(4);
  ASSERT_TRUE(RunPipeline(run).ok());
  StoreRebalanceOptions o;
  o.dir = run.store;
  o.config = Options(run.store, 5).config;
  o.shards = 5;
  ASSERT_DOUBLE_EQ(o.max_move, 0.1);
  auto r = RebalanceStore(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::string json = RebalanceReportJson(*r);
  std::printf("[ 4 -> 5   ] %s\n", json.c_str());
  EXPECT_GT(r->imbalance_before, 1.15) << "the crawl no longer makes a skewed 4-shard store";
  EXPECT_TRUE(r->applied);
  EXPECT_EQ(r->shards_after, 5u);
  EXPECT_LE(r->imbalance_after, 1.15);
  EXPECT_LT(r->imbalance_after, r->imbalance_before);
  EXPECT_TRUE(r->target_reached) << r->note;
  EXPECT_TRUE(r->note.empty()) << r->note;
  EXPECT_DOUBLE_EQ(r->max_move, 0.1);
  EXPECT_GT(r->move_budget, 0.1);
  EXPECT_NE(json.find("\"move_budget\":"), std::string::npos);
  ASSERT_EQ(r->shard_pages_after.size(), 5u);
  EXPECT_GE(r->shard_pages_after[4] * 5.0, r->resident_pages * 0.8) << "the new shard is far below the mean";
  auto p = CheckPlacement(StoreLayout{run.store}, DefaultConfig());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->violation_count, 0u) << (p->violations.empty() ? "" : p->violations[0]);
  EXPECT_EQ(p->shard_pages, r->shard_pages_after);
  EXPECT_LE(p->imbalance, 1.15);
}

// Grown from 3 to 24 shards, the map's 64 cells cannot balance them whole: cells are split, their
// pages relabelled in Tier 1 and the parts moved; every page ends on the shard the new map gives
// the cell its signature falls in.
TEST_F(RebalanceStoreTest, GrowingFarSplitsCellsAndCheckIsClean) {
  const std::string dir = CopyOfBase("split");
  StoreRebalanceOptions o = Options(dir, 24);
  o.max_move = 1;
  o.dry_run = true;
  o.reslice = false;
  auto whole = RebalanceStore(o);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_EQ(whole->cells_split, 0u);
  EXPECT_FALSE(fs::exists(StoreLayout{dir}.shard(3))) << "a dry run creates no shard";
  o.reslice = true;
  auto planned = RebalanceStore(o);
  ASSERT_TRUE(planned.ok()) << planned.status().ToString();
  EXPECT_GT(planned->cells_split, 0u);
  EXPECT_LT(planned->imbalance_after, whole->imbalance_after);
  EXPECT_FALSE(fs::exists(StoreLayout{dir}.shard(3)));
  o.dry_run = false;
  auto r = RebalanceStore(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->cells_split, planned->cells_split);
  EXPECT_GT(r->pages_relabelled, 0u);
  EXPECT_GT(r->pages_moved, 0u);
  EXPECT_EQ(r->shards_after, 24u);
  auto p = CheckPlacement(StoreLayout{dir}, DefaultConfig());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->violation_count, 0u) << (p->violations.empty() ? "" : p->violations[0]);
  EXPECT_LT(p->imbalance, whole->imbalance_after);
  // Tier 1 places every page in the cell its signature falls in under the new map.
  OpenedMove none;
  StoreLayout layout{dir};
  SignerOptions signer;
  double threshold = 0.9;
  auto opened = OpenStoreReadOnly(layout, {}, &none.config, &threshold, &signer);
  ASSERT_TRUE(opened.ok());
  EXPECT_GT(opened->placement->served().cells(), 64u);
  ShardSetOptions so;
  so.layout = layout;
  so.config = none.config;
  so.shards = opened->placement->served().shards();
  so.read_only = true;
  auto shards = OpenLocalShardSet(so);
  ASSERT_TRUE(shards.ok());
  uint64_t checked = 0;
  ASSERT_TRUE(opened->groups->rows()
                  .ScanFamily(opened->groups->page_family(),
                              [&](std::string_view url, std::string_view, std::string_view v) {
                                pb::Tier1Page page;
                                EXPECT_TRUE(page.ParseFromArray(v.data(), static_cast<int>(v.size())));
                                if (!page.has_signature()) return true;
                                auto sig = (*shards)->Get(opened->placement->served().ShardOf(page.home_cell()), std::string(url));
                                EXPECT_TRUE(sig.ok()) << url;
                                if (!sig.ok()) return true;
                                const auto& vec = sig->shingle_vector();
                                EXPECT_EQ(opened->placement->served().Home(std::span<const uint32_t>(vec.data(), vec.size())),
                                          page.home_cell())
                                    << url;
                                ++checked;
                                return true;
                              })
                  .ok());
  EXPECT_EQ(checked, p->pages);
}

// A split move stopped after any of its steps (the relabel's among them) is finished by the next
// rebalance with the shard contents of an uninterrupted one.
TEST_F(RebalanceStoreTest, ASplitMoveStoppedAfterAnyStepIsFinishedWithTheSameShards) {
  const std::string whole = CopyOfBase("splitwhole");
  uint64_t steps = 0;
  StoreRebalanceOptions o = Options(whole, 24);
  o.max_move = 1;
  o.on_step = [&](uint64_t) { return ++steps, true; };
  auto done = RebalanceStore(o);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  ASSERT_GT(done->cells_split, 0u);
  const auto expected = ShardContents(whole);
  ASSERT_GE(steps, 5u);
  ExpectStoppedMovesFinish("splitstop", 24, 1, {1, 2, 3, (steps + 1) / 2, steps - 1}, expected);
}

TEST_F(RebalanceStoreTest, CheckFindsAPageOnTheWrongShard) {
  const std::string dir = CopyOfBase("wrong");
  // Stop a move after its first copy: the destination holds pages its cells do not give it yet.
  StoreRebalanceOptions o = Options(dir, 4);
  o.on_step = [](uint64_t step) { return step < 1; };
  ASSERT_FALSE(RebalanceStore(o).ok());
  auto p = CheckPlacement(StoreLayout{dir}, DefaultConfig());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->violation_count, 1u);  // the unfinished move
  // Drop the journal as if the move had never been: the copied pages are then held twice.
  ASSERT_NO_FATAL_FAILURE(DeleteMetaRow(dir, "move"));
  p = CheckPlacement(StoreLayout{dir}, DefaultConfig());
  ASSERT_TRUE(p.ok());
  EXPECT_GE(p->violation_count, 1u);
}

// A first run killed after writing the map and the parameters, before its shards were made: the
// check says so and finds nothing wrong (no batch, no page placed). Past a committed batch, a
// shard without its store is lost data: a violation.
TEST_F(RebalanceStoreTest, ShardsNotYetMadeAreFineOnlyBeforeTheFirstBatch) {
  const std::string dir = CopyOfBase("unmade");
  for (uint32_t m = 0; fs::exists(StoreLayout{dir}.shard(m)); ++m) {
    fs::remove_all(StoreLayout{dir}.shard(m));
    fs::create_directories(StoreLayout{dir}.shard(m));  // made, as the run's start makes them, but empty
  }
  auto p = CheckPlacement(StoreLayout{dir}, DefaultConfig());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->violation_count, 1u);
  EXPECT_THAT(p->violations[0], ::testing::HasSubstr("batches committed, but"));
  // The progress row goes: as before the first batch's commit.
  ASSERT_NO_FATAL_FAILURE(DeleteMetaRow(dir, "progress"));
  p = CheckPlacement(StoreLayout{dir}, DefaultConfig());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->violation_count, 0u) << (p->violations.empty() ? "" : p->violations[0]);
  ASSERT_EQ(p->notes.size(), 1u);
  EXPECT_THAT(p->notes[0], ::testing::HasSubstr("no batch committed yet"));
  EXPECT_EQ(p->pages, 0u);
}

TEST_F(RebalanceStoreTest, AMoveStoppedAfterAnyStepIsFinishedWithTheSameShards) {
  const std::string whole = CopyOfBase("whole");
  uint64_t steps = 0;
  StoreRebalanceOptions o = Options(whole, 4);
  o.on_step = [&](uint64_t) { return ++steps, true; };
  ASSERT_TRUE(RebalanceStore(o).ok());
  const auto expected = ShardContents(whole);
  ASSERT_GE(steps, 5u);
  // After the journal, the first copy, the middle step, and the last two (drops); every step is
  // killed for real, at random, by tests/rebalance_crash_test.cc.
  ExpectStoppedMovesFinish("stop", 4, o.max_move, {1, 2, (steps + 1) / 2, steps - 1, steps}, expected);
}

TEST_F(RebalanceStoreTest, ARunFinishesAnInterruptedMoveFirst) {
  const std::string dir = CopyOfBase("runfinishes");
  StoreRebalanceOptions s = Options(dir, 4);
  s.on_step = [](uint64_t step) { return step < 2; };
  ASSERT_FALSE(RebalanceStore(s).ok());
  PipelineOptions o = SampleRun(*dir_, "runfinishes");
  o.store = dir;
  o.config.mutable_pipeline()->clear_shards();
  auto sum = RunPipeline(o);
  ASSERT_TRUE(sum.ok()) << sum.status().ToString();
  EXPECT_TRUE(sum->finished_move);
  EXPECT_EQ(sum->shards, 4u);
  auto p = CheckPlacement(StoreLayout{dir}, DefaultConfig());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->violation_count, 0u) << (p->violations.empty() ? "" : p->violations[0]);
}

// The sample crawl's first and second halves, as two inputs.
std::pair<std::string, std::string> Halves(const test::TempDir& dir) {
  const std::string all = test_util::ReadFile(SampleRun(dir, "x").input);
  size_t cut = 0;
  for (int lines = 0; lines < 500; ++lines) cut = all.find('\n', cut) + 1;
  const std::string a = dir.File("half-1.jsonl"), b = dir.File("half-2.jsonl");
  test::WriteFile(a, all.substr(0, cut));
  test::WriteFile(b, all.substr(cut));
  return {a, b};
}

PipelineOptions HalfRun(const test::TempDir& dir, const std::string& name, const std::string& input) {
  PipelineOptions o = SampleRun(dir, name);
  o.input = input;
  o.batch_pages = 25;
  return o;
}

// A rebalance whose move a run makes between its batches (defer_move): the run decides the second
// half of the crawl while the first half's pages move from 3 to 4 shards, the move spanning
// batches: its copy's rate capped, or one step a batch. Its groups and statuses are those of a
// run without a rebalance (a page missed, or met in a stale version on the shard it left, would
// change them), and every page ends on the shard the new map gives it.
TEST_F(RebalanceStoreTest, ARunDecidesBatchesWhileItMovesPagesAndMissesNothing) {
  const auto [first, second] = Halves(*dir_);
  auto two_halves = [&](const std::string& name, const std::function<void(const std::string&)>& between,
                        double mb_per_s, double batch_share) {
    PipelineOptions a = HalfRun(*dir_, name, first);
    EXPECT_TRUE(RunPipeline(a).ok());
    between(a.store);
    PipelineOptions b = HalfRun(*dir_, name, second);
    b.config.mutable_pipeline()->clear_shards();
    b.config.mutable_pipeline()->set_move_max_mb_per_s(mb_per_s);
    if (batch_share < 1) b.config.mutable_pipeline()->set_move_min_batch_share(batch_share);
    else b.move_steps_per_batch = 1;
    auto sum = RunPipeline(b);
    EXPECT_TRUE(sum.ok()) << sum.status().ToString();
    return std::make_pair(b, sum.ok() ? *sum : PipelineSummary{});
  };
  const auto [plain, plain_sum] = two_halves("plain", [](const std::string&) {}, 0, 0.5);
  EXPECT_FALSE(plain_sum.finished_move);
  struct Case {
    double mb_per_s, batch_share;
    uint32_t shards;  // 24: whole cells cannot balance them, cells are split
  };
  for (const auto& [mb_per_s, batch_share, shards] : {Case{0.2, 0.5, 4}, Case{0.0, 1.0, 4}, Case{0.0, 1.0, 24}}) {
    // batches' share 1: one step a batch (PipelineOptions::move_steps_per_batch).
    SCOPED_TRACE(fmt::format("copy at {} MB/s, batches' share {}, {} shards", mb_per_s, batch_share, shards));
    uint64_t pages_planned = 0;
    const std::string name = fmt::format("moved-{}-{}-{}", mb_per_s, batch_share, shards);
    const auto [moved, moved_sum] = two_halves(name, [&](const std::string& store) {
      StoreRebalanceOptions o = Options(store, shards);
      o.max_move = 1;
      o.defer_move = true;
      auto r = RebalanceStore(o);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_TRUE(r->deferred);
      EXPECT_EQ(r->pages_moved, 0u);
      pages_planned = r->planned_pages;
      EXPECT_EQ(r->cells_split > 0, shards == 24);
      // Nothing moved yet: the store still serves the old map.
      auto p = CheckPlacement(StoreLayout{store}, DefaultConfig());
      ASSERT_TRUE(p.ok());
      EXPECT_EQ(p->violation_count, 1u);  // the move not finished
    }, mb_per_s, batch_share);
    ASSERT_GT(pages_planned, 50u);
    EXPECT_TRUE(moved_sum.finished_move);
    EXPECT_EQ(moved_sum.shards, shards);
    // Planned from the first half; the copy takes the pages its cells hold when it starts (the
    // batches before it added some; those after it write both shards themselves).
    EXPECT_GT(moved_sum.move_pages, pages_planned / 2);
    // The move spanned batches: some were decided while it ran.
    EXPECT_GT(moved_sum.records_during_move, 0u);
    EXPECT_GT(moved_sum.move_steps, 5u);
    EXPECT_EQ(ReadFile(moved.groups_out), ReadFile(plain.groups_out));
    // The status lines too, but for the map version each names.
    auto statuses = [](const std::string& path) {
      std::string text = ReadFile(path);
      static constexpr std::string_view kKey = ",\"map_version\":";
      for (size_t at = text.find(kKey); at != std::string::npos; at = text.find(kKey, at)) {
        size_t end = at + kKey.size();
        while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
        text.erase(at, end - at);
      }
      return text;
    };
    EXPECT_EQ(statuses(moved.status_out), statuses(plain.status_out));
    auto p = CheckPlacement(StoreLayout{moved.store}, DefaultConfig());
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->violation_count, 0u) << (p->violations.empty() ? "" : p->violations[0]);
    EXPECT_FALSE(fs::exists(StoreLayout{moved.store}.dir + "/map-prev.pb"));
    // The same pages resident, each once.
    auto resident = [](const std::string& store) {
      std::multiset<std::string> all;
      for (const auto& [m, urls] : ShardContents(store)) all.insert(urls.begin(), urls.end());
      return all;
    };
    EXPECT_EQ(resident(moved.store), resident(plain.store));
  }
}

// A page changed after the flip would keep its old version on the shard it left until the drop
// reaches it, and a batch page routed to that shard for another cell would meet it there (a shard
// compares against all it holds): from the flip on, a batch that stores a page in a moved cell
// removes it from its old shard too. Here, moving one step a batch, page P (in a moved cell, whose
// old shard the new map routes P's old text to) changes in place (its words shuffled: the same
// cell, nothing like before) in the batch after the flip, and a copy of P's old text comes under
// a new URL in the batch after that, before the drop. The run decides them as a run without a
// move does. (Without that removal, the copy met P's old version and joined P's group.)
TEST_F(RebalanceStoreTest, APageChangedAfterTheFlipIsNotMetInItsOldVersion) {
  const auto [first, second] = Halves(*dir_);
  const pb::NeardupConfig config = DefaultConfig();
  SignerOptions signer;
  signer.k = static_cast<int>(config.shingle().k());
  signer.dims = static_cast<int>(config.shingle().dims());
  auto features = [&](const std::string& text) {
    PageFeatures f;
    Signer(signer).Sign(text, &f);
    return f;
  };
  // Two stores of the first half; one gets a deferred move to 4 shards.
  std::string stores[2];
  for (int i = 0; i < 2; ++i) {
    PipelineOptions a = HalfRun(*dir_, i == 0 ? "stale-plain" : "stale-moved", first);
    ASSERT_TRUE(RunPipeline(a).ok());
    stores[i] = a.store;
  }
  StoreRebalanceOptions ro = Options(stores[1], 4);
  ro.defer_move = true;
  ASSERT_TRUE(RebalanceStore(ro).ok());
  std::map<std::string, std::string> texts;  // the first half's, by URL
  {
    std::istringstream lines(ReadFile(first));
    simdjson::dom::parser parser;
    for (std::string line; std::getline(lines, line);) {
      simdjson::dom::element e;
      ASSERT_EQ(parser.parse(line).get(e), simdjson::SUCCESS);
      std::string_view text;
      if (e["text"].get_string().get(text) == simdjson::SUCCESS) texts[std::string(e["url"].get_string().value_unsafe())] = text;
    }
  }
  // The move's maps, and its pages: the copy's steps (25 pages of one destination a step) and the
  // drop's (25 of one source).
  StoreLayout layout{stores[1]};
  std::optional<partitioner::PartitionMap> before, after;
  std::map<uint32_t, uint64_t> to_pages, from_pages;
  std::vector<std::pair<std::string, uint32_t>> moved;  // (URL, cell)
  {
    OpenedMove m;
    ASSERT_NO_FATAL_FAILURE(OpenMove(stores[1], 0.9, &m));
    before = m.before;
    after = m.after;
    ASSERT_TRUE(m.store.groups->rows()
                    .ScanFamily(m.store.groups->page_family(),
                                [&](std::string_view url, std::string_view, std::string_view v) {
                                  pb::Tier1Page page;
                                  page.ParseFromArray(v.data(), static_cast<int>(v.size()));
                                  if (!page.has_signature()) return true;
                                  const uint32_t from = before->ShardOf(page.home_cell());
                                  const uint32_t to = after->ShardOf(page.home_cell());
                                  if (from == to) return true;
                                  ++to_pages[to], ++from_pages[from];
                                  moved.emplace_back(url, page.home_cell());
                                  return true;
                                })
                    .ok());
  }
  uint64_t copy_steps = 0, drop_steps = 0;
  for (const auto& [to, n] : to_pages) copy_steps += (n + 24) / 25;
  for (const auto& [from, n] : from_pages) drop_steps += (n + 24) / 25;
  // P: a moved page whose old text the new map routes to P's old shard too, with a shuffle of its
  // words that stays in its cell and is nothing like it.
  std::string p_url, p_text, changed;
  std::mt19937 rng(7);
  for (const auto& [url, cell] : moved) {
    if (!texts.count(url)) continue;
    const PageFeatures old_f = features(texts[url]);
    if (before->Home(before->VectorOf(old_f)) != cell) continue;
    std::vector<uint32_t> route;
    after->RouteShards(after->VectorOf(old_f), &route);
    if (std::find(route.begin(), route.end(), before->ShardOf(cell)) == route.end()) continue;
    std::vector<std::string> words;
    std::istringstream in(texts[url]);
    for (std::string w; in >> w;) words.push_back(w);
    for (int tries = 0; tries < 200 && changed.empty(); ++tries) {
      std::shuffle(words.begin(), words.end(), rng);
      std::string text;
      for (const std::string& w : words) text += (text.empty() ? "" : " ") + w;
      const PageFeatures f = features(text);
      if (before->Home(before->VectorOf(f)) == cell && Jaccard(f.shingles, old_f.shingles) < 0.5) changed = text;
    }
    if (!changed.empty()) {
      p_url = url;
      p_text = texts[url];
      break;
    }
  }
  ASSERT_FALSE(p_url.empty()) << "no moved page to change in place among " << moved.size();
  // Fillers: pages like nothing else, in cells the move leaves alone (they join no step's list).
  uint64_t filler = 0;
  auto filler_line = [&]() {
    for (;;) {
      std::string text;
      for (int w = 0; w < 80; ++w) text += fmt::format("{}f{}x{} ", w % 7 == 0 ? "the " : "", filler, (filler * 131 + w * 17) % 9973);
      ++filler;
      const uint32_t cell = before->Home(before->VectorOf(features(text)));
      if (before->ShardOf(cell) != after->ShardOf(cell)) continue;
      std::string line = "{\"url\":";
      AppendJsonString(&line, fmt::format("http://aaa-filler.example/{}", filler));
      line += ",\"text\":";
      AppendJsonString(&line, text);
      return line + "}\n";
    }
  };
  auto page_line = [](const std::string& url, const std::string& text) {
    std::string line = "{\"url\":";
    AppendJsonString(&line, url);
    line += ",\"text\":";
    AppendJsonString(&line, text);
    return line + "}\n";
  };
  // Batch j is followed by step j: the copy's steps, then the flip (step copy_steps + 1) and the
  // rest; P changes in the first batch after the flip, its old text comes back in the next one.
  std::string input;
  const uint64_t flip = copy_steps + 1;
  for (uint64_t batch = 1; batch <= flip + drop_steps + 4; ++batch) {
    for (int i = 0; i < 25; ++i) {
      if (i == 0 && batch == flip + 1) input += page_line(p_url, changed);
      else if (i == 0 && batch == flip + 2) input += page_line("http://aaa-copy.example/of-p", p_text);
      else input += filler_line();
    }
  }
  const std::string third = dir_->File("stale-third.jsonl");
  test::WriteFile(third, input);
  std::string groups[2];
  for (int i = 0; i < 2; ++i) {
    PipelineOptions b = HalfRun(*dir_, i == 0 ? "stale-plain" : "stale-moved", third);
    b.config.mutable_pipeline()->clear_shards();
    b.move_steps_per_batch = 1;
    auto sum = RunPipeline(b);
    ASSERT_TRUE(sum.ok()) << sum.status().ToString();
    EXPECT_EQ(sum->finished_move, i == 1);
    groups[i] = ReadFile(b.groups_out);
    if (i == 1) {
      EXPECT_EQ(sum->move_steps, copy_steps + 2 + drop_steps);
    }
  }
  EXPECT_EQ(groups[1], groups[0]);
  auto p = CheckPlacement(layout, DefaultConfig());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->violation_count, 0u) << (p->violations.empty() ? "" : p->violations[0]);
}

// The same run stopped after a step of its move (as a crash would stop it), then run again: the
// second run resumes the input and the move, and ends as the uninterrupted one. One step a batch,
// so that every run takes the same steps (a budget measured in time, or a rate cap, would move
// the copy's list, and so the step count, with the machine's speed).
TEST_F(RebalanceStoreTest, ARunStoppedMidMoveIsResumedWithTheSameResult) {
  const auto [first, second] = Halves(*dir_);
  std::map<uint32_t, std::set<std::string>> expected;
  std::string expected_groups;
  std::vector<uint64_t> stops = {0};
  for (size_t i = 0; i < stops.size(); ++i) {
    const uint64_t stop = stops[i];
    SCOPED_TRACE("stopped after step " + std::to_string(stop));
    const std::string name = "midmove" + std::to_string(stop);
    PipelineOptions a = HalfRun(*dir_, name, first);
    ASSERT_TRUE(RunPipeline(a).ok());
    StoreRebalanceOptions ro = Options(a.store, 4);
    ro.defer_move = true;
    ASSERT_TRUE(RebalanceStore(ro).ok());
    PipelineOptions b = HalfRun(*dir_, name, second);
    b.config.mutable_pipeline()->clear_shards();
    b.move_steps_per_batch = 1;
    if (stop > 0) {
      b.move_on_step = [stop](uint64_t step) { return step < stop; };
      auto stopped = RunPipeline(b);
      ASSERT_FALSE(stopped.ok());
      EXPECT_EQ(stopped.status().code(), StatusCode::kUnavailable) << stopped.status().ToString();
      b.move_on_step = nullptr;
    }
    auto sum = RunPipeline(b);
    ASSERT_TRUE(sum.ok()) << sum.status().ToString();
    EXPECT_TRUE(sum->finished_move);
    auto p = CheckPlacement(StoreLayout{b.store}, DefaultConfig());
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->violation_count, 0u) << (p->violations.empty() ? "" : p->violations[0]);
    if (stop == 0) {
      expected = ShardContents(b.store);
      expected_groups = ReadFile(b.groups_out);
      // Then stopped after the first step, the middle one, and the last two.
      const uint64_t steps = sum->move_steps;
      ASSERT_GE(steps, 5u);
      stops.insert(stops.end(), {1, (steps + 1) / 2, steps - 1, steps});
    } else {
      EXPECT_EQ(ShardContents(b.store), expected);
      EXPECT_EQ(ReadFile(b.groups_out), expected_groups);
    }
  }
}

// A batch of probes (the sample crawl's pages under new URLs, so each has partners) compared
// while a move is stopped after each of its steps: routed on the map the move serves (the old one
// until the flip, the new one from then on) it finds exactly the pairs brute force finds over the
// resident pages.
TEST_F(RebalanceStoreTest, ABatchComparedWhileAMoveIsHalfDoneFindsEveryExactPair) {
  std::vector<pb::PageSignature> probes;
  {
    CrawlSignerOptions so;
    so.signer.k = static_cast<int>(DefaultConfig().shingle().k());
    so.signer.dims = static_cast<int>(DefaultConfig().shingle().dims());
    so.threads = 1;
    ASSERT_TRUE(SignCrawl(SampleRun(*dir_, "probe").input, so, [&](CrawlRecord& r, PageFeatures& f) {
                  if (!r.has_content() || f.shingles.empty() || probes.size() >= 300) return Status::Ok();
                  probes.push_back(ToProto("https://probe.example/" + std::to_string(probes.size()), f, so.signer));
                  return Status::Ok();
                }).ok());
  }
  ASSERT_EQ(probes.size(), 300u);
  const double t = 0.9;
  bool new_map_alone_missed = false;
  int flipped_stops = 0;
  // After every step of the move, until it ends (the copy's steps, the flip, the drop's).
  for (uint64_t stop = 1; stop < 100; ++stop) {
    SCOPED_TRACE("stopped after step " + std::to_string(stop));
    const std::string dir = CopyOfBase("half" + std::to_string(stop));
    StoreRebalanceOptions s = Options(dir, 4);
    uint64_t calls = 0;
    s.on_step = [&](uint64_t) { return ++calls < stop; };
    if (RebalanceStore(s).ok()) break;
    OpenedMove mv;
    ASSERT_NO_FATAL_FAILURE(OpenMove(dir, t, &mv));
    const partitioner::PartitionMap &before = *mv.before, &after = *mv.after;
    ShardSetOptions so;
    so.layout = StoreLayout{dir};
    so.config = mv.config;
    so.config.mutable_tier2()->set_max_matches_per_page(0);  // every pair, as the brute force finds them
    so.shards = std::max(before.shards(), after.shards());  // a new shard's directory may not exist yet
    auto shards = OpenLocalShardSet(so);
    ASSERT_TRUE(shards.ok()) << shards.status().ToString();

    // Brute force over every resident page (read from whichever shard holds it).
    std::vector<pb::PageSignature> resident;
    ASSERT_TRUE(mv.store.groups->rows()
                    .ScanFamily(mv.store.groups->page_family(),
                                [&](std::string_view url, std::string_view, std::string_view v) {
                                  pb::Tier1Page p;
                                  p.ParseFromArray(v.data(), static_cast<int>(v.size()));
                                  if (!p.has_signature()) return true;
                                  auto sig = (*shards)->Get(before.ShardOf(p.home_cell()), std::string(url));
                                  if (!sig.ok()) sig = (*shards)->Get(after.ShardOf(p.home_cell()), std::string(url));
                                  EXPECT_TRUE(sig.ok()) << url << " is on neither shard";
                                  if (sig.ok()) resident.push_back(*sig);
                                  return true;
                                })
                    .ok());
    std::set<std::pair<uint32_t, std::string>> exact;
    for (uint32_t i = 0; i < probes.size(); ++i) {
      for (const auto& r : resident) {
        if (Jaccard(std::span<const uint64_t>(probes[i].shingles().data(), probes[i].shingles().size()), std::span<const uint64_t>(r.shingles().data(), r.shingles().size())) >= t) exact.emplace(i, r.url());
      }
    }
    ASSERT_GT(exact.size(), probes.size());  // every probe has its original, and some a family

    const bool flipped = mv.journal.state() == pb::MoveJournal::DROP;
    flipped_stops += flipped;
    auto found = [&](const partitioner::PartitionMap& map) {
      std::set<std::pair<uint32_t, std::string>> pairs;
      std::map<uint32_t, std::vector<uint32_t>> per_shard;
      std::vector<uint32_t> route;
      for (uint32_t i = 0; i < probes.size(); ++i) {
        std::vector<uint32_t> v(probes[i].shingle_vector().begin(), probes[i].shingle_vector().end());
        map.RouteShards(v, &route);
        for (uint32_t m : route) per_shard[m].push_back(i);
      }
      for (const auto& [m, idx] : per_shard) {
        std::vector<tier2::ShardPage> pages;
        for (uint32_t i : idx) pages.push_back({&probes[i], false, true});
        tier2::CompareResult res;
        EXPECT_TRUE((*shards)->Compare(m, pages, t, {}, &res).ok());
        for (const auto& match : res.resident) pairs.emplace(idx[match.page], match.url);
      }
      return pairs;
    };
    EXPECT_EQ(found(flipped ? after : before), exact);
    if (!flipped && found(after) != exact) new_map_alone_missed = true;
  }
  // The served map matters: before the copies are done, the new map misses pairs.
  EXPECT_TRUE(new_map_alone_missed);
  EXPECT_GE(flipped_stops, 2);
}

}  // namespace
}  // namespace neardup::pipeline
