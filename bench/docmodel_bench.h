// `neardup bench docmodel`: single-threaded throughput of each document-model stage over a crawl's
// records, in one process: JSON record parsing, HTML -> visible text, tokenizing, and full signing
// (tokenize + shingles + length vectors + digest). MB/s are of the stage's input bytes.
//
// Thread safety: RunDocModelBench uses the calling thread.
#pragma once

#include <cstdint>
#include <string>

namespace neardup::bench {

// Loads up to max_records records of `input`, times each stage `repeat` times and prints the
// figures to stdout. Returns the exit code of `neardup bench docmodel`: 0, or 1 when the crawl
// cannot be read or a page cannot be extracted (logged).
int RunDocModelBench(const std::string& input, uint64_t max_records, int repeat);

}  // namespace neardup::bench
