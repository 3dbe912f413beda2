// Page signatures made directly from shingle hashes, for tests of the tiers that need exact
// control over sets (sizes, overlaps, collisions) rather than text.
//
//   pb::PageSignature s = SignatureOf("http://a/", {1, 2, 3});   // Jaccard is then set arithmetic
//
// Thread safety: pure functions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "proto/neardup.pb.h"

namespace neardup::test {

// A valid signature of `url` whose shingles are `hashes` (sorted, deduplicated), k = 5, with
// `dims` length dimensions assigned by the hash, so the shingle vector sums to the set's size.
inline pb::PageSignature SignatureOf(const std::string& url, std::vector<uint64_t> hashes, int dims = 3) {
  std::sort(hashes.begin(), hashes.end());
  hashes.erase(std::unique(hashes.begin(), hashes.end()), hashes.end());
  pb::PageSignature s;
  s.set_url(url);
  s.set_shingle_k(5);
  std::vector<uint32_t> vec(dims, 0);
  for (uint64_t h : hashes) {
    s.add_shingles(h);
    ++vec[(h >> 13) % dims];
  }
  for (uint32_t v : vec) {
    s.add_shingle_vector(v);
    s.add_length_vector(v);
  }
  s.set_word_count(static_cast<uint32_t>(hashes.size()));
  return s;
}

}  // namespace neardup::test
