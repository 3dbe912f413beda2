#include "common/url_hash_set.h"

#include <algorithm>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace neardup {

uint64_t UrlHashSet::Hash(std::string_view key) {
  const uint64_t h = XXH3_64bits(key.data(), key.size());
  return h == 0 ? 1 : h;
}

size_t UrlHashSet::Probe(uint64_t h) const {
  const size_t mask = slots_.size() - 1;
  size_t i = (h * 0x9E3779B97F4A7C15ull) >> 20 & mask;
  while (slots_[i] != h && slots_[i] != 0) i = (i + 1) & mask;
  return i;
}

void UrlHashSet::Insert(uint64_t h) {
  if ((count_ + 1) * 2 > slots_.size()) {  // at most half full
    std::vector<uint64_t> old(std::max<size_t>(1024, slots_.size() * 2), 0);
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

}  // namespace neardup
