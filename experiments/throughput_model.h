// Fig. 6's cost model: the time a Tier 2 shard takes for its share of a batch, fitted by least
// squares (Eigen) to parts of runs measured with real Tier 2 server processes, and the
// throughput it predicts for P shards from a partition map's imbalance and sends per page.
//
// The model: a shard that compares m pages of a batch against R resident pages takes
//     t = c0 + c1·m + c2·m·R   seconds
// (c0 per batch: the round trip and the shard's commit; c1 per page compared: index probes,
// bookkeeping; c2 per page and resident page: the candidates the filters let through grow with
// the collection). A batch waits for its most loaded shard. With B pages per batch, P shards,
// s shards contacted per page and an imbalance I (most loaded shard / mean), that shard compares
// m = B·s·I/P pages against R·I/P resident ones (the sends are assumed to fall on the shards as
// the resident pages do), so
//     seconds per batch = c0 + c1·B·s·I/P + c2·B·s·I²·R/P²,   throughput = B / seconds per batch.
// A measured part (`batches` batches, `sends` page→shard sends in all, mean resident pages R over
// the part) thus took batches·c0 + c1·sends·I/P + c2·sends·I²·R/P², linear in (c0, c1, c2): the
// fit is least squares on the parts' relative errors (each row divided by its measured seconds),
// solved with Eigen's column-pivoting Householder QR.
//
// Thread safety: every function is reentrant. Errors are Status values; files are read whole.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace neardup::experiments {

// One part of a measured run: the crawl's records between two points, through P shards.
struct MeasuredPart {
  uint32_t shards = 1;
  uint64_t batches = 0;
  uint64_t pages = 0;    // pages Tier 2 compared
  uint64_t sends = 0;    // page→shard sends
  double resident = 0;   // mean resident pages over the part (all shards)
  double imbalance = 1;  // most loaded shard / mean
  double seconds = 0;    // the busiest shard's seconds over the part (fig6_throughput.sh: its server's CPU time)
};

struct CostModel {
  double c0 = 0, c1 = 0, c2 = 0;
  double max_relative_error = 0;  // over the parts fitted, |predicted - measured| / measured
  double rms_relative_error = 0;
};

// A partition map's shape at P shards: what the model needs of it.
struct MapShape {
  uint32_t dims = 3;
  uint32_t shards = 1;
  double imbalance = 1;       // most loaded shard / mean
  double sends_per_page = 1;  // shards contacted per page
};

// Fits (c0, c1, c2). Errors: InvalidArgument with fewer than 3 parts, or a part with no batches,
// no sends, a zero shard count, an imbalance < 1 or seconds <= 0 (named by its index);
// FailedPrecondition when the parts do not determine the three coefficients (rank < 3: vary the
// shard count and the collection size).
Status FitCostModel(const std::vector<MeasuredPart>& parts, CostModel* model);

// The seconds the model gives a measured part.
double PredictPartSeconds(const CostModel& model, const MeasuredPart& part);

// Pages per second the model gives P shards of `shape` for batches of `batch_pages` pages
// against `resident` pages in all.
double PredictThroughput(const CostModel& model, const MapShape& shape, double batch_pages, double resident);

// CSV readers (a header line naming the columns, in any order; other columns ignored). Errors:
// IoError when the file cannot be read; InvalidArgument naming the file, line and column for a
// missing column, a short line or a value that is not a number in range.
//   measured: shards, batches, pages, sends, resident, imbalance, seconds
//   maps:     dims, shards, imbalance, sends_per_page
Status ReadMeasuredParts(const std::string& path, std::vector<MeasuredPart>* parts);
Status ReadMapShapes(const std::string& path, std::vector<MapShape>* shapes);

struct Fig6ModelOptions {
  std::string measured;  // measured parts CSV
  std::string maps;      // map shapes CSV
  std::string csv;       // output
};

// Fig. 6: fits the model on every measured part, then writes one row per measured shard count
// (its last part: the largest collection) and per map shape, simulated with the batch size and
// mean resident pages of the single-shard run's last part:
//   dims,shards,kind,pages_per_second,speedup,imbalance,sends_per_page
// kind "measured" (3D, the runs' own map) or "simulated"; speedup is over the measured single
// shard. Prints the coefficients and the fit's errors, and a warning for a negative coefficient
// (the parts then do not pin that cost down). Errors: those above; InvalidArgument when
// no part has one shard; IoError writing the CSV.
Status RunFig6Model(const Fig6ModelOptions& o);

}  // namespace neardup::experiments
