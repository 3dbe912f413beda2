// neardup email domains ingest | classify | counts, email gen-domains
// (email/domains/domain_counts.h).
//
//   neardup email domains ingest --input events.jsonl --store DIR [--config c] [--heal-all]
//   neardup email domains classify --store DIR --team T --inviter x@a.com --invitee y@b.com [--config c]
//   neardup email domains counts --store DIR [--team T]
//   neardup email gen-domains --changes N [--seed S] [--config c] --out events.jsonl [--truth t.jsonl]
#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "cli/commands.h"
#include "cli/mail_options.h"
#include "email/domains/domain_counts.h"
#include "email/domains/domain_records.h"
#include "email/domains/user_event_gen.h"
#include "document/json_lines.h"

namespace neardup::cli {
namespace {

// The domain counts for a command that only reads them: no healer.
StatusOr<std::unique_ptr<email::DomainCounts>> OpenDomainsToRead(const MailArgs& a) {
  RETURN_IF_ERROR(StoreExists(a, "email domains ingest"));
  email::DomainCountsOptions o;
  o.path = a.store;
  o.healer_thread = false;
  o.healer_sample_rate = 0;
  return email::DomainCounts::Open(o);
}

int DomainsIngest(const MailArgs& a) {
  auto cfg = MailConfig(a.config);
  if (!cfg.ok()) return MailFailed("email domains ingest", cfg.status());
  email::DomainCountsOptions o;
  o.path = a.store;
  o.healer_sample_rate = cfg->email().domain_healer_sample_rate();
  auto d = email::DomainCounts::Open(o);
  if (!d.ok()) return MailFailed("email domains ingest", d.status());
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
  auto stats = ForEachJsonLine(a.input, {.max_line_bytes = cfg->reader().max_line_bytes()}, [&](std::string_view line, uint64_t n) {
    email::DomainRecord r;
    RETURN_IF_ERROR(email::ParseDomainRecord(line, &r));
    r.line = n;
    events += r.kind == email::DomainRecord::Kind::kEvent;
    batch.push_back(std::move(r));
    if (batch.size() == 1024) return flush();
    return Status::Ok();
  });
  if (!stats.ok()) return MailFailed("email domains ingest", stats.status());
  if (Status s = flush(); !s.ok()) return MailFailed("email domains ingest", s);
  const double secs = MailSecondsSince(t0);
  if (Status s = (*d)->DrainHealer(); !s.ok()) return MailFailed("email domains ingest", s);
  if (a.heal_all) {
    if (Status s = (*d)->HealAll(); !s.ok()) return MailFailed("email domains ingest", s);
  }
  if (Status s = (*d)->Sync(); !s.ok()) return MailFailed("email domains ingest", s);
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

int DomainsClassify(const MailArgs& a) {
  auto cfg = MailConfig(a.config);
  if (!cfg.ok()) return MailFailed("email domains classify", cfg.status());
  auto d = OpenDomainsToRead(a);
  if (!d.ok()) return MailFailed("email domains classify", d.status());
  auto team = (*d)->Team(a.team);
  if (!team.ok()) return MailFailed("email domains classify", team.status());
  auto c = (*d)->Classify(*team, a.inviter, a.invitee, cfg->email());
  if (!c.ok()) return MailFailed("email domains classify", c.status());
  WriteLine(email::ClassificationJson(a.team, a.invitee, *c));
  return 0;
}

int DomainsCounts(const MailArgs& a) {
  auto d = OpenDomainsToRead(a);
  if (!d.ok()) return MailFailed("email domains counts", d.status());
  auto all = (*d)->AllCounts();
  if (!all.ok()) return MailFailed("email domains counts", all.status());
  for (const auto& [k, v] : *all) {
    if (!a.team.empty() && k.team != a.team) continue;
    WriteLine(email::DomainCountJson(k, v));
  }
  return 0;
}

int GenDomains(const MailArgs& a) {
  auto cfg = MailConfig(a.config);
  if (!cfg.ok()) return MailFailed("email gen-domains", cfg.status());
  email::UserEventGenOptions g;
  g.changes = a.count;
  g.seed = a.seed;
  g.duplicate_rate = cfg->email().domain_duplicate_rate();
  g.drop_rate = cfg->email().domain_drop_rate();
  g.reorder_rate = cfg->email().domain_reorder_rate();
  g.reorder_window = cfg->email().domain_reorder_window();
  const email::UserEventStream s = email::GenerateUserEvents(g);
  std::FILE* out = OpenOut(a.out);
  if (out == nullptr) return MailFailed("email gen-domains", IoError("cannot write " + a.out + ": " + std::strerror(errno)));
  for (const email::DomainRecord& r : s.records) {
    const std::string line = email::DomainRecordJson(r) + "\n";
    std::fwrite(line.data(), 1, line.size(), out);
  }
  if (int rc = CloseOut(out, a.out); rc != 0) return rc;
  if (!a.truth.empty()) {
    std::FILE* t = OpenOut(a.truth);
    if (t == nullptr) return MailFailed("email gen-domains", IoError("cannot write " + a.truth + ": " + std::strerror(errno)));
    for (const auto& [k, v] : s.truth) {
      const std::string line = email::DomainCountJson(k, v) + "\n";
      std::fwrite(line.data(), 1, line.size(), t);
    }
    if (int rc = CloseOut(t, a.truth); rc != 0) return rc;
  }
  spdlog::info("email gen-domains: {} records, {} events ({} duplicated, {} dropped, {} late)", s.records.size(), s.events,
               s.duplicated, s.dropped, s.reordered);
  return 0;
}

}  // namespace

void AddEmailDomains(CLI::App* email, int* exit_code) {
  auto a = std::make_shared<MailArgs>();
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
}

void AddEmailGenDomains(CLI::App* email, int* exit_code) {
  auto a = std::make_shared<MailArgs>();
  auto* gd = email->add_subcommand("gen-domains", "Generate user rows and events with duplicates, drops and late ones");
  GenOptions(gd, a.get(), "--changes", "user changes");
  ConfigOption(gd, a.get(), "configuration: the delivery fault rates (email.domain_*_rate)");
  gd->add_option("--truth", a->truth, "write the exact count of every (team, domain, role) here");
  gd->callback([a, exit_code] { *exit_code = GenDomains(*a); });
}

}  // namespace neardup::cli
