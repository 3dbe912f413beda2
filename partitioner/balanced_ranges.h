// Balanced ranges: slice a weighted one-dimensional distribution into S contiguous ranges of
// about equal weight (the paper's Section 4.3, for page lengths and for any skewed key space).
//
// Two steps:
//  1. Fine-grain intervals. With tau (page lengths): the SpotSigs rule, left bounds p_1 < p_2 < ...
//     where p_{i+1} is the smallest value v with p_i / v < tau, so near-duplicates' lengths fall in
//     the same or neighbouring intervals. Without tau (e.g. MinHash keys weighted by email counts):
//     every distinct value is its own interval.
//  2. Coarse ranges. Consecutive fine intervals are merged into at most S ranges by an exact
//     min-max contiguous partition (binary search on the heaviest range, greedy feasibility), and
//     among the min-max solutions the cut points are chosen to keep ranges close to total/S.
// A single fine interval is never split, so one heavy value can make balance impossible: that is
// the paper's argument for more dimensions.
//
//   ASSIGN_OR_RETURN(auto ranges, BalanceRanges(values, {.ranges = 64, .tau = 0.9}));
//   size_t r = FindRange(ranges, length);
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/status.h"

namespace neardup {

struct WeightedValue {
  uint64_t value;
  double weight;  // >= 0
};

struct BalanceOptions {
  size_t ranges = 1;          // S, >= 1
  std::optional<double> tau = std::nullopt;  // in (0, 1): SpotSigs fine-grain intervals; unset: one per distinct value
};

// [lo, hi); the first range has lo == 0 ("and below"), the last hi == UINT64_MAX ("and above").
struct ValueRange {
  uint64_t lo;
  uint64_t hi;
  double weight;
};

// SpotSigs left bounds over sorted distinct values. Values 1..10 at tau 0.8 give 1,2,3,4,6,8.
std::vector<uint64_t> FineGrainBounds(std::span<const uint64_t> sorted_distinct_values, double tau);

// Values may be unsorted and repeated (weights add). Returns at most options.ranges ranges
// covering [0, UINT64_MAX) without gaps; fewer when there are fewer fine intervals; one range of
// weight 0 for an empty input. InvalidArgument for ranges == 0, tau outside (0, 1), or a negative
// or non-finite weight.
StatusOr<std::vector<ValueRange>> BalanceRanges(std::vector<WeightedValue> values, const BalanceOptions& options);

// Index of the range holding `value`.
size_t FindRange(std::span<const ValueRange> ranges, uint64_t value);

// Heaviest range / mean range weight; 1 for one range or no weight.
double ImbalanceFactor(std::span<const ValueRange> ranges);

}  // namespace neardup
