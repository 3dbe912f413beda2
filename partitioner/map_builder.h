// Building and judging partition maps (the paper's Sections 4.1-4.3 and 6.1).
//
// BuildPartitionMap slices dimension 0 of a sample with the 1D balancer (balanced_ranges.h:
// SpotSigs fine-grain intervals at the threshold, merged into ranges of about equal weight), then
// dimension 1 inside each of those ranges by the pages in it, and so on: a tree whose leaves
// (cells) hold about equally many pages although the dimensions are strongly correlated (every
// dimension grows with the page's length, so a plain grid would pile pages on its diagonal). Cells
// go to shards greedily largest-first (LPT: each cell, heaviest first, to the least-loaded
// shard), which keeps the heaviest shard within one cell of the mean. There are more cells
// than shards (cells_per_shard) so LPT has room to balance; the fine-grain rule caps how finely
// a dimension can be cut, which is why one dimension cannot balance a spiky length distribution
// and three can.
//
// Thread safety: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/config.h"
#include "common/status.h"
#include "partitioner/length_sample.h"
#include "partitioner/partition_map.h"

namespace neardup::partitioner {

// Defaults, where the configuration has the option: its (proto/config.proto).
struct MapBuildOptions {
  uint32_t dims = ConfigDefaults().shingle().dims();
  uint32_t shards = 64;
  double threshold = ConfigDefaults().baseline().threshold();
  pb::PartitionMap::Routing routing = pb::PartitionMap::EXACT_L1;
  double rho = ConfigDefaults().pipeline().rho();  // RHO_BOX only, >= 1
  // Cells per shard (at least 64 cells), before the fine-grain cap.
  uint32_t cells_per_shard = ConfigDefaults().pipeline().cells_per_shard();
  uint32_t shingle_k = ConfigDefaults().shingle().k();
  // Ratio of the SpotSigs fine-grain rule (consecutive interval left bounds p_i/p_{i+1} < ratio).
  // 0 = the threshold, as in the paper. Closer to 1 allows thinner intervals: better balance under
  // length spikes, more cells contacted per page. 0.95 measured best on the synthetic crawl
  // (experiments/README.md).
  double fine_grain = 0.95;
  // Shard assignment: false = largest-first (best balance, what the figures use); true = runs
  // of consecutive cells (cells are numbered in slice-tree order, so neighbours in length space
  // share a shard) balanced by weight with BalanceRanges: a page's route then spans fewer
  // shards, which is what a pipeline with few shards wants.
  bool contiguous_shards = false;
  // Shard assignment spread over the length order (ignored when contiguous_shards is set):
  // the cells, ordered by the mean total length of their pages, are cut into bands of about one
  // cell per shard and each shard gets one cell of every band (largest-first by load within the band, then swaps inside
  // bands). Every shard then holds about the same share of every length region, so when the
  // length distribution drifts (a length spike grows, pages get longer) every shard's load
  // changes alike and the imbalance stays put. Costs communication: a page's route spans more
  // shards than with contiguous runs. Wants more cells per shard (e.g. 16) to have bands.
  bool spread_shards = false;
};

// The feature a routing mode needs: EXACT_L1 bounds shingle counts, RHO_BOX word lengths.
pb::PartitionMap::Feature FeatureFor(pb::PartitionMap::Routing routing);

// `page_load`, when given, is per sampled page (in sample order) the load it puts on its shard,
// for assigning cells to shards: a cell's load is the sum over its pages. Without it every page
// weighs 1. Slicing always balances pages; only the assignment sees the loads.
// InvalidArgument for bad options, a sample of another dimension count, or a page_load of another
// size or with a negative or non-finite entry; FailedPrecondition for an empty sample.
StatusOr<PartitionMap> BuildPartitionMap(const LengthSample& sample, const MapBuildOptions& options,
                                         std::span<const double> page_load = {});

// Greedy largest-first assignment of weighted cells to shards, then improved by
// RefineAssignment (moves and swaps); empty cells are spread round-robin over the shards in
// ascending load order.
std::vector<uint32_t> AssignCellsLargestFirst(const std::vector<double>& cell_weight, uint32_t shards);

// Each shard gets about one cell of every band of the length order (MapBuildOptions::
// spread_shards): the non-empty cells, sorted by `cell_length` (the mean total length of their
// pages; cell index order when it is empty), are cut into floor(non-empty cells / shards) bands
// of about equal weight; inside a band, cells go heaviest first to the least-loaded shard that
// has no cell of the band yet (once every shard has one, the next round starts); then
// RefineAssignment with exchanges inside a band only. Empty cells as in AssignCellsLargestFirst.
// Fewer non-empty cells than 2 shards' worth: one band, i.e. largest-first.
std::vector<uint32_t> AssignCellsSpread(const std::vector<double>& cell_weight, uint32_t shards,
                                        const std::vector<double>& cell_length = {});

struct RefineOptions {
  // Total weight that may change shard (a swap counts both cells); infinite by default.
  double move_budget = 1e300;
  // Stop as soon as max / mean load is at or below this (0: go on while it helps).
  double target_imbalance = 0;
  bool moves = true;   // move one cell from the heaviest shard to another
  bool swaps = true;   // exchange a cell of the heaviest shard with a lighter one of another
  // If non-empty (one entry per cell), a swap must keep both cells in their band, and moves are
  // off: every shard keeps its number of cells per band.
  std::vector<uint32_t> band = {};
  // When no single move or swap helps: exchange up to two cells each way (2 for 0, 1 or 2 cells;
  // 1 for 2), which levels shards to within a page or two when every cell is far heavier.
  bool compound = true;
  size_t max_steps = 100000;
};

// Local search on a cell -> shard assignment, minimizing the heaviest shard's load: each step
// takes the heaviest shard and, over every other shard, the move of one of its cells or the
// swap of one of its cells with a lighter one that leaves the larger of the two shards' new
// loads smallest; it is taken only if that is below the heaviest load (so the sorted load vector
// strictly falls and the search ends); then, if none helps, the best compound exchange (see
// RefineOptions::compound). Used by the map builder (no budget) and by rebalancing
// (a move budget and a target). Cells of weight <= 0 never move. Returns the weight moved.
// Thread safety: pure apart from *shard_of.
double RefineAssignment(const std::vector<double>& cell_weight, std::vector<uint32_t>* shard_of, uint32_t shards,
                        const RefineOptions& options);

// Consecutive cells to each shard, the heaviest shard as light as contiguity allows
// (balanced_ranges.h over cell indices); every shard gets at least one cell when there are
// enough cells.
std::vector<uint32_t> AssignCellsContiguous(const std::vector<double>& cell_weight, uint32_t shards);

struct MapEvaluation {
  uint64_t pages = 0;
  std::vector<double> shard_pages;       // sample pages whose home is on each shard
  double imbalance = 0;                  // max / mean of shard_pages (Fig. 4)
  double mean_cells_contacted = 0;       // per routed page
  double mean_shards_contacted = 0;
  double communication_reduction = 0;    // 1 - page-to-shard sends / (pages * shards) (Fig. 5)
};

// Homes and routes every sample page through `map` (whose feature picks the vector).
MapEvaluation EvaluateMap(const PartitionMap& map, const LengthSample& sample);

// max / mean; 1 for no load at all.
double Imbalance(const std::vector<double>& load);

struct RhoEstimate {
  double percentile = 0;  // of the per-page delta and epsilon used
  double delta = 0;       // max_i |N L(A_i) / L(A) - 1|, at the percentile
  double epsilon = 0;     // | |A^k| / L(A) - 1 |, at the percentile
  double rho = 1;         // (1+delta)(1+epsilon) / ((1-delta)(1-epsilon)), at least 1
  uint64_t pages = 0;
};

// Section 4.2's estimate of the enlarging factor from a sample (pages without words skipped).
// percentile in (0, 100]. delta and epsilon are capped at 0.95 so rho stays finite.
RhoEstimate EstimateRho(const LengthSample& sample, double percentile);

}  // namespace neardup::partitioner
