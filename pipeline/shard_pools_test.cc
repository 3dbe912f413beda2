// The run's threads (pipeline/shard_pools.h): a fan-out over the shards and a background job.
#include "pipeline/shard_pools.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>

namespace neardup::pipeline::internal {
namespace {

TEST(ForEachShardTest, EveryShardOnItsOwnThreadAndTheFirstErrorByShard) {
  ShardPools pools(4);
  std::mutex mu;
  std::set<std::thread::id> threads;
  std::vector<double> seconds(4, 1.0);
  Status s = ForEachShard(pools.compare, [&](size_t m) -> Status {
    {
      std::lock_guard lock(mu);
      threads.insert(std::this_thread::get_id());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(m == 2 ? 30 : 1));
    if (m == 1) return NotFound("one");
    if (m == 3) return IoError("three");
    return Status::Ok();
  }, &seconds);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(threads.size(), 4u);
  EXPECT_GE(seconds[2], 1.0 + 0.025);  // each call's time added
  EXPECT_LT(seconds[0], seconds[2]);
  EXPECT_TRUE(ForEachShard(pools.store, [](size_t) { return Status::Ok(); }).ok());
}

TEST(BackgroundJobTest, RunsAJobAtATimeAndGivesItsStatus) {
  BackgroundJob job("nd-test-job");
  EXPECT_FALSE(job.started());
  EXPECT_TRUE(job.Wait().ok());  // none started
  std::atomic<int> runs{0};
  std::thread::id ran_on;
  job.Start([&]() -> Status {
    ran_on = std::this_thread::get_id();
    ++runs;
    return IoError("disk");
  });
  EXPECT_TRUE(job.started());
  EXPECT_EQ(job.Wait().code(), StatusCode::kIoError);
  EXPECT_FALSE(job.started());
  EXPECT_NE(ran_on, std::this_thread::get_id());
  // The same thread takes the next job; what a job holds is gone once Wait returns.
  auto held = std::make_shared<int>(1);
  std::weak_ptr<int> watch = held;
  const std::thread::id first = ran_on;
  job.Start([&, held = std::move(held)]() -> Status {
    ran_on = std::this_thread::get_id();
    ++runs;
    return Status::Ok();
  });
  EXPECT_TRUE(job.Wait().ok());
  EXPECT_TRUE(watch.expired());
  EXPECT_EQ(ran_on, first);
  EXPECT_EQ(runs, 2);
}

TEST(BackgroundJobTest, TheDestructorWaitsForARunningJob) {
  std::atomic<bool> finished{false};
  {
    BackgroundJob job("nd-test-job");
    job.Start([&]() -> Status {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      finished = true;
      return Status::Ok();
    });
  }
  EXPECT_TRUE(finished);
}

}  // namespace
}  // namespace neardup::pipeline::internal
