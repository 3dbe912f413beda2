// neardup experiment <name>: the computations behind experiments/*.sh (CSV out).
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

void RegisterExperiment(CLI::App& app, int* exit_code) {
  auto* exp = app.add_subcommand("experiment", "Reproduce the paper's partitioning figures on a crawl (CSV)");
  exp->require_subcommand(1);
  struct Named {
    const char* name;
    const char* help;
    Status (*run)(const experiments::PartitionExperimentOptions&);
  };
  static const Named kExperiments[] = {
      {"imbalance", "Fig. 4: load imbalance of 1D, 2D and 3D maps by shard count", experiments::RunImbalanceFigure},
      {"communication", "Fig. 5: communication avoided by 3D routing, both modes, by shards and threshold",
       experiments::RunCommunicationFigure},
      {"stability", "Section 6.1: CV of the imbalance over ten samples after training on another",
       experiments::RunStabilityExperiment},
      {"recall", "Share of the exact baseline's pairs lost to routing, per rho and for the exact mode",
       experiments::RunRoutingRecall},
  };
  for (const Named& e : kExperiments) {
    auto* cmd = exp->add_subcommand(e.name, e.help);
    auto o = std::make_shared<experiments::PartitionExperimentOptions>();
    cmd->add_option("--input", o->input, "crawl JSON Lines")->required();
    cmd->add_option("--csv", o->csv, "CSV to write")->required();
    cmd->add_option("--shards", o->shards, "shard counts")->capture_default_str();
    // --machines and --cells-per-machine: the flags' former names, still accepted (not listed).
    cmd->add_option("--machines", o->shards)->group("");
    cmd->add_option("--thresholds", o->thresholds, "thresholds (communication)")->capture_default_str();
    cmd->add_option("--rhos", o->rhos, "rho values (recall)")->capture_default_str();
    cmd->add_option("--threshold", o->threshold, "threshold where one is needed")->capture_default_str();
    cmd->add_option("--cells-per-shard", o->cells_per_shard, "cells per shard")->capture_default_str();
    cmd->add_option("--cells-per-machine", o->cells_per_shard)->group("");
    cmd->add_option("--fine-grain", o->fine_grain, "SpotSigs fine-grain ratio (0 = the threshold)")->capture_default_str();
    cmd->add_option("--max-eval-pages", o->max_eval_pages, "pages routed per evaluation")->capture_default_str();
    cmd->add_option("--threads", o->threads, "worker threads (0 = one per core)");
    cmd->add_option("--assignment", o->assignment, "cell -> shard: largest-first, spread or contiguous")
        ->capture_default_str();
    cmd->add_option("--assignments", o->assignments, "stability: the assignments to compare")->capture_default_str();
    cmd->add_option("--epoch-inputs", o->epoch_inputs,
                    "stability: crawls of later epochs to judge a map trained on --input against");
    cmd->add_option("--kinds", o->kinds, "stability: same_distribution, drifted_lengths, crawl_epochs")
        ->capture_default_str();
    cmd->add_option("--cache-dir", o->cache_dir, "keep each crawl's signed length vectors here and reuse them");
    auto run = e.run;
    cmd->callback([o, run, exit_code] {
      Status s = run(*o);
      if (!s.ok()) {
        spdlog::error("{}", s.message());
        *exit_code = s.code() == StatusCode::kInvalidArgument ? 2 : 1;
      }
    });
  }
  {
    auto* cmd = exp->add_subcommand("fig6-model",
                                    "Fig. 6: fit the Tier 2 cost model to measured runs (least squares) and simulate more shards");
    auto o = std::make_shared<experiments::Fig6ModelOptions>();
    cmd->add_option("--measured", o->measured,
                    "CSV of measured run parts: shards,batches,pages,sends,resident,imbalance,seconds")->required();
    cmd->add_option("--maps", o->maps, "CSV of map shapes to simulate: dims,shards,imbalance,sends_per_page")->required();
    cmd->add_option("--csv", o->csv, "CSV to write: measured and simulated throughput and speed-up")->required();
    cmd->callback([o, exit_code] {
      Status s = experiments::RunFig6Model(*o);
      if (!s.ok()) {
        spdlog::error("{}", s.message());
        *exit_code = s.code() == StatusCode::kInvalidArgument ? 2 : 1;
      }
    });
  }
}

}  // namespace neardup::cli
