#include "common/worker_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/thread_priority.h"

namespace neardup {
namespace {

TEST(WorkerPool, EveryWorkerOnceNamedAndWorkerZeroOnTheCaller) {
  WorkerPool pool(4, "nd-test");
  EXPECT_EQ(pool.threads(), 4);
  std::mutex mu;
  std::vector<int> seen;
  std::vector<std::string> names(4);
  const std::thread::id caller = std::this_thread::get_id();
  bool zero_on_caller = false;
  pool.Run([&](int w) {
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
}

TEST(WorkerPool, RunsReuseTheSameThreads) {
  WorkerPool pool(3, "nd-test");
  std::mutex mu;
  std::set<std::thread::id> ids;
  std::atomic<int> calls{0};
  for (int round = 0; round < 500; ++round) {
    pool.Run([&](int) {
      ++calls;
      std::lock_guard lock(mu);
      ids.insert(std::this_thread::get_id());
    });
  }
  EXPECT_EQ(calls.load(), 1500);
  EXPECT_EQ(ids.size(), 3u);  // the caller and the same two workers every time
}

TEST(WorkerPool, ReturnsOnlyWhenEveryCallReturned) {
  WorkerPool pool(4, "nd-test");
  for (int round = 0; round < 50; ++round) {
    std::atomic<int> done{0};
    pool.Run([&](int w) {
      if (w != 0) std::this_thread::sleep_for(std::chrono::microseconds(200 * w));
      ++done;
    });
    ASSERT_EQ(done.load(), 4) << "round " << round;
  }
}

TEST(WorkerPool, RunsFromSeveralThreadsTakeTurns) {
  WorkerPool pool(3, "nd-test");
  std::atomic<int> inside{0}, most{0}, calls{0};
  auto caller = [&] {
    for (int round = 0; round < 200; ++round) {
      pool.Run([&](int) {
        const int now = ++inside;
        int m = most.load();
        while (now > m && !most.compare_exchange_weak(m, now)) {
        }
        ++calls;
        --inside;
      });
    }
  };
  std::thread a(caller), b(caller);
  a.join();
  b.join();
  EXPECT_EQ(calls.load(), 2 * 200 * 3);
  EXPECT_LE(most.load(), 3);  // never two Runs' calls at once
}

TEST(WorkerPool, OneThreadOrFewerRunsOnTheCallerAlone) {
  for (int threads : {1, 0, -2}) {
    WorkerPool pool(threads, "nd-test");
    EXPECT_EQ(pool.threads(), 1);
    int calls = 0;
    const std::thread::id caller = std::this_thread::get_id();
    pool.Run([&](int w) {
      calls += w == 0 ? 1 : 100;
      EXPECT_EQ(std::this_thread::get_id(), caller);
    });
    EXPECT_EQ(calls, 1);
  }
}

}  // namespace
}  // namespace neardup
