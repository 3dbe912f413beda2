#include "common/url_hash_set.h"

#include <algorithm>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace neardup {

uint64_t UrlHashSet::Hash(std::string_view key) {
  const uint64_t h = XXH3_64bits(key.data(), key.size());
  return h == 0 ? 1 : h;
}

namespace {

// The slot of h in an open-addressing table of a power-of-two size, or the empty slot where it
// would go.
size_t ProbeIn(const std::vector<uint64_t>& keys, uint64_t h) {
  const size_t mask = keys.size() - 1;
  size_t i = (h * 0x9E3779B97F4A7C15ull) >> 20 & mask;
  while (keys[i] != h && keys[i] != 0) i = (i + 1) & mask;
  return i;
}

// The table size when one more key must fit at most half full, or 0 when it fits as it is.
size_t GrownSize(size_t count, size_t size) {
  return (count + 1) * 2 > size ? std::max<size_t>(1024, size * 2) : 0;
}

}  // namespace

size_t UrlHashSet::Probe(uint64_t h) const { return ProbeIn(slots_, h); }
size_t UrlHashMap::Probe(uint64_t h) const { return ProbeIn(keys_, h); }

void UrlHashSet::Insert(uint64_t h) {
  if (const size_t grown = GrownSize(count_, slots_.size()); grown > 0) {
    std::vector<uint64_t> old(grown, 0);
    old.swap(slots_);
    count_ = 0;
    for (uint64_t v : old) {
      if (v != 0) Insert(v);
    }
  }
  uint64_t& slot = slots_[Probe(h)];
  if (slot == 0) {
    slot = h;
    ++count_;
  }
}

void UrlHashMap::Insert(uint64_t h, uint32_t value) {
  if (const size_t grown = GrownSize(count_, keys_.size()); grown > 0) {
    std::vector<uint64_t> old_keys(grown, 0);
    std::vector<uint32_t> old_values(grown, 0);
    old_keys.swap(keys_);
    old_values.swap(values_);
    count_ = 0;
    for (size_t i = 0; i < old_keys.size(); ++i) {
      if (old_keys[i] != 0) Insert(old_keys[i], old_values[i]);
    }
  }
  const size_t i = Probe(h);
  if (keys_[i] == 0) {
    keys_[i] = h;
    ++count_;
  }
  values_[i] = value;
}

}  // namespace neardup
