#include "email/templates/stage_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>

namespace neardup::email {
namespace {

TEST(StagePool, RunsEveryAcceptedTask) {
  StagePool pool("t", 3, 1000);
  std::atomic<int> n{0};
  for (int i = 0; i < 500; ++i) ASSERT_TRUE(pool.TryRun([&] { ++n; }));
  pool.Drain();
  EXPECT_EQ(n.load(), 500);
  EXPECT_EQ(pool.accepted(), 500u);
  EXPECT_EQ(pool.dropped(), 0u);
}

TEST(StagePool, DropsAndCountsWhenSaturated) {
  StagePool pool("t", 1, 2);
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::atomic<bool> started{false};
  ASSERT_TRUE(pool.TryRun([&] { started = true; gate.wait(); }));
  while (!started) std::this_thread::yield();
  EXPECT_TRUE(pool.TryRun([] {}));
  EXPECT_TRUE(pool.TryRun([] {}));
  EXPECT_FALSE(pool.TryRun([] {}));  // queue of 2 full, the worker busy
  EXPECT_EQ(pool.dropped(), 1u);
  release.set_value();
  pool.Drain();
  EXPECT_EQ(pool.accepted(), 3u);
}

TEST(StagePool, ZeroThreadsRunsOnTheCaller) {
  StagePool pool("t", 0, 1);
  const auto me = std::this_thread::get_id();
  std::thread::id ran;
  EXPECT_TRUE(pool.TryRun([&] { ran = std::this_thread::get_id(); }));
  EXPECT_EQ(ran, me);
}

TEST(StagePool, RunWaitsForRoomInsteadOfDropping) {
  StagePool pool("t", 1, 1);
  std::atomic<int> n{0};
  for (int i = 0; i < 100; ++i) pool.Run([&] { ++n; });
  pool.Drain();
  EXPECT_EQ(n.load(), 100);
  EXPECT_EQ(pool.dropped(), 0u);
}

}  // namespace
}  // namespace neardup::email
