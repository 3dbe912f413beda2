// TempDir: a fresh directory for one test, under the system's temporary directory, named after
// the process, the running test and a counter (so tests running in parallel processes, and
// several TempDirs in one test, never meet), and removed with everything in it when destroyed.
//
//   TempDir dir;
//   Write(dir.File("crawl.jsonl"), ...);
//   ShardOptions o;  o.path = dir.File("shard");
//
// Thread safety: construct on the test's thread; the object is then read-only.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <string>

namespace neardup::test {

class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = "neardup-test-" + std::to_string(::getpid()) + "-";
    if (info != nullptr) name += std::string(info->test_suite_name()) + "." + info->name() + "-";
    name += std::to_string(counter_++);
    // A parameterised test's names hold '/' ("Prefix/Suite.Test/0"): one directory, not nested
    // ones that the destructor would remove only the innermost of.
    std::replace(name.begin(), name.end(), '/', '_');
    path_ = std::filesystem::temp_directory_path() / name;
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  // The path of `name` inside the directory.
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  static inline std::atomic<int> counter_{0};
  std::filesystem::path path_;
};

}  // namespace neardup::test
