// Step 5 of the batch loop (pipeline/shard_writes.h) over a shard set that records what it is
// asked: where a batch's pages are staged and removed, what Tier 1 reads while the shards write
// in the background, the commit held back until Tier 1's is durable, and a failed publish.
#include "pipeline/shard_writes.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "partitioner/map_builder.h"

namespace neardup::pipeline::internal {
namespace {

using tier1::Classification;

std::string Url(const std::string& prefix, uint32_t cell) {
  std::string url = prefix;
  url += std::to_string(cell);
  return url;
}

// Pages staged, published and committed per shard, by URL (a staged page without shingles is
// removed, as tier2::Shard does); Publish of batch fail_batch fails.
class RecordingShardSet : public ShardSet {
 public:
  explicit RecordingShardSet(uint32_t shards) : shard_(shards) {}
  uint32_t size() const override { return static_cast<uint32_t>(shard_.size()); }
  Status Compare(uint32_t, std::span<const tier2::ShardPage>, double, const tier2::CompareOptions&,
                 tier2::CompareResult*) const override {
    return FailedPrecondition("not compared here");
  }
  Status Stage(uint32_t shard, std::span<const tier2::ShardPage> pages) override {
    std::lock_guard lock(mu_);
    for (const auto& p : pages) shard_[shard].staged[p.signature->url()] = *p.signature;
    return Status::Ok();
  }
  void Drop(uint32_t shard) override {
    std::lock_guard lock(mu_);
    shard_[shard].staged.clear();
  }
  Status Publish(uint32_t shard, std::span<const std::string> removed, uint64_t batch) override {
    if (batch == fail_batch) return IoError("shard " + std::to_string(shard) + " is unreachable");
    std::lock_guard lock(mu_);
    State& s = shard_[shard];
    for (const auto& url : removed) s.pages.erase(url);
    for (auto& [url, sig] : s.staged) {
      if (sig.shingles_size() == 0) s.pages.erase(url);  // an empty page: removed
      else s.pages[url] = sig;
    }
    s.staged.clear();
    s.published = batch;
    return Status::Ok();
  }
  Status Apply(uint32_t shard, std::span<const std::string> removed, uint64_t batch) override {
    RETURN_IF_ERROR(Publish(shard, removed, batch));
    return Commit(shard);
  }
  Status Commit(uint32_t shard) override {
    std::lock_guard lock(mu_);
    shard_[shard].committed = shard_[shard].published;
    return Status::Ok();
  }
  StatusOr<uint64_t> CommittedBatch(uint32_t shard) const override {
    std::lock_guard lock(mu_);
    return shard_[shard].committed;
  }
  StatusOr<pb::PageSignature> Get(uint32_t shard, const std::string& url) const override {
    std::lock_guard lock(mu_);
    auto it = shard_[shard].pages.find(url);
    if (it == shard_[shard].pages.end()) return NotFound(url);
    return it->second;
  }
  tier2::ShardStats Stats(uint32_t) const override { return {}; }
  std::set<std::string> Urls(uint32_t shard) const {
    std::lock_guard lock(mu_);
    std::set<std::string> out;
    for (const auto& [url, sig] : shard_[shard].pages) out.insert(url);
    return out;
  }

  uint64_t fail_batch = 0;

 private:
  struct State {
    std::map<std::string, pb::PageSignature> staged, pages;
    uint64_t published = 0, committed = 0;
  };
  mutable std::mutex mu_;
  std::vector<State> shard_;
};

partitioner::PartitionMap OneCellPerShard() {
  partitioner::LengthSample s(3);
  for (uint32_t n = 10; n < 400; n += 3) {
    uint32_t v[3] = {n, n / 2, n / 3};
    s.Add(v, v);
  }
  auto map = partitioner::BuildPartitionMap(
      s, {.dims = 3, .shards = 3, .threshold = 0.9, .routing = pb::PartitionMap::EXACT_L1, .cells_per_shard = 1});
  EXPECT_TRUE(map.ok()) << map.status().ToString();
  return std::move(*map);
}

// Batch `number`: a page in each of `cells`, named prefix + its cell.
std::unique_ptr<Batch> BatchOf(uint64_t number, const std::vector<uint32_t>& cells, const std::string& prefix) {
  auto b = std::make_unique<Batch>();
  b->number = number;
  for (uint32_t c : cells) {
    CrawlRecord r;
    r.url = Url(prefix, c);
    b->records.push_back(r);
    b->cell.push_back(c);
    pb::PageSignature sig;
    sig.set_url(r.url);
    sig.add_shingles(c + 1);
    b->signatures.push_back(sig);
  }
  return b;
}

class ShardWritesTest : public ::testing::Test {
 protected:
  ShardWritesTest() : placement_(OneCellPerShard()), shards_(placement_.map().shards()), source_(placement_, shards_) {}
  // Tier 1's commit: durable once `durable_` is set.
  Status AwaitTier1() {
    ++awaited_;
    while (!durable_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return Status::Ok();
  }
  std::vector<uint32_t> Cells() const {
    std::vector<uint32_t> cells;
    for (uint32_t c = 0; c < placement_.map().cells(); ++c) cells.push_back(c);
    return cells;
  }
  Placement placement_;
  RecordingShardSet shards_;
  ShardSignatures source_;
  std::atomic<bool> durable_{true};
  std::atomic<int> awaited_{0};
};

TEST_F(ShardWritesTest, APageIsStoredOnItsCellsShardAndAnEmptyOneRemoved) {
  ShardWrites writes(&shards_, &placement_, &source_, [this] { return AwaitTier1(); });
  auto first = BatchOf(1, Cells(), "p");
  const std::vector<Classification> stored(first->records.size(), Classification::kTier2);
  auto pages = writes.HomePages(*first, stored);
  ASSERT_EQ(pages.size(), shards_.size());
  writes.StartStage(pages);
  ASSERT_TRUE(writes.WaitStaged().ok());
  writes.Start(std::move(first), stored, {});
  ASSERT_TRUE(writes.Finish().ok());
  for (uint32_t c = 0; c < placement_.map().cells(); ++c) {
    EXPECT_TRUE(shards_.Urls(placement_.ShardOf(c)).count(Url("p", c))) << "cell " << c;
    EXPECT_EQ(*shards_.CommittedBatch(placement_.ShardOf(c)), 1u);
  }
  // Batch 2: cell 0's page became empty (removed where it lives), the others unchanged (not
  // stored); Tier 1 owes the shards cell 1's page's removal.
  auto second = BatchOf(2, Cells(), "p");
  second->signatures[0].clear_shingles();
  std::vector<Classification> classes(second->records.size(), Classification::kUnchanged);
  classes[0] = Classification::kEmpty;
  pages = writes.HomePages(*second, classes);
  size_t staged = 0;
  for (const auto& p : pages) staged += p.size();
  EXPECT_EQ(staged, 1u);  // only the empty page, whose shard drops it
  google::protobuf::RepeatedPtrField<pb::Tier2Removal> removals;
  pb::Tier2Removal* rm = removals.Add();
  rm->set_url("p1");
  rm->set_cell(1);
  ASSERT_TRUE(writes.Stage(pages, {}).ok());
  ASSERT_TRUE(writes.Apply(2, removals).ok());
  EXPECT_FALSE(shards_.Urls(placement_.ShardOf(0)).count("p0"));
  EXPECT_FALSE(shards_.Urls(placement_.ShardOf(1)).count("p1"));
  EXPECT_TRUE(shards_.Urls(placement_.ShardOf(2)).count("p2"));
  EXPECT_EQ(*shards_.CommittedBatch(placement_.ShardOf(2)), 2u);
  EXPECT_GT(writes.times().apply_seconds, 0);
}

TEST_F(ShardWritesTest, TierOneReadsTheBatchBeingWrittenAndTheShardsCommitOnlyOnceTierOnesCommitIsDurable) {
  ShardWrites writes(&shards_, &placement_, &source_, [this] { return AwaitTier1(); });
  auto b = BatchOf(1, Cells(), "q");
  const std::vector<Classification> classes(b->records.size(), Classification::kTier2);
  writes.StartStage(writes.HomePages(*b, classes));
  ASSERT_TRUE(writes.WaitStaged().ok());
  durable_ = false;
  google::protobuf::RepeatedPtrField<pb::Tier2Removal> removals;
  pb::Tier2Removal* rm = removals.Add();
  rm->set_url("gone");
  rm->set_cell(1);
  writes.Start(std::move(b), classes, removals);
  // Before the shards have it, Tier 1 reads the batch's own signatures, and a removal as none.
  auto sig = source_.Fetch("q2", 2);
  ASSERT_TRUE(sig.ok()) << sig.status().ToString();
  EXPECT_EQ(sig->url(), "q2");
  EXPECT_EQ(source_.Fetch("gone", 1).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(writes.writing().number, 1u);
  ASSERT_TRUE(writes.AwaitPublished().ok());
  // Published: the shards answer; not committed while Tier 1's commit is not durable.
  EXPECT_TRUE(shards_.Get(placement_.ShardOf(2), "q2").ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(*shards_.CommittedBatch(placement_.ShardOf(2)), 0u);
  durable_ = true;
  ASSERT_TRUE(writes.Finish().ok());
  EXPECT_EQ(*shards_.CommittedBatch(placement_.ShardOf(2)), 1u);
  EXPECT_EQ(awaited_, 1);
  writes.DropRetired();  // the written batch was retired; freeing it here is safe
  EXPECT_TRUE(writes.Finish().ok());  // nothing running
}

TEST_F(ShardWritesTest, AFailedPublishIsReportedAndNothingIsCommitted) {
  ShardWrites writes(&shards_, &placement_, &source_, [this] { return AwaitTier1(); });
  shards_.fail_batch = 1;
  auto b = BatchOf(1, Cells(), "f");
  const std::vector<Classification> classes(b->records.size(), Classification::kTier2);
  writes.StartStage(writes.HomePages(*b, classes));
  ASSERT_TRUE(writes.WaitStaged().ok());
  writes.Start(std::move(b), classes, {});
  EXPECT_EQ(writes.AwaitPublished().code(), StatusCode::kIoError);
  EXPECT_EQ(writes.Finish().code(), StatusCode::kIoError);
  EXPECT_EQ(awaited_, 0);
  for (uint32_t m = 0; m < shards_.size(); ++m) EXPECT_EQ(*shards_.CommittedBatch(m), 0u);
}

}  // namespace
}  // namespace neardup::pipeline::internal
