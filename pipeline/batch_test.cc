// The hand-off between the reading thread and the tiers' thread (pipeline/batch.h).
#include "pipeline/batch.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace neardup::pipeline::internal {
namespace {

std::unique_ptr<Batch> Numbered(uint64_t n) {
  auto b = std::make_unique<Batch>();
  b->number = n;
  return b;
}

TEST(BatchQueueTest, BatchesComeOutInOrderAndAFullQueueHoldsThePusherBack) {
  BatchQueue q(2);
  ASSERT_TRUE(q.Push(Numbered(1)));
  ASSERT_TRUE(q.Push(Numbered(2)));
  EXPECT_TRUE(q.Waiting());
  std::atomic<bool> pushed{false};
  std::thread pusher([&] {
    EXPECT_TRUE(q.Push(Numbered(3)));
    pushed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(pushed);  // two are waiting
  EXPECT_EQ(q.Pop()->number, 1u);
  pusher.join();
  EXPECT_TRUE(pushed);
  EXPECT_EQ(q.Pop()->number, 2u);
  EXPECT_EQ(q.Pop()->number, 3u);
  EXPECT_FALSE(q.Waiting());
}

TEST(BatchQueueTest, PopForTimesOutOnAnEmptyQueue) {
  BatchQueue q(2);
  bool timed_out = false;
  EXPECT_EQ(q.PopFor(std::chrono::milliseconds(10), &timed_out), nullptr);
  EXPECT_TRUE(timed_out);
  ASSERT_TRUE(q.Push(Numbered(5)));
  auto b = q.PopFor(std::chrono::milliseconds(10), &timed_out);
  ASSERT_NE(b, nullptr);
  EXPECT_FALSE(timed_out);
  EXPECT_EQ(b->number, 5u);
}

TEST(BatchQueueTest, CloseRefusesPushesAndDrainsWhatWaits) {
  BatchQueue q(2);
  ASSERT_TRUE(q.Push(Numbered(1)));
  std::thread closer([&] { q.Close(); });
  closer.join();
  EXPECT_TRUE(q.Closed());
  EXPECT_FALSE(q.Push(Numbered(2)));
  EXPECT_EQ(q.Pop()->number, 1u);  // queued before the close
  EXPECT_EQ(q.Pop(), nullptr);
  bool timed_out = true;
  EXPECT_EQ(q.PopFor(std::chrono::seconds(10), &timed_out), nullptr);  // closed: no wait
  EXPECT_FALSE(timed_out);
}

TEST(BatchQueueTest, CloseWakesAWaitingPop) {
  BatchQueue q(1);
  std::thread popper([&] { EXPECT_EQ(q.Pop(), nullptr); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  q.Close();
  popper.join();
}

}  // namespace
}  // namespace neardup::pipeline::internal
