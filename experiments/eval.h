// neardup eval: how far the two-tier system is from the exact single-node answer as a crawl is
// replayed (the paper's Section 6.3 and Table 1), and what the crawler sees.
//
// For each shard count P, one store replays the crawl in order through the embedded pipeline
// (pipeline/pipeline.h), stopping at each milestone: the first N_i records (N_i = the milestone's
// share of the input's good records, rounded up), continued from the previous milestone (the store
// resumes its input). At each milestone the exact baseline (baseline/baseline.h) runs on the same
// N_i records (latest version of every URL, gone pages removed, redirects joining their target's
// group), and the run's groups are compared with it (experiments/accuracy.h: REP and RER over the
// pages both hold; the crawler's view: drop precision, redundancy, share of pages kept). The
// run's counters for the records between two milestones give the share of changed pages resolved
// in Tier 1, verifications, rejections and repairs.
//
// Results are written after every (milestone, P) step: out_dir/eval.csv, out_dir/eval.json, and
// out_dir/table.txt (Table 1's shape: REP/RER per shard count by milestone), so that a run stopped
// between steps (EvalOptions::stop) or killed keeps what it had.
//
// Thread safety: RunEval is reentrant (each call owns its stores).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "experiments/accuracy.h"
#include "pipeline/pipeline.h"

namespace neardup::experiments {

struct EvalOptions {
  std::string out_dir;          // created if missing; the stores go under out_dir/stores (removed first)
  std::vector<double> milestones;   // shares of the input in (0, 1], increasing
  std::vector<uint32_t> shards;     // Tier 2 shard counts
  // input, config (routing, rho), threshold, signer, reader, threads, batch_pages; store,
  // groups_out, max_records and shards are set per step.
  pipeline::PipelineOptions run;
  // Asked between steps: true stops the evaluation (what it has is written).
  std::function<bool()> stop;
};

struct EvalPoint {
  double milestone = 0;         // share of the input
  uint64_t records = 0;         // records replayed so far
  uint32_t shards = 0;
  GroupingAccuracy accuracy;
  CrawlerView view;
  // The run's counters from the previous milestone to this one.
  uint64_t changed = 0, fast_path = 0, verifications = 0, rejections = 0, repairs = 0;
  double run_seconds = 0, baseline_seconds = 0;
  uint64_t baseline_pages = 0;   // crawled pages of the baseline at this milestone
};

struct EvalResult {
  uint64_t input_records = 0;
  std::vector<EvalPoint> points;   // milestone-major, then shards in the order given
  bool stopped = false;            // EvalOptions::stop ended it early
};

// Parses "10%,20%,100%" (or "0.1,0.2,1"): increasing shares in (0, 1]. InvalidArgument naming the
// bad item otherwise.
StatusOr<std::vector<double>> ParseMilestones(const std::string& text);

// Errors: InvalidArgument for bad options; IoError for an unreadable input or unwritable out_dir;
// whatever the pipeline or the baseline return.
StatusOr<EvalResult> RunEval(const EvalOptions& options);

// Table 1's shape: one row per milestone (records), REP and RER (in %) per shard count.
std::string FormatEvalTable(const EvalResult& r, const std::vector<uint32_t>& shards);

// Writes out_dir/eval.csv, eval.json and table.txt. IoError on a failed write.
Status WriteEvalResults(const EvalResult& r, const EvalOptions& options);

}  // namespace neardup::experiments
