// Rebalancing a partition map as content drifts (objective 3 of the paper's Section 4: move as
// few pages as possible).
//
// Given the current map and a fresh sample:
//  1. Keep every boundary and move or swap whole cells between shards (RefineAssignment of
//     map_builder.h: the heaviest shard's best move or swap, while that helps, the imbalance is
//     above target and the moved share stays within max_move).
//  2. Only if the imbalance is still above target (a cell itself has grown too heavy, which
//     reassignment cannot fix), re-slice from the fresh sample (as the map was sliced: same
//     fine-grain ratio and cells per shard) and give each new cell to the
//     shard that already holds most of its pages, within capacity; the rest largest-first.
// The result says which happened, the imbalance before and after, and the share of pages that move.
//
// Thread safety: pure function.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "partitioner/length_sample.h"
#include "partitioner/partition_map.h"

namespace neardup::partitioner {

struct RebalanceOptions {
  double max_move = 0.1;          // share of pages step 1 may move
  double target_imbalance = 1.15; // re-slice only above this
  // ReassignCells onto another shard count: keep within max_move even when that cannot reach
  // target_imbalance (by default the change takes the budget it needs; see ReassignCells).
  bool resize_within_max_move = false;
};

struct CellMove {
  uint32_t from_cell, to_cell;        // cells of the old and the new map
  uint32_t from_shard, to_shard;
  double pages;                       // sample pages that take this move
};

struct RebalanceResult {
  PartitionMap map;                   // the new map (generation + 1)
  bool resliced = false;
  uint32_t cells_split = 0;           // ReassignOrSplitCells: cells of the old map split
  double imbalance_before = 0;        // the fresh sample under the old map
  double imbalance_after = 0;         // the fresh sample under the new map
  double moved_share = 0;             // share of sample pages whose shard changes
  // Share of the weight the plan could move: max_move, or more when ReassignCells raised it for
  // a shard-count change.
  double move_budget = 0;
  std::vector<CellMove> moves = {};   // aggregated, largest first
};

// InvalidArgument when the sample's dimensions differ from the map's; FailedPrecondition for an
// empty sample.
StatusOr<RebalanceResult> Rebalance(const PartitionMap& old_map, const LengthSample& fresh, const RebalanceOptions& options);

// Whole-cell reassignment onto `shards` shards (more than the map's: new, empty shards to fill;
// fewer: the shards from `shards` up are drained), keeping every cell's boundaries, so that no
// page changes cell and a store moves whole cells only. `cell_weight` is the load of each cell
// (e.g. its resident pages, or a sample's). Cells of drained shards go first, heaviest first, to
// the least-loaded remaining shard (they move whatever the budget); growing, the new shards are
// filled first, largest cell first, each staying on its shard while that has room (the mean times
// target_imbalance) and going to the least-loaded one otherwise, within max_move; then
// RefineAssignment with moves and swaps while the imbalance is above target_imbalance and the
// weight moved stays within max_move of the total.
// A shard-count change cannot be balanced within a small budget (a fifth shard needs a fifth of
// the pages), so unless options.resize_within_max_move, when the plan within max_move stays above
// target_imbalance, the budget is raised to what the change needs: the least share (bisected to
// 1/4096) whose plan reaches target_imbalance, or, when no budget does (cells too coarse), the
// balance the plan with no limit reaches. The result's move_budget says which budget was used.
// The result's map has generation + 1, `shards` shards and cell_weight as
// its weights; moves are per cell (from_cell == to_cell), imbalances and moved_share by weight.
// InvalidArgument for shards == 0, a cell_weight of another size than the map's cells or with a
// negative entry, or max_move outside [0, 1].
StatusOr<RebalanceResult> ReassignCells(const PartitionMap& old_map, const std::vector<double>& cell_weight,
                                        uint32_t shards, const RebalanceOptions& options);

// ReassignCells first (raising the budget for a shard-count change as it does), with the weights
// of `sample` (pages' vectors of the map's feature); when
// that leaves the imbalance above target_imbalance, re-slices: splits the heaviest cell that can be
// split in two at the median of its sample pages' last length (SplitCells: every other cell keeps
// its number and box, so only pages of split cells change cell), until the map has as many cells
// per shard as it was built with, then one cell at a time with ReassignCells after each split,
// while the imbalance is above target, up to `max_cells` cells (0: twice the map's cells per shard
// times `shards`). Keeps the split map only if it is better balanced, and drops the cuts of cells
// whose parts all ended on one shard when that costs no balance. Moves name the old map's cell
// (from_cell) and the new map's (to_cell). Errors: ReassignCells', InvalidArgument for a sample of
// other dimensions, FailedPrecondition for an empty one.
StatusOr<RebalanceResult> ReassignOrSplitCells(const PartitionMap& old_map, const LengthSample& sample, uint32_t shards,
                                               const RebalanceOptions& options, uint32_t max_cells = 0);

}  // namespace neardup::partitioner
