// StoreMove: a store's move from one partition map to another (pipeline/rebalance_store.h plans
// it and writes its journal), carried out one durable step at a time, so that a run can go on
// deciding batches between two steps. Implemented in rebalance_store.cc, beside the plan, with
// which it shares the journal's and the maps' files.
//
// The new map's cells are the old map's, or refine them (partitioner::SplitCells: a split cell
// keeps its number for its lowest part, its other parts are new cells). Cells are the new map's
// throughout: a part's old shard is its parent cell's (OldShard).
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
// is why their writes and reads go where this class says while the move is open:
//   - a home page is stored on its shard under the served map (ServedShard) and, until the flip,
//     on its shard under the other map as well: the source stays complete and current, so the old
//     map is exact until the flip, and a destination has every page of its new cells by then;
//   - a removal goes to the page's shard under both maps, until the move ends; and from the flip
//     on, a page stored in a moved cell is removed from its old shard as well (ClearsOldShard: the
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
// shards hold every batch Tier 1 committed). flipped(), ServedShard(), StoreShards(),
// RemovalShards() and the maps may be read from any thread meanwhile (a reader that asked
// ServedShard just before the flip may read the source's version of a page once more).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "partitioner/partition_map.h"
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
  // The move the store's journal records, at the step it reached. NotFound when it records none;
  // Corruption for an unreadable journal, a missing map, or a new map that does not refine the
  // old one (partitioner::CellParents).
  static StatusOr<std::unique_ptr<StoreMove>> Open(const StoreLayout& layout, tier1::GroupStore* groups,
                                                   StoreMoveOptions options);

  const pb::MoveJournal& journal() const { return j_; }
  const partitioner::PartitionMap& before() const { return before_; }
  const partitioner::PartitionMap& after() const { return after_; }
  uint32_t shard_count() const { return std::max(before_.shards(), after_.shards()); }
  bool flipped() const { return flipped_.load(std::memory_order_acquire); }
  bool done() const { return done_.load(std::memory_order_acquire); }

  // The shard that holds `cell`'s pages under the old map: its parent cell's. `cell` must be one
  // of the new map's cells (so must every cell below).
  uint32_t OldShard(uint32_t cell) const { return before_.ShardOf(parent_[cell]); }
  // The shard that holds every page of `cell` now: the old map's until the flip, the new one's
  // from then on.
  uint32_t ServedShard(uint32_t cell) const { return flipped() ? after_.ShardOf(cell) : OldShard(cell); }
  // Where a batch stores a home page of `cell` (out[0] is ServedShard), and removes one from;
  // returns how many of out[0..1] are set.
  int StoreShards(uint32_t cell, uint32_t out[2]) const;
  int RemovalShards(uint32_t cell, uint32_t out[2]) const;
  // Whether a page a batch stores in `cell` is also to be removed from its old shard (from the
  // flip to the end, for a cell that changed shard): the caller adds a removal of it in `cell`,
  // which RemovalShards sends to both shards (the new one keeps it: stored wins).
  bool ClearsOldShard(uint32_t cell) const { return flipped() && !done() && OldShard(cell) != after_.ShardOf(cell); }

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
  StoreMove(const StoreLayout& layout, tier1::GroupStore* groups, StoreMoveOptions o, pb::MoveJournal j,
            partitioner::PartitionMap before, partitioner::PartitionMap after, std::vector<uint32_t> parent);
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
  StoreMoveOptions o_;
  pb::MoveJournal j_;
  partitioner::PartitionMap before_, after_;
  std::vector<uint32_t> parent_;    // the old map's cell holding each new one (CellParents)
  std::vector<bool> split_;         // old cells split into parts
  Phase phase_ = Phase::kCopy;
  std::atomic<bool> flipped_{false}, done_{false};
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
