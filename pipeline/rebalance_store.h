// Rebalancing a store: a new partition map applied to the pages the store holds, by moving whole
// cells between its Tier 2 shards through the shards' own write path (ShardSet: stage -> publish
// -> commit), resumable after a crash at any point.
//
// The plan: every resident page's cell comes from Tier 1's page records (home_cell); a sample of
// them (by URL hash) weighs the cells, and partitioner::ReassignCells gives cells to the new
// shard count (drained shards first, then moves and swaps within max_move, or within what a
// shard-count change needs to reach the target when that is more). Cells keep their
// boundaries, so no page changes cell and Tier 1's records stay as they are. Only when that
// cannot reach target_imbalance (cells too coarse for the shards, as after growing far), the
// sampled pages' signatures are read and partitioner::ReassignOrSplitCells splits the heaviest
// cells (every other cell keeps its number); the move then first relabels the split cells' pages
// in Tier 1 (pipeline/store_move.h). The move:
//   1. the new map is written beside the old one (DIR/map-next.pb; the old one is kept as
//      DIR/map-prev.pb until the move ends) and the journal (meta row "move", pb::MoveJournal,
//      state COPY) is committed;
//   2-4. the copy, the flip and the drop (pipeline/store_move.h): at once here, or, with
//      defer_move, between the batches of the store's next run, which decides batches meanwhile.
// Until the flip the old map is served and every page is on its old shard; after it, on its new
// one (a page may be on both meanwhile, never on neither), so routing a batch on the served map
// finds every pair, while the move stands still or batches run between its steps (which write
// where pipeline/store_move.h says, to keep it so). A start that finds the
// journal (neardup rebalance --store, or neardup run) finishes the move: step 2 again from the
// start (a signature stored twice replaces itself), or steps 3-4 again after the flip.
// Every shard write carries the store's committed batch count as its sequence, so a shard that
// took part in a move is as up to date as the batches it saw.
//
// Thread safety: one rebalance or run on a store at a time (the group store's lock ensures it).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "partitioner/rebalance.h"
#include "pipeline/placement.h"
#include "pipeline/shard_set.h"
#include "pipeline/store_move.h"
#include "pipeline/store.h"
#include "proto/config.pb.h"
#include "tier1/group_store.h"

namespace neardup::pipeline {

struct StoreRebalanceOptions {
  std::string dir;
  pb::NeardupConfig config;       // shard options and the group store's; the store's parameters rule
  uint32_t shards = 0;            // the shard count after the move; 0: as many as now
  // Share of resident pages moves and swaps may move. A change of the shard count moves at least
  // what it needs to reach target_imbalance (or the best balance the cells allow), beyond this
  // when need be: the report's move_budget (partitioner::ReassignCells).
  double max_move = 0.1;
  double target_imbalance = 1.05; // moves and swaps stop at this (on the sample: headroom for 1.10 on all pages)
  // Share of resident pages (by URL hash) that weighs the cells; raised so that at least 20000
  // pages are sampled (all of a smaller store).
  double sample_rate = 0.05;
  bool dry_run = false;           // plan and report only
  // When whole cells cannot reach target_imbalance: split cells (partitioner::ReassignOrSplitCells,
  // from the sampled pages' signatures), relabel their pages in Tier 1 and move the parts.
  bool reslice = true;
  // The copy and the drop write at most this many signature megabytes per second (0: as fast as
  // the shards take them), so that a store that serves meanwhile keeps its shards' time.
  double max_mb_per_s = 0;
  // Plan and write the move's journal only: the store's next run (neardup run, or a Tier 1
  // server's batch loop) moves the pages between its batches (pipeline/store_move.h).
  bool defer_move = false;
  ShardSetOpener open_shards;     // empty: OpenLocalShardSet
  // Called after each durable step of a move (the journal written, each shard write, the flip, the
  // rename), counting from 1 in each process. Returning false stops the move there, as a crash
  // would (RebalanceStore then returns Unavailable); the crash test kills the process there instead.
  std::function<bool(uint64_t step)> on_step;
};

struct StoreRebalanceReport {
  bool resumed = false;           // a move the journal recorded was finished first
  bool applied = false;           // a move was made (not dry-run, some cell moved)
  uint64_t generation_before = 0, generation_after = 0;
  uint32_t shards_before = 0, shards_after = 0;
  uint64_t resident_pages = 0;
  uint64_t sampled_pages = 0;
  double sample_rate = 0;
  // Resident pages per shard, max / mean: under the old map, and under the new one.
  double imbalance_before = 0, imbalance_after = 0;
  std::vector<uint64_t> shard_pages_before, shard_pages_after;
  std::vector<partitioner::CellMove> moves;  // cells that move, pages = resident pages in them
  double estimated_pages = 0;     // pages to move, estimated from the sample
  uint64_t planned_pages = 0;     // pages in the moving cells (exact)
  uint64_t planned_bytes = 0;     // their signature bytes, counted as they moved (0 on dry run)
  uint64_t pages_moved = 0;       // signatures copied to their new shard by this process
  uint64_t bytes_moved = 0;
  uint64_t steps = 0;             // durable steps this process took (on_step's calls)
  double seconds = 0;
  double throttled_seconds = 0;   // of those, waited to keep under max_mb_per_s
  bool dry_run = false;
  bool deferred = false;          // defer_move: the journal is written, no page moved yet
  uint32_t cells_split = 0;       // cells split because whole cells could not reach the target
  uint64_t pages_relabelled = 0;  // Tier 1 records given a split cell's part by this process
  // The plan (not set when a move was resumed): options.max_move; move_budget, the share of the
  // sampled pages it could move (more than max_move when a shard-count change needs more to reach
  // the target: partitioner::ReassignCells); the target and the plan's imbalance on the sample,
  // which the target is checked against.
  double max_move = 0, move_budget = 0, target_imbalance = 0, planned_imbalance = 0;
  bool target_reached = false;
  // Empty, or why the target was out of reach, and that the imbalance after is above the one
  // before when it is (one or two sentences).
  std::string note;
};

// The report as one JSON object (no newline): map_version_before/after, shards_before/after,
// imbalance_before/after, cells_moved, cells_split, pages_moved, bytes_moved, pages_planned,
// pages_estimated, pages_relabelled, seconds, throttled_seconds, steps, dry_run, resumed; and,
// unless resumed, max_move, move_budget, target_imbalance, planned_imbalance, target_reached,
// note.
std::string RebalanceReportJson(const StoreRebalanceReport& r);

// Plans and (unless dry_run) applies a rebalance to the store in options.dir, finishing an
// interrupted move first. Errors: NotFound when the directory holds no store; FailedPrecondition
// for a store with no parameters, one whose last batch is not on every shard yet (run its input
// again first), or a page Tier 1 places on a shard that does not hold it; InvalidArgument for bad
// options; the group store's and the shards' errors.
StatusOr<StoreRebalanceReport> RebalanceStore(const StoreRebalanceOptions& options);

// RebalanceStore on a group store the caller holds open, writable (a Tier 1 server between two
// runs of its batch loop: no run may be open on it meanwhile); options.dir names the store.
// Errors as RebalanceStore's, but NotFound.
StatusOr<StoreRebalanceReport> RebalanceOpenStore(tier1::GroupStore* groups, const StoreRebalanceOptions& options);

// If the store records an interrupted move, finishes it at once (the shards opened with `open`, or
// locally; the group store already open, writable); if it records none, removes what an ended or
// never-journaled move left behind (map-next.pb, drained shards' directories). *finished says
// whether there was one; *report, when not
// null, gets the move's generations, shards and counts. Errors: as RebalanceStore's.
Status FinishInterruptedMove(const StoreLayout& layout, tier1::GroupStore* groups, const pb::NeardupConfig& config,
                             const ShardSetOpener& open, bool* finished, StoreRebalanceReport* report = nullptr,
                             const std::function<bool(uint64_t)>& on_step = {});

// The batches Tier 1 has committed (0 for a new store). Corruption for an unreadable record.
StatusOr<uint64_t> CommittedBatches(const tier1::GroupStore& groups);

// The shards (of the first `count`) that have not committed every batch Tier 1 did: a run
// stopped between Tier 1's commit and theirs, and the next run redoes the rest on them. Each note
// says which batch the shard committed of how many.
struct LaggingShard {
  uint32_t shard;
  std::string note;
};
StatusOr<std::vector<LaggingShard>> LaggingShards(const tier1::GroupStore& groups, const ShardSet& shards,
                                                  uint32_t count);

// Where a stopped store's pages are (neardup check): every page Tier 1 says has a signature is
// held by the shard the served map gives its cell, and the shards hold no other page.
struct PlacementReport {
  uint64_t pages = 0;                     // Tier 1 pages with a signature
  std::vector<uint64_t> shard_pages;      // resident pages each shard holds
  std::vector<uint64_t> expected_pages;   // pages the map places on each shard
  double imbalance = 0;                   // max / mean of shard_pages
  // Per shard, its resident pages over the mean; and the imbalance the map was built or
  // rebalanced for (its cell weights), and the drift: imbalance - planned.
  std::vector<double> shard_factor;
  double planned_imbalance = 0, drift = 0;
  uint64_t map_generation = 0;
  uint64_t violation_count = 0;
  std::vector<std::string> violations;    // the first 100
  // Shards that have not committed every batch Tier 1 did (a run stopped between Tier 1's commit
  // and theirs; the next run redoes those batches on them): their placement is not checked.
  std::vector<std::string> notes;
};
// Opens the store read-only. Errors: as OpenStoreReadOnly's and the shards'.
StatusOr<PlacementReport> CheckPlacement(const StoreLayout& layout, pb::NeardupConfig config);

// The imbalance the map was built for: its cell weights summed per shard, max / mean (1 without).
double PlannedImbalance(const partitioner::PartitionMap& map);

}  // namespace neardup::pipeline
