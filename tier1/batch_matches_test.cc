// BatchMatches (tier1/batch_matches.h): the checks against the classes, the index by page, and
// which resident matches are stale at a page's place in the batch.
#include "tier1/batch_matches.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace neardup::tier1 {
namespace {

using C = Classification;

std::vector<PageUpdate> Batch(const std::vector<std::string>& urls) {
  std::vector<PageUpdate> b;
  for (const std::string& u : urls) {
    PageUpdate p;
    p.url = u;
    b.push_back(p);
  }
  return b;
}

TEST(BatchMatches, IndexesResidentMatchesAndBothSidesOfInBatchPairs) {
  const std::vector<PageUpdate> batch = Batch({"a", "b", "c"});
  const std::vector<C> classes = {C::kTier2, C::kFastPath, C::kTier2};
  Tier2Matches m;
  m.resident.push_back({0, "x", 0.9});
  m.resident.push_back({2, "y", 0.8});
  m.resident.push_back({0, "z", 0.7});
  m.in_batch.push_back({0, 1, 0.95});
  m.in_batch.push_back({2, 0, 0.85});
  auto built = BatchMatches::Build(batch, classes, m);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  const BatchMatches& bm = built.value();
  ASSERT_EQ(bm.resident(0).size(), 2u);
  EXPECT_EQ(bm.resident(0)[0].first, "x");
  EXPECT_EQ(bm.resident(0)[1].first, "z");
  EXPECT_DOUBLE_EQ(bm.resident(0)[1].second, 0.7);
  EXPECT_TRUE(bm.resident(1).empty());
  ASSERT_EQ(bm.resident(2).size(), 1u);
  EXPECT_EQ(bm.resident(2)[0].first, "y");
  ASSERT_EQ(bm.partners(0).size(), 2u);
  EXPECT_EQ(bm.partners(0)[0].first, 1u);
  EXPECT_EQ(bm.partners(0)[1].first, 2u);
  ASSERT_EQ(bm.partners(1).size(), 1u);
  EXPECT_EQ(bm.partners(1)[0].first, 0u);
  EXPECT_DOUBLE_EQ(bm.partners(1)[0].second, 0.95);
  ASSERT_EQ(bm.partners(2).size(), 1u);
  EXPECT_EQ(bm.partners(2)[0].first, 0u);
}

TEST(BatchMatches, ResidentVersionIsStaleAfterTheUrlsRecordInTheBatch) {
  // "r" is replaced at 1 (a redirect), "u" is unchanged (its resident version stays), "s" is
  // superseded at 3 and replaced at its last record, 4.
  const std::vector<PageUpdate> batch = Batch({"p", "r", "u", "s", "s", "q"});
  const std::vector<C> classes = {C::kTier2, C::kRedirect, C::kUnchanged, C::kSuperseded, C::kEmpty, C::kTier2};
  auto built = BatchMatches::Build(batch, classes, Tier2Matches());
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  const BatchMatches& bm = built.value();
  EXPECT_FALSE(bm.Stale("r", 0));
  EXPECT_FALSE(bm.Stale("r", 1));
  EXPECT_TRUE(bm.Stale("r", 2));
  EXPECT_FALSE(bm.Stale("u", 5));
  EXPECT_FALSE(bm.Stale("s", 4));
  EXPECT_TRUE(bm.Stale("s", 5));
  EXPECT_FALSE(bm.Stale("not-in-batch", 5));
}

TEST(BatchMatches, GoneAndFastPathRecordsReplaceTheResidentVersion) {
  std::vector<PageUpdate> batch = Batch({"g", "f", "p"});
  batch[0].gone = true;
  const std::vector<C> classes = {C::kGone, C::kFastPath, C::kTier2};
  auto built = BatchMatches::Build(batch, classes, Tier2Matches());
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  EXPECT_TRUE(built.value().Stale("g", 2));
  EXPECT_TRUE(built.value().Stale("f", 2));
  EXPECT_FALSE(built.value().Stale("f", 1));
}

TEST(BatchMatches, RejectsGoneClassesThatDoNotFitTheRecords) {
  std::vector<PageUpdate> batch = Batch({"a", "b"});
  batch[0].gone = true;
  // Gone but classified otherwise.
  EXPECT_EQ(BatchMatches::Build(batch, std::vector<C>{C::kTier2, C::kTier2}, Tier2Matches()).status().code(),
            StatusCode::kInvalidArgument);
  // Classified gone but not gone.
  EXPECT_EQ(BatchMatches::Build(batch, std::vector<C>{C::kGone, C::kGone}, Tier2Matches()).status().code(),
            StatusCode::kInvalidArgument);
  // A superseded gone record is neither.
  EXPECT_TRUE(BatchMatches::Build(batch, std::vector<C>{C::kSuperseded, C::kTier2}, Tier2Matches()).ok());
}

TEST(BatchMatches, RejectsMatchesForPagesNotSentToTier2) {
  const std::vector<PageUpdate> batch = Batch({"a", "b", "c"});
  const std::vector<C> classes = {C::kTier2, C::kFastPath, C::kUnchanged};
  Tier2Matches resident_of_fast_path;
  resident_of_fast_path.resident.push_back({1, "x", 0.9});
  EXPECT_EQ(BatchMatches::Build(batch, classes, resident_of_fast_path).status().code(), StatusCode::kInvalidArgument);
  Tier2Matches out_of_range;
  out_of_range.resident.push_back({3, "x", 0.9});
  EXPECT_EQ(BatchMatches::Build(batch, classes, out_of_range).status().code(), StatusCode::kInvalidArgument);
  Tier2Matches with_unchanged;
  with_unchanged.in_batch.push_back({0, 2, 0.9});
  EXPECT_EQ(BatchMatches::Build(batch, classes, with_unchanged).status().code(), StatusCode::kInvalidArgument);
  Tier2Matches fast_path_alone;
  fast_path_alone.in_batch.push_back({1, 1, 0.9});
  EXPECT_EQ(BatchMatches::Build(batch, classes, fast_path_alone).status().code(), StatusCode::kInvalidArgument);
  Tier2Matches fine;
  fine.in_batch.push_back({1, 0, 0.9});
  EXPECT_TRUE(BatchMatches::Build(batch, classes, fine).ok());
}

}  // namespace
}  // namespace neardup::tier1
