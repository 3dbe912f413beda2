// neardup accuracy: REP and RER of a run's groups against the exact baseline (experiments/accuracy.h).
#include <spdlog/spdlog.h>

#include <cstdio>

#include "cli/commands.h"
#include "cli/common_options.h"
#include "cli/store_queries.h"
#include "common/config.h"
#include "common/json_write.h"
#include "experiments/accuracy.h"
#include "partitioner/partition_map.h"
#include "pipeline/pipeline.h"
#include "pipeline/store.h"
#include "tier1/tier1.h"

namespace neardup::cli {

void RegisterAccuracy(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("accuracy", "REP and RER of a run's groups against the exact baseline's groups");
  struct Args { std::string system, baseline, pairs; double threshold = ConfigDefaults().baseline().threshold(); };
  auto a = std::make_shared<Args>();
  cmd->add_option("--groups", a->system, "groups of neardup run --out")->required();
  cmd->add_option("--baseline", a->baseline, "groups of neardup baseline --groups")->required();
  cmd->add_option("--pairs", a->pairs, "pairs of neardup baseline --pairs: adds the crawler's view (drop precision, "
                                       "redundancy)");
  cmd->add_option("--threshold", a->threshold, "similarity a dropped page must have to its winner (drop precision)");
  cmd->callback([a, exit_code] {
    auto sys = experiments::ReadAnswersJsonl(a->system);
    if (!sys.ok()) { *exit_code = ReportFailure(sys.status()); return; }
    auto base = experiments::ReadGroupsJsonl(a->baseline);
    if (!base.ok()) { *exit_code = ReportFailure(base.status()); return; }
    const experiments::GroupingAccuracy r = experiments::CompareGroupings(experiments::GroupingOf(*sys), *base);
    std::printf("{\"pages\":%llu,\"only_system\":%llu,\"only_baseline\":%llu,\"system_pairs\":%llu,"
                "\"baseline_pairs\":%llu,\"common_pairs\":%llu,\"rep\":%.6f,\"rer\":%.6f",
                (unsigned long long)r.pages, (unsigned long long)r.only_system, (unsigned long long)r.only_baseline,
                (unsigned long long)r.system_pairs, (unsigned long long)r.baseline_pairs,
                (unsigned long long)r.common_pairs, r.rep(), r.rer());
    if (!a->pairs.empty()) {
      auto pairs = experiments::ReadPairsJsonl(a->pairs);
      if (!pairs.ok()) { *exit_code = ReportFailure(pairs.status()); return; }
      const experiments::CrawlerView v = experiments::ComputeCrawlerView(*sys, *pairs, a->threshold);
      std::printf(",\"kept\":%llu,\"dropped\":%llu,\"dropped_close\":%llu,\"drop_precision\":%.6f,"
                  "\"true_pairs\":%llu,\"both_kept\":%llu,\"redundancy\":%.6f,\"kept_share\":%.6f,"
                  "\"greedy_kept\":%llu,\"greedy_kept_share\":%.6f",
                  (unsigned long long)v.kept, (unsigned long long)v.dropped, (unsigned long long)v.dropped_close,
                  v.drop_precision(), (unsigned long long)v.true_pairs, (unsigned long long)v.both_kept,
                  v.redundancy(), v.kept_share(), (unsigned long long)v.greedy_kept, v.greedy_kept_share());
    }
    std::printf("}\n");
  });
}

}  // namespace neardup::cli
