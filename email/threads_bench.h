// `neardup bench email-threads`: the unified threads' write and read rates on LevelDB, checked
// against a union-find oracle on the same data, and the domain counts' event rate with the
// healer's report after a stream with duplicated and dropped events.
//
// Writes: the generator's mailboxes (email/mail_gen.h) added by `writers` threads, acknowledged by
// a Sync every sync_every emails of each writer (and one at the end, timed). Reads: every thread
// looked up once by `readers` threads (timed), then each answer compared with the oracle's
// component (untimed); twice: warm (the writers' weaver, as a process that ingests and answers)
// and cold (the store reopened). The oracle is the connected components of the thread/Message-ID graph
// without the edges of a Message-ID found in more than spam_cap threads (the cap's rule: in the
// generator only the system reusing one Message-ID has such, each of its emails in a new thread).
//
// Thread safety: RunThreadsBench and RunDomainsBench use their own threads and directories.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "email/domain_counts.h"

namespace neardup::email {

struct ThreadsBenchOptions {
  std::string dir;  // the store's directory (created; removed after)
  uint64_t emails = 300'000;
  uint64_t seed = 1;
  uint32_t writers = 2, readers = 2;
  uint64_t sync_every = 10'000;
  double reused_message_id_share = 0.12;  // about 12,000 emails at 300,000: past the cap
  uint32_t spam_cap = ConfigDefaults().email().thread_spam_cap();
};

// One pass of lookups: every thread once.
struct ReadPass {
  double seconds = 0, cpu_seconds = 0;  // cpu: the process's user + system time (a shared machine)
  uint64_t mismatches = 0;              // lookups whose threads differ from the oracle's component
};

struct ThreadsBenchReport {
  uint64_t emails = 0, threads = 0, merges = 0, spam_lookups = 0;
  double write_seconds = 0, write_cpu_seconds = 0;
  ReadPass warm;  // the writers' weaver: its read cache holds what the writes mapped
  ReadPass cold;  // the store reopened: the cache starts empty, every first read is LevelDB's
  uint64_t mismatches = 0;  // of both passes
  uint64_t disk_bytes = 0;
};

StatusOr<ThreadsBenchReport> RunThreadsBench(const ThreadsBenchOptions& options);

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
