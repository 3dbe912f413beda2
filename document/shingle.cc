#include "document/shingle.h"

// Inlined: with a constant length (ForEachShingleOf) XXH3 is a few multiplies, less than the call.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <utility>

#include "common/bucket_sort.h"

namespace neardup {
namespace {

// Calls f(shingle_hash, first_word_hash) for each of the n padded k-grams. K is the shingle
// length at compile time: the hash is then XXH3 of a constant length, inlined and without the
// dispatch on the length, and a whole k-gram is hashed where it lies among the words; only the
// last K - 1 k-grams, which run past the end and take padding, are copied.
// Flattened: left to itself the compiler calls an outlined part of XXH3 for every shingle.
template <int K, typename F>
[[gnu::flatten]] void ForEachShingleOf(std::span<const uint64_t> words, F&& f) {
  const size_t n = words.size();
  const uint64_t* w = words.data();
  size_t start = 0;
  for (; start + K <= n; ++start) f(XXH3_64bits(w + start, K * sizeof(uint64_t)), w[start]);
  uint64_t window[K] = {};  // (every word is written below; the init only quiets -Wmaybe-uninitialized)
  for (; start < n; ++start) {
    const size_t avail = n - start;
    std::copy_n(w + start, avail, window);
    std::fill(window + avail, window + K, kDummyWordHash);
    f(XXH3_64bits(window, K * sizeof(uint64_t)), w[start]);
  }
}

// Any k >= 1, the length known only at run time (k past the specialised ones).
template <typename F>
void ForEachShingleAnyK(std::span<const uint64_t> words, size_t k, F&& f) {
  const size_t n = words.size();
  std::vector<uint64_t> window(k);
  for (size_t start = 0; start < n; ++start) {
    const size_t avail = std::min(k, n - start);
    std::copy_n(words.data() + start, avail, window.begin());
    std::fill(window.begin() + static_cast<std::ptrdiff_t>(avail), window.end(), kDummyWordHash);
    f(XXH3_64bits(window.data(), k * sizeof(uint64_t)), words[start]);
  }
}

// The k a signer allows (ValidateSignerOptions: 1..16) each have their own ForEachShingleOf.
constexpr int kSpecialisedK = 16;

template <typename F, int... Ks>
bool ForEachShingleDispatch(std::span<const uint64_t> words, int k, F&& f, std::integer_sequence<int, Ks...>) {
  return ((k == Ks + 1 ? (ForEachShingleOf<Ks + 1>(words, f), true) : false) || ...);
}

template <typename F>
void ForEachShingle(std::span<const uint64_t> words, int k, F&& f) {
  if (!ForEachShingleDispatch(words, k, f, std::make_integer_sequence<int, kSpecialisedK>{})) {
    ForEachShingleAnyK(words, static_cast<size_t>(k), f);
  }
}

}  // namespace

std::vector<uint64_t> ShingleSet(std::span<const uint64_t> word_hashes, int k) {
  std::vector<uint64_t> out;
  out.resize(word_hashes.size());  // exactly one shingle a word
  size_t i = 0;
  ForEachShingle(word_hashes, k, [&](uint64_t h, uint64_t) { out[i++] = h; });
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<uint64_t> ShingleSetWithDims(std::span<const uint64_t> word_hashes, int k, int dims,
                                         std::vector<uint32_t>* per_dim) {
  return ShingleSetWithDims(word_hashes, k, LengthVector(word_hashes, dims), per_dim);
}

std::vector<uint64_t> ShingleSetWithDims(std::span<const uint64_t> word_hashes, int k,
                                         std::span<const uint32_t> length_vector, std::vector<uint32_t>* per_dim) {
  // A unique shingle counts in the dimension of its first word; a shingle that occurs more than
  // once counts once, in the smallest of its occurrences' dimensions (what sorting (hash,
  // dimension) pairs and keeping the first of each hash gives). Only the 8-byte hashes are
  // sorted: every occurrence is first counted (the length vector), and the repeated shingles
  // (few in most text, many in documentation's repeated navigation and code) are then corrected
  // with a second pass over the shingles in word order (kept unsorted, so that the pass does not
  // hash the k-grams again).
  const size_t n = word_hashes.size();
  thread_local std::vector<uint64_t> hashes, scratch, unsorted;
  hashes.resize(n);  // exactly one shingle a word; written in place, no growth checks
  size_t next = 0;
  ForEachShingle(word_hashes, k, [&](uint64_t h, uint64_t) { hashes[next++] = h; });
  unsorted.assign(hashes.begin(), hashes.end());
  SortByLeadingBits(&hashes, 64, [](uint64_t h) { return h; }, &scratch, /*fine=*/true);
  const int dims = static_cast<int>(length_vector.size());
  per_dim->assign(length_vector.begin(), length_vector.end());  // every occurrence, as LengthVector counts
  std::vector<uint64_t> out;
  out.reserve(n);
  thread_local std::vector<uint64_t> repeated;
  repeated.clear();
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && hashes[i] == hashes[i - 1]) {
      if (repeated.empty() || repeated.back() != hashes[i]) repeated.push_back(hashes[i]);
      continue;
    }
    out.push_back(hashes[i]);
  }
  if (!repeated.empty()) {
    thread_local std::vector<uint32_t> smallest;
    smallest.assign(repeated.size(), UINT32_MAX);
    // The repeated hashes in an open-addressed table (a hash is uniform: its low bits place it),
    // at most an eighth full: most shingles are not repeated, and a lookup that misses then ends
    // at its first probe, mostly without a mispredicted branch, in a table that stays in cache.
    const size_t cap = std::bit_ceil(std::max<size_t>(16, repeated.size() * 8));
    const SubDictionaries sub(dims);
    const size_t mask = cap - 1;
    thread_local std::vector<uint64_t> slot_hash;
    thread_local std::vector<uint32_t> slot_index;
    slot_hash.assign(cap, 0);
    slot_index.assign(cap, UINT32_MAX);
    for (size_t j = 0; j < repeated.size(); ++j) {
      size_t pos = repeated[j] & mask;
      while (slot_index[pos] != UINT32_MAX) pos = (pos + 1) & mask;
      slot_hash[pos] = repeated[j];
      slot_index[pos] = static_cast<uint32_t>(j);
    }
    for (size_t i = 0; i < n; ++i) {
      const uint64_t h = unsorted[i];
      size_t pos = h & mask;
      while (slot_index[pos] != UINT32_MAX && slot_hash[pos] != h) pos = (pos + 1) & mask;
      if (slot_index[pos] == UINT32_MAX) continue;
      const uint32_t d = sub(word_hashes[i]);  // the k-gram's first word
      --(*per_dim)[d];
      uint32_t& m = smallest[slot_index[pos]];
      m = std::min(m, d);
    }
    for (uint32_t d : smallest) ++(*per_dim)[d];
  }
  return out;
}

std::vector<uint32_t> LengthVector(std::span<const uint64_t> word_hashes, int dims) {
  std::vector<uint32_t> v(static_cast<size_t>(dims), 0);
  const SubDictionaries sub(dims);
  for (uint64_t w : word_hashes) ++v[sub(w)];
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

size_t OverlapIfAtLeast(std::span<const uint64_t> a, std::span<const uint64_t> b, size_t need) {
  // The bound is checked every kStride steps; each step moves i or j (or both) by one, so a run
  // of at most `left` steps stays inside both arrays and is as branch-free as Overlap's merge.
  constexpr size_t kStride = 32;
  size_t i = 0, j = 0, o = 0;
  while (i < a.size() && j < b.size()) {
    const size_t left = std::min(a.size() - i, b.size() - j);
    if (o + left < need) return o;
    for (size_t steps = std::min(left, kStride); steps > 0; --steps) {
      const uint64_t x = a[i], y = b[j];
      o += (x == y);
      i += (x <= y);
      j += (y <= x);
    }
  }
  return o;
}

double Jaccard(std::span<const uint64_t> a, std::span<const uint64_t> b) {
  const size_t o = Overlap(a, b);
  const size_t u = a.size() + b.size() - o;
  return u == 0 ? 0.0 : static_cast<double>(o) / static_cast<double>(u);
}

}  // namespace neardup
