// TokenOrder: the global token order of a Tier 2 shard's prefix filter.
//
// Prefix filtering is exact for any fixed total order, but it is fast only when the tokens that
// occur in many pages (a big site's header and footer shingles) come last, so that they rarely
// fall in a prefix and the postings a probe scans stay short (AllPairs orders by ascending
// frequency for this reason). A shard cannot know frequencies before it has seen pages, and its
// order must never change while pages are indexed with it, so the order is:
//   1. tokens not marked frequent, by ascending hash, then
//   2. tokens marked frequent, by ascending hash,
// where "marked frequent" is a bitmap over the hash (a deterministic function of the token: a
// bitmap collision only moves an innocent token to the end, for every page alike). An empty
// TokenOrder (no bitmap) is plain hash order. The shard derives its bitmap from the document
// frequencies of its first pages and re-indexes them; later it only marks more tokens
// (WithFrequent), so a page's prefix changes only if it held one of them (tier2/shard.h).
//
// Keys: Key(h) maps a token to a 64-bit value whose order (ties broken by the hash) is the token
// order; a page's prefix cut is stored as the top 32 bits of its last prefix token's key.
//
// Thread safety: immutable after construction; share freely.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"

namespace neardup::tier2 {

class TokenOrder {
 public:
  TokenOrder() = default;  // hash order

  // Marks `frequent` (any order, duplicates allowed) in a bitmap of about 64 bits per token.
  static TokenOrder FromFrequent(std::span<const uint64_t> frequent);
  // This order with `more` marked too: every token this order marks stays marked. The bitmap
  // grows (each bit becoming a run of bits) to at least 256 bits per token of `more`, so that
  // each call adds at most 1/256 to the share of innocent tokens marked.
  TokenOrder WithFrequent(std::span<const uint64_t> more) const;
  // The bitmap as stored by Serialize(); Corruption when its size is not a power of two bytes.
  static StatusOr<TokenOrder> Deserialize(const std::string& bytes);
  std::string Serialize() const { return bitmap_; }

  bool empty() const { return bitmap_.empty(); }
  uint64_t bitmap_bits() const { return bitmap_.size() * 8; }

  bool Frequent(uint64_t h) const {
    if (bitmap_.empty()) return false;
    const uint64_t bit = (h * 0xD6E8FEB86659FD93ull) >> shift_;
    return (static_cast<unsigned char>(bitmap_[bit >> 3]) >> (bit & 7)) & 1;
  }
  uint64_t Key(uint64_t h) const { return (h >> 1) | (Frequent(h) ? 1ull << 63 : 0); }

  // The first `p` tokens of a page in this order, from its sorted unique hashes.
  void Prefix(std::span<const uint64_t> sorted, uint32_t p, std::vector<uint64_t>* out) const;

 private:
  void Mark(uint64_t h) {
    const uint64_t bit = (h * 0xD6E8FEB86659FD93ull) >> shift_;
    bitmap_[bit >> 3] = static_cast<char>(static_cast<unsigned char>(bitmap_[bit >> 3]) | (1u << (bit & 7)));
  }

  std::string bitmap_;
  int shift_ = 64;
};

// Tokens that occur in at least `min_pages` of `sets` (each sorted and unique).
std::vector<uint64_t> FrequentTokens(std::span<const std::vector<uint64_t>> sets, uint32_t min_pages);

}  // namespace neardup::tier2
