// Balanced ranges: slice a weighted one-dimensional distribution into S contiguous ranges of
// about equal weight (the paper's Section 4.3, "Dimension slicing and partition mapping", for
// page lengths, and the same step for any skewed key space).
//
// Two steps:
//  1. Fine-grain intervals. With tau (page lengths): the SpotSigs rule, left bounds p_1 < p_2 < ...
//     where p_{i+1} is the smallest value v with p_i / v < tau, so near-duplicates' lengths fall in
//     the same or neighbouring intervals. Without tau (e.g. MinHash keys weighted by how often they
//     occur): every distinct value is its own interval.
//  2. Coarse ranges. Consecutive fine intervals are merged into at most S ranges by an exact
//     min-max contiguous partition (the smallest feasible cap on the heaviest range, found by
//     bisection with a greedy feasibility test), and among the min-max partitions the cuts are
//     placed to keep each range close to the average of the weight still to be placed.
// A fine interval is never split, so one heavy value can make balance impossible (the paper's
// 2,3,4,10,2,1 example: the heaviest range weighs 10 whatever S is). That is the paper's
// argument for slicing more than one dimension.
//
//   ASSIGN_OR_RETURN(auto ranges, BalanceRanges(std::move(values), {.ranges = 64, .tau = 0.9}));
//   size_t r = FindRange(ranges, length);
//
// Thread safety: every function here is pure (no shared or static state) and may be called
// concurrently from any number of threads; the spans passed in must not be modified meanwhile.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/status.h"

namespace neardup::partitioner {

// One observation of the distribution: `value` carries `weight` (pages, emails, bytes...).
struct WeightedValue {
  uint64_t value;
  double weight;  // finite, >= 0
};

struct BalanceOptions {
  // S: the number of coarse ranges wanted, >= 1.
  size_t ranges = 1;
  // If set, in (0, 1): fine-grain intervals by the SpotSigs rule (FineGrainBounds). If unset,
  // every distinct value is its own fine-grain interval.
  std::optional<double> tau = std::nullopt;
};

// The values [lo, hi) and the weight of the input that fell in them. In a result of
// BalanceRanges the first range has lo == 0 ("and below") and the last has hi == UINT64_MAX
// ("and above": it also holds UINT64_MAX itself); each range's hi is the next range's lo, so
// the ranges cover every uint64_t without gaps, and the lo are strictly increasing.
struct ValueRange {
  uint64_t lo;
  uint64_t hi;
  double weight;
};

// The left bounds of the SpotSigs fine-grain intervals over `sorted_distinct_values`:
// p_1 = the smallest value; p_{i+1} = the smallest value v with p_i / v < tau. Interval i is
// [p_i, p_{i+1}); the last runs to the largest value. The paper's example: values 1..10 at
// tau 0.8 give 1,2,3,4,6,8, i.e. [1,2) [2,3) [3,4) [4,6) [6,8) [8,10].
// Expects values sorted ascending and distinct, and tau in (0, 1); a value not above the
// current bound is skipped. Returns an empty vector for no values. No errors.
// Thread safety: pure. O(n).
std::vector<uint64_t> FineGrainBounds(std::span<const uint64_t> sorted_distinct_values, double tau);

// Slices the distribution into at most options.ranges contiguous ranges whose inner boundaries
// are fine-grain left bounds (without tau: distinct input values). The heaviest range is as
// light as any contiguous partition of the fine intervals into that many ranges allows (exact,
// up to the rounding of double sums). Among such partitions the cuts keep ranges near
// total / S (a left-to-right rule, not an optimum of any secondary measure). Exactly
// min(options.ranges, number of fine intervals) ranges are returned; ranges of weight 0 are
// possible when inputs have weight 0.
// `values` may be unsorted and repeat a value (the weights add up); the result depends only on
// the multiset of inputs, not their order, and is deterministic bit for bit.
// An empty input gives the single range [0, UINT64_MAX) of weight 0.
// Errors: InvalidArgument when options.ranges == 0, options.tau is set and not in (0, 1), a
// weight is negative, NaN or infinite, or the total weight overflows a double.
// Thread safety: pure. O(n log n) for the sort, then O(k) for k fine intervals plus
// O(64 * min(k, S log k)) for the bisection.
StatusOr<std::vector<ValueRange>> BalanceRanges(std::vector<WeightedValue> values, const BalanceOptions& options);

// The index of the range holding `value`: the last range whose lo <= value (binary search).
// `ranges` must be a result of BalanceRanges (non-empty, lo strictly increasing, first lo 0);
// given an empty span it returns 0. No errors.
// Thread safety: pure. O(log S).
size_t FindRange(std::span<const ValueRange> ranges, uint64_t value);

// The load imbalance factor of a one-dimensional slicing: the heaviest range's weight over the
// mean range weight. 1.0 for zero or one range and when all weights are 0. No errors.
// Thread safety: pure. O(S).
double ImbalanceFactor(std::span<const ValueRange> ranges);

}  // namespace neardup::partitioner
