#include "common/shingle.h"

#include <xxhash.h>

#include <algorithm>

#include "common/bucket_sort.h"

namespace neardup {
namespace {

// Calls f(shingle_hash, first_word_hash) for each of the n padded k-grams.
template <typename F>
void ForEachShingle(std::span<const uint64_t> words, int k, F&& f) {
  const size_t n = words.size();
  if (n == 0) return;
  const size_t kk = static_cast<size_t>(k);
  uint64_t window[64];
  for (size_t start = 0; start < n; ++start) {
    const size_t avail = std::min(kk, n - start);
    std::copy_n(words.data() + start, avail, window);
    std::fill(window + avail, window + kk, kDummyWordHash);
    f(XXH3_64bits(window, kk * sizeof(uint64_t)), words[start]);
  }
}

}  // namespace

std::vector<uint64_t> ShingleSet(std::span<const uint64_t> word_hashes, int k) {
  std::vector<uint64_t> out;
  out.reserve(word_hashes.size());
  ForEachShingle(word_hashes, k, [&](uint64_t h, uint64_t) { out.push_back(h); });
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<uint64_t> ShingleSetWithDims(std::span<const uint64_t> word_hashes, int k, int dims,
                                         std::vector<uint32_t>* per_dim) {
  thread_local std::vector<std::pair<uint64_t, uint32_t>> tagged;
  tagged.clear();
  ForEachShingle(word_hashes, k, [&](uint64_t h, uint64_t first) {
    tagged.emplace_back(h, SubDictionary(first, dims));
  });
  thread_local std::vector<std::pair<uint64_t, uint32_t>> scratch;
  SortByLeadingBits(&tagged, 64, [](const std::pair<uint64_t, uint32_t>& t) { return t.first; }, &scratch);
  per_dim->assign(static_cast<size_t>(dims), 0);
  std::vector<uint64_t> out;
  out.reserve(tagged.size());
  for (size_t i = 0; i < tagged.size(); ++i) {
    if (i > 0 && tagged[i].first == tagged[i - 1].first) continue;
    out.push_back(tagged[i].first);
    ++(*per_dim)[tagged[i].second];
  }
  return out;
}

std::vector<uint32_t> LengthVector(std::span<const uint64_t> word_hashes, int dims) {
  std::vector<uint32_t> v(static_cast<size_t>(dims), 0);
  for (uint64_t w : word_hashes) ++v[SubDictionary(w, dims)];
  return v;
}

template <typename T>
static size_t OverlapImpl(std::span<const T> a, std::span<const T> b) {
  size_t i = 0, j = 0, o = 0;
  while (i < a.size() && j < b.size()) {
    const T x = a[i], y = b[j];
    o += (x == y);
    i += (x <= y);
    j += (y <= x);
  }
  return o;
}

size_t Overlap(std::span<const uint64_t> a, std::span<const uint64_t> b) { return OverlapImpl(a, b); }
size_t Overlap(std::span<const uint32_t> a, std::span<const uint32_t> b) { return OverlapImpl(a, b); }

double Jaccard(std::span<const uint64_t> a, std::span<const uint64_t> b) {
  const size_t o = Overlap(a, b);
  const size_t u = a.size() + b.size() - o;
  return u == 0 ? 0.0 : static_cast<double>(o) / static_cast<double>(u);
}

}  // namespace neardup
