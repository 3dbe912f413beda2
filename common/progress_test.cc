#include "common/progress.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <vector>

namespace neardup {
namespace {

// The memory a process may use is known on Linux, and no more than the machine has.
TEST(MemoryBytesTest, IsAtMostThePhysicalMemory) {
  const uint64_t physical = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t memory = MemoryBytes();
  EXPECT_GT(memory, 0u);
  EXPECT_LE(memory, physical);
}

// The peak resident set grows with what the process touches.
TEST(PeakRssBytesTest, GrowsWithTouchedMemory) {
  const uint64_t before = PeakRssBytes();
  ASSERT_GT(before, 0u);
  std::vector<char> touched(64 << 20, 1);
  EXPECT_GE(PeakRssBytes(), before + (32u << 20)) << static_cast<int>(touched[12345]);
}

}  // namespace
}  // namespace neardup
