// The embedded two-tier pipeline: replays a crawl through Tier 1 and P Tier 2 shards in one
// process, through the same interfaces the cluster uses (only the transport differs there).
//
// Per batch of B records (in input order; the last record of a URL in a batch wins):
//   1. sign the records (all cores; document/crawl_signer.h) and place each content page with the
//      partition map: its home cell, and the shards it must be compared on;
//   2. Tier 1 classifies: unchanged or still similar to its group's representative -> stays;
//      new, changed or a former redirect -> Tier 2; a gone record (404/410) -> removed in step 4;
//   3. Tier 2: every shard compares the pages routed to it, in parallel (tier2/shard.h);
//   4. Tier 1 removes the gone pages, applies cases 1-3 and commits, with the pipeline's progress
//      and the Tier 2 removals it owes (gone pages, redirects, moves), atomically; meanwhile
//      the shards stage the batch's home pages (tier2/shard.h: Shard::Stage, most of the work of
//      storing them; nothing of it is visible or durable yet);
//   5. the shards store what they staged and drop what moved away or is gone, each tagged with
//      the batch number, in the background: step 6 and the next batch's step 2 go on meanwhile,
//      and see the batch as stored (Tier 1 reads its signatures from the batch, not the shards); the
//      next batch's step 3 waits until the shards answer with it (tier2/shard.h: Publish), not
//      for their commit records, which follow once Tier 1's commit of the batch is durable
//      (CommitPublished), while that step 3 runs; its step 4 waits for them;
//   6. the status of every page of the batch is queried (verification against the winner; a gone
//      page answers unknown), written to the status output, and groups past the rejection
//      threshold are repaired.
// A page's status line is written only after step 4 committed it: that is the acknowledgement.
// Only the last committed batch can be missing from a shard, which is what a restart redoes.
//
// A store is a collection that inputs add to, one after another (pipeline/store.h): its parameters
// (threshold, k, dims, routing, map) are recorded in its first commit and rule every later run;
// each input is known by its content. An input read to its end is recorded as consumed (run again,
// it is reported and nothing is done); any other file is the next crawl, whose records join the
// groups the store holds, as if the inputs had been one crawl: Tier 1 applies a batch as its
// records one after another (tier1/tier1.h), so a crawl cut into inputs, whose batches are cut
// elsewhere, ends with the same groups as one run over it (winners, kept by the rules once per
// batch, may differ; what batches still decide is in tier1/README.md, Input order).
//
// Restart: run again with the same store and the interrupted input (recognised by the bytes
// committed of it), the pipeline redoes step 5 of the last batch for any shard that had not seen
// it, writes that batch's status lines again (a crash may have lost them: the status file is
// synced before the next batch commits, so only the last batch's can be missing), then goes on
// after the last committed record; the result is the same as a run that never stopped.
//
// Rebalancing: a store whose move journal records a move (pipeline/rebalance_store.h, started
// with StoreRebalanceOptions::defer_move, or stopped by a crash) opens the shards of both maps,
// and the run moves the pages between its batches (pipeline/store_move.h: batches store on both
// maps' shards until the flip and compare on the map the move serves); it gives the move
// the share of its time pipeline.move_min_batch_share leaves, and all of it while the input is
// idle; a run over a finished file ends the move before it ends.
//
// The pipeline drives Tier 2 only through a ShardSet (pipeline/shard_set.h), which
// PipelineOptions::open_shards may supply: the seam a cluster implements over the network.
//
// Thread safety: RunPipeline is reentrant; it owns everything it opens.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/status.h"
#include "document/crawl_reader.h"
#include "document/signature.h"
#include "pipeline/ingest_feed.h"
#include "pipeline/shard_set.h"
#include "pipeline/store.h"
#include "pipeline/store_sizing.h"
#include "proto/config.pb.h"
#include "tier1/group_store.h"

namespace neardup::pipeline {

struct PipelineOptions {
  std::string input;           // crawl JSON Lines
  std::string store;           // directory: tier1/, shard-NNN/, map.pb; empty = a temporary one, removed after
  std::string map;             // optional partition map to use when the store has none
  std::string groups_out;      // optional: every page with its group, winner and status (JSON Lines)
  std::string status_out;      // optional: each processed page's status, per batch after its commit
  pb::NeardupConfig config;    // tier1, tier2, pipeline sections (defaults filled)
  double threshold = ConfigDefaults().baseline().threshold();
  SignerOptions signer;
  CrawlReaderOptions reader;
  int threads = 0;             // signing threads; 0 = one per core
  // B: the most records a batch holds. A file of fewer than kMinBatchesPerFile such batches is
  // cut into that many (SmallInputBatchPages).
  uint32_t batch_pages = ConfigDefaults().tier2().batch_pages();
  uint64_t max_records = 0;    // stop after this many input records (0 = all); for tests and crash drills
  bool progress = true;
  // Store parameters given explicitly (a flag, or a field set in a configuration file), by name,
  // with where they came from (pipeline/store.h): a store built with other values refuses them.
  GivenParams given;
  // The store stopped in the middle of another input: leave that input's rest unread and take this
  // one as the next crawl (refused while a shard still misses that input's last batch).
  bool abandon_interrupted = false;
  // How the pipeline reaches the store's shards (pipeline/shard_set.h): empty opens them in this
  // process (OpenLocalShardSet); a cluster passes a set whose shards are served elsewhere.
  ShardSetOpener open_shards;
  // A run fed by a growing input (pipeline/ingest_feed.h), not owned: input is read as the feed
  // allows, batches are cut short after `linger` idle or `max_batch_delay`, and the run ends when
  // the feed stops it (never recording the input as consumed). Null: input is a finished file.
  IngestFeed* feed = nullptr;
  std::chrono::milliseconds linger{200}, max_batch_delay{2000};
  // The store's group store, opened by the caller (GroupStoreOptionsFor) and kept open across
  // runs (a server answers from it between them); not owned. Null: the run opens DIR/tier1.
  tier1::GroupStore* groups = nullptr;
  // Called after each durable step of a move the run makes (StoreMoveOptions::on_step); false
  // stops the move, and the run with an error, there, as a crash would. For tests.
  std::function<bool(uint64_t step)> move_on_step;
  // > 0: a move takes exactly this many steps after each batch, and none while the input is idle,
  // instead of its share of the time (pipeline.move_min_batch_share). For tests that need a
  // move's steps where they put them.
  uint32_t move_steps_per_batch = 0;
};

struct PipelineSummary {
  // Non-empty: the input is one the store consumed whole before (under this name); nothing was
  // done but --out.
  std::string already_consumed;
  bool input_complete = false;     // the input was read to its end and recorded as consumed
  uint64_t records = 0;            // input records processed in this run
  uint64_t skipped_records = 0;    // already committed by an earlier run of this store
  uint64_t batches = 0;
  uint64_t new_pages = 0;          // content records of URLs without content before
  uint64_t unchanged = 0;
  uint64_t changed = 0;            // recrawls with changed content
  uint64_t fast_path = 0;          // of those, kept in their group by Tier 1
  uint64_t tier2_pages = 0;        // pages Tier 2 compared
  uint64_t tier2_sends = 0;        // (page, shard) comparisons
  uint64_t tier2_candidates = 0;   // pairs past the prefix and size filters (resident and in-batch)
  uint64_t tier2_verifications = 0;  // of those, past every filter: merged
  uint64_t tier2_pairs = 0;
  // (page, shard) comparisons answered through an identical page of the batch, and those whose
  // resident matches stopped at tier2.max_matches_per_page (tier2/README.md: Copies).
  uint64_t tier2_copies = 0, tier2_capped = 0;
  uint64_t redirects = 0, empty = 0, superseded = 0;
  // Gone records (404/410) applied: pages removed (or, when pages redirect to them, left as
  // placeholders without content), and records for URLs the store held no crawled page of.
  uint64_t gone = 0, gone_unknown = 0;
  uint64_t merges = 0, moves = 0, new_groups = 0, redirect_cycles = 0;
  uint64_t verifications = 0, rejections = 0, repairs = 0, repair_splits = 0;
  uint64_t reverifications = 0;  // of the verifications, of losers whose group's winner changed (Tier1::Reverify)
  // Kept sets (tier1/kept.cc): groups with one and the pages they keep, groups of 2+ members
  // without one (over tier1.kept_max_members), and what keeping them cost over the store's life.
  uint64_t kept_sets = 0, kept_pages = 0, kept_sets_missing = 0;
  uint64_t kept_decisions = 0, kept_compares = 0, kept_fetches = 0, kept_scans = 0, kept_recomputed = 0;
  uint64_t redone_shard_batches = 0;  // step 5 redone after a crash
  uint64_t status_lines_rewritten = 0; // the last committed batch's status lines, written again after a crash
  uint64_t groups = 0, multi_groups = 0, pages = 0;  // store totals at the end
  uint32_t shards = 0, cells = 0;
  // The partition map the store serves at the end (its generation: 1 when built, +1 per
  // rebalance), and a move this run ended (pipeline/rebalance_store.h): its pages copied, its
  // steps' time, and the records the run decided while the move was open.
  uint64_t map_version = 0;
  bool finished_move = false;
  uint64_t move_pages = 0, move_bytes = 0, move_steps = 0;
  double move_seconds = 0;
  uint64_t records_during_move = 0;
  // Resident pages per shard at the end, max / mean; the imbalance the map was built or rebalanced
  // for (its cell weights), and the drift since (imbalance - planned). Past
  // pipeline.rebalance_imbalance the summary says a rebalance would help (and a warning is logged).
  double shard_imbalance = 0, planned_imbalance = 0, imbalance_drift = 0, rebalance_imbalance = 0;
  // seconds: from start to the last batch's status lines (what records/s is over); output_seconds:
  // writing --out afterwards.
  double seconds = 0, output_seconds = 0, tier1_seconds = 0, tier2_compare_seconds = 0, tier2_apply_seconds = 0, query_seconds = 0;
  // The tiers' thread: CPU time it used (its share of the shard work included, the shard threads'
  // not), and time it waited for the signing side to hand over a batch (signing is the bottleneck
  // when this is large).
  double tiers_cpu_seconds = 0, tiers_wait_seconds = 0, tier1_cpu_seconds = 0, query_cpu_seconds = 0;
  // Step 5 runs in the background, overlapping step 6 and the next batch's step 2: how long the
  // tiers' thread waited for it (of tier2_apply_seconds).
  double tier2_apply_wait_seconds = 0;
  // The first half of step 5, staging (tier2/shard.h: Shard::Stage), runs while Tier 1 applies
  // the batch: how long it took, and how long the tiers' thread waited for it after Tier 1.
  double tier2_stage_seconds = 0, tier2_stage_wait_seconds = 0;
  // The shards at the end: resident pages, their in-memory index and page tables, and how often
  // their indexes were compacted or rebuilt during the run.
  uint64_t shard_pages = 0, shard_ram_bytes = 0, shard_compactions = 0, shard_rebuilds = 0;
  // Times the shards marked crowded prefix tokens frequent (tier2.crowded_token_pages), and the
  // pages that re-indexed.
  uint64_t shard_order_refreshes = 0, shard_refreshed_pages = 0;
  uint64_t shard_index_bytes = 0, shard_postings = 0;  // of shard_ram_bytes: the prefix index's share
  // Per shard: wall time its CompareBatch calls took, its Stage, Publish and Commit calls (storing),
  // and the pages it holds at the end. A shard far above the others is the long pole of steps 3-5.
  std::vector<double> shard_compare_seconds, shard_store_seconds;
  std::vector<uint64_t> shard_resident_pages;
  // Tier 1's record lookups (tier1/group_store.h: GroupStore::Txn::ReadStats): found in its cache,
  // read from the group store, known absent without a read, or (a Tier 2 match's group) answered
  // from the store's memory. Reads growing with the store mean tier1.cache_records is too small
  // for the working set.
  tier1::GroupStore::Txn::ReadStats tier1_page_reads, tier1_group_reads, tier1_member_reads;
  // The group store's LevelDB tables since the store was opened by this run (RowStore::TableStats).
  RowStore::TableStats tier1_tables;
  uint64_t peak_rss_bytes = 0;
  double pages_per_second() const { return seconds > 0 ? static_cast<double>(records) / seconds : 0; }
  // The paper's Fig. 8: share of changed pages Tier 1 resolved without Tier 2.
  double fast_path_share() const { return changed > 0 ? static_cast<double>(fast_path) / static_cast<double>(changed) : 0; }
};

// Errors: IoError for an unreadable input or store, or an output that cannot be written (before
// any work); FailedPrecondition for a parameter given explicitly that the store's disagrees with
// (named, pipeline/store.h), a --map that is not the store's or does not fit the parameters, another
// input while the store's interrupted one is unfinished (unless abandon_interrupted), or a store of
// an earlier version; InvalidArgument for bad options; whatever the tiers return.
StatusOr<PipelineSummary> RunPipeline(const PipelineOptions& options);

// One line per field, for the command line.
std::string FormatSummary(const PipelineSummary& s);

}  // namespace neardup::pipeline
