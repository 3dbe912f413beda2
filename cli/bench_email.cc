// neardup bench email: the Crusher paper's synthetic workload (Section 6.2; email/templates/bench.h):
// emails/s by Zipf alpha and by stage thread configuration.
//
//   neardup bench email [--emails N] [--templates M] [--alpha 1.001,1.01,1.1,1.5]
//                       [--threads 1,2,4,8] [--tuned C:F] [--k 1000] [--max-per-row S] [--dir DIR]
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "common/config.h"
#include "email/templates/bench.h"

namespace neardup::cli {

void AddBenchEmail(CLI::App* bench, int* exit_code) {
  auto* cmd = bench->add_subcommand("email", "The Crusher synthetic workload: emails/s by Zipf alpha and by thread configuration");
  struct Args {
    email::BenchOptions o;
    std::vector<double> alphas = {1.001, 1.01, 1.1, 1.5};
    std::vector<uint32_t> threads = {1, 2, 4, 8};
    std::string tuned = "2:1";
    std::string dir;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--emails", a->o.emails, "emails per run")->capture_default_str();
  cmd->add_option("--templates", a->o.templates, "template ids (the Zipf support)")->capture_default_str();
  cmd->add_option("--alpha", a->alphas, "Zipf parameters, each run with the tuned pools")->delimiter(',');
  cmd->add_option("--threads", a->threads, "fixed thread counts for both pools, each run at alpha 1.1")->delimiter(',');
  cmd->add_option("--tuned", a->tuned, "the tuned pools, stage1:stage2 threads")->capture_default_str();
  cmd->add_option("--k", a->o.k, "k-anonymity")->capture_default_str();
  cmd->add_option("--max-per-row", a->o.max_emails_per_row, "S: emails a row keeps")->capture_default_str();
  cmd->add_option("--max-per-template", a->o.max_per_template, "T: emails sent per template id")->capture_default_str();
  cmd->add_flag("--aggregators", a->o.aggregators,
                "run the configured aggregators (rows then keep each email's text blocks, the body)");
  cmd->add_option("--batch", a->o.batch, "emails per stage-1 task and row-store write")->capture_default_str();
  cmd->add_flag("--async-writes", a->o.async_writes, "hand the cluster store's writes to its writer thread");
  cmd->add_option("--dir", a->dir, "directory for the cluster store (removed after each run)");
  cmd->callback([a, exit_code] {
    uint32_t tc = 2, tf = 1;
    if (std::sscanf(a->tuned.c_str(), "%u:%u", &tc, &tf) != 2) {
      spdlog::error("bench email: --tuned wants stage1:stage2 threads, got {}", a->tuned);
      *exit_code = 2;
      return;
    }
    const std::string dir = a->dir.empty() ? (std::filesystem::temp_directory_path() /
                                              ("neardup-bench-email-" + std::to_string(::getpid()))).string()
                                           : a->dir;
    a->o.base = ConfigDefaults().email();
    std::printf("%-8s %-10s %10s %9s %10s %11s %9s %9s %8s\n", "alpha", "threads", "emails", "seconds", "emails/s",
                "cache hits", "stored", "templates", "dropped");
    auto run = [&](double alpha, uint32_t c, uint32_t f, const char* label) {
      email::BenchOptions o = a->o;
      o.alpha = alpha;
      o.cluster_threads = c;
      o.formation_threads = f;
      o.dir = dir;
      auto r = email::RunEmailBench(o);
      if (!r.ok()) {
        spdlog::error("bench email: {}", r.status().message());
        *exit_code = 1;
        return false;
      }
      char threads[32];
      std::snprintf(threads, sizeof threads, "%s%u:%u", label, c, f);
      std::printf("%-8.3f %-10s %10llu %9.2f %10.0f %11llu %9llu %9llu %8llu\n", alpha, threads,
                  static_cast<unsigned long long>(r->emails), r->seconds, r->emails_per_second,
                  static_cast<unsigned long long>(r->cache_hits), static_cast<unsigned long long>(r->stored),
                  static_cast<unsigned long long>(r->templates_formed), static_cast<unsigned long long>(r->dropped));
      std::fflush(stdout);
      return true;
    };
    for (double alpha : a->alphas) {
      if (!run(alpha, tc, tf, "tuned ")) return;
    }
    for (uint32_t t : a->threads) {
      if (!run(1.1, t, t, "fixed ")) return;
    }
    std::printf("(the paper: 25,000 emails/s per clustering server; mean body %.1f KB)\n", 10.0);
  });
}

}  // namespace neardup::cli
