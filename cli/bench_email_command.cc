// neardup bench email (bench/email_sweep.h) and bench email-threads
// (email/threads/threads_bench.h, email/domains/domains_bench.h).
//
//   neardup bench email [--emails N] [--templates M] [--alpha 1.001,1.01,1.1,1.5]
//                       [--threads 1,2,4,8] [--tuned C:F] [--k 1000] [--max-per-row S] [--dir DIR]
//   neardup bench email-threads [--emails N] [--writers W] [--readers R] [--changes C] [--dir DIR]
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "bench/email_sweep.h"
#include "cli/commands.h"
#include "cli/mail_options.h"
#include "common/config.h"
#include "email/domains/domains_bench.h"
#include "email/threads/threads_bench.h"

namespace neardup::cli {

void AddBenchEmail(CLI::App* bench, int* exit_code) {
  auto* cmd = bench->add_subcommand("email", "The Crusher synthetic workload: emails/s by Zipf alpha and by thread configuration");
  struct Args {
    bench::EmailSweepOptions sweep;
    std::string tuned = "2:1";
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--emails", a->sweep.run.emails, "emails per run")->capture_default_str();
  cmd->add_option("--templates", a->sweep.run.templates, "template ids (the Zipf support)")->capture_default_str();
  cmd->add_option("--alpha", a->sweep.alphas, "Zipf parameters, each run with the tuned pools")->delimiter(',');
  cmd->add_option("--threads", a->sweep.threads, "fixed thread counts for both pools, each run at alpha 1.1")->delimiter(',');
  cmd->add_option("--tuned", a->tuned, "the tuned pools, stage1:stage2 threads")->capture_default_str();
  cmd->add_option("--k", a->sweep.run.k, "k-anonymity")->capture_default_str();
  cmd->add_option("--max-per-row", a->sweep.run.max_emails_per_row, "S: emails a row keeps")->capture_default_str();
  cmd->add_option("--max-per-template", a->sweep.run.max_per_template, "T: emails sent per template id")->capture_default_str();
  cmd->add_flag("--aggregators", a->sweep.run.aggregators,
                "run the configured aggregators (rows then keep each email's text blocks, the body)");
  cmd->add_option("--batch", a->sweep.run.batch, "emails per stage-1 task and row-store write")->capture_default_str();
  cmd->add_flag("--async-writes", a->sweep.run.async_writes, "hand the cluster store's writes to its writer thread");
  cmd->add_option("--dir", a->sweep.dir, "directory for the cluster store (removed after each run)");
  cmd->callback([a, exit_code] {
    uint32_t tc = 2, tf = 1;
    if (std::sscanf(a->tuned.c_str(), "%u:%u", &tc, &tf) != 2) {
      spdlog::error("bench email: --tuned wants stage1:stage2 threads, got {}", a->tuned);
      *exit_code = 2;
      return;
    }
    bench::EmailSweepOptions o = a->sweep;
    if (o.dir.empty()) {
      o.dir = (std::filesystem::temp_directory_path() / ("neardup-bench-email-" + std::to_string(::getpid()))).string();
    }
    o.run.base = ConfigDefaults().email();
    o.tuned_cluster = tc;
    o.tuned_formation = tf;
    *exit_code = bench::RunEmailSweep(o);
  });
}

void AddBenchEmailThreads(CLI::App* bench, int* exit_code) {
  auto* cmd = bench->add_subcommand("email-threads", "Unified threads: writes/s and reads/s on LevelDB with the oracle check; domain events/s and the healer");
  struct BenchArgs {
    email::ThreadsBenchOptions t;
    email::DomainsBenchOptions d;
    std::string dir;
  };
  auto a = std::make_shared<BenchArgs>();
  cmd->add_option("--emails", a->t.emails, "emails generated and written")->capture_default_str();
  cmd->add_option("--writers", a->t.writers, "writer threads")->capture_default_str();
  cmd->add_option("--readers", a->t.readers, "reader threads")->capture_default_str();
  cmd->add_option("--sync-every", a->t.sync_every, "each writer acknowledges (fsync) every N emails")->capture_default_str();
  cmd->add_option("--reused-share", a->t.reused_message_id_share, "share of emails from the system reusing one Message-ID")->capture_default_str();
  cmd->add_option("--changes", a->d.changes, "user changes of the domain counts' stream")->capture_default_str();
  cmd->add_option("--seed", a->t.seed, "random seed")->capture_default_str();
  cmd->add_option("--dir", a->dir, "directory for the stores (removed after)");
  cmd->callback([a, exit_code] {
    const std::string dir = a->dir.empty() ? (std::filesystem::temp_directory_path() /
                                              ("neardup-bench-threads-" + std::to_string(::getpid()))).string()
                                           : a->dir;
    a->t.dir = dir + "/threads";
    a->d.dir = dir + "/domains";
    a->d.seed = a->t.seed;
    std::filesystem::create_directories(dir);
    auto t = email::RunThreadsBench(a->t);
    if (!t.ok()) {
      *exit_code = MailFailed("bench email-threads", t.status());
      return;
    }
    std::printf("threads: %llu emails, %llu threads, %llu merges, %u writers: %.0f emails/s written (acknowledged, "
                "LevelDB, %.1f MB; %.0f per CPU-second); %u readers: %.0f lookups/s warm (%.0f per CPU-second), "
                "%.0f lookups/s cold, store reopened (%.0f per CPU-second); oracle: %llu + %llu of %llu lookups differ "
                "(%llu reached a spam unified thread)\n",
                static_cast<unsigned long long>(t->emails), static_cast<unsigned long long>(t->threads),
                static_cast<unsigned long long>(t->merges), a->t.writers, t->emails / std::max(t->write_seconds, 1e-9),
                t->disk_bytes / 1e6, t->emails / std::max(t->write_cpu_seconds, 1e-9), a->t.readers,
                t->threads / std::max(t->warm.seconds, 1e-9), t->threads / std::max(t->warm.cpu_seconds, 1e-9),
                t->threads / std::max(t->cold.seconds, 1e-9), t->threads / std::max(t->cold.cpu_seconds, 1e-9),
                static_cast<unsigned long long>(t->warm.mismatches), static_cast<unsigned long long>(t->cold.mismatches),
                static_cast<unsigned long long>(t->threads), static_cast<unsigned long long>(t->spam_lookups));
    auto d = email::RunDomainsBench(a->d);
    if (!d.ok()) {
      *exit_code = MailFailed("bench email-threads", d.status());
      return;
    }
    std::printf("domains: %llu records (%llu events: %llu duplicated, %llu dropped, %llu late): %.0f events/s applied "
                "(%.0f records/s, %.0f events per CPU-second); healer while ingesting: %llu negative and %llu sampled keys, %llu healed in %.3f s; "
                "after the stream %llu of %llu keys drifted; sweep: %llu keys recounted (%llu index cells), %llu healed "
                "(|corrections| %llu) in %.3f s; %llu keys wrong after it\n",
                static_cast<unsigned long long>(d->records), static_cast<unsigned long long>(d->events),
                static_cast<unsigned long long>(d->duplicated), static_cast<unsigned long long>(d->dropped),
                static_cast<unsigned long long>(d->reordered), d->events / std::max(d->ingest_seconds, 1e-9),
                d->records / std::max(d->ingest_seconds, 1e-9), d->events / std::max(d->ingest_cpu_seconds, 1e-9), static_cast<unsigned long long>(d->during.negative_triggers),
                static_cast<unsigned long long>(d->during.sampled_triggers),
                static_cast<unsigned long long>(d->during.keys_healed), d->during.seconds,
                static_cast<unsigned long long>(d->drifted_before_sweep), static_cast<unsigned long long>(d->keys),
                static_cast<unsigned long long>(d->sweep.keys_checked), static_cast<unsigned long long>(d->sweep.cells_scanned),
                static_cast<unsigned long long>(d->sweep.keys_healed), static_cast<unsigned long long>(d->sweep.corrections),
                d->sweep.seconds, static_cast<unsigned long long>(d->wrong_after_sweep));
    std::error_code ec;
    if (a->dir.empty()) std::filesystem::remove_all(dir, ec);
    *exit_code = (t->mismatches == 0 && d->wrong_after_sweep == 0) ? 0 : 1;
  });
}

}  // namespace neardup::cli
