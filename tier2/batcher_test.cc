#include "tier2/batcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace neardup::tier2 {
namespace {

using namespace std::chrono_literals;

struct Recorder {
  std::mutex mu;
  std::vector<std::vector<int>> batches;
  std::vector<BatchClose> why;
  Batcher<int>::Sink sink() {
    return [this](std::vector<int>&& b, BatchClose w) {
      std::lock_guard lock(mu);
      batches.push_back(std::move(b));
      why.push_back(w);
    };
  }
  size_t count() {
    std::lock_guard lock(mu);
    return batches.size();
  }
};

TEST(Batcher, ClosesAtMaxItemsOnTheAddingThread) {
  Recorder rec;
  auto b = Batcher<int>::Create({.max_items = 3, .max_delay = 10s}, rec.sink());
  ASSERT_TRUE(b.ok());
  for (int i = 0; i < 7; ++i) ASSERT_TRUE((*b)->Add(i).ok());
  ASSERT_EQ(rec.count(), 2u);  // delivered before Add returned
  EXPECT_EQ(rec.batches[0], (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(rec.batches[1], (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(rec.why[0], BatchClose::kFull);
  EXPECT_EQ((*b)->pending(), 1u);
  (*b)->Close();
  ASSERT_EQ(rec.count(), 3u);
  EXPECT_EQ(rec.batches[2], std::vector<int>{6});
  EXPECT_EQ(rec.why[2], BatchClose::kFlush);
  EXPECT_EQ((*b)->Add(9).code(), StatusCode::kFailedPrecondition);
}

TEST(Batcher, ClosesAtTheDeadline) {
  Recorder rec;
  auto b = Batcher<int>::Create({.max_items = 1000, .max_delay = 20ms}, rec.sink());
  ASSERT_TRUE(b.ok());
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE((*b)->Add(1).ok());
  ASSERT_TRUE((*b)->Add(2).ok());
  // Bounded wait: the batch must go out by itself.
  for (int i = 0; i < 500 && rec.count() == 0; ++i) std::this_thread::sleep_for(2ms);
  ASSERT_EQ(rec.count(), 1u);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 20ms);
  EXPECT_EQ(rec.batches[0], (std::vector<int>{1, 2}));
  EXPECT_EQ(rec.why[0], BatchClose::kDeadline);
}

TEST(Batcher, ManyProducersLoseNothingAndKeepBatchesBounded) {
  Recorder rec;
  auto b = Batcher<int>::Create({.max_items = 16, .max_delay = 1ms}, rec.sink());
  ASSERT_TRUE(b.ok());
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) ASSERT_TRUE((*b)->Add(t * 100000 + i).ok());
    });
  }
  for (auto& t : ts) t.join();
  (*b)->Close();
  std::vector<int> all;
  for (const auto& batch : rec.batches) {
    EXPECT_LE(batch.size(), 16u);
    EXPECT_FALSE(batch.empty());
    all.insert(all.end(), batch.begin(), batch.end());
  }
  ASSERT_EQ(all.size(), 8000u);
  // Each producer's items arrive in the order it added them.
  std::vector<int> last(4, -1);
  for (int v : all) {
    const int t = v / 100000, i = v % 100000;
    EXPECT_GT(i, last[t]);
    last[t] = i;
  }
}

TEST(Batcher, RefusesBadOptions) {
  Recorder rec;
  EXPECT_EQ(Batcher<int>::Create({.max_items = 0}, rec.sink()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Batcher<int>::Create({.max_items = 1, .max_delay = 0ms}, rec.sink()).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace neardup::tier2
