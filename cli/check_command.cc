// neardup check: the invariants of a run's group store.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/common_options.h"
#include "cli/store_queries.h"
#include "common/config.h"
#include "partitioner/partition_map.h"
#include "pipeline/pipeline.h"
#include "pipeline/rebalance_store.h"
#include "pipeline/placement.h"
#include "pipeline/store.h"
#include "tier1/tier1.h"

namespace neardup::cli {

void RegisterCheck(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("check", "Check the invariants of a run's group store");
  auto store = std::make_shared<std::string>();
  cmd->add_option("--store", *store, "store directory of neardup run")->required();
  cmd->callback([store, exit_code] {
    if (!std::filesystem::exists(*store + "/tier1")) {
      *exit_code = ReportFailure(NotFound("no group store in " + *store + " (expected " + *store + "/tier1)"), 2);
      return;
    }
    tier1::GroupStore::Options go;
    go.path = pipeline::StoreLayout{*store}.tier1();
    go.read_only = true;  // a check changes nothing
    auto gs = tier1::GroupStore::Open(go);
    if (!gs.ok()) { *exit_code = ReportFailure(gs.status()); return; }
    gs->reset();
    // The signatures too, when the store's shards can be opened: kept sets are then checked on
    // their similarities (no two kept pages of a group near-duplicates).
    auto opts = ResolveShared(SharedOptions{});
    std::optional<ReadOnlyStore> opened;
    if (opts.ok()) {
      auto o = OpenStoreForQueries(*store, &*opts);
      if (o.ok()) opened.emplace(std::move(*o));
      else spdlog::warn("check: the shards cannot be opened ({}): kept sets checked without similarities",
                        o.status().message());
    }
    if (!opened) {
      gs = tier1::GroupStore::Open(go);
      if (!gs.ok()) { *exit_code = ReportFailure(gs.status()); return; }
    }
    tier1::GroupStore& groups = opened ? *opened->groups : **gs;
    // A shard behind Tier 1 (a run stopped between Tier 1's commit and the shards') lacks the
    // pages of the batches the next run redoes on it: similarities are then not checked.
    std::string unchecked = " (similarities not checked)";
    if (opened) {
      auto lag = pipeline::LaggingShards(groups, opened->signatures->shards(), opened->signatures->shard_count());
      if (!lag.ok()) { *exit_code = ReportFailure(lag.status()); return; }
      unchecked = lag->empty() ? "" : " (similarities not checked: " + lag->front().note + ")";
    }
    const bool similarities = opened && unchecked.empty();
    tier1::CheckReport r;
    if (Status s = tier1::CheckStore(groups, &r, similarities ? opened->signatures.get() : nullptr,
                                     similarities ? opts->threshold : 0);
        !s.ok()) {
      *exit_code = ReportFailure(s);
      return;
    }
    std::printf("pages %llu, groups %llu (%llu with 2+ members), member cells %llu, redirects %llu, redirect cycles %llu\n",
                (unsigned long long)r.pages, (unsigned long long)r.groups, (unsigned long long)r.multi_groups,
                (unsigned long long)r.members, (unsigned long long)r.redirects, (unsigned long long)r.redirect_cycles);
    std::printf("kept sets %llu: content pages kept %llu, dropped %llu%s\n", (unsigned long long)r.kept_sets,
                (unsigned long long)r.kept, (unsigned long long)r.dropped, unchecked.c_str());
    for (const std::string& v : r.violations) std::printf("violation: %s\n", v.c_str());
    uint64_t violations = r.violation_count;
    opened.reset();
    if (gs.ok()) gs->reset();
    // Where the pages are: each on exactly the shard the served map gives its cell.
    if (std::filesystem::exists(*store + "/map.pb") || std::filesystem::exists(*store + "/map-next.pb")) {
      auto p = pipeline::CheckPlacement(pipeline::StoreLayout{*store}, ConfigDefaults());
      if (!p.ok()) { *exit_code = ReportFailure(p.status()); return; }
      std::printf("map version %llu, pages with signatures %llu, pages per shard:", (unsigned long long)p->map_generation,
                  (unsigned long long)p->pages);
      for (uint64_t n : p->shard_pages) std::printf(" %llu", (unsigned long long)n);
      std::printf("\nimbalance %.4f (map planned %.4f, drift %+.4f), per shard:", p->imbalance, p->planned_imbalance,
                  p->drift);
      for (double f : p->shard_factor) std::printf(" %.3f", f);
      std::printf("\n");
      const double hint = ConfigDefaults().pipeline().rebalance_imbalance();
      if (p->imbalance > hint) {
        spdlog::warn("store {}: shard imbalance {:.3f} is past {:.2f} (pipeline.rebalance_imbalance): a rebalance would "
                     "help (neardup rebalance --store {})", *store, p->imbalance, hint, *store);
      }
      for (const std::string& n : p->notes) std::printf("note: %s\n", n.c_str());
      for (const std::string& v : p->violations) std::printf("violation: %s\n", v.c_str());
      violations += p->violation_count;
    }
    std::printf("%llu violations\n", (unsigned long long)violations);
    *exit_code = violations == 0 ? 0 : 1;
  });
}

}  // namespace neardup::cli
