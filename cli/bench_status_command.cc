// neardup bench status (bench/status_bench.h) and bench status-http (bench/status_http_bench.h).
#include <optional>
#include <string>

#include "bench/status_bench.h"
#include "bench/status_http_bench.h"
#include "cli/commands.h"
#include "cli/common_options.h"
#include "cli/store_queries.h"

namespace neardup::cli {

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
    if (!opts.ok()) { *exit_code = ReportFailure(opts.status(), 2); return; }
    opts->config.mutable_tier1()->set_cache_mib(256);
    auto opened = OpenStoreForQueries(a->store, &*opts);  // read-only: the store stays as it is
    if (!opened.ok()) { *exit_code = ReportFailure(opened.status()); return; }
    tier1::Tier1Options t1o = tier1::Tier1OptionsFromConfig(opts->config.tier1(), opts->threshold);
    if (a->cache_records) t1o.cache_records = *a->cache_records;
    *exit_code = bench::RunStatusBench(opened->groups.get(), opened->signatures.get(), t1o, a->queries);
  });
}

void AddBenchStatusHttp(CLI::App* bench, int* exit_code) {
  auto* cmd = bench->add_subcommand("status-http", "Status queries over loopback HTTP with keep-alive from N clients");
  auto a = std::make_shared<bench::StatusHttpBenchOptions>();
  cmd->add_option("--server", a->server, "the API, http://host:port or https://host:port")->required();
  cmd->add_option("--ca-file", a->ca_file, "https: the CA the API's certificate is checked against");
  cmd->add_flag("--blocking", a->blocking, "ask with a thread and a blocking client each (always so over https)");
  cmd->add_option("--input", a->input, "crawl whose URLs are asked about (at random)")->required();
  cmd->add_option("--clients", a->clients, "concurrent clients, one connection each")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--seconds", a->seconds, "how long to ask")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--ingest", a->ingest, "ingest this crawl over and over meanwhile (status during ingest)");
  cmd->add_flag("--redis", a->redis, "run redis-benchmark -t get against a local redis-server afterwards");
  cmd->callback([a, exit_code] { *exit_code = bench::RunStatusHttpBench(*a); });
}

}  // namespace neardup::cli
