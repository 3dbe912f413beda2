// Building and judging partition maps (the paper's Sections 4.1-4.3 and 6.1).
//
// BuildPartitionMap slices dimension 0 of a sample with the 1D balancer (balanced_ranges.h:
// SpotSigs fine-grain intervals at the threshold, merged into ranges of about equal weight), then
// dimension 1 inside each of those ranges by the pages in it, and so on: a tree whose leaves
// (cells) hold about equally many pages although the dimensions are strongly correlated (every
// dimension grows with the page's length, so a plain grid would pile pages on its diagonal). Cells
// go to machines greedily largest-first (LPT: each cell, heaviest first, to the least-loaded
// machine), which keeps the heaviest machine within one cell of the mean. There are more cells
// than machines (cells_per_machine) so LPT has room to balance; the fine-grain rule caps how finely
// a dimension can be cut, which is why one dimension cannot balance a spiky length distribution
// and three can.
//
// Thread safety: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "partitioner/length_sample.h"
#include "partitioner/partition_map.h"

namespace neardup {

struct MapBuildOptions {
  uint32_t dims = 3;
  uint32_t machines = 64;
  double threshold = 0.9;
  pb::PartitionMap::Routing routing = pb::PartitionMap::EXACT_L1;
  double rho = 1.0;                 // RHO_BOX only, >= 1
  uint32_t cells_per_machine = 6;   // cells per machine (at least 64 cells), before the fine-grain cap
  uint32_t shingle_k = 5;
  // Ratio of the SpotSigs fine-grain rule (consecutive interval left bounds p_i/p_{i+1} < ratio).
  // 0 = the threshold, as in the paper. Closer to 1 allows thinner intervals: better balance under
  // length spikes, more partitions contacted per page. 0.95 measured best on the synthetic crawl
  // (experiments/README.md).
  double fine_grain = 0.95;
  // Machine assignment: false = largest-first (best balance, what the figures use); true = runs
  // of consecutive cells (cells are numbered in slice-tree order, so neighbours in length space
  // share a machine) balanced by weight with BalanceRanges: a page's route then spans fewer
  // machines, which is what a pipeline with few shards wants.
  bool contiguous_machines = false;
};

// The feature a routing mode needs: EXACT_L1 bounds shingle counts, RHO_BOX word lengths.
pb::PartitionMap::Feature FeatureFor(pb::PartitionMap::Routing routing);

// InvalidArgument for bad options or a sample of another dimension count; FailedPrecondition for
// an empty sample.
StatusOr<PartitionMap> BuildPartitionMap(const LengthSample& sample, const MapBuildOptions& options);

// Greedy largest-first assignment of weighted cells to machines, then improved by moving or
// swapping cells between the heaviest and the lightest machine while that helps; empty cells are
// spread round-robin over the machines in ascending load order.
std::vector<uint32_t> AssignCellsLargestFirst(const std::vector<double>& cell_weight, uint32_t machines);

// Consecutive cells to each machine, the heaviest machine as light as contiguity allows
// (balanced_ranges.h over cell indices); every machine gets at least one cell when there are
// enough cells.
std::vector<uint32_t> AssignCellsContiguous(const std::vector<double>& cell_weight, uint32_t machines);

struct MapEvaluation {
  uint64_t pages = 0;
  std::vector<double> machine_pages;     // sample pages whose home is on each machine
  double imbalance = 0;                  // max / mean of machine_pages (Fig. 4)
  double mean_cells_contacted = 0;       // per routed page
  double mean_machines_contacted = 0;
  double communication_reduction = 0;    // 1 - page-to-machine sends / (pages * machines) (Fig. 5)
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

}  // namespace neardup
