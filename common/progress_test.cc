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

// The peak resident set holds at least what the process has resident at once: its anonymous
// memory before, and 64 MiB it then touches.
TEST(PeakRssBytesTest, HoldsWhatIsTouchedAtOnce) {
  const uint64_t anon_before = AnonRssBytes();
  ASSERT_GT(anon_before, 0u);
  std::vector<char> touched(64 << 20, 1);
  EXPECT_GE(PeakRssBytes(), anon_before + (48u << 20)) << static_cast<int>(touched[12345]);
}

}  // namespace
}  // namespace neardup
