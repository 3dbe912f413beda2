// UrlHashSet: the 64-bit hashes of a set of URLs (or any keys), in memory, so that a store can
// answer "never seen" without a disk read. A key that is not in the set was never inserted; one
// that is may be (a hash collision, about n / 2^64 per lookup, or a key since deleted), so a
// positive answer still needs the real lookup. Nothing is ever removed.
//
//   UrlHashSet seen;
//   seen.Insert(UrlHashSet::Hash(url));
//   if (!seen.Contains(UrlHashSet::Hash(other))) { /* certainly absent: skip the store */ }
//
// Open addressing with linear probing, at most half full: 16 bytes or less per key.
//
// Thread safety: const methods may run concurrently with each other; Insert needs exclusive
// access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace neardup {

class UrlHashSet {
 public:
  // XXH3-64 of the key; never 0 (0 marks an empty slot).
  static uint64_t Hash(std::string_view key);
  bool Contains(uint64_t h) const { return !slots_.empty() && slots_[Probe(h)] == h; }
  void Insert(uint64_t h);
  size_t size() const { return count_; }
  size_t MemoryBytes() const { return slots_.capacity() * sizeof(uint64_t); }

 private:
  size_t Probe(uint64_t h) const;  // h's slot, or the empty slot where it would go
  std::vector<uint64_t> slots_;    // 0 = empty
  size_t count_ = 0;
};

// UrlHashMap: the same hashes, each with a 32-bit value (e.g. where the key's record is). As with
// UrlHashSet, a hit may be a collision or a key since deleted: the caller confirms it against the
// record it names. Insert sets the value of a hash already present. 24 bytes or less per key.
class UrlHashMap {
 public:
  bool Find(uint64_t h, uint32_t* value) const {
    if (keys_.empty()) return false;
    const size_t i = Probe(h);
    if (keys_[i] != h) return false;
    *value = values_[i];
    return true;
  }
  bool Contains(uint64_t h) const { return !keys_.empty() && keys_[Probe(h)] == h; }
  void Insert(uint64_t h, uint32_t value);
  size_t size() const { return count_; }
  size_t MemoryBytes() const { return keys_.capacity() * sizeof(uint64_t) + values_.capacity() * sizeof(uint32_t); }

 private:
  size_t Probe(uint64_t h) const;
  std::vector<uint64_t> keys_;  // 0 = empty
  std::vector<uint32_t> values_;
  size_t count_ = 0;
};

}  // namespace neardup
