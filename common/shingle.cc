#include "common/shingle.h"

#include <xxhash.h>

#include <algorithm>

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

namespace {

// Sorts (hash, dimension) pairs as std::sort would: one counting pass on the hashes' top bits puts
// each pair in its bucket (hashes are uniform, so buckets hold a handful), then each bucket is
// sorted on its own. Linear in practice, against n log n with unpredictable branches.
void SortTagged(std::vector<std::pair<uint64_t, uint32_t>>* tagged) {
  using Tagged = std::pair<uint64_t, uint32_t>;
  const size_t n = tagged->size();
  if (n < 64) {
    std::sort(tagged->begin(), tagged->end());
    return;
  }
  int bits = 4;
  while (bits < 16 && (size_t{1} << (bits + 1)) <= n / 2) ++bits;  // about 2..4 pairs a bucket
  const int shift = 64 - bits;
  thread_local std::vector<uint32_t> start;
  thread_local std::vector<Tagged> out;
  start.assign((size_t{1} << bits) + 1, 0);
  for (const Tagged& t : *tagged) ++start[(t.first >> shift) + 1];
  for (size_t b = 1; b < start.size(); ++b) start[b] += start[b - 1];
  out.resize(n);
  for (const Tagged& t : *tagged) out[start[t.first >> shift]++] = t;  // start[b] ends at bucket b's end
  for (size_t b = 0, from = 0; b + 1 < start.size(); ++b) {
    const size_t to = start[b];
    if (to - from > 16) {
      std::sort(out.begin() + from, out.begin() + to);
    } else {
      for (size_t i = from + 1; i < to; ++i) {  // insertion sort
        const Tagged v = out[i];
        size_t j = i;
        for (; j > from && v < out[j - 1]; --j) out[j] = out[j - 1];
        out[j] = v;
      }
    }
    from = to;
  }
  tagged->swap(out);
}

}  // namespace

std::vector<uint64_t> ShingleSetWithDims(std::span<const uint64_t> word_hashes, int k, int dims,
                                         std::vector<uint32_t>* per_dim) {
  thread_local std::vector<std::pair<uint64_t, uint32_t>> tagged;
  tagged.clear();
  ForEachShingle(word_hashes, k, [&](uint64_t h, uint64_t first) {
    tagged.emplace_back(h, SubDictionary(first, dims));
  });
  SortTagged(&tagged);
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
