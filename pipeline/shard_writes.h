// Step 5 of the batch loop (pipeline/pipeline.h): the shards store a batch Tier 1 committed. The
// first half (staging: Shard::Stage, most of the work, nothing visible or durable yet) runs on the
// stager while Tier 1 applies the batch; the second half (publish, then commit once Tier 1's commit
// is durable) runs on the writer in the background while the tiers' thread writes the batch's
// status lines and classifies and compares the next batch. Meanwhile Tier 1 reads the batch's
// signatures from the batch itself (ShardSignatures' overlay), and the batch is kept until the
// shards published it; then it is retired, to be freed on the reading thread (DropRetired).
//
// Where each page is stored and removed is the Placement's (StoreShards, RemovalShards).
//
// Ownership: owns the pools (ShardPools), the stager and writer threads, the batch being written
// and the retired batches. The shard set, the placement and the signature source are not owned
// and must outlive this.
//
// Thread safety: every method but Retire and DropRetired is called by one thread (the tiers');
// Retire and DropRetired may be called from any thread. times() is read once no job runs.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "pipeline/batch.h"
#include "pipeline/placement.h"
#include "pipeline/shard_pools.h"
#include "pipeline/shard_set.h"
#include "tier1/tier1.h"
#include "tier2/shard.h"

namespace neardup::pipeline::internal {

// Tier 1 reads signatures from the shard that owns the page's home cell. While the shards store a
// committed batch (in the background), Tier 1 goes on with the next steps and must already see
// that batch as stored: its writes are an overlay, consulted first, with what each shard will
// hold for those URLs once it is done (a signature, or nothing when the page was removed).
// Used by the tiers' thread only.
class ShardSignatures : public ShardSetSignatures {
 public:
  using ShardSetSignatures::ShardSetSignatures;
  // The overlay's signature (NotFound when the write removes the page), else the shard's.
  StatusOr<pb::PageSignature> Fetch(const std::string& url, uint32_t home_cell) override;
  // What an in-flight shard write leaves for `url` in `cell` (signature not owned; null: removed).
  void Overlay(std::string_view url, uint32_t cell, const pb::PageSignature* signature) {
    overlay_.insert_or_assign(url, Pending{cell, signature});
  }
  void ClearOverlay() { overlay_.clear(); }

 private:
  struct Pending { uint32_t cell; const pb::PageSignature* signature; };
  std::unordered_map<std::string_view, Pending> overlay_;  // keys point into the in-flight batch
};

// Wall time of step 5 (PipelineSummary's tier2_stage_seconds, tier2_apply_seconds,
// tier2_apply_wait_seconds, shard_store_seconds).
struct ShardWriteTimes {
  double stage_seconds = 0, apply_seconds = 0, apply_wait_seconds = 0;
  std::vector<double> shard_store_seconds;  // per shard: its Stage, Publish, Apply and Commit calls
};

class ShardWrites {
 public:
  // `await_tier1_commit` returns once Tier 1's last handed-over commit is durable (the writer
  // commits the shards only then), with its error if it failed.
  ShardWrites(ShardSet* shards, const Placement* placement, ShardSignatures* source,
              std::function<Status()> await_tier1_commit);
  ShardWrites(const ShardWrites&) = delete;
  ShardWrites& operator=(const ShardWrites&) = delete;
  ~ShardWrites();

  // Per shard: the pages of the batch it stores (home pages Tier 1 kept or Tier 2 compared) or
  // removes (home pages that became empty), on the shards the placement stores them on.
  std::vector<std::vector<tier2::ShardPage>> HomePages(const Batch& b,
                                                      const std::vector<tier1::Classification>& classes) const;
  // Staging on this thread: every shard in `only` (all when empty) stages its pages. The shards' errors.
  Status Stage(const std::vector<std::vector<tier2::ShardPage>>& pages, const std::vector<bool>& only);
  // Staging on the stager (which holds `pages` until it is done), and the wait for it.
  void StartStage(std::vector<std::vector<tier2::ShardPage>> pages);
  Status WaitStaged();
  // The staged batch applied (removals included) on this thread; with publish_only, published
  // (tier2/shard.h: Shard::Publish), to be committed later. The shards' errors.
  Status Apply(uint64_t number, const google::protobuf::RepeatedPtrField<pb::Tier2Removal>& removals,
               bool publish_only = false);
  // The background half once Tier 1 handed over its commit of `b`: the overlay takes the batch's
  // pages and `removals`, and the writer publishes, then (await_tier1_commit) commits. The batch
  // is kept, and readable through writing(), until AwaitPublished.
  void Start(std::unique_ptr<Batch> b, std::vector<tier1::Classification> classes,
             google::protobuf::RepeatedPtrField<pb::Tier2Removal> removals);
  const Batch& writing() const { return *writing_; }
  const std::vector<tier1::Classification>& writing_classes() const { return writing_classes_; }
  // Waits until the shards published the batch of the background writes, if any (the next batch
  // may be compared then), and returns how that went; the overlay is cleared, the batch retired.
  Status AwaitPublished();
  // Waits for the background writes, commits included, if any, and returns their status.
  Status Finish();

  // A batch the tiers are done with is freed by the reading thread (DropRetired, as it starts a
  // batch): freeing a thousand signatures and records is off the tiers' thread, which every
  // batch waits for.
  void Retire(std::unique_ptr<Batch> b);
  void DropRetired();

  // The compare fan-out's pool (the tiers' thread's).
  WorkerPool& compare_pool() { return pools_.compare; }
  const ShardWriteTimes& times() const { return times_; }

 private:
  ShardSet* shards_;
  const Placement* placement_;
  ShardSignatures* source_;
  std::function<Status()> await_tier1_commit_;
  ShardWriteTimes times_;
  // Declared before the jobs that use them, so that they outlive them.
  ShardPools pools_;
  BackgroundJob stager_{"nd-shard-stage"};
  // The batch the shards are storing in the background, and the thread doing it.
  std::unique_ptr<Batch> writing_;
  std::vector<tier1::Classification> writing_classes_;
  google::protobuf::RepeatedPtrField<pb::Tier2Removal> writing_removals_;
  BackgroundJob writer_{"nd-shard-store"};
  // Set by the writer once the shards published its batch (or failed to), with how that went.
  std::mutex published_mu_;
  std::condition_variable published_cv_;
  bool published_ = true;    // guarded by published_mu_
  Status publish_status_;    // guarded by published_mu_
  std::mutex retired_mu_;
  std::vector<std::unique_ptr<Batch>> retired_;  // guarded by retired_mu_
};

}  // namespace neardup::pipeline::internal
