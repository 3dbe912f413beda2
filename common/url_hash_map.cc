#include "common/url_hash_map.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace neardup {

uint64_t UrlHash(std::string_view key) {
  const uint64_t h = XXH3_64bits(key.data(), key.size());
  return h == 0 ? 1 : h;
}

}  // namespace neardup
