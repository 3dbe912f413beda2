// SampleCrawl: the length vectors of a deterministic sample of a crawl's resident pages.
//
// A URL is in the sample when XXH3(url) falls below sample_rate * 2^64, so the same URLs are
// sampled in every run and in every crawl that contains them. Resident means the last record of
// each URL: a recrawl replaces the earlier version, a page that turned into a redirect leaves.
//
// With max_pages, reading stops once that many URLs are sampled: the sample then describes the
// input's first part (whole_input false; reader.bytes says how much of it), which stands for the
// whole unless the crawl's order follows its pages' lengths, and a large input is not read through
// twice before its first batch.
//
// Errors: as SignCrawl (IoError for an unreadable input, ...); InvalidArgument for a sample rate
// outside (0, 1].
#pragma once

#include <string>
#include <vector>

#include "document/crawl_signer.h"
#include "partitioner/length_sample.h"

namespace neardup::partitioner {

struct CrawlSampleOptions {
  CrawlSignerOptions signer;   // signer.signer.dims decides the sample's dimensions
  double sample_rate = 1.0;
  uint64_t max_pages = 0;      // stop reading once this many URLs are sampled; 0: read it all
  // Keeps the shingle sets of the first this-many sampled URLs (CrawlSample::sets); 0: none.
  uint64_t keep_sets = 0;
};

struct CrawlSample {
  LengthSample sample{1};
  std::vector<std::string> urls;   // urls[i] is the page of sample row i
  CrawlReaderStats reader;         // reader.bytes: the input bytes read (all of them when whole_input)
  // false: reading stopped once max_pages were sampled (the round of records that reached it is
  // kept whole, so the sample may hold a few more: up to signer.round_records, 64 by default).
  bool whole_input = true;
  // The shingle sets (sorted, unique) of the first options.keep_sets URLs sampled, in the order
  // they were read: each URL's last record with content (empty for a URL that had none). For
  // token frequencies (a page that left the sample later is still counted).
  std::vector<std::vector<uint64_t>> sets;
};

StatusOr<CrawlSample> SampleCrawl(const std::string& input, const CrawlSampleOptions& options);

// True when `url` belongs to a sample of the given rate.
bool InSample(std::string_view url, double sample_rate);

}  // namespace neardup::partitioner
