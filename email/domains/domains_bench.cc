#include "email/domains/domains_bench.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <span>

#include "email/domains/user_event_gen.h"
#include "common/process_time.h"

namespace neardup::email {

StatusOr<DomainsBenchReport> RunDomainsBench(const DomainsBenchOptions& o) {
  if (o.batch == 0) return InvalidArgument("bench email-threads: batch must be at least 1");
  UserEventGenOptions g;
  g.seed = o.seed;
  g.changes = o.changes;
  g.teams = o.teams;
  g.duplicate_rate = o.duplicate_rate;
  g.drop_rate = o.drop_rate;
  g.reorder_rate = o.reorder_rate;
  const UserEventStream s = GenerateUserEvents(g);
  std::error_code ec;
  std::filesystem::remove_all(o.dir, ec);
  DomainsBenchReport r;
  r.records = s.records.size();
  r.duplicated = s.duplicated;
  r.dropped = s.dropped;
  r.reordered = s.reordered;
  for (const DomainRecord& x : s.records) r.events += x.kind == DomainRecord::Kind::kEvent;
  {
    DomainCountsOptions d;
    d.path = o.dir;
    d.healer_sample_rate = o.healer_sample_rate;
    ASSIGN_OR_RETURN(std::unique_ptr<DomainCounts> counts, DomainCounts::Open(d));
    const double c0 = ProcessCpuSeconds();
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < s.records.size(); i += o.batch) {
      RETURN_IF_ERROR(counts->Apply(std::span(s.records).subspan(i, std::min(o.batch, s.records.size() - i))));
    }
    RETURN_IF_ERROR(counts->Sync());  // every record acknowledged
    r.ingest_seconds = SecondsSince(t0);
    r.ingest_cpu_seconds = ProcessCpuSeconds() - c0;
    RETURN_IF_ERROR(counts->DrainHealer());
    r.during = counts->healer_report();
    std::map<DomainKey, int64_t> truth(s.truth.begin(), s.truth.end());
    ASSIGN_OR_RETURN(auto before, counts->AllCounts());
    r.keys = before.size();
    for (const auto& [k, v] : before) {
      const auto it = truth.find(k);
      r.drifted_before_sweep += v != (it == truth.end() ? 0 : it->second);
    }
    RETURN_IF_ERROR(counts->HealAll());
    const HealerReport after = counts->healer_report();
    r.sweep.keys_checked = after.keys_checked - r.during.keys_checked;
    r.sweep.keys_healed = after.keys_healed - r.during.keys_healed;
    r.sweep.corrections = after.corrections - r.during.corrections;
    r.sweep.net_correction = after.net_correction - r.during.net_correction;
    r.sweep.cells_scanned = after.cells_scanned - r.during.cells_scanned;
    r.sweep.seconds = after.seconds - r.during.seconds;
    ASSIGN_OR_RETURN(auto all, counts->AllCounts());
    for (const auto& [k, v] : all) {
      const auto it = truth.find(k);
      r.wrong_after_sweep += v != (it == truth.end() ? 0 : it->second);
    }
  }
  std::filesystem::remove_all(o.dir, ec);
  return r;
}

}  // namespace neardup::email
