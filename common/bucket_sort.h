// SortByLeadingBits: sorts a vector exactly as std::sort would, faster when the order starts with
// a roughly uniform key (hashes, hash-derived buckets): one counting pass on the key's top bits
// puts each element in its range, then each range is sorted on its own (by insertion when small,
// as ranges hold a handful). Linear in practice, against n log n with unpredictable branches.
//
//   std::vector<std::pair<uint64_t, uint32_t>> v = ...;  std::vector<std::pair<uint64_t, uint32_t>> scratch;
//   SortByLeadingBits(&v, 64, [](const auto& p) { return p.first; }, &scratch);
//
// `fine`: about one element a range instead of four to eight. The insertion sorts (whose branches
// mispredict) then have almost nothing to do, for a count array as long as the input: the choice
// for a small array (a page's shingles, hundreds to thousands), not for one whose counts would
// leave the cache.
//
// `key(e)` must fit in `key_bits` bits (1..64) and agree with operator<: a < b implies
// key(a) <= key(b). A skewed key is still sorted right, only slower. `scratch` is reusable storage
// (its contents are replaced). Thread safety: as std::sort.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace neardup {

template <typename T, typename Key>
void SortByLeadingBits(std::vector<T>* v, int key_bits, Key key, std::vector<T>* scratch, bool fine = false) {
  const size_t n = v->size();
  if (n < 64) {
    std::sort(v->begin(), v->end());
    return;
  }
  int bits = 1;  // 4..8 elements a range; fine: 1..2
  const size_t ranges_up_to = fine ? 2 * n : n / 2;
  while (bits < std::min(key_bits, 20) && (size_t{1} << (bits + 1)) <= ranges_up_to) ++bits;
  const int shift = key_bits - bits;
  auto range = [&](const T& e) { return static_cast<size_t>(static_cast<uint64_t>(key(e)) >> shift); };
  std::vector<uint32_t> start((size_t{1} << bits) + 1, 0);
  for (const T& e : *v) ++start[range(e) + 1];
  for (size_t r = 1; r < start.size(); ++r) start[r] += start[r - 1];
  std::vector<T>& out = *scratch;
  out.resize(n);
  for (const T& e : *v) out[start[range(e)]++] = e;  // start[r] ends at range r's end
  for (size_t r = 0, from = 0; r + 1 < start.size(); ++r) {
    const size_t to = start[r];
    if (to - from > 16) {
      std::sort(out.begin() + from, out.begin() + to);
    } else {
      for (size_t i = from + 1; i < to; ++i) {  // insertion sort
        const T e = out[i];
        size_t j = i;
        for (; j > from && e < out[j - 1]; --j) out[j] = out[j - 1];
        out[j] = e;
      }
    }
    from = to;
  }
  v->swap(out);
}

}  // namespace neardup
