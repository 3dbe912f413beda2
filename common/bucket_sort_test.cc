#include "common/bucket_sort.h"

#include <gtest/gtest.h>

#include <random>
#include <utility>

namespace neardup {
namespace {

TEST(SortByLeadingBits, SortsLikeStdSortAtEverySize) {
  std::mt19937_64 rng(5);
  std::vector<std::pair<uint64_t, uint32_t>> v, scratch;
  for (size_t n : {0, 1, 2, 63, 64, 65, 100, 1000, 4097, 100000}) {
    v.clear();
    for (size_t i = 0; i < n; ++i) v.emplace_back(rng(), static_cast<uint32_t>(rng() % 3));
    for (size_t i = 0; i + 1 < n; i += 7) v[i + 1].first = v[i].first;  // equal keys, other tags
    auto want = v;
    std::sort(want.begin(), want.end());
    for (bool fine : {false, true}) {
      auto got = v;
      SortByLeadingBits(&got, 64, [](const auto& p) { return p.first; }, &scratch, fine);
      EXPECT_EQ(got, want) << n << " elements" << (fine ? ", fine ranges" : "");
    }
  }
}

TEST(SortByLeadingBits, NarrowAndSkewedKeys) {
  std::mt19937_64 rng(9);
  std::vector<uint64_t> v, scratch;
  // A 40-bit key (a 8-bit bucket above 32 low bits), uniform and then all in one bucket.
  for (bool skewed : {false, true}) {
    v.clear();
    for (int i = 0; i < 20000; ++i) v.push_back((skewed ? uint64_t{3} : rng() % 256) << 32 | (rng() & 0xFFFFFFFF));
    auto want = v;
    std::sort(want.begin(), want.end());
    for (bool fine : {false, true}) {
      auto got = v;
      SortByLeadingBits(&got, 40, [](uint64_t e) { return e; }, &scratch, fine);
      EXPECT_EQ(got, want) << (skewed ? "skewed" : "uniform") << (fine ? ", fine ranges" : "");
    }
  }
}

}  // namespace
}  // namespace neardup
