#include "testing/temp_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace neardup::test {
namespace {

// A TempDir is one directory right under the temporary directory, and nothing of it is left once
// it is destroyed: also in a parameterised test, whose names hold '/' (nested directories would
// leave one named after the instantiation's prefix behind).
void ExpectOneDirectoryThatLeavesNothing() {
  std::filesystem::path path;
  {
    TempDir dir;
    path = dir.path();
    EXPECT_EQ(path.parent_path(), std::filesystem::temp_directory_path());
    EXPECT_TRUE(std::filesystem::is_directory(path));
    std::ofstream(dir.File("a.txt")) << "x";
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

class TempDirTest : public ::testing::TestWithParam<int> {};

TEST_P(TempDirTest, IsOneDirectoryAndLeavesNothing) { ExpectOneDirectoryThatLeavesNothing(); }

INSTANTIATE_TEST_SUITE_P(Prefix, TempDirTest, ::testing::Values(1, 2));

TEST(TempDirPlainTest, IsOneDirectoryAndLeavesNothing) { ExpectOneDirectoryThatLeavesNothing(); }

}  // namespace
}  // namespace neardup::test
