// The signature log as the shard uses it: compaction, huge records.
#include "tier2/shard_test_util.h"

namespace neardup::tier2 {
namespace {

using namespace shard_test;  // NOLINT: the shard tests' helpers
namespace fs = std::filesystem;

// Pages replaced over and over leave dead records in the signature log; the shard compacts it
// into a new generation, stays exact, and reopens on the new generation alone.
TEST(Shard, SignatureLogIsCompactedAndStaysExact) {
  TempDir dir;
  ShardOptions o = Options(dir.str());
  o.log_compact_min_bytes = 1;
  auto all = Corpus(31, 300, {20, 90, 200}, 3, "http://c/");
  std::vector<pb::PageSignature> resident(all.begin(), all.begin() + 260), batch(all.begin() + 260, all.end());
  {
    auto shard = Shard::Open(o);
    ASSERT_TRUE(shard.ok());
    // Three rounds of the same URLs with other content, then the final content.
    for (uint64_t round = 0; round < 3; ++round) {
      auto other = Corpus(100 + round, 260, {30, 120}, 2, "x");
      for (size_t i = 0; i < other.size(); ++i) other[i].set_url(resident[i].url());
      auto pages = Pages(other);
      ASSERT_TRUE((*shard)->Apply(pages, {}).ok());
    }
    auto pages = Pages(resident);
    ASSERT_TRUE((*shard)->Apply(pages, {}).ok());
    const ShardStats st = (*shard)->Stats();
    EXPECT_GE(st.log_compactions, 1u);
    EXPECT_LE(st.log_bytes - st.log_live_bytes, st.log_live_bytes);
    auto b = Pages(batch);
    CompareResult r;
    ASSERT_TRUE((*shard)->CompareBatch(b, 0.6, &r).ok());
    EXPECT_EQ(Found(batch, r), BruteForce(resident, batch, 0.6));
  }
  size_t logs = 0;
  for (const auto& e : fs::directory_iterator(dir.str())) logs += e.path().filename().string().starts_with("sigs-");
  EXPECT_EQ(logs, 1u);
  o.log_compact_min_bytes = 64 << 20;
  auto shard = Shard::Open(o);
  ASSERT_TRUE(shard.ok()) << shard.status().ToString();
  auto b = Pages(batch);
  CompareResult r;
  ASSERT_TRUE((*shard)->CompareBatch(b, 0.6, &r).ok());
  EXPECT_EQ(Found(batch, r), BruteForce(resident, batch, 0.6));
  auto got = (*shard)->Get(resident[5].url());
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->SerializeAsString(), resident[5].SerializeAsString());
}

// A signature record over 16 MiB keeps its length outside the packed in-memory location; reading,
// replacing and reopening it must account for every byte.
TEST(Shard, HugeSignatureRecordIsReadReplacedAndReopened) {
  TempDir dir;
  ShardOptions o = Options(dir.str(), 0.9);
  std::mt19937_64 rng(7);
  std::vector<uint64_t> big(2'200'000);
  for (auto& h : big) h = rng();
  std::vector<uint64_t> near = big;
  near.resize(big.size() - 1000);
  const std::vector<pb::PageSignature> resident = {MakeSig("http://h/big", big), MakeSig("http://h/small", {1, 2, 3})};
  ASSERT_GT(resident[0].ByteSizeLong(), size_t{16} << 20);
  const std::vector<pb::PageSignature> batch = {MakeSig("http://h/near", near)};
  uint64_t live = 0;
  {
    auto shard = Shard::Open(o);
    ASSERT_TRUE(shard.ok());
    auto pages = Pages(resident);
    ASSERT_TRUE((*shard)->Apply(pages, {}).ok());
    auto b = Pages(batch);
    CompareResult r;
    ASSERT_TRUE((*shard)->CompareBatch(b, 0.9, &r).ok());
    EXPECT_EQ(Found(batch, r), BruteForce(resident, batch, 0.9));
    ASSERT_EQ(r.resident.size(), 1u);
    auto got = (*shard)->Get("http://h/big");
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->shingles_size(), resident[0].shingles_size());
    live = (*shard)->Stats().log_live_bytes;
    EXPECT_GT(live, uint64_t{16} << 20);
  }
  auto shard = Shard::Open(o);
  ASSERT_TRUE(shard.ok()) << shard.status().ToString();
  EXPECT_EQ((*shard)->Stats().log_live_bytes, live);
  // Replaced by a small page: the live bytes drop by the huge record's.
  const std::vector<pb::PageSignature> replacement = {MakeSig("http://h/big", {4, 5, 6})};
  auto pages = Pages(replacement);
  ASSERT_TRUE((*shard)->Apply(pages, {}).ok());
  const uint64_t after = (*shard)->Stats().log_live_bytes;
  EXPECT_LT(after, uint64_t{1} << 10);
  auto b = Pages(batch);
  CompareResult r;
  ASSERT_TRUE((*shard)->CompareBatch(b, 0.9, &r).ok());
  EXPECT_TRUE(r.resident.empty());
  shard->reset();
  auto reopened = Shard::Open(o);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ((*reopened)->Stats().log_live_bytes, after);
}

}  // namespace
}  // namespace neardup::tier2
