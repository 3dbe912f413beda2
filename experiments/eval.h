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
// Each wrong pair (grouped by the run and not by the baseline: REP's; or the other way round:
// RER's) is explained by one cause (ExplainWrongPairs), from the run's answers, the exact pairs and
// each page's latest record's classification (the run's --status-out):
//   extra pairs (the run groups them, the baseline does not): two parts of one run group that the
//   baseline puts in different groups; the pair is blamed on the smaller part:
//     representative-signature fast path: a page of it was last kept by the fast path (similar to
//       the group's representative, so Tier 2 never compared it);
//     stale content: a page of it was recrawled with new content that Tier 2 placed (the group
//       rests on versions compared before a page changed);
//     group splitting: none of its pages changed: what joined them left the group or changed, and
//       the group was not recomputed (the paper's split approximation);
//   missed pairs (the baseline groups them, the run does not): two parts of one baseline group in
//   different run groups;
//     transitive chaining: no exact pair joins the two parts: the baseline links them through a
//       chain of other pages, and a link of it is missing from the run;
//     with an exact pair across (the first found): representative-signature fast path when a page
//       of it was last kept by the fast path; routing (rho) when the run routes with the rho box
//       (the pair's pages need not meet); verification rejection when one of them failed
//       verification against its winner (a repair splits on those); stale content otherwise.
// Against a running service (EvalOptions::server), each page's route is the one its status answer
// gives (the classification of its latest record).
// For each cause, the pairs it explains and a few examples (the pages, and the exact pair's
// similarity when they are one).
//
// Results are written after every (milestone, P) step: out_dir/eval.csv, out_dir/eval.json,
// out_dir/table.txt (Table 1's shape: REP/RER per shard count by milestone) and
// out_dir/causes.txt (the wrong pairs by cause), so that a run stopped
// between steps (EvalOptions::stop) or killed keeps what it had.
//
// Thread safety: RunEval is reentrant (each call owns its stores).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "experiments/accuracy.h"
#include "pipeline/pipeline.h"

namespace neardup::experiments {

struct EvalOptions {
  std::string out_dir;          // created if missing; the stores go under out_dir/stores (removed first)
  std::vector<double> milestones;   // shares of the input in (0, 1], increasing
  std::vector<uint32_t> shards;     // Tier 2 shard counts (empty with `server`)
  // A running service instead of embedded runs (http://host:port, a Tier 1 server on a store that
  // has taken no record yet): the input is sent through its ingest API up to each milestone (a
  // WARC file's records as the JSON Lines records they read as), and once it has decided every
  // page its answers are read from its status API (cluster/api/service_client.h). The table has one column, the service's shard count. The
  // threshold must be the service's. The per-milestone counters (changed pages, fast path,
  // verifications, rejections, repairs) come from its /metrics, read once it has decided the
  // milestone's records.
  std::string server;
  std::string server_token;              // the writers' bearer token, when the service asks for one
  std::string server_ca_file;            // https: the CA the service's certificate is checked against
  unsigned server_connections = 4;       // status queries at once
  uint32_t server_settle_seconds = 3600; // longest wait for the service to decide what it was sent
  // input, config (routing, rho), threshold, signer, reader, threads, batch_pages; store,
  // groups_out, max_records and shards are set per step.
  pipeline::PipelineOptions run;
  // Asked between steps: true stops the evaluation (what it has is written).
  std::function<bool()> stop;
};

enum class WrongCause : uint8_t {
  kTransitiveChaining,
  kGroupSplitting,
  kFastPath,
  kRouting,
  kStaleContent,
  kVerificationRejection,
};
inline constexpr size_t kWrongCauses = 6;
// "transitive_chaining", "group_splitting", "fast_path", "routing", "stale_content",
// "verification_rejection".
const char* WrongCauseName(WrongCause c);

struct WrongPairExample {
  std::string a, b;
  bool extra = false;                // grouped by the run, not by the baseline (else missed)
  std::optional<double> similarity;  // when (a, b) is an exact pair
};
struct WrongPairCause {
  uint64_t extra = 0, missed = 0;    // pairs it explains
  std::vector<WrongPairExample> examples;
};
struct WrongPairs {
  uint64_t extra = 0, missed = 0;    // all wrong pairs (REP's and RER's numerators)
  std::array<WrongPairCause, kWrongCauses> causes;
};

// Explains every wrong pair over the pages both sides hold (see the top of this file); at most
// `examples` examples per cause.
WrongPairs ExplainWrongPairs(const Answers& answers, const Grouping& truth, const std::vector<TruePair>& pairs,
                             const Histories& histories, double threshold, bool rho_routing, size_t examples = 3);

struct EvalPoint {
  double milestone = 0;         // share of the input
  uint64_t records = 0;         // records replayed so far
  uint32_t shards = 0;
  GroupingAccuracy accuracy;
  CrawlerView view;
  WrongPairs wrong;
  // The run's counters from the previous milestone to this one.
  uint64_t changed = 0, fast_path = 0, verifications = 0, rejections = 0, repairs = 0;
  double run_seconds = 0, baseline_seconds = 0;
  uint64_t baseline_pages = 0;   // crawled pages of the baseline at this milestone
};

struct EvalResult {
  uint64_t input_records = 0;
  std::vector<uint32_t> shards;    // the shard counts evaluated (the service's, with a server)
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

// The wrong pairs of every step by cause, with the examples.
std::string FormatWrongPairs(const EvalResult& r);

// Writes out_dir/eval.csv, eval.json, table.txt and causes.txt (FormatWrongPairs). IoError on a failed write.
Status WriteEvalResults(const EvalResult& r, const EvalOptions& options);

// Table 1 as a figure: writes out_dir/eval.gp, a gnuplot script that draws REP and RER (%) by
// milestone from out_dir/eval.csv, a line per shard count, beside the paper's 12-machine column,
// and runs gnuplot on it when gnuplot is installed: out_dir/eval.png. *drawn says whether it ran
// (without gnuplot the script stays, for `gnuplot out_dir/eval.gp` elsewhere). IoError when the
// script cannot be written; Internal when gnuplot fails.
Status DrawEvalPlot(const EvalResult& r, const EvalOptions& options, bool* drawn);

}  // namespace neardup::experiments
