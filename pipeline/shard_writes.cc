#include "pipeline/shard_writes.h"

#include <unordered_set>

namespace neardup::pipeline::internal {

using tier1::Classification;

StatusOr<pb::PageSignature> ShardSignatures::Fetch(const std::string& url, uint32_t home_cell) {
  if (auto it = overlay_.find(url); it != overlay_.end() && it->second.cell == home_cell) {
    if (it->second.signature == nullptr) {
      return NotFound("shard: " + url + " was removed from cell " + std::to_string(home_cell));
    }
    return *it->second.signature;
  }
  return ShardSetSignatures::Fetch(url, home_cell);
}

ShardWrites::ShardWrites(ShardSet* shards, const Placement* placement, ShardSignatures* source,
                         std::function<Status()> await_tier1_commit)
    : shards_(shards),
      placement_(placement),
      source_(source),
      await_tier1_commit_(std::move(await_tier1_commit)),
      pools_(static_cast<int>(shards->size())) {
  times_.shard_store_seconds.assign(shards->size(), 0);
}

ShardWrites::~ShardWrites() {
  (void)writer_.Wait();
  (void)stager_.Wait();
}

std::vector<std::vector<tier2::ShardPage>> ShardWrites::HomePages(const Batch& b,
                                                                   const std::vector<Classification>& classes) const {
  std::vector<std::vector<tier2::ShardPage>> pages(shards_->size());
  for (size_t i = 0; i < b.records.size(); ++i) {
    const Classification c = classes[i];
    if (c != Classification::kFastPath && c != Classification::kTier2 && c != Classification::kEmpty) continue;
    uint32_t to[2];
    for (int k = 0, n = placement_->StoreShards(b.cell[i], to); k < n; ++k) {
      pages[to[k]].push_back({&b.signatures[i], true, /*validated=*/true});
    }
  }
  return pages;
}

Status ShardWrites::Stage(const std::vector<std::vector<tier2::ShardPage>>& pages, const std::vector<bool>& only) {
  const auto t0 = SteadyClock::now();
  Status s = ForEachShard(pools_.stage, [&](size_t m) -> Status {
    if (!only.empty() && !only[m]) return Status::Ok();
    return shards_->Stage(static_cast<uint32_t>(m), pages[m]);
  }, &times_.shard_store_seconds);
  times_.stage_seconds += Since(t0);
  return s;
}

void ShardWrites::StartStage(std::vector<std::vector<tier2::ShardPage>> pages) {
  stager_.Start([this, home = std::move(pages)] { return Stage(home, {}); });
}

Status ShardWrites::WaitStaged() { return stager_.Wait(); }

Status ShardWrites::Apply(uint64_t number, const google::protobuf::RepeatedPtrField<pb::Tier2Removal>& removals,
                          bool publish_only) {
  std::vector<std::vector<std::string>> removed(shards_->size());
  for (const auto& rm : removals) {
    if (rm.cell() >= placement_->map().cells()) continue;
    uint32_t from[2];
    for (int k = 0, n = placement_->RemovalShards(rm.cell(), from); k < n; ++k) removed[from[k]].push_back(rm.url());
  }
  const auto t0 = SteadyClock::now();
  Status s = ForEachShard(pools_.store, [&](size_t m) -> Status {
    const uint32_t shard = static_cast<uint32_t>(m);
    return publish_only ? shards_->Publish(shard, removed[m], number) : shards_->Apply(shard, removed[m], number);
  }, &times_.shard_store_seconds);
  times_.apply_seconds += Since(t0);
  return s;
}

void ShardWrites::Start(std::unique_ptr<Batch> b, std::vector<Classification> classes,
                        google::protobuf::RepeatedPtrField<pb::Tier2Removal> removals) {
  writing_ = std::move(b);
  writing_classes_ = std::move(classes);
  writing_removals_ = std::move(removals);
  const Batch& w = *writing_;
  std::unordered_set<std::string_view> stored;
  for (size_t i = 0; i < w.records.size(); ++i) {
    const Classification c = writing_classes_[i];
    if (c == Classification::kFastPath || c == Classification::kTier2) {
      source_->Overlay(w.records[i].url, w.cell[i], &w.signatures[i]);
      stored.insert(w.records[i].url);
    }
    if (c == Classification::kEmpty) source_->Overlay(w.records[i].url, w.cell[i], nullptr);
  }
  for (const auto& rm : writing_removals_) {
    // A URL this batch stores again keeps its new home; the removal is of its old one.
    if (!stored.count(rm.url())) source_->Overlay(rm.url(), rm.cell(), nullptr);
  }
  {
    std::lock_guard lock(published_mu_);
    published_ = false;
    publish_status_ = Status::Ok();
  }
  writer_.Start([this, number = w.number]() -> Status {
    // The shards answer with the batch once they published it: the next batch may be compared.
    Status s = Apply(number, writing_removals_, /*publish_only=*/true);
    {
      std::lock_guard lock(published_mu_);
      published_ = true;
      publish_status_ = s;
    }
    published_cv_.notify_all();
    RETURN_IF_ERROR(s);
    // They commit it only once Tier 1's commit of it is durable (meanwhile the next batch is
    // compared; its Tier 1 commit comes after this one): a restart never finds a shard ahead of
    // Tier 1.
    RETURN_IF_ERROR(await_tier1_commit_());
    return ForEachShard(pools_.store, [&](size_t m) { return shards_->Commit(static_cast<uint32_t>(m)); });
  });
}

Status ShardWrites::AwaitPublished() {
  if (!writer_.started()) return Status::Ok();
  const auto t0 = SteadyClock::now();
  Status s;
  {
    std::unique_lock lock(published_mu_);
    published_cv_.wait(lock, [&] { return published_; });
    s = publish_status_;
  }
  times_.apply_wait_seconds += Since(t0);
  // The shards answer for the batch now: Tier 1 reads its signatures from them again.
  source_->ClearOverlay();
  Retire(std::move(writing_));
  return s;
}

Status ShardWrites::Finish() {
  if (!writer_.started()) return Status::Ok();
  const auto t0 = SteadyClock::now();
  Status s = writer_.Wait();
  times_.apply_wait_seconds += Since(t0);
  source_->ClearOverlay();
  Retire(std::move(writing_));
  writing_classes_.clear();
  writing_removals_.Clear();
  return s;
}

void ShardWrites::Retire(std::unique_ptr<Batch> b) {
  if (b == nullptr) return;
  std::lock_guard lock(retired_mu_);
  retired_.push_back(std::move(b));
}

void ShardWrites::DropRetired() {
  std::vector<std::unique_ptr<Batch>> drop;
  std::lock_guard lock(retired_mu_);
  drop.swap(retired_);
  // (freed here, on return, after the lock)
}

}  // namespace neardup::pipeline::internal
