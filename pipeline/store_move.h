// StoreMove: a store's move from one partition map to another (pipeline/rebalance_store.h plans
// it and writes its journal), carried out one durable step at a time, so that a run can go on
// deciding batches between two steps. Implemented in rebalance_store.cc, beside the plan. The
// move's maps, whether it has flipped and where a batch's pages go meanwhile are the store's
// Placement's (pipeline/placement.h), which the flip and the end change.
//
// The new map's cells are the old map's, or refine them (partitioner::SplitCells: a split cell
// keeps its number for its lowest part, its other parts are new cells). Cells are the new map's
// throughout: a part's old shard is its parent cell's (Placement::OldShard).
//
// The steps: the relabel, when cells were split (pages Tier 1 places in a split cell get the
// part their signature, read from its shard, falls in: one Tier 1 commit per step_pages; a batch
// places the pages it stores in the new map's cells itself), the copy (each destination shard
// stages, publishes and commits the signatures of pages in the cells it takes, read from their
// source shard, up to step_pages at a time), the flip
// (one Tier 1 commit: the store's parameters name the new map, the journal says DROP), the
// rename (map-next.pb becomes map.pb), the drop (each source removes what left it, step_pages at
// a time), and the end (the journal and map-prev.pb go; drained shards' directories too, unless
// the caller still holds them open).
//
// Batches between the steps keep every page findable, and meet no stale version of one, which
// is why their writes and reads go where the Placement says while the move is open:
//   - a home page is stored on its shard under the served map (Placement::ShardOf) and, until the flip,
//     on its shard under the other map as well: the source stays complete and current, so the old
//     map is exact until the flip, and a destination has every page of its new cells by then;
//   - a removal goes to the page's shard under both maps, until the move ends; and from the flip
//     on, a page stored in a moved cell is removed from its old shard as well (Placement::ClearsOldShard: the
//     caller adds the removal): a shard compares a page routed to it for one of its cells against everything it
//     holds, and the moved-out pages it keeps until the drop must be current;
//   - Tier 2 compares route on the served map, and Tier 1 reads a signature from the shard it
//     gives: its shards hold every page, in its current version. A batch routed before the flip
//     and compared after it is routed again. A destination's copies are current too, so a page
//     routed there for another cell may meet a page on both its shards: the caller counts such a
//     pair once.
// A step rechecks each page against Tier 1's committed record when batches ran since the step's
// list was drawn: the copy skips pages that left their moving cell, the drop keeps pages that now
// belong on the source.
//
// Thread safety: one thread calls Step and Finish, with no shard write of a batch in flight (the
// shards hold every batch Tier 1 committed). done() and the Placement's readers may be called from
// any thread meanwhile (pipeline/placement.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "partitioner/partition_map.h"
#include "pipeline/placement.h"
#include "pipeline/shard_set.h"
#include "pipeline/store.h"
#include "proto/tier1.pb.h"
#include "tier1/group_store.h"

namespace neardup::pipeline {

struct StoreMoveOptions {
  uint32_t step_pages = 10000;   // signatures a copy or drop step writes to one shard
  double max_mb_per_s = 0;       // the copy's rate cap (Due); 0: none
  // The end removes drained shards' directories. False when the caller holds them open: it
  // removes them once it closed them (RemoveDrainedShards).
  bool remove_drained = true;
  // Called after each durable step, counting from 1 in this object; false stops the move there,
  // as a crash would (Step returns Unavailable; the journal finishes it later).
  std::function<bool(uint64_t step)> on_step;
};

class StoreMove {
 public:
  // The move `placement` holds (Placement::Load found the store's journal), at the step it
  // reached; its steps change the placement (the flip, the end) through the store's state.
  // `placement` is not owned and must outlive this. NotFound when it holds no move.
  static StatusOr<std::unique_ptr<StoreMove>> Open(const StoreLayout& layout, tier1::GroupStore* groups,
                                                   Placement* placement, StoreMoveOptions options);

  bool done() const { return placement_->done(); }

  // Whether the copy's rate cap lets the next step run now; else *wait_seconds says how long to
  // wait. Always true outside the copy.
  bool Due(double* wait_seconds) const;

  // One durable step (a step may first draw its phase's list of pages from Tier 1). `sequence`:
  // the batches Tier 1 committed, written with each shard write. Errors: Unavailable when on_step
  // stopped it; FailedPrecondition for a page Tier 1 places in a moving cell that its source does
  // not hold; Corruption for a page outside the maps; the group store's and the shards' errors.
  // Nothing to do once done().
  Status Step(ShardSet* shards, uint64_t sequence);
  // Steps until done, waiting for the rate cap. Errors: Step's.
  Status Finish(ShardSet* shards, uint64_t sequence);

  struct Counts {
    uint64_t pages_moved = 0, bytes_moved = 0;  // signatures copied by this object
    uint64_t pages_dropped = 0;
    uint64_t pages_relabelled = 0;              // Tier 1 records given a split cell's part
    uint64_t steps = 0;
    double seconds = 0;                         // in Step
    double throttled_seconds = 0;               // Finish's waits for the rate cap
  };
  const Counts& counts() const { return counts_; }

 private:
  StoreMove(const StoreLayout& layout, tier1::GroupStore* groups, Placement* placement, StoreMoveOptions o);
  Status Durable();                 // a step taken: counted, on_step asked
  enum class Phase { kRelabel, kCopy, kFlip, kRename, kDrop, kEnd, kDone };
  // The phase's pages: those Tier 1 places in cells that change shard, in runs of one destination
  // (the copy) or one source (the drop); the relabel's: those in split cells, by source.
  Status DrawList(uint64_t sequence, bool by_destination);
  Status RelabelStep(ShardSet* shards);
  // Once the steps took the whole list: on to `next`.
  void EndListIfDone(Phase next);
  Status CopyStep(ShardSet* shards, uint64_t sequence);
  Status Flip();
  Status DropStep(ShardSet* shards, uint64_t sequence);
  Status End();

  struct Entry {
    uint32_t from, to;
    std::string url;
  };

  StoreLayout layout_;
  tier1::GroupStore* groups_;
  StorePlacementState state_;
  Placement* placement_;
  StoreMoveOptions o_;
  Phase phase_ = Phase::kCopy;
  // The current phase's pages, drawn from Tier 1 at its first step, in (shard, URL) order, and how
  // far the steps got; the batches Tier 1 had committed when they were drawn.
  std::vector<Entry> list_;
  bool listed_ = false;
  size_t next_ = 0;
  uint64_t listed_at_ = 0;
  uint64_t copied_bytes_ = 0;
  std::chrono::steady_clock::time_point copy_start_;
  Counts counts_;
};

// Removes the directories of shards `from` and up that the store's map no longer has (drained by
// a move whose end left them to the caller). Errors: IoError.
Status RemoveDrainedShards(const StoreLayout& layout, uint32_t from);

}  // namespace neardup::pipeline
