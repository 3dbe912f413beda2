#include "storage/read_ahead.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/thread_priority.h"

namespace neardup {
namespace {

using namespace std::chrono_literals;

// Polls until pred() holds or 10 s pass.
template <typename Pred>
bool Eventually(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

TEST(ReadAhead, HelpersMakeEveryReadOnceOffTheCallersThread) {
  ReadAhead ahead(3, "nd-test-ahead", /*min_disk_bytes=*/0);
  std::vector<std::atomic<int>> made(500);
  std::mutex mu;
  std::set<std::string> names;
  std::set<std::thread::id> threads;
  ASSERT_TRUE(ahead.Start(made.size(), [&](size_t i) {
    made[i].fetch_add(1);
    std::lock_guard lock(mu);
    names.insert(ThisThreadName());
    threads.insert(std::this_thread::get_id());
  }));
  ASSERT_TRUE(Eventually([&] { return ahead.stats().reads == made.size(); }));
  for (const auto& m : made) EXPECT_EQ(m.load(), 1);
  std::lock_guard lock(mu);
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u);
  for (const std::string& n : names) EXPECT_EQ(n.rfind("nd-test-ahead-", 0), 0u) << n;
  EXPECT_EQ(ahead.stats().started, 1u);
}

TEST(ReadAhead, StartDropsTheReadsTheOneBeforeHadNotMade) {
  ReadAhead ahead(2, "nd-test-ahead", 0);
  std::atomic<size_t> slow_made{0};
  // 2 helpers x 1 ms a read: the 100,000 reads would take 50 s.
  ASSERT_TRUE(ahead.Start(100'000, [&](size_t) {
    std::this_thread::sleep_for(1ms);
    slow_made.fetch_add(1);
  }));
  std::this_thread::sleep_for(20ms);
  std::vector<std::atomic<int>> made(10);
  ASSERT_TRUE(ahead.Start(made.size(), [&](size_t i) { made[i].fetch_add(1); }));
  const size_t slow_at_start = slow_made.load();
  EXPECT_LT(slow_at_start, 100'000u);
  ASSERT_TRUE(Eventually([&] {
    for (const auto& m : made) {
      if (m.load() != 1) return false;
    }
    return true;
  }));
  // Start waited for the reads in progress: none of the first Start's came after it returned.
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(slow_made.load(), slow_at_start);
}

TEST(ReadAhead, CancelAndTheDestructorDropWhatIsPending) {
  std::atomic<size_t> made{0};
  const auto t0 = std::chrono::steady_clock::now();
  {
    ReadAhead ahead(2, "nd-test-ahead", 0);
    ASSERT_TRUE(ahead.Start(100'000, [&](size_t) {
      std::this_thread::sleep_for(1ms);
      made.fetch_add(1);
    }));
    std::this_thread::sleep_for(10ms);
    ahead.Cancel();
    const size_t at_cancel = made.load();
    std::this_thread::sleep_for(10ms);
    EXPECT_EQ(made.load(), at_cancel);
    ASSERT_TRUE(ahead.Start(100'000, [&](size_t) {
      std::this_thread::sleep_for(1ms);
      made.fetch_add(1);
    }));
  }  // the destructor stops the second Start's reads
  EXPECT_LT(made.load(), 1'000u);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

TEST(ReadAhead, NothingIsReadAheadWhileReadsDoNotReachTheDisk) {
  // Nothing here reads from a disk: above a threshold no Start is due, and the first Start of a
  // ReadAhead with a threshold only measures.
  ReadAhead ahead(2, "nd-test-ahead", /*min_disk_bytes=*/uint64_t{1} << 40);
  std::atomic<int> made{0};
  for (int k = 0; k < 3; ++k) EXPECT_FALSE(ahead.Start(10, [&](size_t) { made.fetch_add(1); }));
  std::this_thread::sleep_for(10ms);
  EXPECT_EQ(made.load(), 0);
  EXPECT_EQ(ahead.stats().skipped, 3u);
  EXPECT_EQ(ahead.stats().started, 0u);
  EXPECT_EQ(ahead.stats().reads, 0u);

  ReadAhead measuring(1, "nd-test-ahead", /*min_disk_bytes=*/1);
  EXPECT_FALSE(measuring.Start(10, [&](size_t) { made.fetch_add(1); }));
  EXPECT_EQ(made.load(), 0);
}

TEST(ReadAhead, AnEmptyStartIsNotHandedOver) {
  ReadAhead ahead(1, "nd-test-ahead", 0);
  EXPECT_FALSE(ahead.Start(0, [](size_t) { ADD_FAILURE() << "no read to make"; }));
  EXPECT_EQ(ahead.stats().skipped, 1u);
}

}  // namespace
}  // namespace neardup
