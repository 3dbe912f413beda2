#include "storage/file_env.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "storage/fault_file_env.h"
#include "testing/temp_dir.h"

namespace neardup {
namespace {

namespace fs = std::filesystem;

class FileEnvTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return tmp_.File(name); }
  static std::string Read(FileEnv* env, const std::string& path) {
    std::string got;
    EXPECT_TRUE(ReadWholeFile(env, path, &got).ok());
    return got;
  }
  test::TempDir tmp_;
  fs::path dir_ = tmp_.path();
};

TEST_F(FileEnvTest, WriteFileAtomicallyReplacesTheWholeContent) {
  FileEnv* env = FileEnv::Default();
  const std::string p = Path("meta");
  std::string got;
  EXPECT_EQ(ReadWholeFile(env, p, &got).code(), StatusCode::kNotFound);
  ASSERT_TRUE(WriteFileAtomically(env, p, std::string(100000, 'a'), true).ok());
  EXPECT_EQ(Read(env, p), std::string(100000, 'a'));
  ASSERT_TRUE(WriteFileAtomically(env, p, "short", false).ok());
  EXPECT_EQ(Read(env, p), "short");
  EXPECT_FALSE(fs::exists(p + ".tmp"));
  EXPECT_EQ(WriteFileAtomically(env, Path("no-such-dir/x"), "x", false).code(), StatusCode::kIoError);
}

TEST_F(FileEnvTest, FilesReadWriteTruncateAndScatterReads) {
  FileEnv* env = FileEnv::Default();
  auto f = env->OpenFile(Path("f"), FileMode::kReadWrite);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_TRUE((*f)->WriteAt(0, "hello world").ok());
  ASSERT_TRUE((*f)->WriteAt(6, "WORLD!").ok());
  EXPECT_EQ(*(*f)->Size(), 12u);
  char a[5], b[20];
  const iovec parts[2] = {{a, sizeof a}, {b, sizeof b}};
  size_t got = 0;
  ASSERT_TRUE((*f)->ReadAt(0, parts, &got).ok());
  EXPECT_EQ(got, 12u);  // short only at the end of the file
  EXPECT_EQ(std::string(a, 5), "hello");
  EXPECT_EQ(std::string(b, 7), " WORLD!");
  ASSERT_TRUE((*f)->Truncate(5).ok());
  ASSERT_TRUE((*f)->Sync().ok());
  EXPECT_EQ(Read(env, Path("f")), "hello");
  EXPECT_EQ(env->OpenFile(Path("missing"), FileMode::kReadOnly).status().code(), StatusCode::kNotFound);
  auto t = env->OpenFile(Path("f"), FileMode::kTruncate);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*(*t)->Size(), 0u);
  std::vector<std::string> names;
  ASSERT_TRUE(env->ListDir(dir_.string(), &names).ok());
  EXPECT_EQ(names, std::vector<std::string>{"f"});
  EXPECT_EQ(env->Remove(Path("missing")).code(), StatusCode::kNotFound);
}

TEST_F(FileEnvTest, ExclusiveLockKeepsOthersOutUntilReleased) {
  FileEnv* env = FileEnv::Default();
  EXPECT_EQ(env->LockFile(Path("LOCK"), /*shared=*/true).status().code(), StatusCode::kIoError);  // needs the file
  auto held = env->LockFile(Path("LOCK"), false);
  ASSERT_TRUE(held.ok());
  auto second = env->LockFile(Path("LOCK"), false);
  ASSERT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("LOCK"), std::string::npos) << second.status().ToString();
  EXPECT_FALSE(env->LockFile(Path("LOCK"), true).ok());
  held->reset();
  auto r1 = env->LockFile(Path("LOCK"), true), r2 = env->LockFile(Path("LOCK"), true);
  EXPECT_TRUE(r1.ok() && r2.ok());
  EXPECT_FALSE(env->LockFile(Path("LOCK"), false).ok());
}

TEST_F(FileEnvTest, FaultEnvWritesShortThenRunsOutOfSpace) {
  FaultFileEnv env(FileEnv::Default());
  auto f = env.OpenFile(Path("f"), FileMode::kReadWrite);
  ASSERT_TRUE(f.ok());
  env.FailWritesAfter(4);
  const Status s = (*f)->WriteAt(0, "abcdefgh");
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find("No space left on device"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find(Path("f")), std::string::npos) << s.ToString();
  EXPECT_EQ(Read(&env, Path("f")), "abcd");  // the part that fitted
  EXPECT_FALSE((*f)->WriteAt(4, "x").ok());
  EXPECT_EQ(env.failed_writes(), 2u);
  env.FailWritesAfter(-1);
  EXPECT_TRUE((*f)->WriteAt(4, "x").ok());
}

TEST_F(FileEnvTest, FaultEnvFailsSyncsAndRenames) {
  FaultFileEnv env(FileEnv::Default());
  env.FailSyncs(true);
  const Status s = WriteFileAtomically(&env, Path("meta"), "v1", true);
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find("Input/output error"), std::string::npos) << s.ToString();
  EXPECT_FALSE(fs::exists(Path("meta")));
  EXPECT_FALSE(fs::exists(Path("meta.tmp")));  // removed on failure
  env.FailSyncs(false);
  env.FailRenames(true);
  EXPECT_EQ(WriteFileAtomically(&env, Path("meta"), "v1", true).code(), StatusCode::kIoError);
  env.FailRenames(false);
  EXPECT_TRUE(WriteFileAtomically(&env, Path("meta"), "v1", true).ok());
  EXPECT_EQ(Read(&env, Path("meta")), "v1");
}

// A crash keeps what was synced and forgets the rest; with `torn`, the last unsynced write of a
// file keeps its first half.
TEST_F(FileEnvTest, FaultEnvCrashForgetsWhatWasNotSynced) {
  for (bool torn : {false, true}) {
    FaultFileEnv env(FileEnv::Default());
    {
      auto f = env.OpenFile(Path("log"), FileMode::kTruncate);
      ASSERT_TRUE(f.ok());
      ASSERT_TRUE((*f)->WriteAt(0, "committed|").ok());
      ASSERT_TRUE((*f)->Sync().ok());
      ASSERT_TRUE((*f)->WriteAt(10, "lost-").ok());
      ASSERT_TRUE((*f)->WriteAt(0, "XXXX").ok());        // an overwrite, undone too
      ASSERT_TRUE((*f)->WriteAt(15, "torn-tail").ok());
    }
    env.Crash(torn);
    // The overwrite is undone either way; the torn run keeps the first half of the last write.
    EXPECT_EQ(Read(&env, Path("log")), torn ? std::string("committed|\0\0\0\0\0torn", 19) : "committed|") << torn;
    {
      auto f = env.OpenFile(Path("log"), FileMode::kReadWrite);
      ASSERT_TRUE((*f)->Truncate(3).ok());               // a cut, undone by a crash
    }
    env.Crash(false);
    EXPECT_EQ(Read(&env, Path("log")).substr(0, 10), "committed|") << torn;
  }
}

}  // namespace
}  // namespace neardup
