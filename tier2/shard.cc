// The Shard facade (tier2/shard.h) over Shard::Impl (tier2/shard_impl.h), and what reads the
// shard as a whole: Get, Stats, DiskBytes.
#include "tier2/shard.h"

#include <filesystem>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "tier2/shard_impl.h"

namespace neardup::tier2 {

ShardOptions ShardOptionsFromConfig(const pb::NeardupConfig& config, const std::string& path) {
  const pb::Tier2Config& t = config.tier2();
  ShardOptions o;
  o.path = path;
  o.dims = config.shingle().dims();
  o.shingle_k = config.shingle().k();
  o.min_threshold = t.min_threshold();
  o.prefix_overlap = t.prefix_overlap();
  o.max_batch_pages = t.max_batch_pages();
  o.sync = t.sync();
  o.order_sample_pages = t.order_sample_pages();
  o.frequent_min_pages = t.frequent_min_pages();
  o.crowded_token_pages = t.crowded_token_pages();
  o.read_ahead = t.read_ahead();
  o.max_matches_per_page = t.max_matches_per_page();
  return o;
}

double ShardStats::ram_bytes_per_page() const {
  return resident_pages == 0 ? 0 : static_cast<double>(index_bytes + page_table_bytes) / resident_pages;
}

StatusOr<pb::PageSignature> Shard::Impl::Get(const std::string& url) const {
  // Not mu_: a Get does not wait for an Apply's index work, only for its location changes.
  std::shared_lock loc(loc_mu_);
  std::string buffer;
  UrlSlots::Found found;
  RETURN_IF_ERROR(LookupSlot(url, &found, &buffer));
  if (found.slot == UrlSlots::kNoSlot) return NotFound("shard: " + url + " is not resident in " + options_.path);
  pb::PageSignature sig;
  RETURN_IF_ERROR(ParseSlotRecord(found.slot, buffer, &sig));
  return sig;
}

void Shard::Impl::WillNeed(std::span<const std::string_view> urls) const {
  if (!options_.read_ahead || urls.empty()) return;
  std::vector<SignatureLog::Ref> refs;
  refs.reserve(urls.size());
  std::shared_lock loc(loc_mu_);
  for (std::string_view url : urls) {
    const uint32_t slot = url_slots_.Probable(url);
    if (slot != UrlSlots::kNoSlot && HasLocation(slot)) refs.push_back(Location(slot));
  }
  log_->WillNeed(refs);
}

ShardStats Shard::Impl::Stats() const {
  std::shared_lock lock(mu_);
  std::shared_lock loc(loc_mu_);
  ShardStats s;
  s.resident_pages = index_.live_slots();
  s.index_postings = index_.main_postings() + index_.overflow_postings();
  s.index_bytes = index_.MemoryBytes();
  s.index_buckets = uint64_t{1} << index_.bucket_bits();
  s.page_table_bytes = (size_.capacity() + cut_.capacity()) * sizeof(uint32_t) + vec_.capacity() * sizeof(uint16_t) +
                       (loc_.capacity() + bits_.capacity()) * sizeof(uint64_t) +
                       long_length_.size() * (sizeof(uint32_t) * 2 + 2 * sizeof(void*)) + url_slots_.MemoryBytes();
  s.log_bytes = log_->end();
  s.log_live_bytes = log_live_bytes_;
  s.log_compactions = log_compactions_;
  s.compactions = compactions_;
  s.token_order_bits = order_.bitmap_bits();
  s.frequent_tokens = frequent_tokens_;
  s.order_refreshes = order_refreshes_;
  s.refreshed_pages = refreshed_pages_;
  s.rebuilds = rebuilds_;
  s.open_seconds = open_seconds_;
  return s;
}

uint64_t Shard::Impl::DiskBytes() const {
  uint64_t total = 0;
  std::vector<std::string> names;
  if (!env_->ListDir(options_.path, &names).ok()) return 0;
  for (const std::string& name : names) {
    auto file = env_->OpenFile((std::filesystem::path(options_.path) / name).string(), FileMode::kReadOnly);
    if (!file.ok()) continue;
    if (auto size = (*file)->Size(); size.ok()) total += *size;
  }
  return total;
}

Shard::Shard(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Shard::~Shard() = default;

StatusOr<std::unique_ptr<Shard>> Shard::Open(const ShardOptions& options) {
  auto impl = std::make_unique<Impl>(options);
  RETURN_IF_ERROR(impl->Open());
  return std::unique_ptr<Shard>(new Shard(std::move(impl)));
}
Status Shard::CompareBatch(std::span<const ShardPage> batch, double threshold, CompareResult* out,
                           const CompareOptions& compare) const {
  return impl_->CompareBatch(batch, threshold, out, compare);
}
Status Shard::Apply(std::span<const ShardPage> batch, std::span<const std::string> removed_urls, ApplyStats* stats,
                    uint64_t sequence) {
  return impl_->Apply(batch, removed_urls, stats, sequence);
}
StatusOr<std::unique_ptr<StagedBatch>> Shard::Stage(std::span<const ShardPage> batch) { return impl_->Stage(batch); }
Status Shard::Publish(std::unique_ptr<StagedBatch> batch, std::span<const std::string> removed_urls,
                      ApplyStats* stats, uint64_t sequence) {
  return impl_->Publish(std::move(batch), removed_urls, stats, sequence, nullptr);
}
Status Shard::CommitPublished() { return impl_->CommitPublished(); }

StagedBatch::StagedBatch(std::unique_ptr<State> state) : state_(std::move(state)) {}
StagedBatch::~StagedBatch() {
  if (state_ != nullptr) state_->shard->Unstage(*state_);
}
StatusOr<uint64_t> Shard::AppliedSequence() const { return impl_->AppliedSequence(); }
StatusOr<pb::PageSignature> Shard::Get(const std::string& url) const { return impl_->Get(url); }
void Shard::WillNeed(std::span<const std::string_view> urls) const { impl_->WillNeed(urls); }
ShardStats Shard::Stats() const { return impl_->Stats(); }
Status Shard::CheckIndex() const { return impl_->CheckIndex(); }
uint64_t Shard::DiskBytes() const { return impl_->DiskBytes(); }
const ShardOptions& Shard::options() const { return impl_->options(); }


}  // namespace neardup::tier2
