// neardup eval: a crawl replayed with milestones, the two tiers against the exact baseline
// (experiments/eval.h).
#include <signal.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdio>
#include <fstream>

#include "cli/commands.h"
#include "cli/common_options.h"
#include "cluster/http/bearer_token.h"
#include "common/config.h"
#include "experiments/eval.h"
#include "experiments/partition_experiments.h"
#include "experiments/throughput_model.h"

namespace neardup::cli {

namespace {

std::atomic<bool> eval_interrupted{false};

void OnEvalSignal(int) { eval_interrupted.store(true); }

struct EvalArgs {
  std::string input, out, milestones = "10%,20%,30%,50%,75%,100%", routing, server, token_file, ca_file;
  std::vector<uint32_t> shards{4, 12, 24};
  std::optional<double> rho;
  std::optional<uint32_t> batch;
  SharedOptions shared;
};

// The replay's options: the configuration with the flags applied. InvalidArgument (or the token
// file's error) for a bad flag, configuration or token file.
StatusOr<experiments::EvalOptions> EvalOptionsFrom(const EvalArgs& a) {
  ASSIGN_OR_RETURN(ResolvedOptions opts, ResolveShared(a.shared));
  auto milestones = experiments::ParseMilestones(a.milestones);
  if (!milestones.ok()) return milestones.status();
  experiments::EvalOptions o;
  o.out_dir = a.out;
  o.milestones = *milestones;
  o.shards = a.server.empty() ? a.shards : std::vector<uint32_t>{};
  o.server = a.server;
  o.server_ca_file = a.ca_file;
  if (!a.token_file.empty()) {
    auto t = cluster::ReadBearerTokenFile(a.token_file);
    if (!t.ok()) return t.status();
    o.server_token = *t;
  }
  for (uint32_t p : o.shards) {
    if (auto rule = ConfigRangeError("pipeline.shards", p); !rule.empty()) {
      return InvalidArgument("--shards " + std::to_string(p) + ": " + rule);
    }
  }
  pipeline::PipelineOptions& run = o.run;
  run.input = a.input;
  run.config = opts.config;
  run.threshold = opts.threshold;
  run.signer = opts.signer;
  run.reader = opts.reader;
  run.threads = opts.threads;
  run.given = opts.given;
  run.batch_pages = a.batch.value_or(run.config.tier2().batch_pages());
  if (run.batch_pages < 1 || run.batch_pages > run.config.tier2().max_batch_pages()) {
    return InvalidArgument("--batch must be in 1..tier2.max_batch_pages");
  }
  if (!a.routing.empty()) {
    if (a.routing != "exact" && a.routing != "rho") return InvalidArgument("--routing must be exact or rho");
    run.config.mutable_pipeline()->set_routing(a.routing);
    run.given["routing"] = "--routing";
  }
  if (a.rho) {
    if (auto rule = ConfigRangeError("pipeline.rho", *a.rho); !rule.empty()) {
      return InvalidArgument("--rho " + rule);
    }
    run.config.mutable_pipeline()->set_rho(*a.rho);
    run.given["rho"] = "--rho";
  }
  return o;
}

// The tables on stdout: REP and RER per shard count, the crawler's view, the wrong pairs; and the
// figure (eval.gp) drawn when gnuplot is there.
void PrintEval(const experiments::EvalResult& r, const experiments::EvalOptions& o) {
  const pipeline::PipelineOptions& run = o.run;
  const std::string& out = o.out_dir;
  std::printf("REP and RER (%%) against the exact baseline, %s routing%s, threshold %g, %llu records:\n%s",
              run.config.pipeline().routing().c_str(),
              run.config.pipeline().routing() == "rho" ? (" (rho " + std::to_string(run.config.pipeline().rho()) + ")").c_str() : "",
              run.threshold, (unsigned long long)r.input_records,
              experiments::FormatEvalTable(r, r.shards).c_str());
  std::printf("\nthe crawler's view (at each milestone, per shard count):\n");
  for (const auto& p : r.points) {
    std::printf("  %6.4g%% %3u shards: drop precision %.6f (%llu dropped), redundancy %.4f%% (%llu of %llu true "
                "pairs both kept; %.4f%% in one market), kept %.2f%% of pages (greedy kept set %.2f%%)",
                100 * p.milestone, p.shards, p.view.drop_precision(), (unsigned long long)p.view.dropped,
                100 * p.view.redundancy(), (unsigned long long)p.view.both_kept,
                (unsigned long long)p.view.true_pairs, 100 * p.view.same_market_redundancy(), 100 * p.view.kept_share(),
                100 * p.view.greedy_kept_share());
    std::printf("; Tier 1 resolved %llu of %llu changed pages; %llu rejections of %llu verifications; %llu repairs\n",
                (unsigned long long)p.fast_path, (unsigned long long)p.changed, (unsigned long long)p.rejections,
                (unsigned long long)p.verifications, (unsigned long long)p.repairs);
  }
  std::printf("\n%s", experiments::FormatWrongPairs(r).c_str());
  bool drawn = false;
  if (Status s = experiments::DrawEvalPlot(r, o, &drawn); !s.ok()) {
    spdlog::warn("{}", s.message());
  } else if (!drawn) {
    spdlog::info("eval: gnuplot is not installed: {}/eval.gp draws the figure (gnuplot {}/eval.gp)", out, out);
  }
}

}  // namespace

void RegisterEval(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "eval", "Replay a crawl, stop at milestones, and compare the two tiers with the exact baseline at each (Table 1: "
              "REP/RER per shard count; drop precision, redundancy, Tier 1 share, rejections, repairs)");
  auto a = std::make_shared<EvalArgs>();
  cmd->add_option("--input", a->input, "crawl: JSON Lines, .warc or .warc.gz")->required();
  cmd->add_option("--out", a->out, "directory for eval.csv, eval.json, table.txt (and the stores while it runs)")
      ->required();
  cmd->add_option("--milestones", a->milestones, "shares of the crawl to stop at, increasing (10%,20%,... or 0.1,...)")
      ->capture_default_str();
  auto* shards_opt =
      cmd->add_option("--shards", a->shards, "Tier 2 shard counts, one store each")->delimiter(',')->capture_default_str();
  cmd->add_option("--server", a->server,
                  "a running service's API (http://host:port) on an empty store, instead of embedded runs: the crawl "
                  "(JSON Lines) goes through its ingest API, the answers come from its status API; --threshold and "
                  "--routing must be the service's")
      ->excludes(shards_opt);
  cmd->add_option("--bearer-token-file", a->token_file, "with --server: file holding the writers' bearer token");
  cmd->add_option("--ca-file", a->ca_file, "with an https:// --server: the CA its certificate is checked against");
  cmd->add_option("--routing", a->routing, "exact or rho (default pipeline.routing)");
  cmd->add_option("--rho", a->rho, "enlarging factor for --routing rho (default pipeline.rho)");
  cmd->add_option("--batch", a->batch, "pages per batch (default tier2.batch_pages)");
  AddSharedOptions(cmd, &a->shared);
  cmd->callback([a, exit_code] {
    auto o = EvalOptionsFrom(*a);
    if (!o.ok()) {
      spdlog::error("{}", o.status().message());
      *exit_code = 2;
      return;
    }
    // Ctrl-C (or SIGTERM) stops after the step under way; what was measured is written.
    struct sigaction sa = {};
    sa.sa_handler = OnEvalSignal;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    o->stop = [] { return eval_interrupted.load(); };
    auto r = experiments::RunEval(*o);
    if (!r.ok()) {
      spdlog::error("{}", r.status().message());
      *exit_code = r.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
      return;
    }
    PrintEval(*r, *o);
    if (r->stopped) {
      std::printf("interrupted: the results above (and in %s) stop there\n", a->out.c_str());
      *exit_code = 130;
    }
  });
}

}  // namespace neardup::cli
