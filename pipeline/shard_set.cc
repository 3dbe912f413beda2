#include "pipeline/shard_set.h"

#include <algorithm>

#include "common/run_on_threads.h"
#include "pipeline/placement.h"

namespace neardup::pipeline {
namespace {

class LocalShardSet : public ShardSet {
 public:
  explicit LocalShardSet(std::vector<std::unique_ptr<tier2::Shard>> shards)
      : shards_(std::move(shards)), staged_(shards_.size()) {}

  uint32_t size() const override { return static_cast<uint32_t>(shards_.size()); }

  Status Compare(uint32_t shard, std::span<const tier2::ShardPage> pages, double threshold,
                 const tier2::CompareOptions& compare, tier2::CompareResult* out) const override {
    RETURN_IF_ERROR(Check(shard));
    return shards_[shard]->CompareBatch(pages, threshold, out, compare);
  }
  Status Stage(uint32_t shard, std::span<const tier2::ShardPage> pages) override {
    RETURN_IF_ERROR(Check(shard));
    ASSIGN_OR_RETURN(staged_[shard], shards_[shard]->Stage(pages));
    return Status::Ok();
  }
  void Drop(uint32_t shard) override {
    if (shard < staged_.size()) staged_[shard].reset();  // the shard cuts its log back
  }
  Status Publish(uint32_t shard, std::span<const std::string> removed, uint64_t batch) override {
    RETURN_IF_ERROR(Check(shard));
    if (staged_[shard] == nullptr) return Status::Ok();
    return shards_[shard]->Publish(std::move(staged_[shard]), removed, nullptr, batch);
  }
  Status Apply(uint32_t shard, std::span<const std::string> removed, uint64_t batch) override {
    RETURN_IF_ERROR(Check(shard));
    if (staged_[shard] == nullptr) return Status::Ok();
    RETURN_IF_ERROR(shards_[shard]->Publish(std::move(staged_[shard]), removed, nullptr, batch));
    return shards_[shard]->CommitPublished();
  }
  Status Commit(uint32_t shard) override {
    RETURN_IF_ERROR(Check(shard));
    return shards_[shard]->CommitPublished();
  }
  StatusOr<uint64_t> CommittedBatch(uint32_t shard) const override {
    RETURN_IF_ERROR(Check(shard));
    return shards_[shard]->AppliedSequence();
  }
  StatusOr<pb::PageSignature> Get(uint32_t shard, const std::string& url) const override {
    RETURN_IF_ERROR(Check(shard));
    return shards_[shard]->Get(url);
  }
  void WillNeed(uint32_t shard, std::span<const std::string_view> urls) const override {
    if (Check(shard).ok()) shards_[shard]->WillNeed(urls);
  }
  tier2::ShardStats Stats(uint32_t shard) const override {
    return shard < shards_.size() && shards_[shard] != nullptr ? shards_[shard]->Stats() : tier2::ShardStats{};
  }

 private:
  Status Check(uint32_t shard) const {
    if (shard >= shards_.size()) {
      return InvalidArgument("shard " + std::to_string(shard) + " is not one of the " + std::to_string(shards_.size()));
    }
    if (shards_[shard] == nullptr) return FailedPrecondition("shard " + std::to_string(shard) + " is not served here");
    return Status::Ok();
  }

  std::vector<std::unique_ptr<tier2::Shard>> shards_;
  std::vector<std::unique_ptr<tier2::StagedBatch>> staged_;  // per shard, the batch staged and not yet written
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
  if (o.shards == 0) return InvalidArgument("shard set: no shards");
  std::vector<uint32_t> serve = o.serve;
  if (serve.empty()) {
    for (uint32_t m = 0; m < o.shards; ++m) serve.push_back(m);
  }
  for (uint32_t m : serve) {
    if (m >= o.shards) {
      return InvalidArgument("shard set: shard " + std::to_string(m) + " is not one of the " + std::to_string(o.shards));
    }
  }
  std::vector<std::unique_ptr<tier2::Shard>> shards(o.shards);
  std::vector<Status> st(serve.size());
  RunOnThreads(static_cast<int>(serve.size()), "nd-shard-open", [&](int w) {
    const uint32_t m = serve[static_cast<size_t>(w)];
    tier2::ShardOptions so = tier2::ShardOptionsFromConfig(o.config, o.layout.shard(m));
    so.read_only = o.read_only;
    so.expected_pages = 1 << 16;
    if (m < o.expected_postings.size()) so.expected_postings = o.expected_postings[m];
    so.initial_order = o.initial_order;
    // The token order comes from the collection's first pages; a shard holds 1/P of them.
    if (so.order_sample_pages > 0) so.order_sample_pages = std::max<uint64_t>(1000, so.order_sample_pages / o.shards);
    auto shard = tier2::Shard::Open(so);
    if (shard.ok()) shards[m] = std::move(*shard);
    else st[static_cast<size_t>(w)] = shard.status();
  });
  for (const Status& s : st) RETURN_IF_ERROR(s);
  return std::unique_ptr<ShardSet>(new LocalShardSet(std::move(shards)));
}

}  // namespace neardup::pipeline
