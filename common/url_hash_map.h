// UrlHashMap: the 64-bit hashes of a set of URLs (or any keys), each with a small value, in
// memory, so that a store can answer "never stored" without a disk read, and find where (or in
// which group) a stored key is. A key whose hash is absent was never inserted; a hash that is
// present may belong to another key (a collision, about n / 2^64 per lookup) or to a key since
// deleted, so the caller confirms a hit against the record it leads to, or knows the collisions
// (a store that reads a key the table names and does not find it has found one). Nothing is
// ever removed; Insert sets the value of a hash already present.
//
//   UrlHashMap<uint32_t> slots;
//   slots.Insert(UrlHash(url), slot);
//   uint32_t s;
//   if (!slots.Find(UrlHash(other), &s)) { /* certainly absent: skip the store */ }
//
// Open addressing with linear probing, at most half full: 2 * (8 + sizeof(V)) bytes or less per
// key.
//
// Thread safety: const methods may run concurrently with each other; Insert needs exclusive
// access.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace neardup {

// XXH3-64 of the key; never 0 (0 marks an empty slot).
uint64_t UrlHash(std::string_view key);

// UrlHash as the hasher of a standard unordered container keyed by URLs: on URLs it is about twice
// as fast as the standard library's byte hash. Transparent (finds by string_view too, with
// std::equal_to<>).
struct UrlHasher {
  using is_transparent = void;
  size_t operator()(std::string_view key) const { return static_cast<size_t>(UrlHash(key)); }
};
using UrlSet = std::unordered_set<std::string, UrlHasher, std::equal_to<>>;

template <typename V>
class UrlHashMap {
 public:
  bool Find(uint64_t h, V* value) const {
    if (keys_.empty()) return false;
    const size_t i = Probe(h);
    if (keys_[i] != h) return false;
    *value = values_[i];
    return true;
  }
  bool Contains(uint64_t h) const { return !keys_.empty() && keys_[Probe(h)] == h; }
  void Insert(uint64_t h, V value) {
    if ((count_ + 1) * 2 > keys_.size()) Grow(std::max<size_t>(1024, keys_.size() * 2));
    const size_t i = Probe(h);
    if (keys_[i] == 0) {
      keys_[i] = h;
      ++count_;
    }
    values_[i] = value;
  }
  size_t size() const { return count_; }
  size_t MemoryBytes() const { return keys_.capacity() * sizeof(uint64_t) + values_.capacity() * sizeof(V); }

 private:
  // h's slot, or the empty slot where it would go.
  size_t Probe(uint64_t h) const {
    const size_t mask = keys_.size() - 1;
    size_t i = (h * 0x9E3779B97F4A7C15ull) >> 20 & mask;
    while (keys_[i] != h && keys_[i] != 0) i = (i + 1) & mask;
    return i;
  }
  void Grow(size_t size) {
    std::vector<uint64_t> old_keys(size, 0);
    std::vector<V> old_values(size, V{});
    old_keys.swap(keys_);
    old_values.swap(values_);
    count_ = 0;
    for (size_t i = 0; i < old_keys.size(); ++i) {
      if (old_keys[i] != 0) Insert(old_keys[i], old_values[i]);
    }
  }

  std::vector<uint64_t> keys_;  // 0 = empty; a power of two
  std::vector<V> values_;
  size_t count_ = 0;
};

}  // namespace neardup
