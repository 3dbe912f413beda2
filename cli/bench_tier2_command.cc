// neardup bench tier2: one Tier 2 shard against a large resident collection (bench/tier2_bench.h).
//
//   neardup bench tier2 [--input crawl.jsonl | --gen-seed S] --resident 1000000 --batch 1000
//                       --threshold 0.9 [--batches 10] [--brute-pages 20] [--growth --csv fig7.csv]
#include <spdlog/spdlog.h>

#include "bench/tier2_bench.h"
#include "cli/commands.h"
#include "cli/common_options.h"

namespace neardup::cli {

void AddBenchTier2(CLI::App* bench, int* exit_code) {
  auto* cmd = bench->add_subcommand("tier2", "One Tier 2 shard: new pages/s against a resident collection");
  struct Args {
    SharedOptions shared;
    bench::Tier2BenchOptions o;
  };
  auto args = std::make_shared<Args>();
  bench::Tier2BenchOptions* a = &args->o;
  AddSharedOptions(cmd, &args->shared);
  cmd->add_option("--input", a->input, "crawl JSON Lines (default: generate one under --workdir)");
  cmd->add_option("--workdir", a->workdir, "where the generated crawl and the shard's LevelDB go")->capture_default_str();
  cmd->add_option("--gen-seed", a->gen_seed, "seed of the generated crawl")->capture_default_str();
  cmd->add_option("--resident", a->resident, "resident pages before timing")->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--batch", a->batch, "pages per batch")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--batches", a->batches, "timed batches")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--brute-pages", a->brute_pages, "pages of the first timed batch also compared by brute force")
      ->capture_default_str();
  cmd->add_option("--prefix-overlap", a->prefix_overlap, "c of the l-prefix filter (default: the config's)")
      ->check(CLI::Range(1, 64));
  cmd->add_flag("--growth", a->growth, "time the next 1% incrementally vs from scratch at 10k, 20k, 50k, ...");
  cmd->add_option("--csv", a->csv, "write the growth rows as CSV");
  cmd->add_option("--report", a->report, "write the figures as JSON");
  cmd->callback([args, exit_code] {
    auto r = ResolveShared(args->shared);
    if (!r.ok()) { spdlog::error("{}", r.status().message()); *exit_code = 2; return; }
    bench::Tier2BenchOptions o = args->o;
    o.threshold = r->threshold;
    o.signer = r->signer;
    o.reader = r->reader;
    o.threads = r->threads;
    o.config = r->config;
    *exit_code = bench::RunTier2Bench(o);
  });
}

}  // namespace neardup::cli
