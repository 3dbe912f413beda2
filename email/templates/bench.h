// The Crusher paper's synthetic workload (Section 6.2) against the inducer, in one process:
// template ids drawn from a Zipf distribution of parameter alpha over `templates` ids and embedded
// in each email (its one cluster key: MinHash is bypassed, as the paper does), bodies of random
// HTML whose sizes follow N(10 KB, 2 KB) trimmed to 30 KB, at most T emails per template id, one
// recipient in ten million per email. The inducer runs in the `paper` mode with its stores on
// LevelDB (RowStore, no fsync), k = 1000 by default, and the two stage pools as configured; the
// stream is offered `batch` emails per stage-1 task (one row-store write each). Without
// aggregators (the default, as the paper measures clustering) a row keeps no email text.
//
//   ASSIGN_OR_RETURN(BenchResult r, RunEmailBench(options));
//
// Thread safety: one run at a time per directory.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "proto/config.pb.h"

namespace neardup::email {

struct BenchOptions {
  uint64_t emails = 200'000;
  uint64_t templates = 100'000;   // Zipf support
  double alpha = 1.1;
  uint64_t max_per_template = 2'000'000;  // T
  uint32_t k = 1000;
  uint32_t max_emails_per_row = 2000;     // S
  uint32_t cluster_threads = 2;
  uint32_t formation_threads = 1;
  uint64_t seed = 1;
  // The paper's workload measures clustering: no aggregators, so a row keeps no email text. True:
  // the configured aggregators run and the rows keep each email's text blocks (the body).
  bool aggregators = false;
  bool async_writes = false;
  uint32_t batch = 64;            // emails per stage-1 task and row-store write (1: one each)      // RowStoreOptions::async_writes for the cluster store
  std::string dir;                // the cluster store (created, and removed after)
  pb::EmailConfig base;           // everything else (defaults)
};

struct BenchResult {
  uint64_t emails = 0;            // processed
  double seconds = 0;
  double emails_per_second = 0;
  uint64_t templates_formed = 0;
  uint64_t cache_hits = 0, stored = 0, dropped = 0;
  uint64_t disk_bytes = 0;
  double mean_email_bytes = 0;
};

StatusOr<BenchResult> RunEmailBench(const BenchOptions& o);

}  // namespace neardup::email
