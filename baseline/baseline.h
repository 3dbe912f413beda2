// The exact single-node baseline: the centralised all-pairs comparison that REP/RER are measured
// against (the paper's Section 6.3).
//
// Reads a crawl, keeps the last version of every URL (a recrawl replaces the earlier record; a
// page that turned into a redirect stops being compared; a page whose last record says it is gone
// is removed: it is as if never crawled, like a redirect target without a record of its own),
// signs every content page, finds every pair with exact Jaccard >= threshold (all_pairs.h), and
// forms groups as connected components of those pairs plus redirects: a redirecting URL joins its
// target's group, through chains and cycles alike (cycles are counted and reported, never
// followed forever), a gone target included (its redirecting URLs stay together, without it).
//
//   BaselineOptions o; o.input = "crawl.jsonl"; o.threshold = 0.9;
//   ASSIGN_OR_RETURN(BaselineResult r, RunBaseline(o));
//
// Thread safety: RunBaseline is reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "baseline/all_pairs.h"
#include "common/status.h"
#include "document/crawl_reader.h"
#include "document/signature.h"

namespace neardup::baseline {

struct BaselineOptions {
  std::string input;          // crawl JSON Lines, "-" for stdin
  double threshold = ConfigDefaults().baseline().threshold();  // in (0, 1]
  SignerOptions signer;       // shingle k, dims
  CrawlReaderOptions reader;
  int threads = 0;            // 0 = one per core
  bool progress = true;       // log progress on long runs
  uint64_t max_records = 0;   // only the first this many good records (0 = all): a crawl's prefix
};

struct BaselinePage {
  std::string url;
  uint32_t group = 0;         // group id: index (in first-seen order) of the group's first URL
  bool crawled = false;       // false for a redirect target that has no record of its own, or a gone URL
  bool redirect = false;      // its latest record is a redirect
  bool gone = false;          // its latest record says it is gone (404/410): not crawled
  uint32_t shingles = 0;
};

struct BaselineResult {
  // Every URL seen (records, gone ones included, and redirect targets), in first-seen order.
  std::vector<BaselinePage> pages;
  std::vector<SimilarPair> pairs;   // indices into pages
  uint64_t records = 0;             // good records read (including recrawls)
  uint64_t content_pages = 0;       // crawled URLs whose latest record has content
  uint64_t redirect_pages = 0;      // crawled URLs whose latest record is a redirect
  uint64_t empty_pages = 0;         // content pages with no words
  uint64_t gone_pages = 0;          // URLs whose latest record says gone (not crawled)
  uint64_t redirect_cycles = 0;     // distinct cycles among redirects
  uint64_t groups = 0;              // groups over crawled URLs
  uint64_t multi_groups = 0;        // groups with >= 2 crawled URLs
  CrawlReaderStats reader;
  AllPairsStats join;
  double read_sign_seconds = 0;
  double total_seconds = 0;
  uint64_t html_bytes = 0, text_bytes = 0;
};

// IoError if the input cannot be read; InvalidArgument for bad options. Bad lines are skipped
// and counted (result.reader.bad_lines), not errors.
StatusOr<BaselineResult> RunBaseline(const BaselineOptions& options);

// Writes {"a": url, "b": url, "similarity": J} per pair. IoError on a failed write.
Status WritePairs(const BaselineResult& r, const std::string& path);
// Writes {"url": u, "group": id} for every crawled URL. IoError on a failed write.
Status WriteGroups(const BaselineResult& r, const std::string& path);

}  // namespace neardup::baseline
