// Exact set-similarity self-join: every pair of sets with Jaccard >= threshold, no approximation.
//
// This is the algorithm behind `neardup baseline`, the oracle that every accuracy figure of the
// tiers is measured against, so exactness is the point. It is the AllPairs/PPJoin family
// (Bayardo et al. WWW'07, Xiao et al. WWW'08):
//  1. Global token order. Shingles are counted exactly (radix sort per hash bucket). Shingles
//     that occur in one set only can never contribute to an overlap: they come first in the
//     order and are never indexed; the others are ranked by ascending frequency, ties by hash.
//  2. Sets are sorted by size. A set y is indexed by its first |y| - ceil(2t/(1+t)|y|) + 1
//     tokens; a set x probes the index with its first |x| - ceil(t|x|) + 1 tokens and meets only
//     sets with t|x| <= |y| <= |x| that come before it (length filter).
//  3. Positional filter: a candidate whose overlap can no longer reach ceil(t/(1+t)(|x|+|y|))
//     is dropped.
//  4. Every surviving candidate is verified by an exact merge; JaccardAtLeast() decides.
// All filters are computed with a safety margin on the side of keeping a candidate, so the
// filters never drop a pair that verification would accept. Empty sets never pair.
//
//   std::vector<SimilarPair> pairs = ExactAllPairs(std::move(sets), {.threshold = 0.9}, &stats);
//
// Thread safety: both functions are reentrant; ExactAllPairs uses options.threads workers.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/config.h"

namespace neardup::baseline {

struct SimilarPair {
  uint32_t a;        // index of the first set, a < b
  uint32_t b;
  double similarity; // exact Jaccard
  bool operator==(const SimilarPair& o) const { return a == o.a && b == o.b; }
  bool operator<(const SimilarPair& o) const { return a != o.a ? a < o.a : b < o.b; }
};

struct AllPairsOptions {
  double threshold = ConfigDefaults().baseline().threshold();  // in (0, 1]
  int threads = 0;         // 0 = one per core
};

struct AllPairsStats {
  uint64_t sets = 0;
  uint64_t tokens = 0;            // sum of set sizes
  uint64_t frequent_tokens = 0;   // distinct tokens occurring in >= 2 sets
  uint64_t indexed_entries = 0;   // postings in the prefix index
  uint64_t candidates = 0;        // pairs verified by merge
  uint64_t pairs = 0;             // pairs found
  double order_seconds = 0;       // counting and re-encoding
  double join_seconds = 0;        // indexing, probing, verification
};

// Every pair (a < b) of `sets` whose Jaccard is at least options.threshold, sorted by (a, b).
// Each set must be sorted and unique (as ShingleSet returns). Takes the sets by value and frees
// each one once it is re-encoded, so callers can move a large collection in.
std::vector<SimilarPair> ExactAllPairs(std::vector<std::vector<uint64_t>> sets, const AllPairsOptions& options,
                                       AllPairsStats* stats = nullptr);

// The same answer by comparing every pair: O(n^2) merges. For tests and small inputs.
std::vector<SimilarPair> BruteForceAllPairs(std::span<const std::vector<uint64_t>> sets, double threshold);

}  // namespace neardup::baseline
