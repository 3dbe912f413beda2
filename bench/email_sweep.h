// `neardup bench email`: the Crusher paper's synthetic workload (Section 6.2;
// email/templates/bench.h) swept over Zipf parameters with the tuned stage pools, then over fixed
// thread counts in both pools at alpha 1.1: one table row per run, emails/s and what the run
// cached, stored, formed and dropped.
//
// Thread safety: RunEmailSweep uses the workload's threads and its directory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "email/templates/bench.h"

namespace neardup::bench {

struct EmailSweepOptions {
  email::BenchOptions run;                       // each run's options (alpha, threads and dir set per run)
  std::vector<double> alphas = {1.001, 1.01, 1.1, 1.5};  // each with the tuned pools
  std::vector<uint32_t> threads = {1, 2, 4, 8};  // fixed threads in both pools, each at alpha 1.1
  uint32_t tuned_cluster = 2, tuned_formation = 1;  // the tuned pools, stage1:stage2 threads
  std::string dir;                               // the cluster store's directory (removed after each run)
};

// Prints the table to stdout, a row as each run ends. Returns the exit code of `neardup bench
// email`: 0, or 1 when a run fails (logged; the sweep stops there).
int RunEmailSweep(const EmailSweepOptions& options);

}  // namespace neardup::bench
