// `neardup bench route`: nanoseconds per page to find a page's home cell (the baseline) and to
// route it to every shard that can hold a near-duplicate, single-threaded, on the crawl's own pages.
//
// Thread safety: RunRouteBench uses the calling thread (and the signer's threads for the sample).
#pragma once

#include <cstdint>
#include <string>

namespace neardup::bench {

// Signs up to max_records pages of `input` with the map's signer, routes them `repeat` times and
// prints the figures to stdout. Returns the exit code of `neardup bench route`: 0, or 1 when the
// map or the crawl cannot be read (logged).
int RunRouteBench(const std::string& map_path, const std::string& input, uint64_t max_records, int repeat);

}  // namespace neardup::bench
