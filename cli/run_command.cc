// neardup run | check | accuracy | bench status: the embedded two-tier pipeline and its tools.
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>

#include "cli/commands.h"
#include "cli/common_options.h"
#include "cluster/tier2_client/remote_shard_set.h"
#include "cluster/http/tls.h"
#include "common/config.h"
#include "common/json_write.h"
#include "common/progress.h"
#include "document/crawl_signer.h"
#include "experiments/accuracy.h"
#include "partitioner/partition_map.h"
#include "pipeline/pipeline.h"
#include "pipeline/rebalance_store.h"
#include "pipeline/shard_set.h"
#include "pipeline/placement.h"
#include "pipeline/store.h"
#include "tier1/tier1.h"

namespace neardup::cli {
namespace {

int Fail(const Status& s, int code = 1) {
  spdlog::error("{}", s.message());
  return code;
}

// Reads signatures from a stopped pipeline's shards (for status queries outside a run); owns the
// placement and the shards it reads.
class StoreSignatures : public tier1::SignatureSource {
 public:
  StoreSignatures(std::unique_ptr<pipeline::Placement> placement, std::unique_ptr<pipeline::ShardSet> shards)
      : placement_(std::move(placement)), shards_(std::move(shards)), read_(*placement_, *shards_) {}
  StatusOr<pb::PageSignature> Fetch(const std::string& url, uint32_t cell) override { return read_.Fetch(url, cell); }
  const pipeline::ShardSet& shards() const { return *shards_; }
  uint32_t shard_count() const { return static_cast<uint32_t>(shards_->size()); }

 private:
  std::unique_ptr<pipeline::Placement> placement_;
  std::unique_ptr<pipeline::ShardSet> shards_;
  pipeline::ShardSetSignatures read_;
};

// Opens a stopped run's store for reading only (nothing in it changes): its group store, placement
// and shards, with the store's own parameters applied to *opts (a parameter given otherwise is
// refused). A move left unfinished: its shards hold the pages where its placement says (a split's
// pages may be in cells of its new map already).
struct ReadOnlyStore {
  uint64_t map_version = 0;  // the generation of the map the store serves
  std::unique_ptr<tier1::GroupStore> groups;
  std::unique_ptr<StoreSignatures> signatures;
};
StatusOr<ReadOnlyStore> OpenStoreForQueries(const std::string& dir, ResolvedOptions* opts) {
  pipeline::ShardSetOptions so;
  so.layout.dir = dir;
  ASSIGN_OR_RETURN(pipeline::OpenedStore opened,
                   pipeline::OpenStoreReadOnly(so.layout, opts->given, &opts->config, &opts->threshold, &opts->signer));
  so.config = opts->config;
  so.shards = opened.placement->shard_count();
  so.read_only = true;
  ASSIGN_OR_RETURN(std::unique_ptr<pipeline::ShardSet> shards, pipeline::OpenLocalShardSet(so));
  ReadOnlyStore out;
  out.map_version = opened.placement->generation();
  out.groups = std::move(opened.groups);
  out.signatures = std::make_unique<StoreSignatures>(std::move(opened.placement), std::move(shards));
  return out;
}

void RegisterRunCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("run", "Replay a crawl through Tier 1 and P Tier 2 shards in one process: groups, winners, statuses");
  struct Args {
    std::string input, out, status_out, store, map;
    std::optional<uint32_t> batch, shards;
    std::optional<std::string> routing;
    uint64_t max_records = 0;
    bool abandon_interrupted = false;
    std::vector<std::string> tier2;
    std::string tier2_tls_dir;
    SharedOptions shared;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--input", a->input, "crawl JSON Lines")->required();
  cmd->add_option("--out", a->out, "write every page with its group, winner and status here (JSON Lines)");
  cmd->add_option("--status-out", a->status_out, "write each page's status after its batch commits (JSON Lines)");
  cmd->add_option("--store", a->store, "store directory (kept; a run on an existing store resumes); default: temporary");
  cmd->add_option("--map", a->map, "partition map to use when the store has none (default: built from a sample)");
  cmd->add_option("--batch", a->batch, "pages per batch (default tier2.batch_pages)");
  cmd->add_option("--shards", a->shards, "Tier 2 shards (default pipeline.shards)");
  cmd->add_option("--routing", a->routing, "exact or rho (default pipeline.routing)");
  cmd->add_option("--max-records", a->max_records, "stop after this many input records (0 = all)");
  cmd->add_option("--tier2", a->tier2,
                  "Tier 2 servers (host:port, comma-separated) that hold the store's shards, shard m on server m % N; "
                  "default: the shards in this process")
      ->delimiter(',');
  cmd->add_option("--tier2-tls-dir", a->tier2_tls_dir,
                  "mutual TLS to the Tier 2 servers with DIR/ca.pem, member.pem, member.key (neardup certs init); "
                  "default: tier1_server.tier2_tls");
  cmd->add_flag("--abandon-interrupted", a->abandon_interrupted,
                "the store stopped in the middle of another input: leave its rest unread, take this one as the next crawl");
  AddSharedOptions(cmd, &a->shared);
  cmd->callback([a, exit_code] {
    auto opts = ResolveShared(a->shared);
    if (!opts.ok()) { *exit_code = Fail(opts.status(), 2); return; }
    pipeline::PipelineOptions o;
    o.input = a->input;
    o.groups_out = a->out;
    o.status_out = a->status_out;
    o.store = a->store;
    o.map = a->map;
    o.config = opts->config;
    o.threshold = opts->threshold;
    o.signer = opts->signer;
    o.reader = opts->reader;
    o.threads = opts->threads;
    o.max_records = a->max_records;
    o.given = opts->given;
    o.abandon_interrupted = a->abandon_interrupted;
    if (!a->tier2.empty()) {
      cluster::RemoteShardSetOptions remote;
      remote.servers = a->tier2;
      remote.tls = a->tier2_tls_dir.empty() ? cluster::TlsFiles::From(opts->config.tier1_server().tier2_tls())
                                            : cluster::TlsFiles::InDir(a->tier2_tls_dir);
      o.open_shards = [remote](const pipeline::ShardSetOptions& so) { return cluster::OpenRemoteShardSet(remote, so); };
    }
    o.batch_pages = a->batch.value_or(o.config.tier2().batch_pages());
    if (a->shards) {
      if (auto rule = ConfigRangeError("pipeline.shards", *a->shards); !rule.empty()) {
        *exit_code = Fail(InvalidArgument("--shards " + rule), 2);
        return;
      }
      o.config.mutable_pipeline()->set_shards(*a->shards);
      o.given["shards"] = "--shards";
    }
    if (a->routing) {
      if (*a->routing != "exact" && *a->routing != "rho") { *exit_code = Fail(InvalidArgument("--routing must be exact or rho"), 2); return; }
      o.config.mutable_pipeline()->set_routing(*a->routing);
      o.given["routing"] = "--routing";
    }
    if (o.batch_pages < 1 || o.batch_pages > o.config.tier2().max_batch_pages()) {
      *exit_code = Fail(InvalidArgument("--batch must be in 1..tier2.max_batch_pages"), 2);
      return;
    }
    auto s = pipeline::RunPipeline(o);
    if (!s.ok()) {
      // A bad option is bad usage (2), like every command's; anything else failed while running (1).
      *exit_code = Fail(s.status(), s.status().code() == StatusCode::kInvalidArgument ? 2 : 1);
      return;
    }
    std::fputs(pipeline::FormatSummary(*s).c_str(), stdout);
  });
}

void RegisterCheckCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("check", "Check the invariants of a run's group store");
  auto store = std::make_shared<std::string>();
  cmd->add_option("--store", *store, "store directory of neardup run")->required();
  cmd->callback([store, exit_code] {
    if (!std::filesystem::exists(*store + "/tier1")) {
      *exit_code = Fail(NotFound("no group store in " + *store + " (expected " + *store + "/tier1)"), 2);
      return;
    }
    tier1::GroupStore::Options go;
    go.path = pipeline::StoreLayout{*store}.tier1();
    go.read_only = true;  // a check changes nothing
    auto gs = tier1::GroupStore::Open(go);
    if (!gs.ok()) { *exit_code = Fail(gs.status()); return; }
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
      if (!gs.ok()) { *exit_code = Fail(gs.status()); return; }
    }
    tier1::GroupStore& groups = opened ? *opened->groups : **gs;
    // A shard behind Tier 1 (a run stopped between Tier 1's commit and the shards') lacks the
    // pages of the batches the next run redoes on it: similarities are then not checked.
    std::string unchecked = " (similarities not checked)";
    if (opened) {
      auto lag = pipeline::LaggingShards(groups, opened->signatures->shards(), opened->signatures->shard_count());
      if (!lag.ok()) { *exit_code = Fail(lag.status()); return; }
      unchecked = lag->empty() ? "" : " (similarities not checked: " + lag->front().note + ")";
    }
    const bool similarities = opened && unchecked.empty();
    tier1::CheckReport r;
    if (Status s = tier1::CheckStore(groups, &r, similarities ? opened->signatures.get() : nullptr,
                                     similarities ? opts->threshold : 0);
        !s.ok()) {
      *exit_code = Fail(s);
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
      if (!p.ok()) { *exit_code = Fail(p.status()); return; }
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

void RegisterAccuracyCommand(CLI::App& app, int* exit_code) {
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
    if (!sys.ok()) { *exit_code = Fail(sys.status()); return; }
    auto base = experiments::ReadGroupsJsonl(a->baseline);
    if (!base.ok()) { *exit_code = Fail(base.status()); return; }
    const experiments::GroupingAccuracy r = experiments::CompareGroupings(experiments::GroupingOf(*sys), *base);
    std::printf("{\"pages\":%llu,\"only_system\":%llu,\"only_baseline\":%llu,\"system_pairs\":%llu,"
                "\"baseline_pairs\":%llu,\"common_pairs\":%llu,\"rep\":%.6f,\"rer\":%.6f",
                (unsigned long long)r.pages, (unsigned long long)r.only_system, (unsigned long long)r.only_baseline,
                (unsigned long long)r.system_pairs, (unsigned long long)r.baseline_pairs,
                (unsigned long long)r.common_pairs, r.rep(), r.rer());
    if (!a->pairs.empty()) {
      auto pairs = experiments::ReadPairsJsonl(a->pairs);
      if (!pairs.ok()) { *exit_code = Fail(pairs.status()); return; }
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

// The crawler's question, asked of a stopped run's store: for each record of --input (a URL, with
// or without its current content), its status; content given is what gets verified.
void RegisterStatusCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("status", "Duplicate status of URLs from a run's store (verifying the content given, if "
                                          "any), or from a Tier 1 server's API (--server)");
  struct Args {
    std::string store, input, server, ca_file;
    std::vector<std::string> urls;
    SharedOptions shared;
  };
  auto a = std::make_shared<Args>();
  auto* store = cmd->add_option("--store", a->store, "store directory of neardup run");
  auto* server = cmd->add_option("--server", a->server, "or ask a Tier 1 server's API, http(s)://host:port");
  cmd->add_option("--ca-file", a->ca_file, "https: the CA the API's certificate is checked against "
                                           "(default: the --config cluster's, else the system's)");
  store->excludes(server);
  cmd->add_option("--url", a->urls, "URL to ask about (repeatable)");
  cmd->add_option("--input", a->input, "crawl records to ask about (JSON Lines; content, when present, is verified)");
  AddSharedOptions(cmd, &a->shared);
  cmd->callback([a, exit_code] {
    auto opts = ResolveShared(a->shared);
    if (!opts.ok()) { *exit_code = Fail(opts.status(), 2); return; }
    if (a->urls.empty() && a->input.empty()) { *exit_code = Fail(InvalidArgument("give --url or --input"), 2); return; }
    // A running cluster's API: --server, or the cluster's --config without --store.
    const bool cluster_config = a->store.empty() && !a->shared.config.empty();
    if (!a->server.empty() || cluster_config) {
      if (!a->input.empty()) { *exit_code = Fail(InvalidArgument("--server takes --url"), 2); return; }
      auto target = ResolveClusterClient(a->shared.config, a->server, "", a->ca_file);
      if (!target.ok()) { *exit_code = Fail(target.status(), 2); return; }
      *exit_code = StatusOverHttp(target->server, target->ca_file, a->urls);
      return;
    }
    if (a->store.empty()) { *exit_code = Fail(InvalidArgument("give --store or --server"), 2); return; }
    // Read-only: the store's files stay as they are, and its own parameters rule.
    auto opened = OpenStoreForQueries(a->store, &*opts);
    if (!opened.ok()) {
      *exit_code = Fail(opened.status(), opened.status().code() == StatusCode::kNotFound ? 2 : 1);
      return;
    }
    tier1::Tier1 t1(opened->groups.get(), opened->signatures.get(),
                    tier1::Tier1OptionsFromConfig(opts->config.tier1(), opts->threshold));
    auto answer = [&](const std::string& url, const pb::PageSignature* current) -> Status {
      tier1::StatusAnswer ans;
      RETURN_IF_ERROR(t1.Query(url, current, &ans));
      std::string out = "{\"url\":";
      AppendJsonString(&out, url);
      out += ",\"status\":\"" + std::string(tier1::StatusName(ans.status)) + "\",\"group\":" + std::to_string(ans.group) +
             ",\"winner\":";
      AppendJsonString(&out, ans.winner_url);
      if (ans.verified && !ans.redirect) AppendJsonField(&out, "similarity_to_winner", ans.similarity_to_winner);
      if (ans.status == tier1::StatusAnswer::kDuplicate && !ans.duplicate_of.empty()) {
        out += ",\"duplicate_of\":";
        AppendJsonString(&out, ans.duplicate_of);
        if (!ans.redirect) AppendJsonField(&out, "similarity_to_duplicate_of", ans.similarity_to_duplicate_of);
      }
      out += ans.verified ? ",\"verified\":true" : ",\"verified\":false";
      if (ans.redirect) out += ",\"redirect\":true";
      out += current != nullptr ? ",\"content\":\"given\"" : ",\"content\":\"stored\"";
      out += ",\"map_version\":" + std::to_string(opened->map_version);
      if (ans.route) out += ",\"route\":\"" + std::string(tier1::ClassificationName(*ans.route)) + "\"";
      out += "}\n";
      std::fputs(out.c_str(), stdout);
      return Status::Ok();
    };
    for (const std::string& url : a->urls) {
      if (Status s = answer(url, nullptr); !s.ok()) { *exit_code = Fail(s); return; }
    }
    if (!a->input.empty()) {
      CrawlSignerOptions so;
      so.signer = opts->signer;
      so.reader = opts->reader;
      so.threads = opts->threads;
      Status s = SignCrawl(a->input, so, [&](CrawlRecord& r, PageFeatures& f) -> Status {
        if (!r.has_content() || r.body.empty()) return answer(r.url, nullptr);
        const pb::PageSignature sig = ToProto(r.url, f, opts->signer);
        return answer(r.url, &sig);
      });
      if (!s.ok()) { *exit_code = Fail(s); return; }
    }
  });
}

}  // namespace

void RegisterRun(CLI::App& app, int* exit_code) {
  RegisterRunCommand(app, exit_code);
  RegisterCheckCommand(app, exit_code);
  RegisterAccuracyCommand(app, exit_code);
  RegisterStatusCommand(app, exit_code);
}

void AddBenchStatus(CLI::App* bench, int* exit_code) {
  auto* cmd = bench->add_subcommand("status", "Status queries per second from a warm group store (in-process, one thread)");
  struct Args {
    std::string store, config;
    uint64_t queries = 1000000;
    std::optional<double> threshold;
    std::optional<uint64_t> cache_records;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--store", a->store, "store directory of neardup run")->required();
  cmd->add_option("--queries", a->queries, "queries to time")->capture_default_str();
  cmd->add_option("--cache-records", a->cache_records, "Tier 1 record cache (default tier1.cache_records)");
  cmd->add_option("--threshold", a->threshold, "the store's threshold (default: the store's own)");
  cmd->add_option("--config", a->config, "the run's configuration");
  cmd->callback([a, exit_code] {
    SharedOptions so;
    so.config = a->config;
    so.threshold = a->threshold;
    auto opts = ResolveShared(so);
    if (!opts.ok()) { *exit_code = Fail(opts.status(), 2); return; }
    opts->config.mutable_tier1()->set_cache_mib(256);
    auto opened = OpenStoreForQueries(a->store, &*opts);  // read-only: the store stays as it is
    if (!opened.ok()) { *exit_code = Fail(opened.status()); return; }
    auto* gs = &opened->groups;
    auto* source = &opened->signatures;
    std::vector<std::string> urls;
    Status s = (*gs)->rows().ScanFamily((*gs)->page_family(), [&](std::string_view url, std::string_view, std::string_view) {
      urls.emplace_back(url);
      return true;
    });
    if (!s.ok() || urls.empty()) { *exit_code = Fail(s.ok() ? NotFound("the store has no pages") : s); return; }
    tier1::Tier1Options t1o = tier1::Tier1OptionsFromConfig(opts->config.tier1(), opts->threshold);
    if (a->cache_records) t1o.cache_records = *a->cache_records;
    uint64_t groups = 0;
    s = (*gs)->rows().ScanFamily((*gs)->group_family(), [&](std::string_view, std::string_view, std::string_view) {
      ++groups;
      return true;
    });
    if (!s.ok()) { *exit_code = Fail(s); return; }
    if (urls.size() + groups > t1o.cache_records) {
      // Each query reads a page record and its group's: when they do not all fit the record
      // cache, the random queries below read LevelDB, and the store is not warm.
      spdlog::warn("bench status: {} pages and {} groups, but cache_records is {}: the store is not warm; pass "
                   "--cache-records {} or more",
                   urls.size(), groups, t1o.cache_records, urls.size() + groups);
    }
    tier1::Tier1 t1(gs->get(), source->get(), t1o);
    std::mt19937_64 rng(7);
    std::vector<uint32_t> order(a->queries);
    for (auto& i : order) i = static_cast<uint32_t>(rng() % urls.size());
    tier1::StatusAnswer ans;
    uint64_t counts[5] = {0, 0, 0, 0, 0};
    // Warm-up: one pass over every page fills the record cache. The queries are the crawler's,
    // read-only: a loser whose verification the store has not cached is verified every time.
    for (const std::string& u : urls) {
      if (Status q = t1.Query(u, nullptr, &ans); !q.ok()) { *exit_code = Fail(q); return; }
    }
    const auto t0 = std::chrono::steady_clock::now();
    for (uint32_t i : order) {
      if (Status q = t1.Query(urls[i], nullptr, &ans); !q.ok()) { *exit_code = Fail(q); return; }
      ++counts[ans.status];
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("{\"pages\":%zu,\"cache_records\":%llu,\"queries\":%llu,\"seconds\":%.3f,\"queries_per_second\":%.0f,\"unknown\":%llu,"
                "\"pending\":%llu,\"unique\":%llu,\"winner\":%llu,\"duplicate\":%llu}\n",
                urls.size(), (unsigned long long)t1o.cache_records, (unsigned long long)a->queries, secs, static_cast<double>(a->queries) / secs,
                (unsigned long long)counts[0], (unsigned long long)counts[1], (unsigned long long)counts[2],
                (unsigned long long)counts[3], (unsigned long long)counts[4]);
  });
}

}  // namespace neardup::cli
