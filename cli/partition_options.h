// What the partitioner's commands share (partition_command.cc, rebalance_command.cc): the crawl
// sample's options, text output and the exit code of an error.
#pragma once

#include <string>

#include "cli/common_options.h"
#include "common/status.h"
#include "document/signature.h"
#include "partitioner/crawl_sample.h"

namespace neardup::cli {

// Writes `text` to `path` ("-": stdout). IoError when it cannot be written.
Status WriteText(const std::string& path, const std::string& text);

// How to sample a crawl for a map: signatures as `signer` makes them, reading and threads from
// the shared options.
partitioner::CrawlSampleOptions SampleOptions(const ResolvedOptions& shared, const SignerOptions& signer,
                                              double rate, const char* label);

// Logs the error's message; the exit code: 2 for InvalidArgument or Corruption (bad usage or a bad
// file given), else 1.
int FailByCode(const Status& s);

}  // namespace neardup::cli
