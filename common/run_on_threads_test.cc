#include "common/run_on_threads.h"

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

namespace neardup {
namespace {

TEST(RunOnThreads, EveryWorkerOnceNamedAndWorkerZeroOnTheCaller) {
  std::mutex mu;
  std::vector<int> seen;
  std::vector<std::string> names(4);
  const std::thread::id caller = std::this_thread::get_id();
  bool zero_on_caller = false;
  RunOnThreads(4, "nd-test", [&](int w) {
    std::lock_guard lock(mu);
    seen.push_back(w);
    names[static_cast<size_t>(w)] = ThisThreadName();
    if (w == 0) zero_on_caller = std::this_thread::get_id() == caller;
  });
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(zero_on_caller);
  EXPECT_EQ(names[1], "nd-test-1");
  EXPECT_EQ(names[3], "nd-test-3");
  int calls = 0;
  RunOnThreads(0, "nd-test", [&](int w) { calls += w == 0 ? 1 : 100; });
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace neardup
