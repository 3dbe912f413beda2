#include "tier2/commit_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "testing/temp_dir.h"

namespace neardup::tier2 {
namespace {

namespace fs = std::filesystem;

class CommitFileTest : public ::testing::Test {
 protected:
  // Overwrites `n` bytes at `at` with 0x5a (a torn or damaged slot).
  void Damage(uint64_t at, size_t n) {
    std::fstream f(path_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(at));
    f << std::string(n, '\x5a');
  }
  test::TempDir tmp_;
  fs::path dir_ = tmp_.path();
  std::string path_ = tmp_.File("commit");
};

TEST_F(CommitFileTest, CreateWriteAndReopenGiveTheLatestCommit) {
  EXPECT_EQ(CommitFile::Open(FileEnv::Default(), path_).status().code(), StatusCode::kNotFound);
  auto c = CommitFile::Create(FileEnv::Default(), path_, {1, 0, 0}, true);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ((*c)->number(), 0u);
  EXPECT_FALSE(fs::exists(path_ + ".tmp"));
  for (uint64_t i = 1; i <= 5; ++i) ASSERT_TRUE((*c)->Write({2, 100 * i, 7 * i}, i % 2 == 0).ok());
  EXPECT_EQ((*c)->last().end, 500u);
  c->reset();
  auto again = CommitFile::Open(FileEnv::Default(), path_);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ((*again)->number(), 5u);
  EXPECT_EQ((*again)->last().generation, 2u);
  EXPECT_EQ((*again)->last().end, 500u);
  EXPECT_EQ((*again)->last().sequence, 35u);
  // Numbering goes on from the file's latest commit.
  ASSERT_TRUE((*again)->Write({2, 600, 42}, false).ok());
  again->reset();
  auto third = CommitFile::Open(FileEnv::Default(), path_);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ((*third)->number(), 6u);
  EXPECT_EQ((*third)->last().end, 600u);
}

// A write torn by a crash damages the slot it was writing: the other slot's commit (the previous,
// the last one acknowledged) is what Open returns.
TEST_F(CommitFileTest, TornSlotFallsBackToThePreviousCommit) {
  auto c = CommitFile::Create(FileEnv::Default(), path_, {1, 0, 0}, false);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->Write({1, 111, 1}, false).ok());  // commit 1: slot 1
  ASSERT_TRUE((*c)->Write({1, 222, 2}, false).ok());  // commit 2: slot 0
  c->reset();
  Damage(20, 3);  // inside slot 0's end field
  auto r = CommitFile::Open(FileEnv::Default(), path_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->number(), 1u);
  EXPECT_EQ((*r)->last().end, 111u);
  // The next commit (number 2 again) goes over the damaged slot.
  ASSERT_TRUE((*r)->Write({1, 333, 3}, false).ok());
  r->reset();
  auto again = CommitFile::Open(FileEnv::Default(), path_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->last().end, 333u);
}

TEST_F(CommitFileTest, BothSlotsDamagedOrFileCutIsCorruption) {
  {
    auto c = CommitFile::Create(FileEnv::Default(), path_, {1, 0, 0}, false);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE((*c)->Write({1, 10, 0}, false).ok());
  }
  Damage(0, 1);
  Damage(CommitFile::kSlotBytes + 33, 1);  // inside slot 1's checksum (bytes 32..39)
  auto r = CommitFile::Open(FileEnv::Default(), path_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  EXPECT_NE(r.status().message().find(path_), std::string::npos) << r.status().ToString();
  fs::resize_file(path_, 10);
  EXPECT_EQ(CommitFile::Open(FileEnv::Default(), path_).status().code(), StatusCode::kCorruption);
}
}  // namespace
}  // namespace neardup::tier2
