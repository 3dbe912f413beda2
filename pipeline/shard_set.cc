#include "pipeline/shard_set.h"

#include <algorithm>

#include "pipeline/placement.h"
#include "tier2/local_shards.h"

namespace neardup::pipeline {
namespace {

// The shards of this process (tier2::LocalShards) behind the seam.
class LocalShardSet : public ShardSet {
 public:
  explicit LocalShardSet(std::unique_ptr<tier2::LocalShards> shards) : shards_(std::move(shards)) {}

  uint32_t size() const override { return shards_->size(); }

  Status Compare(uint32_t shard, std::span<const tier2::ShardPage> pages, double threshold,
                 const tier2::CompareOptions& compare, tier2::CompareResult* out) const override {
    return shards_->Compare(shard, pages, threshold, compare, out);
  }
  Status Stage(uint32_t shard, std::span<const tier2::ShardPage> pages) override { return shards_->Stage(shard, pages); }
  void Drop(uint32_t shard) override { shards_->Drop(shard); }
  Status Publish(uint32_t shard, std::span<const std::string> removed, uint64_t batch) override {
    return shards_->Publish(shard, removed, batch);
  }
  Status Apply(uint32_t shard, std::span<const std::string> removed, uint64_t batch) override {
    return shards_->Apply(shard, removed, batch);
  }
  Status Commit(uint32_t shard) override { return shards_->Commit(shard); }
  StatusOr<uint64_t> CommittedBatch(uint32_t shard) const override { return shards_->CommittedBatch(shard); }
  StatusOr<pb::PageSignature> Get(uint32_t shard, const std::string& url) const override {
    return shards_->Get(shard, url);
  }
  Status GetMany(uint32_t shard, std::span<const std::string> urls,
                 std::vector<std::optional<pb::PageSignature>>* out) const override {
    return shards_->GetMany(shard, urls, out);
  }
  void WillNeed(uint32_t shard, std::span<const std::string_view> urls) const override {
    shards_->WillNeed(shard, urls);
  }
  tier2::ShardStats Stats(uint32_t shard) const override { return shards_->Stats(shard); }

 private:
  std::unique_ptr<tier2::LocalShards> shards_;
};

}  // namespace

Status ShardSet::GetMany(uint32_t shard, std::span<const std::string> urls,
                         std::vector<std::optional<pb::PageSignature>>* out) const {
  out->clear();
  out->reserve(urls.size());
  for (const std::string& url : urls) {
    StatusOr<pb::PageSignature> sig = Get(shard, url);
    if (sig.ok()) out->push_back(std::move(*sig));
    else if (sig.status().code() == StatusCode::kNotFound) out->push_back(std::nullopt);
    else return sig.status();
  }
  return Status::Ok();
}

StatusOr<pb::PageSignature> ShardSetSignatures::Fetch(const std::string& url, uint32_t home_cell) {
  if (home_cell >= placement_.map().cells()) return NotFound("cell " + std::to_string(home_cell) + " is not in the map");
  return shards_.Get(placement_.ShardOf(home_cell), url);
}

void ShardSetSignatures::WillFetch(std::span<const tier1::SignatureRef> refs) {
  std::vector<std::vector<std::string_view>> by_shard(shards_.size());
  for (const tier1::SignatureRef& r : refs) {
    if (r.home_cell >= placement_.map().cells()) continue;
    const uint32_t m = placement_.ShardOf(r.home_cell);
    if (m < by_shard.size()) by_shard[m].push_back(r.url);
  }
  for (uint32_t m = 0; m < by_shard.size(); ++m) {
    if (!by_shard[m].empty()) shards_.WillNeed(m, by_shard[m]);
  }
}

StatusOr<std::unique_ptr<ShardSet>> OpenLocalShardSet(const ShardSetOptions& o) {
  tier2::LocalShardsOptions lo{.config = o.config,
                               .store_dir = o.layout.dir,
                               .shards = o.shards,
                               .expected_postings = o.expected_postings,
                               .initial_order = o.initial_order,
                               .read_only = o.read_only,
                               .serve = o.serve};
  ASSIGN_OR_RETURN(auto shards, tier2::LocalShards::Open(lo));
  return std::unique_ptr<ShardSet>(new LocalShardSet(std::move(shards)));
}

}  // namespace neardup::pipeline
