#include "gencrawl/random.h"

#include <cmath>

namespace neardup::gencrawl {
namespace {

constexpr double kLn2 = 0.693147180559945309417232121458;

}  // namespace

double DetLog(double x) {
  int e = 0;
  double m = std::frexp(x, &e);  // x = m * 2^e, m in [0.5, 1)
  if (m < 0.70710678118654752440) {
    m *= 2.0;
    --e;
  }
  const double f = (m - 1.0) / (m + 1.0);  // |f| <= 0.1716
  const double f2 = f * f;
  double term = f, sum = 0.0;
  for (int i = 1; i <= 31; i += 2) {
    sum += term / i;
    term *= f2;
  }
  return static_cast<double>(e) * kLn2 + 2.0 * sum;
}

double DetExp(double x) {
  if (x > 700) x = 700;
  if (x < -700) return 0.0;
  const double n = std::floor(x / kLn2 + 0.5);
  const double r = x - n * kLn2;  // |r| <= ~0.35
  double term = 1.0, sum = 1.0;
  for (int i = 1; i <= 22; ++i) {
    term *= r / i;
    sum += term;
  }
  return std::ldexp(sum, static_cast<int>(n));
}

AliasTable::AliasTable(const std::vector<double>& weights) {
  const size_t n = weights.size();
  prob_.assign(n, 1.0);
  alias_.resize(n);
  double total = 0;
  for (double w : weights) total += w;
  std::vector<double> p(n);
  std::vector<uint32_t> small, large;
  for (size_t i = 0; i < n; ++i) {
    alias_[i] = static_cast<uint32_t>(i);
    p[i] = weights[i] * static_cast<double>(n) / total;
    (p[i] < 1.0 ? small : large).push_back(static_cast<uint32_t>(i));
  }
  while (!small.empty() && !large.empty()) {
    const uint32_t s = small.back();
    small.pop_back();
    const uint32_t l = large.back();
    large.pop_back();
    prob_[s] = p[s];
    alias_[s] = l;
    p[l] = (p[l] + p[s]) - 1.0;
    (p[l] < 1.0 ? small : large).push_back(l);
  }
}

}  // namespace neardup::gencrawl
