#include "tier2/local_shards.h"

#include <fmt/format.h>

#include <algorithm>

#include "common/run_on_threads.h"

namespace neardup::tier2 {

std::string ShardDir(const std::string& store_dir, uint32_t m) { return fmt::format("{}/shard-{:03}", store_dir, m); }

StatusOr<std::unique_ptr<LocalShards>> LocalShards::Open(const LocalShardsOptions& o) {
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
  std::vector<std::unique_ptr<Shard>> shards(o.shards);
  std::vector<Status> st(serve.size());
  RunOnThreads(static_cast<int>(serve.size()), "nd-shard-open", [&](int w) {
    const uint32_t m = serve[static_cast<size_t>(w)];
    ShardOptions so = ShardOptionsFromConfig(o.config, ShardDir(o.store_dir, m));
    so.read_only = o.read_only;
    so.expected_pages = 1 << 16;
    if (m < o.expected_postings.size()) so.expected_postings = o.expected_postings[m];
    so.initial_order = o.initial_order;
    // The token order comes from the collection's first pages; a shard holds 1/P of them.
    if (so.order_sample_pages > 0) so.order_sample_pages = std::max<uint64_t>(1000, so.order_sample_pages / o.shards);
    auto shard = Shard::Open(so);
    if (shard.ok()) shards[m] = std::move(*shard);
    else st[static_cast<size_t>(w)] = shard.status();
  });
  for (const Status& s : st) RETURN_IF_ERROR(s);
  return std::unique_ptr<LocalShards>(new LocalShards(std::move(shards)));
}

Status LocalShards::Check(uint32_t shard) const {
  if (shard >= shards_.size()) {
    return InvalidArgument("shard " + std::to_string(shard) + " is not one of the " + std::to_string(shards_.size()));
  }
  if (shards_[shard] == nullptr) return FailedPrecondition("shard " + std::to_string(shard) + " is not served here");
  return Status::Ok();
}

Status LocalShards::Compare(uint32_t shard, std::span<const ShardPage> pages, double threshold,
                            const CompareOptions& compare, CompareResult* out) const {
  RETURN_IF_ERROR(Check(shard));
  return shards_[shard]->CompareBatch(pages, threshold, out, compare);
}

Status LocalShards::Stage(uint32_t shard, std::span<const ShardPage> pages) {
  RETURN_IF_ERROR(Check(shard));
  ASSIGN_OR_RETURN(staged_[shard], shards_[shard]->Stage(pages));
  return Status::Ok();
}

void LocalShards::Drop(uint32_t shard) {
  if (shard < staged_.size()) staged_[shard].reset();  // the shard cuts its log back
}

Status LocalShards::Publish(uint32_t shard, std::span<const std::string> removed, uint64_t batch) {
  RETURN_IF_ERROR(Check(shard));
  if (staged_[shard] == nullptr) return Status::Ok();
  return shards_[shard]->Publish(std::move(staged_[shard]), removed, nullptr, batch);
}

Status LocalShards::Apply(uint32_t shard, std::span<const std::string> removed, uint64_t batch) {
  RETURN_IF_ERROR(Check(shard));
  if (staged_[shard] == nullptr) return Status::Ok();
  RETURN_IF_ERROR(shards_[shard]->Publish(std::move(staged_[shard]), removed, nullptr, batch));
  return shards_[shard]->CommitPublished();
}

Status LocalShards::Commit(uint32_t shard) {
  RETURN_IF_ERROR(Check(shard));
  return shards_[shard]->CommitPublished();
}

StatusOr<uint64_t> LocalShards::CommittedBatch(uint32_t shard) const {
  RETURN_IF_ERROR(Check(shard));
  return shards_[shard]->AppliedSequence();
}

StatusOr<pb::PageSignature> LocalShards::Get(uint32_t shard, const std::string& url) const {
  RETURN_IF_ERROR(Check(shard));
  return shards_[shard]->Get(url);
}

Status LocalShards::GetMany(uint32_t shard, std::span<const std::string> urls,
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

void LocalShards::WillNeed(uint32_t shard, std::span<const std::string_view> urls) const {
  if (Check(shard).ok()) shards_[shard]->WillNeed(urls);
}

ShardStats LocalShards::Stats(uint32_t shard) const {
  return shard < shards_.size() && shards_[shard] != nullptr ? shards_[shard]->Stats() : ShardStats{};
}

}  // namespace neardup::tier2
