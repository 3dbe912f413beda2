// neardup rebalance: a store's shards re-balanced by moving whole cells (--store), a running
// server's (--server, through its admin endpoint), or a partition map from a fresh sample (--map ...
// --plan) (partitioner/rebalance.h, pipeline/rebalance_store.h).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "cli/commands.h"
#include "cli/common_options.h"
#include "cli/partition_options.h"
#include "cluster/http/http_client.h"
#include "common/config.h"
#include "common/json_write.h"
#include "document/crawl_signer.h"
#include "partitioner/crawl_sample.h"
#include "partitioner/map_builder.h"
#include "partitioner/rebalance.h"
#include "pipeline/rebalance_store.h"

#include <csignal>
#include <cstdlib>

namespace neardup::cli {
namespace {

struct RebalanceArgs {
  std::string map, input, out, plan, report = "-", resident;
  double sample_rate = 1.0, max_move = 0.1, target = 1.15;
  SharedOptions shared;
  // The store form.
  std::string store;
  std::optional<uint32_t> shards;
  bool dry_run = false;
  bool sample_rate_given = false, target_given = false;
  double max_mb_per_s = 0;
  bool defer = false;
  bool no_reslice = false;
  double min_batch_share = 0;
  // The cluster form: a running Tier 1 server's admin endpoint.
  std::string server, token_file, ca_file;
  std::vector<std::string> tier2;
};

// neardup rebalance --store DIR: plans from the store's resident pages and moves whole cells
// (pipeline/rebalance_store.h); the last stdout line is one JSON object.
int RunStoreRebalance(const RebalanceArgs& a) {
  auto shared = ResolveShared(a.shared);
  if (!shared.ok()) return FailByCode(shared.status());
  pipeline::StoreRebalanceOptions o;
  o.dir = a.store;
  o.config = shared->config;
  o.shards = a.shards.value_or(0);
  o.max_move = a.max_move;
  o.dry_run = a.dry_run;
  o.max_mb_per_s = a.max_mb_per_s;
  o.defer_move = a.defer;
  o.reslice = !a.no_reslice;
  if (a.sample_rate_given) o.sample_rate = a.sample_rate;
  if (a.target_given) o.target_imbalance = a.target;
  // Crash tests: NEARDUP_REBALANCE_KILL_AT=K kills this process (SIGKILL) after the move's K-th
  // durable step, as a crash there would.
  if (const char* k = std::getenv("NEARDUP_REBALANCE_KILL_AT"); k != nullptr && *k != '\0') {
    const uint64_t at = std::strtoull(k, nullptr, 10);
    auto calls = std::make_shared<uint64_t>(0);
    o.on_step = [at, calls](uint64_t) {
      if (++*calls == at) std::raise(SIGKILL);
      return true;
    };
  }
  auto r = pipeline::RebalanceStore(o);
  if (!r.ok()) return FailByCode(r.status());
  auto list = [](const std::vector<uint64_t>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) {
      if (i > 0) s.push_back(' ');
      s.append(std::to_string(v[i]));
    }
    return s;
  };
  if (r->resumed) {
    std::printf("finished an interrupted move: map generation %llu -> %llu, %u -> %u shards\n",
                (unsigned long long)r->generation_before, (unsigned long long)r->generation_after, r->shards_before,
                r->shards_after);
  } else {
    std::printf("resident pages %llu (sampled %llu, rate %.4f); shards %u -> %u\n", (unsigned long long)r->resident_pages,
                (unsigned long long)r->sampled_pages, r->sample_rate, r->shards_before, r->shards_after);
    std::printf("imbalance before %.4f  pages per shard: %s\n", r->imbalance_before, list(r->shard_pages_before).c_str());
    if (r->move_budget > r->max_move + 1e-12) {
      std::printf("move budget %.3f of the pages, above --max-move %.2f: %u -> %u shards needs it to reach %.3f\n",
                  r->move_budget, r->max_move, r->shards_before, r->shards_after,
                  std::max(r->target_imbalance, r->planned_imbalance));
    }
    if (r->cells_split > 0) {
      std::printf("whole cells could not reach %.2f: %u cells split (their pages are relabelled before they move)\n",
                  o.target_imbalance, r->cells_split);
    }
    for (const auto& m : r->moves) {
      if (m.to_cell == m.from_cell) {
        std::printf("move cell %u: shard %u -> %u, %.0f pages\n", m.from_cell, m.from_shard, m.to_shard, m.pages);
      } else {
        std::printf("move cell %u (split from cell %u): shard %u -> %u, %.0f pages\n", m.to_cell, m.from_cell,
                    m.from_shard, m.to_shard, m.pages);
      }
    }
    std::printf("cells moving %zu, pages %llu (estimated from the sample %.0f)%s\n", r->moves.size(),
                (unsigned long long)r->planned_pages, r->estimated_pages,
                a.dry_run    ? " [dry run: nothing moved]"
                : r->deferred ? " [deferred: the store's next run moves them between its batches]"
                              : "");
  }
  std::printf("imbalance after %.4f  pages per shard: %s\n", r->imbalance_after, list(r->shard_pages_after).c_str());
  if (!r->note.empty()) std::printf("note: %s\n", r->note.c_str());
  const std::string j = pipeline::RebalanceReportJson(*r) + "\n";
  std::fputs(j.c_str(), stdout);
  return 0;
}

int RunRebalance(const RebalanceArgs& a) {
  // The cluster form: --server, or a cluster's --config alone (its API and token).
  const bool cluster_config = !a.shared.config.empty() && a.store.empty() && a.map.empty() && a.input.empty();
  if (!a.server.empty() || cluster_config) {
    if (!a.store.empty() || !a.map.empty() || !a.input.empty() || !a.out.empty() || !a.plan.empty() ||
        !a.resident.empty()) {
      return FailByCode(InvalidArgument("rebalance: --server takes no --store, --map, --input, --out, --plan or --resident"));
    }
    if (a.defer) return FailByCode(InvalidArgument("rebalance: --defer needs --store (a server's runs always move the pages between their batches)"));
    auto client = ResolveClusterClient(a.shared.config, a.server, a.token_file, a.ca_file);
    if (!client.ok()) return FailByCode(client.status());
    return RebalanceOverHttp({.server = client->server, .token = client->token, .ca_file = client->ca_file,
                              .shards = a.shards.value_or(0),
                              .tier2 = a.tier2, .max_move = a.max_move, .max_mb_per_s = a.max_mb_per_s,
                              .min_batch_share = a.min_batch_share, .dry_run = a.dry_run});
  }
  if (!a.tier2.empty()) return FailByCode(InvalidArgument("rebalance: --tier2 needs --server"));
  if (a.no_reslice && a.store.empty()) return FailByCode(InvalidArgument("rebalance: --no-reslice needs --store"));
  if (a.min_batch_share > 0) return FailByCode(InvalidArgument("rebalance: --min-batch-share needs --server (a run takes pipeline.move_min_batch_share)"));
  if (a.defer && a.store.empty()) return FailByCode(InvalidArgument("rebalance: --defer needs --store"));
  if (a.defer && a.max_mb_per_s > 0) {
    return FailByCode(InvalidArgument("rebalance: --defer leaves the copy to the next run, whose rate cap is "
                                      "pipeline.move_max_mb_per_s, not --max-mb-per-s"));
  }
  if (!a.store.empty()) {
    if (!a.map.empty() || !a.input.empty() || !a.out.empty() || !a.plan.empty() || !a.resident.empty()) {
      return FailByCode(InvalidArgument("rebalance: --store takes no --map, --input, --out, --plan or --resident"));
    }
    return RunStoreRebalance(a);
  }
  if (a.shards || a.dry_run) return FailByCode(InvalidArgument("rebalance: --shards and --dry-run need --store or --server"));
  for (const auto& [flag, v] : {std::pair<const char*, const std::string*>{"--map", &a.map}, {"--input", &a.input},
                                {"--out", &a.out}, {"--plan", &a.plan}}) {
    if (v->empty()) return FailByCode(InvalidArgument(std::string("rebalance: ") + flag + " is required (or --store DIR)"));
  }
  auto old_map = partitioner::PartitionMap::Load(a.map);
  if (!old_map.ok()) return FailByCode(old_map.status());
  auto shared = ResolveShared(a.shared);
  if (!shared.ok()) return FailByCode(shared.status());
  const SignerOptions signer = old_map->signer_options();
  auto sample = partitioner::SampleCrawl(a.input, SampleOptions(*shared, signer, a.sample_rate, "rebalance: sample"));
  if (!sample.ok()) return FailByCode(sample.status());
  auto r = partitioner::Rebalance(*old_map, sample->sample,
                                  {.max_move = a.max_move, .target_imbalance = a.target});
  if (!r.ok()) return FailByCode(r.status());
  if (Status s = r->map.Save(a.out); !s.ok()) return FailByCode(s);
  // The plan: aggregated cell moves from the sample, or every moving page of a resident set.
  std::string plan;
  const double scale = 1.0 / a.sample_rate;
  if (a.resident.empty()) {
    for (const auto& m : r->moves) {
      plan += "{\"from_partition\":" + std::to_string(m.from_cell) + ",\"to_partition\":" + std::to_string(m.to_cell) +
              ",\"from_machine\":" + std::to_string(m.from_shard) + ",\"to_machine\":" + std::to_string(m.to_shard) +
              ",\"sample_pages\":";
      AppendJsonNumber(&plan, m.pages);
      plan += ",\"estimated_pages\":";
      AppendJsonNumber(&plan, m.pages * scale);
      plan += "}\n";
    }
  } else {
    auto resident =
        partitioner::SampleCrawl(a.resident, SampleOptions(*shared, signer, 1.0, "rebalance: resident set"));
    if (!resident.ok()) return FailByCode(resident.status());
    const auto feature = old_map->proto().feature();
    for (size_t i = 0; i < resident->sample.size(); ++i) {
      const auto v = resident->sample.Vector(i, feature);
      const uint32_t from = old_map->Home(v), to = r->map.Home(v);
      const uint32_t fm = old_map->ShardOf(from), tm = r->map.ShardOf(to);
      if (fm == tm) continue;
      plan += "{\"url\":";
      AppendJsonString(&plan, resident->urls[i]);
      plan += ",\"from_partition\":" + std::to_string(from) + ",\"to_partition\":" + std::to_string(to) +
              ",\"from_machine\":" + std::to_string(fm) + ",\"to_machine\":" + std::to_string(tm) + "}\n";
    }
  }
  if (Status s = WriteText(a.plan, plan); !s.ok()) return FailByCode(s);
  std::string rep = "{\"old_map\":";
  AppendJsonString(&rep, a.map);
  rep += ",\"new_map\":";
  AppendJsonString(&rep, a.out);
  rep += ",\"generation\":" + std::to_string(r->map.proto().generation()) +
         ",\"resliced\":" + (r->resliced ? std::string("true") : std::string("false")) + ",\"imbalance_before\":";
  AppendJsonNumber(&rep, r->imbalance_before);
  AppendJsonField(&rep, "imbalance_after", r->imbalance_after);
  AppendJsonField(&rep, "moved_share", r->moved_share);
  rep += ",\"sample_pages\":" + std::to_string(sample->sample.size()) + "}\n";
  if (Status s = WriteText(a.report, rep); !s.ok()) return FailByCode(s);
  spdlog::info("rebalance: imbalance {:.3f} -> {:.3f}, {:.1f}% of pages move{}", r->imbalance_before,
               r->imbalance_after, 100 * r->moved_share, r->resliced ? " (re-sliced)" : "");
  return 0;
}

}  // namespace

void RegisterRebalance(CLI::App& app, int* exit_code) {
  auto* reb = app.add_subcommand("rebalance", "Re-balance a store's shards by moving whole cells (--store), or a partition "
                                              "map from a fresh sample (--map ... --plan), moving as few pages as possible");
  auto r = std::make_shared<RebalanceArgs>();
  reb->add_option("--store", r->store, "store of neardup run: plan from its pages and move them (or finish a move)");
  reb->add_option("--shards", r->shards, "with --store or --server: shard count after the move (add shards, or drain the last)")
      ->check(CLI::Range(1, 1024));
  reb->add_flag("--dry-run", r->dry_run, "with --store or --server: plan and report, move nothing");
  reb->add_option("--server", r->server, "a running Tier 1 server's API (http(s)://host:port): rebalance its Tier 2 "
                                         "shards while it takes ingest (its admin endpoint)");
  reb->add_option("--tier2", r->tier2, "with --server: the Tier 2 servers after the move (host:port,...; add "
                                       "servers at the end, or leave drained ones out)")->delimiter(',');
  reb->add_option("--bearer-token-file", r->token_file, "with --server: file holding the writers' bearer token");
  reb->add_option("--ca-file", r->ca_file, "with an https:// API: the CA its certificate is checked against "
                                         "(default: the --config cluster's, else the system's)");
  reb->add_option("--max-mb-per-s", r->max_mb_per_s, "with --store or --server: copy at most this many MB of "
                                                      "signatures per second (0: no limit)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  reb->add_flag("--defer", r->defer, "with --store: plan and write the move's journal only; the store's next run "
                                     "moves the pages between its batches");
  reb->add_option("--min-batch-share", r->min_batch_share, "with --server: share of the batch loop's time its batches "
                                                          "keep while the move runs (default: the server's "
                                                          "pipeline.move_min_batch_share)")
      ->check(CLI::Range(0.05, 1.0));
  reb->add_option("--map", r->map, "current partition map");
  reb->add_option("--input", r->input, "fresh crawl sample (JSON Lines)");
  reb->add_option("--out", r->out, "new partition map to write");
  reb->add_option("--plan", r->plan, "moves to write (JSON Lines)");
  reb->add_option("--report", r->report, "report JSON (- for stdout)")->capture_default_str();
  reb->add_option("--resident", r->resident, "resident pages (crawl JSON Lines): list every page that moves");
  reb->add_option("--sample-rate", r->sample_rate, "share of the input's URLs (--store: resident pages, 0.05) sampled")
      ->capture_default_str()->each([r](const std::string&) { r->sample_rate_given = true; });
  reb->add_option("--max-move", r->max_move, "share of pages cell reassignment may move (--store, --server: a "
                                             "change of --shards moves more when it needs more to reach the target; "
                                             "the report gives the budget used)")
      ->capture_default_str();
  reb->add_flag("--no-reslice", r->no_reslice, "--store: move whole cells only, even when they cannot reach the target");
  reb->add_option("--target-imbalance", r->target, "re-slice (--store: stop moving) when reassignment reaches this "
                                                   "(--store: 1.05)")
      ->capture_default_str()->each([r](const std::string&) { r->target_given = true; });
  AddSharedOptions(reb, &r->shared);
  reb->callback([r, exit_code] { *exit_code = RunRebalance(*r); });
}

int RebalanceOverHttp(const RebalanceOverHttpArgs& a) {
  auto client = cluster::HttpClient::Create(a.server, {.ca_file = a.ca_file});
  if (!client.ok()) {
    spdlog::error("{}", client.status().message());
    return 2;
  }
  std::string body = "{\"max_move\":" + fmt::format("{}", a.max_move) + ",\"max_mb_per_s\":" +
                     fmt::format("{}", a.max_mb_per_s) + ",\"dry_run\":" + (a.dry_run ? "true" : "false");
  if (a.shards > 0) body += ",\"shards\":" + std::to_string(a.shards);
  if (a.min_batch_share > 0) body += ",\"min_batch_share\":" + fmt::format("{}", a.min_batch_share);
  if (!a.tier2.empty()) {
    body += ",\"tier2\":[";
    for (size_t i = 0; i < a.tier2.size(); ++i) {
      if (i > 0) body += ',';
      AppendJsonString(&body, a.tier2[i]);
    }
    body += ']';
  }
  body += '}';
  std::map<std::string, std::string> headers;
  if (!a.token.empty()) headers["Authorization"] = "Bearer " + a.token;  // also for the state: a read token may guard it
  auto started = (*client)->Request("POST", "/v1/admin/rebalance", body, headers);
  if (!started.ok()) {
    spdlog::error("rebalance: {}", started.status().message());
    return 3;
  }
  if (started->status != 202) {
    spdlog::error("rebalance: {} answered {}: {}", a.server, started->status, started->body);
    return 2;
  }
  // Followed to its end: the batch loop's runs move the pages between their batches.
  std::string state = started->body;
  auto last_report = std::chrono::steady_clock::now();
  while (state.find("\"state\":\"running\"") != std::string::npos) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto r = (*client)->Request("GET", "/v1/admin/rebalance", "", headers);
    if (!r.ok()) {
      spdlog::error("rebalance: {} (the move goes on in the server; GET /v1/admin/rebalance follows it)",
                    r.status().message());
      return 3;
    }
    state = r->body;
    if (std::chrono::steady_clock::now() - last_report > std::chrono::seconds(5)) {
      last_report = std::chrono::steady_clock::now();
      spdlog::info("rebalance: running{}", state.find("\"moving\":true") != std::string::npos ? " (moving pages)" : "");
    }
  }
  while (!state.empty() && (state.back() == '\n' || state.back() == '\r')) state.pop_back();
  std::printf("%s\n", state.c_str());
  return state.find("\"state\":\"done\"") != std::string::npos ? 0 : 1;
}

}  // namespace neardup::cli
