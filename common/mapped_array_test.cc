#include "common/mapped_array.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

namespace neardup {
namespace {

TEST(MappedArray, StartsEmptyAndResizeZeroFills) {
  MappedArray<uint32_t> a;
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(a.capacity(), 0u);
  a.resize(10);
  ASSERT_EQ(a.size(), 10u);
  for (uint32_t v : a) EXPECT_EQ(v, 0u);
  EXPECT_GE(a.capacity(), 10u);
  EXPECT_EQ(a.capacity() * sizeof(uint32_t) % static_cast<size_t>(sysconf(_SC_PAGESIZE)), 0u) << "whole pages";
}

TEST(MappedArray, GrowingKeepsTheContents) {
  MappedArray<uint64_t> a;
  std::vector<uint64_t> want;
  for (size_t n : {1u, 1000u, 5000u, 300000u, 2000000u}) {
    const size_t old = a.size();
    a.resize(n);
    want.resize(n);
    for (size_t i = old; i < n; ++i) a[i] = want[i] = i * 0x9E3779B97F4A7C15ull;
    ASSERT_EQ(std::vector<uint64_t>(a.begin(), a.end()), want) << n;
  }
}

TEST(MappedArray, AppendKeepsOrderAndGrowsGeometrically) {
  MappedArray<uint32_t> a;
  std::vector<uint32_t> want;
  size_t remaps = 0, capacity = 0;
  for (uint32_t i = 0; i < 200000; ++i) {
    const uint32_t run[3] = {i, i + 1, i + 2};
    a.append(run, i % 4);  // runs of 0..3 values
    want.insert(want.end(), run, run + i % 4);
    if (a.capacity() != capacity) ++remaps, capacity = a.capacity();
  }
  ASSERT_EQ(std::vector<uint32_t>(a.begin(), a.end()), want);
  EXPECT_LT(remaps, 20u);  // doubling: about log2 of the size in pages
}

TEST(MappedArray, ShrinkingDropsTheTailOnlyAndRegrowingZeroFills) {
  MappedArray<uint32_t> a;
  a.resize(100000);
  std::iota(a.begin(), a.end(), 1u);
  a.resize(10);
  a.set_capacity(10);
  EXPECT_LT(a.capacity(), 100000u);
  for (uint32_t i = 0; i < 10; ++i) EXPECT_EQ(a[i], i + 1);
  a.resize(20);
  for (uint32_t i = 10; i < 20; ++i) EXPECT_EQ(a[i], 0u) << "old values must not reappear";
  a.set_capacity(0);  // never below the size
  EXPECT_GE(a.capacity(), 20u);
  a.clear();
  a.set_capacity(0);
  EXPECT_EQ(a.capacity(), 0u);
  EXPECT_EQ(a.data(), nullptr);
}

TEST(MappedArray, CopyIsDeepAndMoveTransfers) {
  MappedArray<uint32_t> a;
  a.resize(5000);
  std::iota(a.begin(), a.end(), 0u);
  MappedArray<uint32_t> b(a);
  b[0] = 99;
  EXPECT_EQ(a[0], 0u);
  EXPECT_EQ(b[4999], 4999u);
  MappedArray<uint32_t> c(std::move(a));
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(c.size(), 5000u);
  EXPECT_EQ(c[1234], 1234u);
  a = c;
  EXPECT_EQ(a[1234], 1234u);
  c = std::move(b);
  EXPECT_EQ(c[0], 99u);
  c = c;  // self-assignment keeps it
  EXPECT_EQ(c[4999], 4999u);
}

}  // namespace
}  // namespace neardup
