// `neardup bench status`: status queries per second from a warm group store, in-process, on one
// thread: every page asked once to fill the record cache, then `queries` pages at random (seed 7)
// timed, the crawler's read-only question (a loser whose verification the store has not cached is
// verified every time). Prints one JSON object to stdout: pages, cache_records, queries, seconds,
// queries_per_second and the count of each answer's status.
//
// Thread safety: RunStatusBench uses the calling thread; nothing else may use the store meanwhile.
#pragma once

#include <cstdint>

#include "tier1/tier1.h"

namespace neardup::bench {

// Queries `groups` (its pages' signatures from `source`) through a Tier 1 with `options`; warns
// when its pages and groups do not fit options.cache_records (the store is then not warm). Returns
// the exit code of `neardup bench status`: 0, or 1 (logged) when the store has no pages or a read
// fails.
int RunStatusBench(tier1::GroupStore* groups, tier1::SignatureSource* source, const tier1::Tier1Options& options,
                   uint64_t queries);

}  // namespace neardup::bench
