// ShardHealth: the board of each shard's state that /metrics reads, fed by the wrapped shard set.
#include "common/clock.h"
#include "cluster/tier2_client/shard_health.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <thread>

namespace neardup::cluster {
namespace {

using std::chrono::milliseconds;

// A shard set whose shards answer or fail as told, and say how many pages they hold.
class FakeShardSet final : public pipeline::ShardSet {
 public:
  explicit FakeShardSet(uint32_t n) : down(n), resident(n), stats_calls(n) {
    for (uint32_t m = 0; m < n; ++m) down[m] = false, resident[m] = 0, stats_calls[m] = 0;
  }
  uint32_t size() const override { return static_cast<uint32_t>(down.size()); }
  Status Compare(uint32_t m, std::span<const tier2::ShardPage>, double, const tier2::CompareOptions&,
                 tier2::CompareResult*) const override {
    return Answer(m);
  }
  Status Stage(uint32_t m, std::span<const tier2::ShardPage>) override { return Answer(m); }
  void Drop(uint32_t) override {}
  Status Publish(uint32_t m, std::span<const std::string>, uint64_t) override { return Answer(m); }
  Status Apply(uint32_t m, std::span<const std::string>, uint64_t) override { return Answer(m); }
  Status Commit(uint32_t m) override { return Answer(m); }
  StatusOr<uint64_t> CommittedBatch(uint32_t m) const override {
    RETURN_IF_ERROR(Answer(m));
    return uint64_t{7};
  }
  StatusOr<pb::PageSignature> Get(uint32_t m, const std::string& url) const override {
    RETURN_IF_ERROR(Answer(m));
    return NotFound("shard " + std::to_string(m) + " holds no " + url);
  }
  // As a remote set does: a shard that does not answer reads as all zeros.
  tier2::ShardStats Stats(uint32_t m) const override {
    ++stats_calls[m];
    if (on_stats) on_stats();
    tier2::ShardStats s;
    if (down[m] || stats_down) return s;
    s.resident_pages = resident[m];
    s.log_bytes = resident[m] * 100;
    s.index_buckets = 16;
    return s;
  }
  Status Answer(uint32_t m) const {
    return down[m] ? Unavailable("127.0.0.1:7001: connection refused") : Status::Ok();
  }

  std::vector<std::atomic<bool>> down;
  std::vector<std::atomic<uint64_t>> resident;
  mutable std::vector<std::atomic<int>> stats_calls;
  std::atomic<bool> stats_down{false};  // Stats alone does not answer
  std::function<void()> on_stats;       // called by every Stats call
};

struct Opened {
  FakeShardSet* fake = nullptr;
  std::unique_ptr<pipeline::ShardSet> set;
};

Opened Open(ShardHealth& health, uint32_t shards, uint64_t resident_each) {
  Opened o;
  auto opener = health.Observe([&](const pipeline::ShardSetOptions& so) -> StatusOr<std::unique_ptr<pipeline::ShardSet>> {
    auto f = std::make_unique<FakeShardSet>(so.shards);
    for (uint32_t m = 0; m < so.shards; ++m) f->resident[m] = resident_each * (m + 1);
    o.fake = f.get();
    return std::unique_ptr<pipeline::ShardSet>(std::move(f));
  });
  pipeline::ShardSetOptions so;
  so.shards = shards;
  auto set = opener(so);
  EXPECT_TRUE(set.ok());
  if (set.ok()) o.set = std::move(*set);
  return o;
}

TEST(ShardHealth, EmptyUntilASetOpens) {
  ShardHealth health({"127.0.0.1:7000"});
  EXPECT_TRUE(health.Snapshot().empty());
  EXPECT_EQ(ResidentImbalance(health.Snapshot()), 0);
}

// Opening asks every shard for its pages; the shards are named by their server (m % N).
TEST(ShardHealth, OpenAsksEveryShardItsPages) {
  ShardHealth health({"127.0.0.1:7000", "127.0.0.1:7001"});
  Opened o = Open(health, 4, 100);
  const auto s = health.Snapshot();
  ASSERT_EQ(s.size(), 4u);
  for (uint32_t m = 0; m < 4; ++m) {
    EXPECT_EQ(s[m].shard, m);
    EXPECT_EQ(s[m].resident_pages, 100 * (m + 1));
    EXPECT_EQ(s[m].calls, 1u);  // the open
    EXPECT_TRUE(s[m].up);
  }
  EXPECT_EQ(s[0].server, "127.0.0.1:7000");
  EXPECT_EQ(s[3].server, "127.0.0.1:7001");
  EXPECT_DOUBLE_EQ(ResidentImbalance(s), 400.0 * 4 / 1000);
}

// A scrape while a set opens (here: from inside each shard's first Stats call, a network call
// for a remote set) sees every shard of the set: a count taken then is the set's.
TEST(ShardHealth, AScrapeDuringTheOpenSeesEveryShard) {
  ShardHealth health({"127.0.0.1:7000"});
  std::vector<size_t> seen;
  auto opener = health.Observe([&](const pipeline::ShardSetOptions& so) -> StatusOr<std::unique_ptr<pipeline::ShardSet>> {
    auto f = std::make_unique<FakeShardSet>(so.shards);
    f->on_stats = [&] { seen.push_back(health.Snapshot().size()); };
    return std::unique_ptr<pipeline::ShardSet>(std::move(f));
  });
  pipeline::ShardSetOptions so;
  so.shards = 4;
  auto set = opener(so);
  ASSERT_TRUE(set.ok());
  ASSERT_EQ(seen.size(), 4u);
  for (size_t n : seen) EXPECT_EQ(n, 4u);
}

// Every call is recorded: a failure marks the shard down with its error, the next success up;
// NotFound (no such page) is an answer.
TEST(ShardHealth, CallsMarkShardsUpAndDown) {
  ManualClock clock(1'700'000'000'000);
  ShardHealth health({}, &clock);
  Opened o = Open(health, 2, 10);
  EXPECT_EQ(health.Snapshot()[1].last_success_unix, 1.7e9);  // the open
  clock.Advance(2500);
  ASSERT_TRUE(o.set->Stage(0, {}).ok());
  EXPECT_EQ(o.set->Get(1, "http://a.example/").status().code(), StatusCode::kNotFound);
  auto s = health.Snapshot();
  EXPECT_TRUE(s[0].up);
  EXPECT_TRUE(s[1].up);
  EXPECT_EQ(s[1].calls, 2u);
  EXPECT_EQ(s[1].last_success_unix, 1.7e9 + 2.5);  // the clock's time of its last answer
  EXPECT_EQ(s[0].server, "");  // in this process
  o.fake->down[1] = true;
  EXPECT_FALSE(o.set->Compare(1, {}, 0.9, {}, nullptr).ok());
  EXPECT_FALSE(o.set->CommittedBatch(1).ok());
  s = health.Snapshot();
  EXPECT_FALSE(s[1].up);
  EXPECT_EQ(s[1].failures, 2u);
  EXPECT_EQ(s[1].calls, 4u);
  EXPECT_NE(s[1].last_error.find("connection refused"), std::string::npos) << s[1].last_error;
  EXPECT_EQ(s[1].resident_pages, 20u);  // as it last said
  EXPECT_TRUE(s[0].up);
  o.fake->down[1] = false;
  ASSERT_TRUE(o.set->Publish(1, {}, 3).ok());
  EXPECT_TRUE(health.Snapshot()[1].up);
}

// Pages are asked again after each commit (and apply); a shard that does not answer the question
// keeps what it said before.
TEST(ShardHealth, CommitsRefreshResidentPages) {
  ShardHealth health({});
  Opened o = Open(health, 1, 10);
  EXPECT_EQ(o.fake->stats_calls[0], 1);
  o.fake->resident[0] = 50;
  ASSERT_TRUE(o.set->Stage(0, {}).ok());
  ASSERT_TRUE(o.set->Publish(0, {}, 3).ok());
  EXPECT_EQ(o.fake->stats_calls[0], 1);  // not asked before the commit
  EXPECT_EQ(health.Snapshot()[0].resident_pages, 10u);
  ASSERT_TRUE(o.set->Commit(0).ok());
  EXPECT_EQ(o.fake->stats_calls[0], 2);
  EXPECT_EQ(health.Snapshot()[0].resident_pages, 50u);
  o.fake->resident[0] = 60;
  ASSERT_TRUE(o.set->Apply(0, {}, 4).ok());
  EXPECT_EQ(health.Snapshot()[0].resident_pages, 60u);
  // The shard stops answering between a commit and the question that follows it.
  o.fake->stats_down = true;
  ASSERT_TRUE(o.set->Commit(0).ok());
  EXPECT_EQ(o.fake->stats_calls[0], 4);
  EXPECT_EQ(health.Snapshot()[0].resident_pages, 60u);
  // A commit that fails asks nothing.
  o.fake->stats_down = false;
  o.fake->down[0] = true;
  EXPECT_FALSE(o.set->Commit(0).ok());
  EXPECT_EQ(o.fake->stats_calls[0], 4);
}

// The open's answers per shard (RemoteShardSetOptions::on_open) land on the board too.
TEST(ShardHealth, RecordGrowsTheBoard) {
  ShardHealth health({"127.0.0.1:7000", "127.0.0.1:7001"});
  health.Record(3, Unavailable("127.0.0.1:7001: connection refused"));
  health.Record(2, Status::Ok());
  const auto s = health.Snapshot();
  ASSERT_EQ(s.size(), 4u);
  EXPECT_FALSE(s[3].up);
  EXPECT_TRUE(s[2].up);
  EXPECT_EQ(s[0].calls, 0u);
  EXPECT_FALSE(s[0].up);  // never heard from
}

// Many threads calling at once while another reads the board (run under ThreadSanitizer too).
TEST(ShardHealth, ConcurrentCallsAndSnapshots) {
  ShardHealth health({});
  Opened o = Open(health, 4, 10);
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    while (!stop) (void)ResidentImbalance(health.Snapshot());
  });
  std::vector<std::thread> writers;
  for (uint32_t m = 0; m < 4; ++m) {
    writers.emplace_back([&, m] {
      for (int i = 0; i < 500; ++i) (void)(i % 2 ? o.set->Commit(m) : o.set->Compare(m, {}, 0.9, {}, nullptr));
    });
  }
  for (auto& t : writers) t.join();
  stop = true;
  reader.join();
  for (const ShardState& s : health.Snapshot()) EXPECT_EQ(s.calls, 501u);  // and the open
}

}  // namespace
}  // namespace neardup::cluster
