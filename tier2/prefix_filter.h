// The bounds that let Tier 2 skip pairs without losing one: size, prefix and length-vector filters.
//
// The bounds hold for any fixed global token order: a shard's is tier2/token_order.h's (the
// shingle hash, the tokens marked frequent last), and a page's prefix is its first tokens in it.
//
// Prefix filter with overlap c (the "l-prefix" scheme): let alpha be a lower bound on the overlap
// |A ∩ B| that a pair must reach. If the pair reaches it, the first |A| - alpha + c tokens of A and
// the first |B| - alpha + c tokens of B share at least min(c, alpha) tokens. For Jaccard >= t every
// admissible partner needs an overlap of at least ceil(t |A|), so a page's prefix is
// PrefixLength(|A|, t, c) tokens whatever its partner. A larger c indexes c - 1 more tokens per
// page and in exchange drops the candidates that share fewer than c prefix tokens (pages of one
// site sharing a few boilerplate shingles).
//
// Length-vector filter (exact): with A_i the shingles whose first word is in sub-dictionary i,
//   sum_i | |A_i| - |B_i| | <= |A Δ B| <= (1 - t) / (1 + t) * (|A| + |B|)  when Jaccard >= t.
//
// Positional bound in hash space: the order is the hash value, so a prefix is "every token up to a
// cut hash". If H <= min(cut(A), cut(B)), the shared tokens up to H lie in both prefixes (at most
// the prefix matches counted, m) and the rest lie in A above H:
//   |A ∩ B| <= m + |{a in A : a > H}|.
// A pair whose bound is below the overlap Jaccard >= t needs (MinOverlap) is dropped unverified.
//
// Every bound carries a safety margin on the side of keeping a pair, so the filters never drop a
// pair that JaccardAtLeast() (document/shingle.h) would accept.
//
// Thread safety: pure functions.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <span>

namespace neardup::tier2 {

inline constexpr double kFilterEps = 1e-9;

// Lowest overlap any partner of a page of `size` shingles can have at threshold t (>= 1).
inline uint32_t MinOverlapAnyPartner(uint32_t size, double t) {
  const double v = std::ceil((t - kFilterEps) * size - kFilterEps);
  return v < 1 ? 1u : static_cast<uint32_t>(v);
}

// Tokens of a page's prefix for threshold t and prefix overlap c (c >= 1); at most `size`.
inline uint32_t PrefixLength(uint32_t size, double t, uint32_t c) {
  const uint64_t p = static_cast<uint64_t>(size) - MinOverlapAnyPartner(size, t) + c;
  return static_cast<uint32_t>(std::min<uint64_t>(p, size));
}

// Shared prefix tokens a partner of a page of `size` shingles must have (min(c, alpha)).
inline uint32_t RequiredPrefixMatches(uint32_t size, double t, uint32_t c) {
  return std::min(c, MinOverlapAnyPartner(size, t));
}

// Sizes a partner of a page of `size` shingles can have at threshold t: [lo, hi].
struct SizeRange {
  uint32_t lo;
  uint32_t hi;
};
inline SizeRange PartnerSizes(uint32_t size, double t) {
  const double lo = std::ceil((t - kFilterEps) * size - kFilterEps);
  const double hi = std::floor(size / (t - kFilterEps) + 1);
  return SizeRange{lo < 1 ? 1u : static_cast<uint32_t>(lo),
                   hi > 4e9 ? 4000000000u : static_cast<uint32_t>(hi)};
}

// Smallest overlap a pair of sizes sa, sb needs for Jaccard >= t: ceil(t / (1 + t) * (sa + sb)).
inline uint32_t MinOverlap(uint32_t sa, uint32_t sb, double t) {
  const double s = static_cast<double>(sa) + sb;
  const double v = std::ceil(t * s / (1 + t) - kFilterEps * s - kFilterEps);
  return v < 1 ? 1u : static_cast<uint32_t>(v);
}

// False only when the length vectors prove Jaccard < t (vectors of equal length).
template <typename A, typename B>
inline bool LengthVectorsAllow(std::span<const A> a, uint32_t size_a, std::span<const B> b, uint32_t size_b,
                               double t) {
  uint64_t l1 = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const int64_t d = static_cast<int64_t>(a[i]) - static_cast<int64_t>(b[i]);
    l1 += static_cast<uint64_t>(d < 0 ? -d : d);
  }
  const double total = static_cast<double>(size_a) + size_b;
  return static_cast<double>(l1) <= (1 - t) / (1 + t) * total + kFilterEps * total + kFilterEps;
}

// The bitmap filter (Sandes et al., "Bitmap filter: speeding up exact set similarity joins with
// bitwise operations"): a set's parity bitmap has bit b set when an odd number of its tokens hash
// to b. In bitmap(A) xor bitmap(B) every set bit needs at least one token of the symmetric
// difference, so popcount(xor) <= |A xor B| = |A| + |B| - 2 |A & B|, and a pair whose xor has
// more bits than |A| + |B| - 2 MinOverlap cannot reach t. Exact: it never drops a pair >= t.
// 128 bits: 16 B a resident page; they tell pages of up to about 400 tokens apart at t = 0.9
// (longer ones differ in more bits than there are), and the count, positional and length bounds
// before it leave little for it to drop on longer ones.
inline constexpr size_t kBitmapWords = 2;
inline constexpr uint32_t kBitmapBits = kBitmapWords * 64;
using ParityBitmap = std::array<uint64_t, kBitmapWords>;

// A bit in [0, kBitmapBits): the top 32 bits of a multiplicative mix, scaled to the range.
inline uint32_t BitmapBit(uint64_t token) {
  return static_cast<uint32_t>((((token * 0x9E3779B97F4A7C15ull) >> 32) * kBitmapBits) >> 32);
}

inline ParityBitmap MakeParityBitmap(std::span<const uint64_t> tokens) {
  ParityBitmap b{};
  for (uint64_t h : tokens) {
    const uint32_t bit = BitmapBit(h);
    b[bit >> 6] ^= uint64_t{1} << (bit & 63);
  }
  return b;
}

// False only when the bitmaps prove Jaccard < t.
inline bool BitmapsAllow(const uint64_t* a, uint32_t size_a, const uint64_t* b, uint32_t size_b, double t) {
  uint32_t differ = 0;
  for (size_t w = 0; w < kBitmapWords; ++w) differ += static_cast<uint32_t>(std::popcount(a[w] ^ b[w]));
  const uint32_t need = MinOverlap(size_a, size_b, t);
  const uint64_t most = static_cast<uint64_t>(size_a) + size_b;
  return 2ull * need > most || differ <= most - 2ull * need;
}

}  // namespace neardup::tier2
