#include "tier2/prefix_filter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "document/shingle.h"

namespace neardup::tier2 {
namespace {

// Two random sets of the given sizes sharing `common` tokens (sorted, unique).
void MakePair(std::mt19937_64& rng, size_t na, size_t nb, size_t common, std::vector<uint64_t>* a,
              std::vector<uint64_t>* b) {
  a->clear();
  b->clear();
  for (size_t i = 0; i < common; ++i) {
    const uint64_t h = rng();
    a->push_back(h);
    b->push_back(h);
  }
  while (a->size() < na) a->push_back(rng());
  while (b->size() < nb) b->push_back(rng());
  std::sort(a->begin(), a->end());
  std::sort(b->begin(), b->end());
}

// The bitmap filter never drops a pair at or above the threshold, over sizes from 1 to 2,000 and
// overlaps around every threshold's boundary; and it does drop most pairs well below it when the
// sets are small enough for 128 bits to tell (up to about 400 tokens at t = 0.9).
TEST(BitmapFilter, NeverDropsAPairAtOrAboveTheThreshold) {
  std::mt19937_64 rng(7);
  std::vector<uint64_t> a, b;
  uint64_t dropped_far = 0, far = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const size_t na = 1 + rng() % (trial % 3 == 0 ? 20 : 2000);
    const size_t nb = std::max<size_t>(1, na + rng() % (na / 4 + 2) - na / 8);
    const size_t common = rng() % (std::min(na, nb) + 1);
    MakePair(rng, na, nb, common, &a, &b);
    const ParityBitmap ba = MakeParityBitmap(a), bb = MakeParityBitmap(b);
    const size_t o = Overlap(a, b);
    for (double t : {0.5, 0.7, 0.8, 0.9, 0.95, 1.0}) {
      const bool allowed = BitmapsAllow(ba.data(), static_cast<uint32_t>(na), bb.data(), static_cast<uint32_t>(nb), t);
      if (JaccardAtLeast(o, na, nb, t)) {
        ASSERT_TRUE(allowed) << "sizes " << na << ", " << nb << ", overlap " << o << ", t " << t;
      }
      const double j = static_cast<double>(o) / static_cast<double>(na + nb - o);
      if (t == 0.9 && na >= 150 && na <= 400 && j < 0.75) {
        ++far;
        dropped_far += !allowed;
      }
    }
  }
  ASSERT_GT(far, 500u);
  EXPECT_GT(static_cast<double>(dropped_far), 0.9 * static_cast<double>(far)) << dropped_far << " of " << far;
}

// Every token lands on a bit of the bitmap, and the bits are used about evenly (a bit past the
// array once overwrote memory when the width changed).
TEST(BitmapFilter, BitsCoverTheWholeBitmapEvenly) {
  std::mt19937_64 rng(9);
  std::vector<uint64_t> hits(kBitmapBits, 0);
  const uint64_t n = 200 * kBitmapBits;
  for (uint64_t i = 0; i < n; ++i) {
    const uint32_t bit = BitmapBit(i % 2 ? rng() : i);  // random and sequential tokens
    ASSERT_LT(bit, kBitmapBits);
    ++hits[bit];
  }
  for (uint32_t b = 0; b < kBitmapBits; ++b) {
    EXPECT_GT(hits[b], 100u) << "bit " << b;
    EXPECT_LT(hits[b], 300u) << "bit " << b;
  }
}

TEST(BitmapFilter, IdenticalSetsAlwaysPass) {
  std::mt19937_64 rng(8);
  std::vector<uint64_t> a, b;
  for (size_t n : {1, 2, 50, 700}) {
    MakePair(rng, n, n, n, &a, &b);
    const ParityBitmap ba = MakeParityBitmap(a);
    EXPECT_TRUE(BitmapsAllow(ba.data(), static_cast<uint32_t>(n), ba.data(), static_cast<uint32_t>(n), 1.0));
  }
}

// The length-vector bound (the exact routing mode's inequality) holds for disjoint splits.
TEST(LengthVectorFilter, NeverDropsAPairAtOrAboveTheThreshold) {
  std::mt19937_64 rng(9);
  std::vector<uint64_t> a, b;
  for (int trial = 0; trial < 5000; ++trial) {
    const size_t na = 1 + rng() % 500, nb = std::max<size_t>(1, na + 20 - std::min<size_t>(na + 19, rng() % 40));
    MakePair(rng, na, nb, rng() % (std::min(na, nb) + 1), &a, &b);
    std::vector<uint32_t> va(3, 0), vb(3, 0);
    for (uint64_t h : a) ++va[h % 3];
    for (uint64_t h : b) ++vb[h % 3];
    const size_t o = Overlap(a, b);
    for (double t : {0.5, 0.8, 0.9, 1.0}) {
      if (!JaccardAtLeast(o, na, nb, t)) continue;
      ASSERT_TRUE(LengthVectorsAllow(std::span<const uint32_t>(va), static_cast<uint32_t>(na),
                                     std::span<const uint32_t>(vb), static_cast<uint32_t>(nb), t));
    }
  }
}

}  // namespace
}  // namespace neardup::tier2
