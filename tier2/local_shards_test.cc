// LocalShards: the shards of a store open in this process (some or all of them), each with its
// staged batch; where shard m lives; the refusals for a shard not served here or out of range.
#include "tier2/local_shards.h"

#include <filesystem>

#include "common/config.h"
#include "tier2/shard_test_util.h"

namespace neardup::tier2 {
namespace {

using shard_test::MakeSig;
using shard_test::Pages;

LocalShardsOptions OptionsFor(const std::string& dir, std::vector<uint32_t> serve) {
  LocalShardsOptions o;
  o.config = DefaultConfig();
  o.config.mutable_tier2()->set_sync(false);
  o.store_dir = dir;
  o.shards = 3;
  o.serve = std::move(serve);
  return o;
}

std::vector<uint64_t> Hashes(uint64_t from) {
  std::vector<uint64_t> h(40);
  for (uint64_t i = 0; i < h.size(); ++i) h[i] = from + i;
  return h;
}

TEST(LocalShards, ShardMLivesInItsOwnDirectory) {
  EXPECT_EQ(ShardDir("/data/store", 7), "/data/store/shard-007");
  EXPECT_EQ(ShardDir("s", 123), "s/shard-123");
}

TEST(LocalShards, OnlyTheShardsServedHereOpenAndAnswer) {
  test::TempDir dir;
  auto shards = LocalShards::Open(OptionsFor(dir.str(), {0, 2}));
  ASSERT_TRUE(shards.ok()) << shards.status().ToString();
  LocalShards& s = **shards;
  EXPECT_EQ(s.size(), 3u);
  EXPECT_TRUE(std::filesystem::exists(ShardDir(dir.str(), 0)));
  EXPECT_FALSE(std::filesystem::exists(ShardDir(dir.str(), 1)));
  EXPECT_TRUE(std::filesystem::exists(ShardDir(dir.str(), 2)));
  EXPECT_EQ(s.Get(1, "http://a/").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.Get(3, "http://a/").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.CommittedBatch(1).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.Stats(1).resident_pages, 0u);  // empty stats, no error
}

TEST(LocalShards, OpenRefusesNoShardsAndAShardOutOfRange) {
  test::TempDir dir;
  LocalShardsOptions none = OptionsFor(dir.str(), {});
  none.shards = 0;
  EXPECT_EQ(LocalShards::Open(none).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(LocalShards::Open(OptionsFor(dir.str(), {0, 3})).status().code(), StatusCode::kInvalidArgument);
}

// Stage keeps the batch; Publish makes it visible; Commit makes it durable with its number, which
// a reopen finds. Apply is both; with nothing staged, Publish and Apply do nothing; Drop forgets.
TEST(LocalShards, ABatchIsStagedPublishedAndCommittedPerShard) {
  test::TempDir dir;
  std::vector<pb::PageSignature> batch = {MakeSig("http://x/1", Hashes(1000)), MakeSig("http://x/2", Hashes(5000))};
  const std::vector<ShardPage> pages = Pages(batch);
  {
    auto shards = LocalShards::Open(OptionsFor(dir.str(), {}));
    ASSERT_TRUE(shards.ok()) << shards.status().ToString();
    LocalShards& s = **shards;
    ASSERT_TRUE(s.Stage(0, pages).ok());
    EXPECT_EQ(s.Get(0, "http://x/1").status().code(), StatusCode::kNotFound);  // staged: not visible
    ASSERT_TRUE(s.Publish(0, {}, 4).ok());
    EXPECT_TRUE(s.Get(0, "http://x/1").ok());
    ASSERT_TRUE(s.Commit(0).ok());
    EXPECT_EQ(*s.CommittedBatch(0), 4u);
    ASSERT_TRUE(s.Apply(0, {}, 5).ok());  // nothing staged: nothing written
    EXPECT_EQ(*s.CommittedBatch(0), 4u);

    ASSERT_TRUE(s.Stage(1, pages).ok());
    s.Drop(1);
    ASSERT_TRUE(s.Apply(1, {}, 6).ok());
    EXPECT_EQ(s.Stats(1).resident_pages, 0u);

    const std::vector<std::string> removed = {"http://x/2"};
    std::vector<pb::PageSignature> next = {MakeSig("http://x/3", Hashes(9000))};
    const std::vector<ShardPage> next_pages = Pages(next);
    ASSERT_TRUE(s.Stage(0, next_pages).ok());
    ASSERT_TRUE(s.Apply(0, removed, 7).ok());
    const std::vector<std::string> urls = {"http://x/1", "http://x/2", "http://x/3"};
    std::vector<std::optional<pb::PageSignature>> got;
    ASSERT_TRUE(s.GetMany(0, urls, &got).ok());
    ASSERT_EQ(got.size(), 3u);
    EXPECT_TRUE(got[0].has_value());
    EXPECT_FALSE(got[1].has_value());
    EXPECT_TRUE(got[2].has_value());
    CompareResult r;
    std::vector<pb::PageSignature> probe = {MakeSig("http://q/", Hashes(1000))};
    ASSERT_TRUE(s.Compare(0, Pages(probe), 0.9, {}, &r).ok());
    ASSERT_EQ(r.resident.size(), 1u);
    EXPECT_EQ(r.resident[0].url, "http://x/1");
  }
  auto reopened = LocalShards::Open(OptionsFor(dir.str(), {0}));
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  EXPECT_EQ(*(*reopened)->CommittedBatch(0), 7u);
  EXPECT_EQ((*reopened)->Stats(0).resident_pages, 2u);
}

}  // namespace
}  // namespace neardup::tier2
