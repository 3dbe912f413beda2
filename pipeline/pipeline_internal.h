// The embedded pipeline (pipeline/pipeline.h): the Pipeline class, which holds a run's state and
// keeps the order of its steps, over its parts, each with its own header and tests:
//   batch.h          a batch on its way, and the queue between the reading and the tiers' threads
//   shard_pools.h    the pools and background jobs made once per run
//   shard_writes.h   step 5: the shards stage, publish and commit a batch (and Tier 1's overlay)
//   run_move.h       a move in progress: its share of the time, its removals, routing again
//   redo.h           a restart: where the input starts, the shards behind, the batch redone
//   output.h         status lines and --out
// and its source files:
//   pipeline.cc         RunPipeline, the run's order of steps (Run), the two threads, the end (Finish)
//   pipeline_setup.cc   the store opened, its parameters checked, its placement, the tiers, a restart
//   pipeline_batch.cc   one batch through the tiers (Process), the redo, the status lines
//   pipeline_move.cc    the move's steps between batches
// Shared by those files and by nothing else.
#pragma once

#include "pipeline/pipeline.h"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "document/crawl_signer.h"
#include "partitioner/partition_map.h"
#include "pipeline/batch.h"
#include "pipeline/output.h"
#include "pipeline/placement.h"
#include "pipeline/run_move.h"
#include "pipeline/run_timing.h"
#include "pipeline/shard_set.h"
#include "pipeline/shard_writes.h"
#include "pipeline/store.h"
#include "pipeline/store_move.h"
#include "tier1/tier1.h"

namespace neardup::pipeline::internal {

// One run. Thread safety: Run is called once; it runs the reading thread (Reading, the digest,
// sum_.records) and the tiers' thread (everything else), which share the queue, the retired
// batches (ShardWrites::Retire), tiers_status_ (set before the queue closes) and what Setup fixed.
class Pipeline {
 public:
  explicit Pipeline(const PipelineOptions& o) : o_(o) {}
  ~Pipeline() { CloseFeed(); }
  StatusOr<PipelineSummary> Run();

 private:
  // ---- pipeline.cc: the run
  // The reading thread and the tiers' thread over the input, until it ends (or the feed stops).
  Status RunBatches();
  // The tiers' thread: batches in order as the reader hands them over, and a move's steps
  // between them. An error goes to tiers_status_, and closes the queue.
  void TiersLoop(BatchQueue* queue);
  // One batch decided (or redone), told to the feed, and the move's steps it leaves time for.
  Status DecideBatch(std::unique_ptr<Batch> b, BatchQueue* queue, MovePacer* pacer, uint64_t* fed_records);
  // The reading thread: signs the input and cuts it into batches for the queue.
  Status ReadInput(BatchQueue* queue);
  // The reader's options: its input, its threads, which records it keeps, and a feed's waits.
  CrawlSignerOptions ReaderOptions(BatchQueue* queue);
  // A signed record added to the batch being cut; a full batch handed over.
  Status AddRecord(CrawlRecord& r, PageFeatures& f, BatchQueue* queue);
  // The batch being cut handed over (when it holds records), and the next one started.
  Status HandOff(BatchQueue* queue);
  void StartBatch(uint64_t first_record);
  // Following a feed, caught up with it: waits for more, cutting the batch held short when the
  // input stays idle. False when the feed stops the run or the tiers' thread failed.
  StatusOr<bool> WaitForFeed(BatchQueue* queue);
  // After the batches: --out, the store's totals, and everything closed.
  StatusOr<PipelineSummary> Finish(SteadyClock::time_point start);
  Status GatherStoreTotals();
  void GatherShardTotals();
  // The feed's view of the run (IngestFeed::Opened / Closing), once each.
  void OpenFeed();
  void CloseFeed();
  // What a feed is told at a batch's commit (before sum_.batches counts the batch): `records`, of
  // the batches committed so far.
  FeedCounters FeedCountersNow(uint64_t records) const;
  // Tells the feed which pages of batch `b` Tier 2 could not compare in full (per shard: the
  // status of its Compare; not called when all are ok).
  void ReportIncomplete(const Batch& b, const std::vector<std::vector<uint32_t>>& index,
                        const std::vector<Status>& compared);

  // ---- pipeline_setup.cc: the run set up
  Status Setup();
  // The options checked, the outputs writable, the input's size and name, the store's directory.
  Status CheckInputAndOutputs();
  // The group store (the caller's, or opened here, its memtable sized for the input) and the
  // batch size; *expected_records: the input's records, about (0 for a feed that sizes nothing).
  Status OpenGroupStore(uint64_t* expected_records);
  // A store with parameters: they rule (an explicit value that disagrees is refused); its
  // placement, and its move when one is open.
  Status OpenStoredPlacement(const pb::StoreParams& stored, const pb::StoreParams& requested);
  // A new store: its map (OpenMap) and its first commit (Placement::Create).
  Status CreatePlacement(const pb::StoreParams& requested);
  // A new store's map: --map, or the one a start that committed nothing left when it fits, or
  // one built from a sample of the input (BuildMap).
  StatusOr<partitioner::PartitionMap> OpenMap();
  StatusOr<partitioner::PartitionMap> BuildMap();
  // The shards, the parts that work on them, and Tier 1 (its packed tier sized for the store).
  Status OpenShardsAndTier1(uint64_t expected_records);
  // Where the run starts in its input (pipeline/redo.h), and whether its last batch is redone.
  Status Resume();
  // Marks the input consumed whole (its identity moves from `current` to `consumed`).
  Status RecordInputConsumed();

  // ---- pipeline_batch.cc: one batch
  Status Process(std::unique_ptr<Batch> b);
  // Step 2: Tier 1 classifies the batch's updates.
  Status Classify(const std::vector<tier1::PageUpdate>& updates, std::vector<tier1::Classification>* classes,
                  std::vector<bool>* changed);
  // Step 3: the shards compare the pages routed to them; their matches.
  Status Compare(Batch& b, const std::vector<tier1::Classification>& classes, const std::vector<bool>& changed,
                 tier1::Tier2Matches* matches);
  // Step 4 (and step 5's staging beside it): Tier 1 applies and commits the batch with the
  // pipeline's progress.
  Status Commit(const Batch& b, const std::vector<tier1::PageUpdate>& updates,
                const std::vector<tier1::Classification>& classes, const tier1::Tier2Matches& matches);
  // The last committed batch again after a crash: the shard writes of the shards that missed it,
  // and its status lines.
  Status Redo(Batch& b);
  // Step 6: the batch's pages queried and their status lines written; repairs.
  Status WriteStatus(const Batch& b, const std::vector<tier1::Classification>& classes);
  Status SyncStatusFile() { return status_file_ != nullptr ? status_file_->Sync() : Status::Ok(); }

  // ---- pipeline_move.cc: the move between batches
  // A move's steps between batches (no shard write in flight while they run), while the copy's
  // rate cap lets them: kCredit, while the pacer's credit is positive and no batch waits; kIdle,
  // while no batch waits (the feed's input is idle); kSteps, PipelineOptions::move_steps_per_batch
  // of them. Then, once the move ended, MoveEnded.
  enum class MoveTurn { kCredit, kIdle, kSteps };
  Status AdvanceMove(MoveTurn turn, BatchQueue* queue, MovePacer* pacer);
  // The run goes on with the new map: the store's parameters, the summary, the feed.
  Status MoveEnded();
  // The rest of the move at once (the input's end), waiting for its rate cap.
  Status EndMove();
  bool moving() const { return move_ != nullptr && !move_->done(); }

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
  std::string dir_;
  StoreLayout layout_;
  // The most records a batch holds in this run: o_.batch_pages, less for a small file
  // (SmallInputBatchPages).
  uint32_t batch_pages_ = 0;

  // Where the pages are: the map whose cells pages are placed in, the map routed on, the shard of
  // a cell, and during a move both maps and whether it has flipped (pipeline/placement.h).
  std::unique_ptr<Placement> placement_;
  std::unique_ptr<StoreMove> move_;  // the store's move (of placement_), while and after it runs in this run
  bool move_ended_here_ = false;     // this run ended it: the drained shards go once the set closes
  std::vector<uint64_t> expected_postings_;  // per shard, estimated from the map's sample (when built here)
  std::string initial_order_;  // the new shards' first token order, from the map's sample (when built here)

  // The tiers.
  std::unique_ptr<tier1::GroupStore> owned_store_;  // when the run opened it (o_.groups null)
  tier1::GroupStore* store_ = nullptr;
  std::unique_ptr<ShardSet> shards_;
  std::unique_ptr<ShardSignatures> source_;
  std::unique_ptr<tier1::Tier1> tier1_;
  // Step 5 and the run's threads; declared after what its jobs use, so that it goes first.
  std::unique_ptr<ShardWrites> writes_;
  bool feed_open_ = false;     // the feed was told Opened and not yet Closing

  // The input: how far it is committed, and where this run starts in it (pipeline/redo.h).
  pb::Tier1Progress progress_;
  // The input's bytes hashed so far (the reading thread advances it to each batch's end).
  std::unique_ptr<PrefixDigest> digest_;
  bool resuming_ = false;      // the input is the store's interrupted one, continued
  uint64_t skip_ = 0;          // records before this index are already committed
  uint64_t redo_from_ = 0;     // records [redo_from_, skip_) form the batch to redo (when redo_)
  bool redo_ = false;
  std::vector<bool> lagging_;  // shards that missed the last committed batch

  // The reading thread's state while it cuts the input into batches.
  struct Reading {
    uint64_t first = 0;         // the first record read: the redo batch's, or the first new one
    uint64_t seen = 0;          // records the reader passed
    uint64_t next_record = 0, next_number = 0;
    std::unique_ptr<Batch> batch;  // being cut
    // Following a feed: how far the reader may read, when the last record was read, and when the
    // batch being cut got its first record.
    uint64_t limit = 0;
    SteadyClock::time_point last_read, batch_started;
    bool stopped = false;       // the feed stopped the run
  } reading_;
  Status tiers_status_;         // the tiers' thread's error, once it closed the queue

  std::unique_ptr<StatusFile> status_file_;
  PipelineSummary sum_;
};

}  // namespace neardup::pipeline::internal
