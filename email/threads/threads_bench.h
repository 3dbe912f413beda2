// `neardup bench email-threads`, its unified threads half: the write and read rates on LevelDB,
// checked against a union-find oracle on the same data (the domain counts half:
// email/domains/domains_bench.h).
//
// Writes: the generator's mailboxes (email/threads/mailbox_gen.h) added by `writers` threads, acknowledged by
// a Sync every sync_every emails of each writer (and one at the end, timed). Reads: every thread
// looked up once by `readers` threads (timed), then each answer compared with the oracle's
// component (untimed); twice: warm (the writers' weaver, as a process that ingests and answers)
// and cold (the store reopened). The oracle is the connected components of the thread/Message-ID graph
// without the edges of a Message-ID found in more than spam_cap threads (the cap's rule: in the
// generator only the system reusing one Message-ID has such, each of its emails in a new thread).
//
// Thread safety: RunThreadsBench uses its own threads and directory.
#pragma once

#include <cstdint>
#include <string>

#include "common/config.h"
#include "common/status.h"

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

}  // namespace neardup::email
