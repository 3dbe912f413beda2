#include "cluster/tier2_client/shard_health.h"

#include <algorithm>

namespace neardup::cluster {
namespace {

// A shard answered when its call succeeded or it said that it holds no such page.
bool Answered(const Status& s) { return s.ok() || s.code() == StatusCode::kNotFound; }

// The set the batch loop sees: `inner`'s, every call recorded on the board.
class ObservedShardSet final : public pipeline::ShardSet {
 public:
  ObservedShardSet(std::unique_ptr<pipeline::ShardSet> inner, ShardHealth* board)
      : inner_(std::move(inner)), board_(board) {
    // The open was every shard's first call: all of them at once, so that a scrape meanwhile
    // never counts part of the set (neardup eval --server takes the count it sees).
    board_->Opened(inner_->size());
    for (uint32_t m = 0; m < inner_->size(); ++m) board_->SetResidentFrom(m, inner_->Stats(m));
  }

  uint32_t size() const override { return inner_->size(); }
  Status Compare(uint32_t shard, std::span<const tier2::ShardPage> pages, double threshold,
                 const tier2::CompareOptions& compare, tier2::CompareResult* out) const override {
    return Seen(shard, inner_->Compare(shard, pages, threshold, compare, out));
  }
  Status Stage(uint32_t shard, std::span<const tier2::ShardPage> pages) override {
    return Seen(shard, inner_->Stage(shard, pages));
  }
  void Drop(uint32_t shard) override { inner_->Drop(shard); }
  Status Publish(uint32_t shard, std::span<const std::string> removed, uint64_t batch) override {
    return Seen(shard, inner_->Publish(shard, removed, batch));
  }
  Status Apply(uint32_t shard, std::span<const std::string> removed, uint64_t batch) override {
    Status s = Seen(shard, inner_->Apply(shard, removed, batch));
    if (s.ok()) board_->SetResidentFrom(shard, inner_->Stats(shard));
    return s;
  }
  Status Commit(uint32_t shard) override {
    Status s = Seen(shard, inner_->Commit(shard));
    if (s.ok()) board_->SetResidentFrom(shard, inner_->Stats(shard));
    return s;
  }
  StatusOr<uint64_t> CommittedBatch(uint32_t shard) const override {
    auto r = inner_->CommittedBatch(shard);
    (void)Seen(shard, r.status());
    return r;
  }
  StatusOr<pb::PageSignature> Get(uint32_t shard, const std::string& url) const override {
    auto r = inner_->Get(shard, url);
    (void)Seen(shard, r.status());
    return r;
  }
  Status GetMany(uint32_t shard, std::span<const std::string> urls,
                 std::vector<std::optional<pb::PageSignature>>* out) const override {
    return Seen(shard, inner_->GetMany(shard, urls, out));
  }
  tier2::ShardStats Stats(uint32_t shard) const override { return inner_->Stats(shard); }

 private:
  Status Seen(uint32_t shard, Status s) const {
    board_->Record(shard, s);
    return s;
  }
  std::unique_ptr<pipeline::ShardSet> inner_;
  ShardHealth* const board_;
};

}  // namespace

ShardHealth::ShardHealth(std::vector<std::string> servers, const neardup::Clock* clock)
    : clock_(clock), servers_(std::move(servers)) {}

ShardState& ShardHealth::At(uint32_t shard) {
  while (shards_.size() <= shard) {
    ShardState s;
    s.shard = static_cast<uint32_t>(shards_.size());
    if (!servers_.empty()) s.server = servers_[s.shard % servers_.size()];
    shards_.push_back(std::move(s));
  }
  return shards_[shard];
}

void ShardHealth::Reset(std::vector<std::string> servers, uint32_t shards) {
  std::lock_guard lock(mu_);
  servers_ = std::move(servers);
  if (shards_.size() > shards) shards_.resize(shards);
  for (ShardState& s : shards_) s.server = servers_.empty() ? "" : servers_[s.shard % servers_.size()];
}

void ShardHealth::Record(uint32_t shard, const Status& status) {
  std::lock_guard lock(mu_);
  ShardState& s = At(shard);
  ++s.calls;
  s.up = Answered(status);
  if (s.up) {
    s.last_success_unix = static_cast<double>(clock_->NowMillis()) / 1000;
  } else {
    ++s.failures;
    s.last_error = status.ToString();
  }
}

void ShardHealth::Opened(uint32_t shards) {
  std::lock_guard lock(mu_);
  const double now = static_cast<double>(clock_->NowMillis()) / 1000;
  for (uint32_t m = 0; m < shards; ++m) {
    ShardState& s = At(m);
    ++s.calls;
    s.up = true;
    s.last_success_unix = now;
  }
}

void ShardHealth::SetResident(uint32_t shard, uint64_t pages) {
  std::lock_guard lock(mu_);
  At(shard).resident_pages = pages;
}

void ShardHealth::SetResidentFrom(uint32_t shard, const tier2::ShardStats& stats) {
  const bool no_answer = stats.resident_pages == 0 && stats.log_bytes == 0 && stats.index_buckets == 0;
  std::lock_guard lock(mu_);
  ShardState& s = At(shard);
  if (no_answer && s.resident_pages > 0) return;
  s.resident_pages = stats.resident_pages;
}

std::vector<ShardState> ShardHealth::Snapshot() const {
  std::lock_guard lock(mu_);
  return shards_;
}

pipeline::ShardSetOpener ShardHealth::Observe(pipeline::ShardSetOpener inner) {
  return [this, inner = std::move(inner)](const pipeline::ShardSetOptions& options)
             -> StatusOr<std::unique_ptr<pipeline::ShardSet>> {
    ASSIGN_OR_RETURN(std::unique_ptr<pipeline::ShardSet> set, inner(options));
    return std::unique_ptr<pipeline::ShardSet>(new ObservedShardSet(std::move(set), this));
  };
}

double ResidentImbalance(const std::vector<ShardState>& shards) {
  if (shards.empty()) return 0;
  uint64_t sum = 0, max = 0;
  for (const ShardState& s : shards) sum += s.resident_pages, max = std::max(max, s.resident_pages);
  if (sum == 0) return 0;
  return static_cast<double>(max) * static_cast<double>(shards.size()) / static_cast<double>(sum);
}

}  // namespace neardup::cluster
