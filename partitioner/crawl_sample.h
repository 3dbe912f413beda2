// SampleCrawl: the length vectors of a deterministic sample of a crawl's resident pages.
//
// A URL is in the sample when XXH3(url) falls below sample_rate * 2^64, so the same URLs are
// sampled in every run and in every crawl that contains them. Resident means the last record of
// each URL: a recrawl replaces the earlier version, a page that turned into a redirect leaves.
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
};

struct CrawlSample {
  LengthSample sample{1};
  std::vector<std::string> urls;   // urls[i] is the page of sample row i
  CrawlReaderStats reader;
};

StatusOr<CrawlSample> SampleCrawl(const std::string& input, const CrawlSampleOptions& options);

// True when `url` belongs to a sample of the given rate.
bool InSample(std::string_view url, double sample_rate);

}  // namespace neardup::partitioner
