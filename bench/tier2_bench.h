// `neardup bench tier2`: one Tier 2 shard against a large resident collection.
//
//   neardup bench tier2 [--input crawl.jsonl | --gen-seed S] --resident 1000000 --batch 1000
//                       --threshold 0.9 [--batches 10] [--brute-pages 20] [--growth --csv fig7.csv]
//
// 1. Signs the crawl's content pages (generating a crawl under --workdir when no --input is given).
// 2. Loads them through the shard incrementally, batch by batch (CompareBatch, then Apply), until
//    --resident pages are resident. With --growth, at each milestone 10k, 20k, 50k, ... the next 1%
//    of pages is timed through the shard (incremental), and the whole collection plus that 1% is
//    recomputed from scratch with the baseline's exact all-pairs join on one thread
//    (non-incremental): the paper's Fig. 7.
// 3. Times --batches further batches of new pages, single-threaded: pages/s for CompareBatch and
//    for Apply (fsync'ed), candidates, verifications and pairs per page.
// 4. Compares --brute-pages pages of the first timed batch with every resident page by brute force
//    (in memory, no index, no I/O), as a speed ratio, and checks that both find the same pairs.
// 5. Reports RAM bytes per resident page (index structures, and the process RSS a restarted shard
//    adds), LevelDB bytes on disk per page, and the restart time.
//
// Thread safety: RunTier2Bench uses the calling thread (and the signer's threads) and its workdir.
#pragma once

#include <cstdint>
#include <string>

#include "document/crawl_reader.h"
#include "document/signature.h"
#include "proto/config.pb.h"

namespace neardup::bench {

struct Tier2BenchOptions {
  std::string input;  // crawl JSON Lines; empty: one generated under workdir (kept for the next run)
  std::string workdir = "/tmp/neardup-bench-tier2";
  uint64_t gen_seed = 42;
  uint64_t resident = 1000000;
  uint32_t batch = 1000;
  int batches = 10;
  int brute_pages = 20;
  uint32_t prefix_overlap = 0;  // 0 = the configuration's tier2.prefix_overlap
  bool growth = false;
  std::string csv;     // the growth rows as CSV (empty: none)
  std::string report;  // the figures as one JSON object (empty: none)
  // The resolved configuration (the command's --config and overrides).
  double threshold = 0.9;
  SignerOptions signer;
  CrawlReaderOptions reader;
  int threads = 1;
  pb::NeardupConfig config;
};

// Runs the workload and prints its figures to stdout (and the CSV and report when asked). Returns
// the exit code of `neardup bench tier2`: 0; 1 after an error (logged: the input unreadable, the
// shard failing, the CSV unwritable) or when brute force and the index disagree on a pair.
int RunTier2Bench(const Tier2BenchOptions& options);

}  // namespace neardup::bench
