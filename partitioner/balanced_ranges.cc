#include "partitioner/balanced_ranges.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace neardup {
namespace {

// Ranges a greedy left-to-right packing of w needs when no range may exceed cap (each w <= cap).
size_t GreedyParts(const std::vector<double>& w, double cap) {
  size_t parts = 0;
  double cur = 0;
  bool open = false;
  for (double x : w) {
    if (open && cur + x > cap) { ++parts; cur = 0; }
    cur += x;
    open = true;
  }
  return parts + (open ? 1 : 0);
}

// suffix[j] = fewest ranges for w[j..] under cap (suffix[n] = 0), by two pointers.
std::vector<size_t> SuffixParts(const std::vector<double>& w, double cap) {
  const size_t n = w.size();
  std::vector<size_t> next(n), suffix(n + 1, 0);
  size_t end = 0;
  double sum = 0;
  for (size_t j = 0; j < n; ++j) {
    if (end <= j) { end = j; sum = 0; }
    while (end < n && sum + w[end] <= cap) sum += w[end++];
    next[j] = std::max(end, j + 1);
    if (end > j) sum -= w[j];
  }
  for (size_t j = n; j-- > 0;) suffix[j] = 1 + suffix[next[j]];
  return suffix;
}

}  // namespace

std::vector<uint64_t> FineGrainBounds(std::span<const uint64_t> v, double tau) {
  std::vector<uint64_t> bounds;
  if (v.empty()) return bounds;
  uint64_t p = v[0];
  bounds.push_back(p);
  for (size_t i = 1; i < v.size(); ++i) {
    if (static_cast<double>(p) / static_cast<double>(v[i]) < tau) {
      p = v[i];
      bounds.push_back(p);
    }
  }
  return bounds;
}

StatusOr<std::vector<ValueRange>> BalanceRanges(std::vector<WeightedValue> values, const BalanceOptions& o) {
  if (o.ranges == 0) return InvalidArgument("ranges must be >= 1");
  if (o.tau && !(*o.tau > 0 && *o.tau < 1)) return InvalidArgument("tau must be in (0, 1)");
  for (const auto& v : values) {
    if (!(v.weight >= 0) || !std::isfinite(v.weight)) {
      return InvalidArgument("weight of value " + std::to_string(v.value) + " must be finite and >= 0");
    }
  }
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  if (values.empty()) return std::vector<ValueRange>{{0, kMax, 0.0}};
  std::sort(values.begin(), values.end(), [](const WeightedValue& a, const WeightedValue& b) { return a.value < b.value; });
  std::vector<uint64_t> distinct;
  std::vector<double> dw;
  for (const auto& v : values) {
    if (distinct.empty() || distinct.back() != v.value) { distinct.push_back(v.value); dw.push_back(0); }
    dw.back() += v.weight;
  }
  // Fine-grain intervals: left bounds and weights.
  const std::vector<uint64_t> left = o.tau ? FineGrainBounds(distinct, *o.tau) : distinct;
  std::vector<double> fw(left.size(), 0.0);
  for (size_t i = 0, f = 0; i < distinct.size(); ++i) {
    while (f + 1 < left.size() && distinct[i] >= left[f + 1]) ++f;
    fw[f] += dw[i];
  }
  const size_t k = fw.size();
  const size_t s = std::min(o.ranges, k);
  const double total = std::accumulate(fw.begin(), fw.end(), 0.0);
  // The smallest cap on the heaviest range that fits in s ranges (bisection to full precision).
  double lo = std::max(*std::max_element(fw.begin(), fw.end()), total / static_cast<double>(s));
  double hi = total;
  if (GreedyParts(fw, lo) <= s) {
    hi = lo;
  } else {
    for (int iter = 0; iter < 200 && hi - lo > 1e-12 * std::max(1.0, total); ++iter) {
      const double mid = lo + (hi - lo) / 2;
      if (GreedyParts(fw, mid) <= s) hi = mid; else lo = mid;
    }
  }
  const double cap = hi;
  const std::vector<size_t> suffix = SuffixParts(fw, cap);
  // Cut where the open range is closest to the remaining average, never above the cap, keeping
  // the rest feasible, and using all s ranges when there are enough intervals.
  std::vector<size_t> starts{0};
  double cur = fw[0], remaining = total - fw[0];
  for (size_t j = 1; j < k; ++j) {
    const size_t left_to_open = s - starts.size();
    bool cut = false;
    if (left_to_open > 0 && suffix[j] <= left_to_open) {
      const double target = (cur + remaining) / static_cast<double>(left_to_open + 1);
      const bool must = cur + fw[j] > cap || k - j <= left_to_open;
      cut = must || std::abs(cur - target) <= std::abs(cur + fw[j] - target);
    }
    if (cut) { starts.push_back(j); cur = 0; }
    cur += fw[j];
    remaining -= fw[j];
  }
  std::vector<ValueRange> out;
  for (size_t r = 0; r < starts.size(); ++r) {
    const size_t b = starts[r], e = r + 1 < starts.size() ? starts[r + 1] : k;
    ValueRange range{r == 0 ? 0 : left[b], e == k ? kMax : left[e], 0.0};
    for (size_t j = b; j < e; ++j) range.weight += fw[j];
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
  if (ranges.size() <= 1) return 1;
  double total = 0, heaviest = 0;
  for (const auto& r : ranges) { total += r.weight; heaviest = std::max(heaviest, r.weight); }
  return total > 0 ? heaviest / (total / static_cast<double>(ranges.size())) : 1;
}

}  // namespace neardup
