#include "cli/partition_options.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>

namespace neardup::cli {

Status WriteText(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return Status::Ok();
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  return out ? Status::Ok() : IoError("cannot write " + path);
}

partitioner::CrawlSampleOptions SampleOptions(const ResolvedOptions& shared, const SignerOptions& signer,
                                              double rate, const char* label) {
  partitioner::CrawlSampleOptions so;
  so.signer.signer = signer;
  so.signer.reader = shared.reader;
  so.signer.threads = shared.threads;
  so.signer.progress_label = label;
  so.sample_rate = rate;
  return so;
}

int FailByCode(const Status& s) {
  spdlog::error("{}", s.message());
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kCorruption ? 2 : 1;
}

}  // namespace neardup::cli
