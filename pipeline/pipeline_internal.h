// The embedded pipeline's parts (pipeline/pipeline.h), shared by its source files and by nothing
// else: the batches on their way, the hand-off queue, the background jobs, Tier 1's signature
// source, and the Pipeline class whose methods they split:
//   pipeline.cc         RunPipeline, the loop over the input (Run), the end of a run (Finish)
//   pipeline_setup.cc   the store opened, its parameters checked, the map, the tiers, a restart
//   pipeline_batch.cc   one batch through the tiers (Process) and the shards' background writes
//   pipeline_output.cc  status lines and --out
#pragma once

#include "pipeline/pipeline.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <time.h>
#include <unistd.h>

#include "common/json_write.h"
#include "common/progress.h"
#include "common/thread_priority.h"
#include "common/url_hash_map.h"
#include "common/worker_pool.h"
#include "document/crawl_signer.h"
#include "partitioner/crawl_sample.h"
#include "partitioner/map_builder.h"
#include "partitioner/partition_map.h"
#include "pipeline/placement.h"
#include "pipeline/shard_set.h"
#include "pipeline/rebalance_store.h"
#include "pipeline/store.h"
#include "storage/file_env.h"
#include "storage/leveldb_threads.h"
#include "tier1/tier1.h"
#include "tier2/commit_file.h"
#include "tier2/prefix_filter.h"
#include "tier2/shard.h"
#include "tier2/token_order.h"


namespace neardup::pipeline::internal {

using tier1::ApplyOutcome;
using tier1::GroupStore;
using tier1::PageUpdate;
using tier1::RepairReport;
using tier1::Classification;
using tier1::ClassificationName;
using tier1::StatusAnswer;
using tier1::StatusName;
using tier1::Tier1;
using tier1::Tier1OptionsFromConfig;
using tier1::Tier1Options;
using tier1::Tier2Matches;

namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;

inline double Since(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

// CPU time of the calling thread (not of the shard threads it starts).
inline double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Tier 1 reads signatures from the shard that owns the page's home cell. While the shards store a
// committed batch (in the background), Tier 1 goes on with the next steps and must already see
// that batch as stored: its writes are an overlay, consulted first, with what each shard will
// hold for those URLs once it is done (a signature, or nothing when the page was removed).
// Used by the tiers' thread only.
class ShardSignatures : public ShardSetSignatures {
 public:
  using ShardSetSignatures::ShardSetSignatures;
  StatusOr<pb::PageSignature> Fetch(const std::string& url, uint32_t home_cell) override {
    if (auto it = overlay_.find(url); it != overlay_.end() && it->second.cell == home_cell) {
      if (it->second.signature == nullptr) return NotFound("shard: " + url + " was removed from cell " + std::to_string(home_cell));
      return *it->second.signature;
    }
    return ShardSetSignatures::Fetch(url, home_cell);
  }
  // What an in-flight shard write leaves for `url` in `cell` (signature not owned; null: removed).
  void Overlay(std::string_view url, uint32_t cell, const pb::PageSignature* signature) {
    overlay_.insert_or_assign(url, Pending{cell, signature});
  }
  void ClearOverlay() { overlay_.clear(); }

 private:
  struct Pending { uint32_t cell; const pb::PageSignature* signature; };
  std::unordered_map<std::string_view, Pending> overlay_;  // keys point into the in-flight batch
};

// A batch of signed records on its way from the reader to the tiers.
struct Batch {
  uint64_t number = 0;          // 1-based, as committed
  uint64_t first_record = 0;    // 0-based input record index
  bool redo = false;            // only step 5 for shards that missed it, and its status lines
  // Where its last record's line ends in the input, and the XXH3-128 of the input up to there.
  uint64_t end_offset = 0, digest_lo = 0, digest_hi = 0;
  std::vector<CrawlRecord> records;
  std::vector<pb::PageSignature> signatures;  // per record (empty for redirects); a Signer made them
  std::vector<uint32_t> cell;                 // home cell per content record
  std::vector<std::vector<uint32_t>> shards;  // shards to compare on
  // While a move runs: each record's map vector (dims apiece, in order; zeros without content),
  // and whether the batch was routed on the move's new map (after its flip) or its old one: a
  // batch compared on the other side of the flip is routed again (Pipeline::RouteForMove).
  std::vector<uint32_t> vectors;
  bool routed_flipped = false;
};

// A bounded hand-off between the reading thread and the tiers' thread.
class BatchQueue {
 public:
  explicit BatchQueue(size_t capacity) : capacity_(capacity) {}
  bool Push(std::unique_ptr<Batch> b) {
    std::unique_lock lock(mu_);
    not_full_.wait(lock, [&] { return q_.size() < capacity_ || closed_; });
    if (closed_) return false;
    q_.push_back(std::move(b));
    not_empty_.notify_one();
    return true;
  }
  std::unique_ptr<Batch> Pop() {
    std::unique_lock lock(mu_);
    not_empty_.wait(lock, [&] { return !q_.empty() || closed_; });
    if (q_.empty()) return nullptr;
    auto b = std::move(q_.front());
    q_.pop_front();
    not_full_.notify_one();
    return b;
  }
  // Pop, waiting no longer than `timeout`: null and *timed_out when none came by then.
  std::unique_ptr<Batch> PopFor(std::chrono::duration<double> timeout, bool* timed_out) {
    std::unique_lock lock(mu_);
    *timed_out = !not_empty_.wait_for(lock, timeout, [&] { return !q_.empty() || closed_; });
    if (q_.empty()) return nullptr;
    auto b = std::move(q_.front());
    q_.pop_front();
    not_full_.notify_one();
    return b;
  }
  // Closed: the tiers' thread ended (failed, or done).
  bool Closed() {
    std::lock_guard lock(mu_);
    return closed_;
  }
  // A batch is waiting to be popped.
  bool Waiting() {
    std::lock_guard lock(mu_);
    return !q_.empty();
  }
  void Close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable not_empty_, not_full_;
  std::deque<std::unique_ptr<Batch>> q_;
  size_t capacity_;
  bool closed_ = false;
};

// Runs fn(s) for every shard, each on a thread of `pool` (one per shard), and returns the first
// error; adds each call's wall time to (*seconds)[s] when seconds is given.
template <typename Fn>
Status ForEachShard(WorkerPool& pool, Fn&& fn, std::vector<double>* seconds = nullptr) {
  std::vector<Status> st(static_cast<size_t>(pool.threads()));
  pool.Run([&](int w) {
    const size_t s = static_cast<size_t>(w);
    const auto t0 = SteadyClock::now();
    st[s] = fn(s);
    if (seconds != nullptr) (*seconds)[s] += Since(t0);
  });
  for (Status& s : st) RETURN_IF_ERROR(s);
  return Status::Ok();
}

// A thread that runs one Status-returning job at a time in the background: Start hands it a job,
// Wait waits for it and returns its status. The thread stays for the next job (the pipeline starts
// two jobs a batch). Start must not be called while a job is running; Start and Wait are called
// from one thread.
class BackgroundJob {
 public:
  explicit BackgroundJob(const char* name)
      : thread_([this, name] {
          NameThisThread(name);
          Loop();
        }) {}
  BackgroundJob(const BackgroundJob&) = delete;
  BackgroundJob& operator=(const BackgroundJob&) = delete;
  ~BackgroundJob() {
    (void)Wait();
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Start(std::function<Status()> job) {
    std::lock_guard lock(mu_);
    job_ = std::move(job);
    running_ = true;
    started_ = true;
    cv_.notify_all();
  }
  // A job was started and not yet waited for (it may have finished).
  bool started() const { return started_; }
  Status Wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !running_; });
    started_ = false;
    Status s = std::move(status_);
    status_ = Status::Ok();
    return s;
  }

 private:
  void Loop() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || job_ != nullptr; });
      if (job_ == nullptr) return;  // stopping
      std::function<Status()> job = std::move(job_);
      job_ = nullptr;
      lock.unlock();
      Status s = job();
      job = nullptr;  // what the job holds goes before Wait returns
      lock.lock();
      status_ = std::move(s);
      running_ = false;
      cv_.notify_all();
    }
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::function<Status()> job_;
  bool running_ = false, stop_ = false;
  bool started_ = false;  // only Start and Wait use it (one thread)
  Status status_;
  std::thread thread_;  // last: starts once the members above exist
};

class Pipeline {
 public:
  explicit Pipeline(const PipelineOptions& o) : o_(o) {}
  ~Pipeline() {
    CloseFeed();
    if (status_file_ != nullptr) std::fclose(status_file_);
  }
  StatusOr<PipelineSummary> Run();

 private:
  // After the batches: --out, the store's totals, and everything closed.
  StatusOr<PipelineSummary> Finish(SteadyClock::time_point start);
  Status Setup();
  // The feed's view of the run (IngestFeed::Opened / Closing), once each.
  void OpenFeed();
  void CloseFeed();
  // Tells the feed which pages of batch `b` Tier 2 could not compare in full (per shard: the
  // status of its Compare; not called when all are ok).
  void ReportIncomplete(const Batch& b, const std::vector<std::vector<uint32_t>>& index,
                        const std::vector<Status>& compared);
  Status OpenMap();
  Status Resume();
  // A move's steps between batches (no shard write in flight while they run), while the copy's
  // rate cap lets them: kCredit, while move_credit_ is positive and no batch waits (each step's
  // time is taken from the credit, which the batches add to: see Run); kIdle, while no batch
  // waits (the feed's input is idle); kSteps, PipelineOptions::move_steps_per_batch of them.
  // Then, once the move ended, MoveEnded.
  enum class MoveTurn { kCredit, kIdle, kSteps };
  Status AdvanceMove(MoveTurn turn, BatchQueue* queue);
  // The run goes on with the new map: the store's parameters, the summary, the feed.
  Status MoveEnded();
  // The rest of the move at once (the input's end), waiting for its rate cap.
  Status EndMove();
  // Between a move's flip and its end: each page of the batch stored in a moved cell is removed
  // from its old shard too, so that the old shard holds no stale version of it until the drop
  // (pipeline/store_move.h).
  void AddMoveRemovals(const Batch& b, const std::vector<Classification>& classes,
                       google::protobuf::RepeatedPtrField<pb::Tier2Removal>* removals) const;
  // During a move, a batch routed on the map the placement no longer serves is routed again on
  // the one it serves (see pipeline/store_move.h: the served map's shards hold every page, current).
  void RouteForMove(Batch& b) const;
  Status Process(std::unique_ptr<Batch> b);
  Status Redo(Batch& b);
  // Per shard: the pages of the batch it stores (home pages Tier 1 kept or Tier 2 compared) or
  // removes (home pages that became empty).
  std::vector<std::vector<tier2::ShardPage>> HomePages(const Batch& b,
                                                      const std::vector<Classification>& classes) const;
  // Step 5's first half: every shard in `only` (all when empty) stages its pages.
  Status StageOnShards(const std::vector<std::vector<tier2::ShardPage>>& pages, const std::vector<bool>& only);
  // Step 5's second half: the shards with a staged batch apply it, with the removals; or, with
  // publish_only, publish it (tier2/shard.h: Shard::Publish), to be committed later.
  Status ApplyToShards(uint64_t number, const google::protobuf::RepeatedPtrField<pb::Tier2Removal>& removals,
                       bool publish_only = false);
  // Step 5 in the background, once Tier 1 handed over its commit of batch b: the shards publish
  // what they staged (the batch is kept until they have) while the tiers' thread writes its
  // status lines and classifies the next batch; then, once Tier 1's commit is durable, the
  // shards commit it, while the next batch is compared.
  void StartShardWrites(std::unique_ptr<Batch> b, std::vector<Classification> classes);
  // Waits until the shards have published the batch of the background writes, if any, and
  // returns how that went: the next batch may be compared then.
  Status AwaitShardsPublished();
  // Waits for the background shard writes, commits included, if any, and returns their status.
  Status FinishShardWrites();
  // What a feed is told at a batch's commit (on the tiers' thread, before sum_.batches counts
  // the batch): `records`, of the batches committed so far.
  FeedCounters FeedCountersNow(uint64_t records) const;
  // A batch the tiers are done with is freed by the signing thread (DropRetired, as it starts a
  // batch): freeing a thousand signatures and records is off the tiers' thread, which every
  // batch waits for, and on the thread that runs ahead at a lower priority.
  void Retire(std::unique_ptr<Batch> b);
  void DropRetired();
  Status WriteStatus(const Batch& b, const std::vector<Classification>& classes);
  // fflush + fdatasync of the status file (when there is one).
  Status SyncStatusFile();
  Status WriteGroups();
  // Opens --status-out: anew for a new input; for a resumed one, appending after cutting a torn
  // last line and the last committed batch's lines (Redo writes them again, whole).
  Status OpenStatusFile();
  // Marks the input consumed whole (its identity moves from `current` to `consumed`).
  Status RecordInputConsumed();

  const PipelineOptions& o_;
  // A run without --store works in a directory of its own, removed with the run whether it ends
  // or fails: declared before everything that holds the directory open, so destroyed after it.
  struct TemporaryDir {
    std::string path;  // empty: nothing to remove
    ~TemporaryDir();
  } temporary_dir_;
  // What the run computes with: the options', or the store's own parameters when it has them.
  pb::NeardupConfig config_;
  double threshold_ = 0;
  SignerOptions signer_;
  pb::StoreParams params_;
  std::string input_;          // o_.input, absolute (for messages)
  uint64_t input_size_ = 0;
  bool drop_input_pages_ = true;  // DropInputPages, decided at Setup
  // The input's bytes hashed so far (the signing thread advances it to each batch's end).
  std::unique_ptr<PrefixDigest> digest_;
  bool resuming_ = false;      // the input is the store's interrupted one, continued
  std::string dir_;
  StoreLayout layout_;
  // A new store's map, built or given, until the placement takes it (OpenMap).
  std::optional<partitioner::PartitionMap> map_;
  // Where the pages are: the map whose cells pages are placed in, the map routed on, the shard of
  // a cell, and during a move both maps and whether it has flipped (pipeline/placement.h).
  std::unique_ptr<Placement> placement_;
  std::unique_ptr<StoreMove> move_;  // the store's move (of placement_), while and after it runs in this run
  bool move_ended_here_ = false;     // this run ended it: the drained shards go once the set closes
  double move_credit_ = 0;           // seconds of the tiers' thread the move may take (AdvanceMove)
  std::vector<uint64_t> expected_postings_;  // per shard, estimated from the map's sample (when built here)
  std::string initial_order_;  // the new shards' first token order, from the map's sample (when built here)
  std::unique_ptr<ShardSet> shards_;
  size_t P() const { return shards_->size(); }
  bool feed_open_ = false;     // the feed was told Opened and not yet Closing
  std::unique_ptr<GroupStore> owned_store_;  // when the run opened it (o_.groups null)
  GroupStore* store_ = nullptr;
  std::unique_ptr<ShardSignatures> source_;
  std::unique_ptr<Tier1> tier1_;
  pb::Tier1Progress progress_;
  // The most records a batch holds in this run: o_.batch_pages, less for a small file
  // (SmallInputBatchPages).
  uint32_t batch_pages_ = 0;
  uint64_t skip_ = 0;          // records before this index are already committed
  uint64_t redo_from_ = 0;     // records [redo_from_, skip_) form the batch to redo (when redo_)
  bool redo_ = false;
  std::vector<bool> lagging_;  // shards that missed the last committed batch
  std::FILE* status_file_ = nullptr;
  PipelineSummary sum_;
  // One thread per shard for each kind of fan-out (made by Setup once the shard count is known):
  // the tiers' thread compares, the stager stages and the writer stores, at once. Declared before
  // the jobs that use them, so that they outlive them.
  std::unique_ptr<WorkerPool> compare_pool_, stage_pool_, store_pool_;
  BackgroundJob stager_{"nd-shard-stage"};
  // The batch the shards are storing in the background, and the thread doing it.
  std::unique_ptr<Batch> writing_;
  std::vector<Classification> writing_classes_;
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
