// The pipeline through its seam: a ShardSet supplied by PipelineOptions::open_shards takes every
// Tier 2 step, gives the groups the local shards give, and a failure of it stops the run so that a
// restart finishes it with the same groups.
#include "pipeline/pipeline.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "pipeline/pipeline_test_util.h"
#include "pipeline/shard_set.h"

namespace neardup::pipeline {
namespace {

using test_util::ReadFile;
using test_util::SampleRun;

// Counts the calls it passes on to a local set, and fails Publish of batch `fail_batch` once.
class ObservedShardSet : public ShardSet {
 public:
  struct Counts {
    std::atomic<uint64_t> compare{0}, stage{0}, publish{0}, apply{0}, commit{0}, get{0};
  };
  ObservedShardSet(std::unique_ptr<ShardSet> inner, Counts* counts, uint64_t fail_batch)
      : inner_(std::move(inner)), counts_(counts), fail_batch_(fail_batch) {}
  uint32_t size() const override { return inner_->size(); }
  Status Compare(uint32_t shard, std::span<const tier2::ShardPage> pages, double threshold,
                 tier2::CompareResult* out) const override {
    ++counts_->compare;
    return inner_->Compare(shard, pages, threshold, out);
  }
  Status Stage(uint32_t shard, std::span<const tier2::ShardPage> pages) override {
    ++counts_->stage;
    return inner_->Stage(shard, pages);
  }
  void Drop(uint32_t shard) override { inner_->Drop(shard); }
  Status Publish(uint32_t shard, std::span<const std::string> removed, uint64_t batch) override {
    ++counts_->publish;
    if (batch == fail_batch_) return IoError("shard " + std::to_string(shard) + " is unreachable");
    return inner_->Publish(shard, removed, batch);
  }
  Status Apply(uint32_t shard, std::span<const std::string> removed, uint64_t batch) override {
    ++counts_->apply;
    return inner_->Apply(shard, removed, batch);
  }
  Status Commit(uint32_t shard) override {
    ++counts_->commit;
    return inner_->Commit(shard);
  }
  StatusOr<uint64_t> CommittedBatch(uint32_t shard) const override { return inner_->CommittedBatch(shard); }
  StatusOr<pb::PageSignature> Get(uint32_t shard, const std::string& url) const override {
    ++counts_->get;
    return inner_->Get(shard, url);
  }
  tier2::ShardStats Stats(uint32_t shard) const override { return inner_->Stats(shard); }

 private:
  std::unique_ptr<ShardSet> inner_;
  Counts* counts_;
  uint64_t fail_batch_;
};

TEST(PipelineSeam, SuppliedShardSetTakesEveryTier2StepAndGivesTheSameGroups) {
  test::TempDir dir;
  auto local = RunPipeline(SampleRun(dir, "local"));
  ASSERT_TRUE(local.ok()) << local.status().ToString();

  ObservedShardSet::Counts counts;
  PipelineOptions o = SampleRun(dir, "seam");
  o.open_shards = [&](const ShardSetOptions& so) -> StatusOr<std::unique_ptr<ShardSet>> {
    EXPECT_EQ(so.shards, 3u);
    ASSIGN_OR_RETURN(std::unique_ptr<ShardSet> inner, OpenLocalShardSet(so));
    return std::unique_ptr<ShardSet>(new ObservedShardSet(std::move(inner), &counts, /*fail_batch=*/0));
  };
  auto seam = RunPipeline(o);
  ASSERT_TRUE(seam.ok()) << seam.status().ToString();
  EXPECT_EQ(ReadFile(o.groups_out), ReadFile(SampleRun(dir, "local").groups_out));
  EXPECT_GT(local->groups, 0u);
  EXPECT_EQ(seam->groups, local->groups);
  EXPECT_EQ(seam->batches, 10u);
  // Every batch compared, staged, published and committed through the set, on every shard.
  EXPECT_GT(counts.compare.load(), 0u);
  EXPECT_EQ(counts.stage.load(), 10u * 3);
  EXPECT_EQ(counts.publish.load(), 10u * 3);
  EXPECT_EQ(counts.commit.load(), 10u * 3);
  EXPECT_GT(counts.get.load(), 0u);  // Tier 1's signatures come from the set too
}

TEST(PipelineSeam, ShardSetOfTheWrongSizeIsRefused) {
  test::TempDir dir;
  PipelineOptions o = SampleRun(dir, "wrong");
  o.open_shards = [](const ShardSetOptions& so) -> StatusOr<std::unique_ptr<ShardSet>> {
    ShardSetOptions fewer = so;
    fewer.shards = so.shards - 1;
    return OpenLocalShardSet(fewer);
  };
  auto r = RunPipeline(o);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("has 2 shards, the map 3"), std::string::npos) << r.status().ToString();
}

// A shard set that fails in the middle of the run stops it with its error; run again, the store
// finishes the input and holds what a run that never stopped holds.
TEST(PipelineSeam, ShardSetFailureStopsTheRunAndARestartFinishesIt) {
  test::TempDir dir;
  auto clean = RunPipeline(SampleRun(dir, "clean"));
  ASSERT_TRUE(clean.ok()) << clean.status().ToString();

  ObservedShardSet::Counts counts;
  PipelineOptions o = SampleRun(dir, "failing");
  o.open_shards = [&](const ShardSetOptions& so) -> StatusOr<std::unique_ptr<ShardSet>> {
    ASSIGN_OR_RETURN(std::unique_ptr<ShardSet> inner, OpenLocalShardSet(so));
    return std::unique_ptr<ShardSet>(new ObservedShardSet(std::move(inner), &counts, /*fail_batch=*/4));
  };
  auto failed = RunPipeline(o);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kIoError);
  EXPECT_NE(failed.status().message().find("unreachable"), std::string::npos) << failed.status().ToString();

  o.open_shards = nullptr;
  auto resumed = RunPipeline(o);
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  EXPECT_TRUE(resumed->input_complete);
  EXPECT_GT(resumed->skipped_records, 0u);
  EXPECT_EQ(ReadFile(o.groups_out), ReadFile(SampleRun(dir, "clean").groups_out));
  EXPECT_EQ(resumed->groups, clean->groups);
}

}  // namespace
}  // namespace neardup::pipeline
