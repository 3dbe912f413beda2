// BinaryTest: a GoogleTest fixture for end-to-end tests that run the neardup binary as a separate
// process, in a fresh temporary directory per test (removed afterwards).
//
//   class MyTest : public BinaryTest { ... };
//   TEST_F(MyTest, X) { Outcome r = Neardup("run --input " + Path("c.jsonl")); EXPECT_EQ(r.code, 0); }
//
// NEARDUP_BIN (the binary's path) is defined by tests/CMakeLists.txt.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "testing/files.h"

namespace neardup {

struct Outcome {
  int code;  // exit code, -1 when killed by a signal
  std::string out, err;
};

class BinaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("neardup_e2e_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  // A failed test's directory stays when NEARDUP_KEEP_FAILED is set (its stores, logs and outputs).
  void TearDown() override {
    if (HasFailure() && std::getenv("NEARDUP_KEEP_FAILED") != nullptr) {
      std::fprintf(stderr, "kept the failed test's directory: %s\n", dir_.c_str());
      return;
    }
    std::filesystem::remove_all(dir_);
  }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  void Write(const std::string& name, const std::string& content) const {
    std::ofstream(Path(name), std::ios::binary) << content;
  }
  static std::string Read(const std::string& path) { return test::ReadFile(path); }
  // Runs `neardup <args>` through the shell; stdout and stderr are captured.
  // Runs the binary; safe from several threads at once (each call its own output files). `env`:
  // VAR=value assignments for the child, as the shell takes them.
  Outcome Neardup(const std::string& args, const std::string& env = "") const {
    static std::atomic<int> calls{0};
    const std::string n = std::to_string(calls++);
    const std::string out = Path("stdout-" + n + ".txt"), err = Path("stderr-" + n + ".txt");
    const std::string cmd = (env.empty() ? "" : env + " ") + std::string(NEARDUP_BIN) + " " + args + " >" + out + " 2>" + err;
    const int rc = std::system(cmd.c_str());
    return Outcome{WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, Read(out), Read(err)};
  }

  std::filesystem::path dir_;
};

}  // namespace neardup
