// neardup bench: named workloads that print figures to compare as ratios.
//
//   neardup bench docmodel --input crawl.jsonl [--records N]
//     Single-threaded throughput of each document-model stage over the crawl's records, in one
//     process: JSON record parsing, HTML -> visible text, tokenizing, and full signing
//     (tokenize + shingles + length vectors + digest). MB/s are of the stage's input bytes.
//
//   neardup bench route --map map.pb --input crawl.jsonl [--records N]
//     Nanoseconds per page to find a page's home cell (the baseline) and to route it to every
//     shard that can hold a near-duplicate, single-threaded, on the crawl's own pages.
#include "bench/docmodel_bench.h"
#include "bench/route_bench.h"
#include "cli/commands.h"

namespace neardup::cli {

void RegisterBench(CLI::App& app, int* exit_code) {
  auto* bench = app.add_subcommand("bench", "Named benchmark workloads");
  bench->require_subcommand(1);
  auto* doc = bench->add_subcommand("docmodel", "Throughput of JSON parsing, HTML->text, tokenizing and signing");
  struct Args { std::string input; uint64_t records = 20000; int repeat = 3; };
  auto args = std::make_shared<Args>();
  doc->add_option("--input", args->input, "crawl JSON Lines")->required();
  doc->add_option("--records", args->records, "records to load")->capture_default_str();
  doc->add_option("--repeat", args->repeat, "repetitions of each stage")->capture_default_str()->check(CLI::PositiveNumber);
  doc->callback([args, exit_code] { *exit_code = bench::RunDocModelBench(args->input, args->records, args->repeat); });

  auto* route = bench->add_subcommand("route", "Routing cost per page (ns) against a partition map");
  struct RouteArgs { std::string map, input; uint64_t records = 100000; int repeat = 5; };
  auto ra = std::make_shared<RouteArgs>();
  route->add_option("--map", ra->map, "partition map")->required();
  route->add_option("--input", ra->input, "crawl JSON Lines")->required();
  route->add_option("--records", ra->records, "records to sign and route")->capture_default_str();
  route->add_option("--repeat", ra->repeat, "repetitions")->capture_default_str()->check(CLI::PositiveNumber);
  route->callback([ra, exit_code] { *exit_code = bench::RunRouteBench(ra->map, ra->input, ra->records, ra->repeat); });

  AddBenchTier2(bench, exit_code);
  AddBenchStatus(bench, exit_code);
  AddBenchStatusHttp(bench, exit_code);
  AddBenchEmail(bench, exit_code);
  AddBenchEmailThreads(bench, exit_code);
}

}  // namespace neardup::cli
