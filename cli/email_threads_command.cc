// neardup email threads ingest | show, email gen-threads (email/threads/thread_weaver.h).
//
//   neardup email threads ingest --input messages.jsonl --store DIR [--config c] [--sync-every N]
//   neardup email threads show --store DIR --gid G --thread T [--team-gids a,b,c | --team T]
//   neardup email gen-threads --emails N [--seed S] --out messages.jsonl
#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <unordered_set>

#include "cli/commands.h"
#include "cli/mail_options.h"
#include "document/json_lines.h"
#include "email/threads/mailbox_gen.h"
#include "email/threads/thread_records.h"
#include "email/threads/thread_weaver.h"

namespace neardup::cli {
namespace {

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

StatusOr<std::unique_ptr<email::ThreadWeaver>> OpenWeaver(const MailArgs& a, const pb::NeardupConfig& cfg) {
  email::ThreadWeaverOptions o;
  o.path = a.store;
  o.spam_cap = cfg.email().thread_spam_cap();
  return email::ThreadWeaver::Open(o);
}

int ThreadsIngest(const MailArgs& a) {
  auto cfg = MailConfig(a.config);
  if (!cfg.ok()) return MailFailed("email threads ingest", cfg.status());
  if (a.sync_every == 0) return MailFailed("email threads ingest", InvalidArgument("--sync-every must be at least 1"));
  auto w = OpenWeaver(a, *cfg);
  if (!w.ok()) return MailFailed("email threads ingest", w.status());
  email::ThreadEmail e;
  uint64_t since_sync = 0;
  const auto t0 = std::chrono::steady_clock::now();
  auto stats = ForEachJsonLine(a.input, {.max_line_bytes = cfg->reader().max_line_bytes()}, [&](std::string_view line, uint64_t) {
    RETURN_IF_ERROR(email::ParseThreadEmail(line, &e));
    RETURN_IF_ERROR((*w)->Add(e));
    if (++since_sync == a.sync_every) {
      since_sync = 0;
      RETURN_IF_ERROR((*w)->Sync());
    }
    return Status::Ok();
  });
  if (!stats.ok()) return MailFailed("email threads ingest", stats.status());
  if (Status s = (*w)->Sync(); !s.ok()) return MailFailed("email threads ingest", s);
  const double secs = MailSecondsSince(t0);
  const email::ThreadWeaverStats st = (*w)->stats();
  std::printf("email threads ingest: %llu emails from %llu lines (%llu bad lines skipped), all acknowledged; %llu new "
              "threads, %llu merges, %llu without Message-ID; %.0f emails/s\n",
              static_cast<unsigned long long>(stats->records), static_cast<unsigned long long>(stats->lines),
              static_cast<unsigned long long>(stats->bad_lines), static_cast<unsigned long long>(st.new_threads),
              static_cast<unsigned long long>(st.merges), static_cast<unsigned long long>(st.no_message_id),
              static_cast<double>(stats->records) / std::max(secs, 1e-9));
  return 0;
}

int ThreadsShow(const MailArgs& a) {
  auto cfg = MailConfig(a.config);
  if (!cfg.ok()) return MailFailed("email threads show", cfg.status());
  if (Status s = StoreExists(a, "email threads ingest"); !s.ok()) return MailFailed("email threads show", s);
  auto w = OpenWeaver(a, *cfg);
  if (!w.ok()) return MailFailed("email threads show", w.status());
  std::unordered_set<std::string> team;
  const bool filter = !a.team_gids.empty() || !a.team.empty();
  for (std::string& g : SplitComma(a.team_gids)) team.insert(std::move(g));
  if (!a.team.empty()) {
    auto gids = (*w)->TeamGids(a.team);
    if (!gids.ok()) return MailFailed("email threads show", gids.status());
    team.insert(gids->begin(), gids->end());
  }
  auto u = (*w)->Lookup(a.gid, a.thread, filter ? &team : nullptr);
  if (!u.ok()) return MailFailed("email threads show", u.status());
  WriteLine(email::UnifiedThreadJson(a.gid, a.thread, *u));
  return 0;
}

int GenThreads(const MailArgs& a) {
  email::MailGenOptions g;
  g.emails = a.count;
  g.seed = a.seed;
  std::FILE* out = OpenOut(a.out);
  if (out == nullptr) return MailFailed("email gen-threads", IoError("cannot write " + a.out + ": " + std::strerror(errno)));
  for (const email::ThreadEmail& e : email::GenerateMailboxes(g)) {
    const std::string line = email::ThreadEmailJson(e) + "\n";
    std::fwrite(line.data(), 1, line.size(), out);
  }
  return CloseOut(out, a.out);
}

}  // namespace

void AddEmailThreads(CLI::App* email, int* exit_code) {
  auto a = std::make_shared<MailArgs>();
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
}

void AddEmailGenThreads(CLI::App* email, int* exit_code) {
  auto a = std::make_shared<MailArgs>();
  auto* gt = email->add_subcommand("gen-threads", "Generate realistic mailboxes' emails (deterministic per seed)");
  GenOptions(gt, a.get(), "--emails", "emails to write (about)");
  gt->callback([a, exit_code] { *exit_code = GenThreads(*a); });
}

}  // namespace neardup::cli
