// TokenOrder: the global token order of a Tier 2 shard's prefix filter.
//
// Prefix filtering is exact for any fixed total order, but it is fast only when the tokens that
// occur in many pages (a big site's header and footer shingles) come last, so that they rarely
// fall in a prefix and the postings a probe scans stay short (AllPairs orders by ascending
// frequency for this reason). A shard cannot know frequencies before it has seen pages, and its
// order must never change while pages are indexed with it, so the order is:
//   1. tokens not marked frequent, by ascending hash, then
//   2. tokens marked frequent, by ascending hash,
// where "marked frequent" is:
//   - a bitmap over the hash (FromFrequent: a deterministic function of the token, so a bitmap
//     collision only moves an innocent token to the end, for every page alike; the shard derives
//     it from the document frequencies of its first pages and re-indexes every page), or
//   - an exact set of tokens marked later (WithFrequent), so that a page's prefix moves only if
//     it held one of them, and the shard re-indexes just those pages (tier2/shard.h).
// An empty TokenOrder is plain hash order.
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
  // This order with exactly the tokens of `more` marked too (any order, duplicates allowed):
  // every token this order marks stays marked, and no other token is.
  TokenOrder WithFrequent(std::span<const uint64_t> more) const;
  // An order as stored by Serialize(); Corruption when the bytes are not one.
  static StatusOr<TokenOrder> Deserialize(const std::string& bytes);
  // The bitmap (its size a power of two bytes), then, when tokens were marked by WithFrequent,
  // those tokens (8 bytes each, little-endian, ascending), their count and kSetMagic (8 bytes
  // each).
  std::string Serialize() const;
  static constexpr uint64_t kSetMagic = 0x5445534E454B4F54ull;  // "TOKENSET"

  bool empty() const { return bitmap_.empty() && marked_count_ == 0; }
  uint64_t bitmap_bits() const { return bitmap_.size() * 8; }
  // Tokens WithFrequent marked, exactly.
  uint64_t marked_tokens() const { return marked_count_; }

  bool Frequent(uint64_t h) const {
    if (!bitmap_.empty()) {
      const uint64_t bit = (h * 0xD6E8FEB86659FD93ull) >> shift_;
      if ((static_cast<unsigned char>(bitmap_[bit >> 3]) >> (bit & 7)) & 1) return true;
    }
    return marked_count_ > 0 && Marked(h);
  }
  uint64_t Key(uint64_t h) const { return (h >> 1) | (Frequent(h) ? 1ull << 63 : 0); }

  // The first `p` tokens of a page in this order, from its sorted unique hashes.
  void Prefix(std::span<const uint64_t> sorted, uint32_t p, std::vector<uint64_t>* out) const;

 private:
  void Mark(uint64_t h) {
    const uint64_t bit = (h * 0xD6E8FEB86659FD93ull) >> shift_;
    bitmap_[bit >> 3] = static_cast<char>(static_cast<unsigned char>(bitmap_[bit >> 3]) | (1u << (bit & 7)));
  }
  // The exact set: open addressing with linear probing, at most half full; 0 is a free cell (the
  // token 0 is kept in marked_zero_).
  bool Marked(uint64_t h) const {
    if (h == 0) return marked_zero_;
    const uint64_t mask = table_.size() - 1;
    for (uint64_t i = (h * 0x9E3779B97F4A7C15ull) >> table_shift_;; i = (i + 1) & mask) {
      if (table_[i] == h) return true;
      if (table_[i] == 0) return false;
    }
  }
  // Builds the set from `tokens` (sorted, unique).
  void SetMarked(std::span<const uint64_t> tokens);
  std::vector<uint64_t> MarkedSorted() const;

  std::string bitmap_;
  int shift_ = 64;
  std::vector<uint64_t> table_;
  int table_shift_ = 64;
  uint64_t marked_count_ = 0;
  bool marked_zero_ = false;
};

// Tokens that occur in at least `min_pages` of `sets` (each sorted and unique).
std::vector<uint64_t> FrequentTokens(std::span<const std::vector<uint64_t>> sets, uint32_t min_pages);

}  // namespace neardup::tier2
