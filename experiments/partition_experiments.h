// The partitioner's figures (the paper's Fig. 4, Fig. 5, Section 6.1's stability, and the recall
// lost to routing), computed in-process on a crawl and written as CSV.
//
// Every experiment signs the crawl once with six sub-dictionaries and folds them into 1, 2 and
// 3 dimensions (SubDictionary(h, N) = mix(h) mod N, so mod 6 folds exactly onto mod 2 and mod 3).
//
// Thread safety: each function is reentrant.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "document/crawl_signer.h"

namespace neardup::experiments {

struct PartitionExperimentOptions {
  std::string input;                     // crawl JSON Lines
  std::string csv;                       // output CSV path
  std::vector<uint32_t> shards = {2, 4, 8, 16, 32, 64};
  std::vector<double> thresholds = {0.5, 0.6, 0.7, 0.8, 0.9};
  std::vector<double> rhos = {1.0, 1.1, 1.2, 1.3};
  double threshold = 0.9;                // where one threshold is needed
  uint32_t cells_per_shard = 6;
  double fine_grain = 0.95;              // 0 = the threshold (the paper's rule)
  size_t max_eval_pages = 200000;        // routing evaluations use at most this many pages
  int threads = 0;
  // Cell -> shard assignment: "largest-first" (the default), "spread" (every shard one cell
  // of each band of the length order) or "contiguous" (runs of consecutive cells); the stability
  // experiment takes each of `assignments`.
  std::string assignment = "largest-first";
  std::vector<std::string> assignments = {"largest-first"};
  // Stability: crawls of successive epochs (gen-crawl --epoch, --length-drift); the map is trained
  // on `input` and judged on each of these whole (kind "crawl_epochs"), besides the two kinds
  // computed from `input` alone.
  std::vector<std::string> epoch_inputs;
  // Stability: which kinds to compute ("same_distribution", "drifted_lengths", "crawl_epochs").
  std::vector<std::string> kinds = {"same_distribution", "drifted_lengths", "crawl_epochs"};
  // If set, each crawl's signed length vectors are kept here (keyed by the crawl's path, size and
  // modification time) and read back instead of signing the crawl again. Not for the recall
  // experiment, which needs the shingle sets.
  std::string cache_dir;
};

// Fig. 4: shards, dims, imbalance (map built and judged on the crawl's resident pages).
Status RunImbalanceFigure(const PartitionExperimentOptions& o);
// Fig. 5: shards, threshold, routing, communication_reduction, shards_contacted (3D).
Status RunCommunicationFigure(const PartitionExperimentOptions& o);
// Stability: train on one eleventh of the URLs, judge on the ten others, as they are and with
// their lengths scaled by 0.91..1.09 (drift); with epoch_inputs, also train on all of `input` and
// judge on each epoch crawl. Per kind, assignment, dims and shards: the mean, standard
// deviation and coefficient of variation of the imbalance, and the communication avoided.
Status RunStabilityExperiment(const PartitionExperimentOptions& o);
// Recall lost to routing: the exact baseline's pairs at o.threshold; for each rho and the exact
// mode, the share of pairs whose earlier page's home is not among the later page's routed cells.
Status RunRoutingRecall(const PartitionExperimentOptions& o);

}  // namespace neardup::experiments
