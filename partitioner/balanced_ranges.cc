#include "partitioner/balanced_ranges.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

namespace neardup::partitioner {
namespace {

constexpr uint64_t kMaxValue = std::numeric_limits<uint64_t>::max();

// The weights of consecutive fine-grain intervals as prefix sums: the run of intervals [b, e)
// weighs prefix[e] - prefix[b]. Every decision below (the greedy feasibility test, the suffix
// counts, the cut placement) uses this one definition. Adding non-negative doubles and
// subtracting a larger prefix are both monotone under rounding, so a sub-run never weighs more
// than the run holding it, which is all the greedy arguments need. (Mixing sums computed in
// different orders is not: the two can disagree by an ulp at the cap and break feasibility.)
class Runs {
 public:
  explicit Runs(const std::vector<double>& fine) : prefix_(fine.size() + 1, 0.0) {
    for (size_t i = 0; i < fine.size(); ++i) prefix_[i + 1] = prefix_[i] + fine[i];
  }

  size_t size() const { return prefix_.size() - 1; }
  double total() const { return prefix_.back(); }
  double Weight(size_t b, size_t e) const { return prefix_[e] - prefix_[b]; }

  // The largest e in (b, size()] with Weight(b, e) <= cap, or b when interval b alone is heavier
  // than cap. Galloping, so O(log(e - b)).
  size_t Reach(size_t b, double cap) const {
    const size_t n = size();
    if (Weight(b, b + 1) > cap) return b;
    size_t good = b + 1, step = 1;
    while (true) {  // invariant: Weight(b, good) <= cap
      const size_t probe = good + step;
      if (probe > n || Weight(b, probe) > cap) break;
      good = probe;
      step *= 2;
    }
    size_t bad = std::min(good + step, n + 1);  // Weight(b, bad) > cap, or bad is past the end
    while (bad - good > 1) {
      const size_t mid = good + (bad - good) / 2;
      if (Weight(b, mid) <= cap) good = mid; else bad = mid;
    }
    return good;
  }

  // Whether at most `parts` runs of weight <= cap cover every interval. The greedy that makes
  // each run as long as possible uses the fewest runs. O(min(n, parts * log n)).
  bool Fits(double cap, size_t parts) const {
    size_t b = 0;
    for (size_t used = 0; b < size(); ++used) {
      if (used == parts) return false;
      const size_t e = Reach(b, cap);
      if (e == b) return false;
      b = e;
    }
    return true;
  }

  // suffix[j] = the fewest runs of weight <= cap covering intervals [j, n); suffix[n] = 0.
  // cap must fit every single interval. Two pointers: Reach(j) never decreases with j. The
  // vector first holds each j's greedy run end (> j), then, right to left, the counts.
  std::vector<size_t> SuffixParts(double cap) const {
    const size_t n = size();
    std::vector<size_t> suffix(n + 1, 0);
    size_t e = 0;
    for (size_t j = 0; j < n; ++j) {
      e = std::max(e, j + 1);
      while (e < n && Weight(j, e + 1) <= cap) ++e;
      suffix[j] = e;
    }
    for (size_t j = n; j-- > 0;) suffix[j] = 1 + suffix[suffix[j]];
    return suffix;
  }

  // The smallest double cap with Fits(cap, parts): bisection over the bit patterns of
  // non-negative doubles, which are ordered like the doubles, so at most 64 steps and exact.
  double MinMaxCap(size_t parts) const {
    uint64_t lo = 0, hi = std::bit_cast<uint64_t>(total());  // hi fits: one run holds everything
    if (Fits(0.0, parts)) return 0.0;
    while (hi - lo > 1) {  // invariant: lo does not fit, hi fits
      const uint64_t mid = lo + (hi - lo) / 2;
      if (Fits(std::bit_cast<double>(mid), parts)) hi = mid; else lo = mid;
    }
    return std::bit_cast<double>(hi);
  }

 private:
  std::vector<double> prefix_;
};

Status ValidateOptions(const BalanceOptions& o) {
  if (o.ranges == 0) return InvalidArgument("BalanceRanges: ranges must be >= 1");
  if (o.tau && !(*o.tau > 0.0 && *o.tau < 1.0)) {
    return InvalidArgument("BalanceRanges: tau must be in (0, 1), got " + std::to_string(*o.tau));
  }
  return Status::Ok();
}

}  // namespace

std::vector<uint64_t> FineGrainBounds(std::span<const uint64_t> sorted_distinct_values, double tau) {
  std::vector<uint64_t> bounds;
  if (sorted_distinct_values.empty()) return bounds;
  uint64_t p = sorted_distinct_values.front();
  bounds.push_back(p);
  for (uint64_t v : sorted_distinct_values.subspan(1)) {
    if (v > p && static_cast<double>(p) / static_cast<double>(v) < tau) {
      p = v;
      bounds.push_back(p);
    }
  }
  return bounds;
}

StatusOr<std::vector<ValueRange>> BalanceRanges(std::vector<WeightedValue> values, const BalanceOptions& options) {
  RETURN_IF_ERROR(ValidateOptions(options));
  for (const WeightedValue& v : values) {
    if (!std::isfinite(v.weight) || v.weight < 0.0) {
      return InvalidArgument("BalanceRanges: the weight of value " + std::to_string(v.value) +
                             " must be finite and >= 0, got " + std::to_string(v.weight));
    }
  }
  if (values.empty()) return std::vector<ValueRange>{{0, kMaxValue, 0.0}};

  // Sorting by (value, weight) makes the summation order, and so every bit of the result,
  // independent of the input order.
  std::sort(values.begin(), values.end(), [](const WeightedValue& a, const WeightedValue& b) {
    return a.value != b.value ? a.value < b.value : a.weight < b.weight;
  });
  std::vector<uint64_t> distinct;
  std::vector<double> distinct_weight;
  distinct.reserve(values.size());
  distinct_weight.reserve(values.size());
  for (const WeightedValue& v : values) {
    if (distinct.empty() || distinct.back() != v.value) {
      distinct.push_back(v.value);
      distinct_weight.push_back(0.0);
    }
    distinct_weight.back() += v.weight;  // 0.0 + -0.0 is 0.0: no negative zeros in the output
  }
  values.clear();
  values.shrink_to_fit();

  // Fine-grain intervals: their left bounds and weights.
  std::vector<uint64_t> left;
  std::vector<double> fine;
  if (options.tau) {
    left = FineGrainBounds(distinct, *options.tau);
    fine.assign(left.size(), 0.0);
    for (size_t i = 0, f = 0; i < distinct.size(); ++i) {
      while (f + 1 < left.size() && distinct[i] >= left[f + 1]) ++f;
      fine[f] += distinct_weight[i];
    }
  } else {
    left = std::move(distinct);
    fine = std::move(distinct_weight);
  }

  const Runs runs(fine);
  if (!std::isfinite(runs.total())) {
    return InvalidArgument("BalanceRanges: the total weight overflows a double");
  }
  const size_t k = runs.size();
  const size_t s = std::min(options.ranges, k);
  const double cap = runs.MinMaxCap(s);
  const std::vector<size_t> suffix = runs.SuffixParts(cap);

  // Place the cuts left to right. A cut before interval j is allowed when the rest still fits
  // in the ranges left (suffix[j]); it is forced when the open range cannot take interval j
  // under the cap, or when every remaining interval needs a range of its own to use all s.
  // Otherwise cut when that leaves the open range at least as close to the average of what is
  // left as taking interval j would. Not cutting keeps feasibility (suffix is non-increasing),
  // so no range exceeds cap and the result is min-max.
  std::vector<size_t> starts{0};
  starts.reserve(s);
  size_t b = 0;
  for (size_t j = 1; j < k; ++j) {
    const size_t left_to_open = s - starts.size();
    if (left_to_open == 0 || suffix[j] > left_to_open) continue;
    const double without = runs.Weight(b, j);
    const double with = runs.Weight(b, j + 1);
    const double target = runs.Weight(b, k) / static_cast<double>(left_to_open + 1);
    const bool must = with > cap || k - j <= left_to_open;
    if (must || std::abs(without - target) <= std::abs(with - target)) {
      starts.push_back(j);
      b = j;
    }
  }

  std::vector<ValueRange> out;
  out.reserve(starts.size());
  for (size_t r = 0; r < starts.size(); ++r) {
    const size_t first = starts[r];
    const size_t end = r + 1 < starts.size() ? starts[r + 1] : k;
    ValueRange range{r == 0 ? 0 : left[first], end == k ? kMaxValue : left[end], 0.0};
    for (size_t j = first; j < end; ++j) range.weight += fine[j];
    out.push_back(range);
  }
  return out;
}

size_t FindRange(std::span<const ValueRange> ranges, uint64_t value) {
  const auto it = std::upper_bound(ranges.begin(), ranges.end(), value,
                                   [](uint64_t v, const ValueRange& r) { return v < r.lo; });
  return it == ranges.begin() ? 0 : static_cast<size_t>(it - ranges.begin()) - 1;
}

double ImbalanceFactor(std::span<const ValueRange> ranges) {
  if (ranges.size() <= 1) return 1.0;
  double total = 0.0, heaviest = 0.0;
  for (const ValueRange& r : ranges) {
    total += r.weight;
    heaviest = std::max(heaviest, r.weight);
  }
  return total > 0.0 ? heaviest / (total / static_cast<double>(ranges.size())) : 1.0;
}

}  // namespace neardup::partitioner
