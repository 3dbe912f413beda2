// neardup email threads ingest | show, email domains ingest | classify, email gen-threads |
// gen-domains, and bench email-threads (email/threads/thread_weaver.h, email/domains/domain_counts.h).
//
//   neardup email threads ingest --input messages.jsonl --store DIR [--config c] [--sync-every N]
//   neardup email threads show --store DIR --gid G --thread T [--team-gids a,b,c | --team T]
//   neardup email domains ingest --input events.jsonl --store DIR [--config c] [--heal-all]
//   neardup email domains classify --store DIR --team T --inviter x@a.com --invitee y@b.com [--config c]
//   neardup email domains counts --store DIR [--team T]
//   neardup email gen-threads --emails N [--seed S] --out messages.jsonl
//   neardup email gen-domains --changes N [--seed S] [--config c] --out events.jsonl [--truth t.jsonl]
//   neardup bench email-threads [--emails N] [--writers W] [--readers R] [--changes C] [--dir DIR]
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <unordered_set>

#include "cli/commands.h"
#include "common/config.h"
#include "email/domains/domain_counts.h"
#include "email/domains/domain_records.h"
#include "email/domains/domains_bench.h"
#include "email/domains/user_event_gen.h"
#include "email/mail/json_lines.h"
#include "email/threads/mailbox_gen.h"
#include "email/threads/thread_records.h"
#include "email/threads/thread_weaver.h"
#include "email/threads/threads_bench.h"

namespace neardup::cli {
namespace {

int Failed(const char* what, const Status& s) {
  spdlog::error("{}: {}", what, s.message());
  return s.code() == StatusCode::kInvalidArgument ? 2 : 1;
}

StatusOr<pb::NeardupConfig> Config(const std::string& path) {
  if (path.empty()) return DefaultConfig();
  return LoadConfig(path);
}

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  size_t b = 0;
  while (b <= s.size()) {
    const size_t e = s.find(',', b);
    std::string part = s.substr(b, e == std::string::npos ? std::string::npos : e - b);
    if (!part.empty()) out.push_back(std::move(part));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  return out;
}

struct Args {
  std::string input, store, config, out, truth, gid, thread, team, team_gids, inviter, invitee;
  uint64_t sync_every = 10'000;
  bool heal_all = false;
  uint64_t count = 100'000, seed = 1;
};

// InvalidArgument when a command that reads a store is given one that does not exist.
Status StoreExists(const Args& a, const char* writer) {
  if (std::filesystem::exists(a.store)) return Status::Ok();
  return InvalidArgument("--store " + a.store + " does not exist (run " + writer + " first)");
}

StatusOr<std::unique_ptr<email::ThreadWeaver>> OpenWeaver(const Args& a, const pb::NeardupConfig& cfg) {
  email::ThreadWeaverOptions o;
  o.path = a.store;
  o.spam_cap = cfg.email().thread_spam_cap();
  return email::ThreadWeaver::Open(o);
}

// The domain counts for a command that only reads them: no healer.
StatusOr<std::unique_ptr<email::DomainCounts>> OpenDomainsToRead(const Args& a) {
  RETURN_IF_ERROR(StoreExists(a, "email domains ingest"));
  email::DomainCountsOptions o;
  o.path = a.store;
  o.healer_thread = false;
  o.healer_sample_rate = 0;
  return email::DomainCounts::Open(o);
}

void WriteLine(std::string line) {
  line.push_back('\n');
  std::fwrite(line.data(), 1, line.size(), stdout);
}

int ThreadsIngest(const Args& a) {
  auto cfg = Config(a.config);
  if (!cfg.ok()) return Failed("email threads ingest", cfg.status());
  if (a.sync_every == 0) return Failed("email threads ingest", InvalidArgument("--sync-every must be at least 1"));
  auto w = OpenWeaver(a, *cfg);
  if (!w.ok()) return Failed("email threads ingest", w.status());
  email::ThreadEmail e;
  uint64_t since_sync = 0;
  const auto t0 = std::chrono::steady_clock::now();
  auto stats = email::ForEachJsonLine(a.input, cfg->reader().max_line_bytes(), [&](std::string_view line, uint64_t) {
    RETURN_IF_ERROR(email::ParseThreadEmail(line, &e));
    RETURN_IF_ERROR((*w)->Add(e));
    if (++since_sync == a.sync_every) {
      since_sync = 0;
      RETURN_IF_ERROR((*w)->Sync());
    }
    return Status::Ok();
  });
  if (!stats.ok()) return Failed("email threads ingest", stats.status());
  if (Status s = (*w)->Sync(); !s.ok()) return Failed("email threads ingest", s);
  const double secs = Since(t0);
  const email::ThreadWeaverStats st = (*w)->stats();
  std::printf("email threads ingest: %llu emails from %llu lines (%llu bad lines skipped), all acknowledged; %llu new "
              "threads, %llu merges, %llu without Message-ID; %.0f emails/s\n",
              static_cast<unsigned long long>(stats->records), static_cast<unsigned long long>(stats->lines),
              static_cast<unsigned long long>(stats->bad_lines), static_cast<unsigned long long>(st.new_threads),
              static_cast<unsigned long long>(st.merges), static_cast<unsigned long long>(st.no_message_id),
              static_cast<double>(stats->records) / std::max(secs, 1e-9));
  return 0;
}

int ThreadsShow(const Args& a) {
  auto cfg = Config(a.config);
  if (!cfg.ok()) return Failed("email threads show", cfg.status());
  if (Status s = StoreExists(a, "email threads ingest"); !s.ok()) return Failed("email threads show", s);
  auto w = OpenWeaver(a, *cfg);
  if (!w.ok()) return Failed("email threads show", w.status());
  std::unordered_set<std::string> team;
  const bool filter = !a.team_gids.empty() || !a.team.empty();
  for (std::string& g : SplitComma(a.team_gids)) team.insert(std::move(g));
  if (!a.team.empty()) {
    auto gids = (*w)->TeamGids(a.team);
    if (!gids.ok()) return Failed("email threads show", gids.status());
    team.insert(gids->begin(), gids->end());
  }
  auto u = (*w)->Lookup(a.gid, a.thread, filter ? &team : nullptr);
  if (!u.ok()) return Failed("email threads show", u.status());
  WriteLine(email::UnifiedThreadJson(a.gid, a.thread, *u));
  return 0;
}

int DomainsIngest(const Args& a) {
  auto cfg = Config(a.config);
  if (!cfg.ok()) return Failed("email domains ingest", cfg.status());
  email::DomainCountsOptions o;
  o.path = a.store;
  o.healer_sample_rate = cfg->email().domain_healer_sample_rate();
  auto d = email::DomainCounts::Open(o);
  if (!d.ok()) return Failed("email domains ingest", d.status());
  std::vector<email::DomainRecord> batch;
  uint64_t events = 0;
  auto flush = [&]() -> Status {
    Status s = (*d)->Apply(batch);
    // Every record was checked when parsed: a refusal here is not one line's fault.
    if (s.code() == StatusCode::kInvalidArgument) return Status(StatusCode::kInternal, s.message());
    RETURN_IF_ERROR(s);
    batch.clear();
    return Status::Ok();
  };
  const auto t0 = std::chrono::steady_clock::now();
  auto stats = email::ForEachJsonLine(a.input, cfg->reader().max_line_bytes(), [&](std::string_view line, uint64_t n) {
    email::DomainRecord r;
    RETURN_IF_ERROR(email::ParseDomainRecord(line, &r));
    r.line = n;
    events += r.kind == email::DomainRecord::Kind::kEvent;
    batch.push_back(std::move(r));
    if (batch.size() == 1024) return flush();
    return Status::Ok();
  });
  if (!stats.ok()) return Failed("email domains ingest", stats.status());
  if (Status s = flush(); !s.ok()) return Failed("email domains ingest", s);
  const double secs = Since(t0);
  if (Status s = (*d)->DrainHealer(); !s.ok()) return Failed("email domains ingest", s);
  if (a.heal_all) {
    if (Status s = (*d)->HealAll(); !s.ok()) return Failed("email domains ingest", s);
  }
  if (Status s = (*d)->Sync(); !s.ok()) return Failed("email domains ingest", s);
  const email::HealerReport h = (*d)->healer_report();
  std::printf("email domains ingest: %llu records from %llu lines (%llu bad lines skipped), %llu events, %.0f events/s; "
              "healer: %llu negative and %llu sampled keys queued, %llu recounted, %llu healed (|corrections| %llu) "
              "in %.3f s%s\n",
              static_cast<unsigned long long>(stats->records), static_cast<unsigned long long>(stats->lines),
              static_cast<unsigned long long>(stats->bad_lines), static_cast<unsigned long long>(events),
              static_cast<double>(events) / std::max(secs, 1e-9), static_cast<unsigned long long>(h.negative_triggers),
              static_cast<unsigned long long>(h.sampled_triggers), static_cast<unsigned long long>(h.keys_checked),
              static_cast<unsigned long long>(h.keys_healed), static_cast<unsigned long long>(h.corrections), h.seconds,
              a.heal_all ? " (every key swept)" : "");
  return 0;
}

int DomainsClassify(const Args& a) {
  auto cfg = Config(a.config);
  if (!cfg.ok()) return Failed("email domains classify", cfg.status());
  auto d = OpenDomainsToRead(a);
  if (!d.ok()) return Failed("email domains classify", d.status());
  auto team = (*d)->Team(a.team);
  if (!team.ok()) return Failed("email domains classify", team.status());
  auto c = (*d)->Classify(*team, a.inviter, a.invitee, cfg->email());
  if (!c.ok()) return Failed("email domains classify", c.status());
  WriteLine(email::ClassificationJson(a.team, a.invitee, *c));
  return 0;
}

int DomainsCounts(const Args& a) {
  auto d = OpenDomainsToRead(a);
  if (!d.ok()) return Failed("email domains counts", d.status());
  auto all = (*d)->AllCounts();
  if (!all.ok()) return Failed("email domains counts", all.status());
  for (const auto& [k, v] : *all) {
    if (!a.team.empty() && k.team != a.team) continue;
    WriteLine(email::DomainCountJson(k, v));
  }
  return 0;
}

std::FILE* OpenOut(const std::string& path) { return path == "-" ? stdout : std::fopen(path.c_str(), "wb"); }

int Close(std::FILE* f, const std::string& path) {
  if (f == stdout) return std::fflush(f) == 0 ? 0 : 1;
  if (std::fclose(f) != 0) {
    spdlog::error("cannot write {}: {}", path, std::strerror(errno));
    return 1;
  }
  return 0;
}

int GenThreads(const Args& a) {
  email::MailGenOptions g;
  g.emails = a.count;
  g.seed = a.seed;
  std::FILE* out = OpenOut(a.out);
  if (out == nullptr) return Failed("email gen-threads", IoError("cannot write " + a.out + ": " + std::strerror(errno)));
  for (const email::ThreadEmail& e : email::GenerateMailboxes(g)) {
    const std::string line = email::ThreadEmailJson(e) + "\n";
    std::fwrite(line.data(), 1, line.size(), out);
  }
  return Close(out, a.out);
}

int GenDomains(const Args& a) {
  auto cfg = Config(a.config);
  if (!cfg.ok()) return Failed("email gen-domains", cfg.status());
  email::UserEventGenOptions g;
  g.changes = a.count;
  g.seed = a.seed;
  g.duplicate_rate = cfg->email().domain_duplicate_rate();
  g.drop_rate = cfg->email().domain_drop_rate();
  g.reorder_rate = cfg->email().domain_reorder_rate();
  g.reorder_window = cfg->email().domain_reorder_window();
  const email::UserEventStream s = email::GenerateUserEvents(g);
  std::FILE* out = OpenOut(a.out);
  if (out == nullptr) return Failed("email gen-domains", IoError("cannot write " + a.out + ": " + std::strerror(errno)));
  for (const email::DomainRecord& r : s.records) {
    const std::string line = email::DomainRecordJson(r) + "\n";
    std::fwrite(line.data(), 1, line.size(), out);
  }
  if (int rc = Close(out, a.out); rc != 0) return rc;
  if (!a.truth.empty()) {
    std::FILE* t = OpenOut(a.truth);
    if (t == nullptr) return Failed("email gen-domains", IoError("cannot write " + a.truth + ": " + std::strerror(errno)));
    for (const auto& [k, v] : s.truth) {
      const std::string line = email::DomainCountJson(k, v) + "\n";
      std::fwrite(line.data(), 1, line.size(), t);
    }
    if (int rc = Close(t, a.truth); rc != 0) return rc;
  }
  spdlog::info("email gen-domains: {} records, {} events ({} duplicated, {} dropped, {} late)", s.records.size(), s.events,
               s.duplicated, s.dropped, s.reordered);
  return 0;
}

// The options several subcommands share, worded once.
void InputOption(CLI::App* c, Args* a, const char* what) { c->add_option("--input", a->input, what)->required(); }
void StoreOption(CLI::App* c, Args* a, bool created) {
  c->add_option("--store", a->store, created ? "the store's directory (created when missing)" : "the store's directory")
      ->required();
}
void ConfigOption(CLI::App* c, Args* a, const char* what = "configuration (configs/email.textproto)") {
  c->add_option("--config", a->config, what);
}
void GenOptions(CLI::App* c, Args* a, const char* count, const char* what) {
  c->add_option(count, a->count, what)->capture_default_str();
  c->add_option("--seed", a->seed, "random seed")->capture_default_str();
  c->add_option("--out", a->out, "JSON Lines to write (- for stdout)")->required();
}

}  // namespace

void AddEmailThreads(CLI::App* email, int* exit_code) {
  auto a = std::make_shared<Args>();
  auto* threads = email->add_subcommand("threads", "Unified threads across mailboxes (threadweaver)");
  threads->require_subcommand(1);
  auto* ti = threads->add_subcommand("ingest", "Add emails (gid, thread, message_id, team) to a unified-thread store");
  InputOption(ti, a.get(), "emails, JSON Lines");
  StoreOption(ti, a.get(), /*created=*/true);
  ConfigOption(ti, a.get());
  ti->add_option("--sync-every", a->sync_every, "acknowledge (fsync) every N emails")->capture_default_str();
  ti->callback([a, exit_code] { *exit_code = ThreadsIngest(*a); });
  auto* ts = threads->add_subcommand("show", "A thread's unified thread: every thread of it, filtered to a team");
  StoreOption(ts, a.get(), /*created=*/false);
  ts->add_option("--gid", a->gid, "the mailbox")->required();
  ts->add_option("--thread", a->thread, "the mailbox's thread id")->required();
  ts->add_option("--team-gids", a->team_gids, "only threads of these mailboxes (comma-separated)");
  ts->add_option("--team", a->team, "only threads of this team's mailboxes (as the emails named them)");
  ConfigOption(ts, a.get());
  ts->callback([a, exit_code] { *exit_code = ThreadsShow(*a); });

  auto* domains = email->add_subcommand("domains", "Users per (team, domain, role) from an at-least-once stream, healed; classification");
  domains->require_subcommand(1);
  auto* di = domains->add_subcommand("ingest", "Apply user rows and events to the counts; the healer fixes drift");
  InputOption(di, a.get(), "user rows, events and team settings, JSON Lines");
  StoreOption(di, a.get(), /*created=*/true);
  ConfigOption(di, a.get());
  di->add_flag("--heal-all", a->heal_all, "after the input, heal every key");
  di->callback([a, exit_code] { *exit_code = DomainsIngest(*a); });
  auto* dc = domains->add_subcommand("classify", "Is an invitee internal or external to a team?");
  StoreOption(dc, a.get(), /*created=*/false);
  dc->add_option("--team", a->team, "the team")->required();
  dc->add_option("--inviter", a->inviter, "the inviter's address")->required();
  dc->add_option("--invitee", a->invitee, "the invitee's address")->required();
  ConfigOption(dc, a.get(), "configuration (configs/email.textproto): the rule's thresholds");
  dc->callback([a, exit_code] { *exit_code = DomainsClassify(*a); });

  auto* dn = domains->add_subcommand("counts", "Every (team, domain, role) with its count, one JSON line each");
  StoreOption(dn, a.get(), /*created=*/false);
  dn->add_option("--team", a->team, "only this team's keys");
  dn->callback([a, exit_code] { *exit_code = DomainsCounts(*a); });

  auto* gt = email->add_subcommand("gen-threads", "Generate realistic mailboxes' emails (deterministic per seed)");
  GenOptions(gt, a.get(), "--emails", "emails to write (about)");
  gt->callback([a, exit_code] { *exit_code = GenThreads(*a); });
  auto* gd = email->add_subcommand("gen-domains", "Generate user rows and events with duplicates, drops and late ones");
  GenOptions(gd, a.get(), "--changes", "user changes");
  ConfigOption(gd, a.get(), "configuration: the delivery fault rates (email.domain_*_rate)");
  gd->add_option("--truth", a->truth, "write the exact count of every (team, domain, role) here");
  gd->callback([a, exit_code] { *exit_code = GenDomains(*a); });
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
      *exit_code = Failed("bench email-threads", t.status());
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
      *exit_code = Failed("bench email-threads", d.status());
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
