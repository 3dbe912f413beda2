// `neardup bench email-threads`, its domain counts half: the event rate on LevelDB (records applied
// in batches and acknowledged by a Sync), with the healer's report while ingesting and of a sweep
// after a stream with duplicated, dropped and late events (email/domains/user_event_gen.h), and
// how many counters drifted before the sweep and are wrong after it.
//
// Thread safety: RunDomainsBench uses its own directory; the healer runs on DomainCounts' thread.
#pragma once

#include <cstdint>
#include <string>

#include "common/config.h"
#include "common/status.h"
#include "email/domains/domain_counts.h"

namespace neardup::email {

struct DomainsBenchOptions {
  std::string dir;
  uint64_t changes = 300'000;
  uint64_t seed = 1;
  uint32_t teams = 200;
  size_t batch = 1024;
  double duplicate_rate = 0.01, drop_rate = 0.01, reorder_rate = 0.01;
  double healer_sample_rate = ConfigDefaults().email().domain_healer_sample_rate();
};

struct DomainsBenchReport {
  uint64_t records = 0, events = 0, duplicated = 0, dropped = 0, reordered = 0;
  double ingest_seconds = 0, ingest_cpu_seconds = 0;
  uint64_t keys = 0, drifted_before_sweep = 0, wrong_after_sweep = 0;
  HealerReport during;  // the healer while ingesting (negative and sampled keys)
  HealerReport sweep;   // HealAll after the stream
};

StatusOr<DomainsBenchReport> RunDomainsBench(const DomainsBenchOptions& options);

}  // namespace neardup::email
