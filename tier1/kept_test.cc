// Tier1's kept sets (tier1/kept.cc): inside a transitive group, the pages the crawler keeps are no
// two near-duplicates, and every dropped page names a kept one it is a near-duplicate of. The
// harness (World, Page, R, ...) is tier1/tier1_test_util.h; its CheckStore after every batch
// recomputes the similarities from the signatures.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tier1/tier1.h"
#include "tier1/tier1_test_util.h"

namespace neardup::tier1 {
namespace {

// Versions of one manual page, each close to the next only (threshold 0.9: sets of 100 overlapping
// in 95 are similar, in 90 not): v1 ~ v2 ~ v3 ~ v4, and v1, v3 not similar, nor v2, v4.
const std::string v1 = "http://docs.com/v1/page", v2 = "http://docs.com/v2/page", v3 = "http://docs.com/v3/page",
                  v4 = "http://docs.com/v4/page";

// The chain, one version per batch, v1 the most popular (the winner).
void Chain(World& w) {
  w.Run({Page(v1, R(0, 100), 40)});
  w.Run({Page(v2, R(5, 105), 30)});
  w.Run({Page(v3, R(10, 110), 20)});
  w.Run({Page(v4, R(15, 115), 10)});
}

int64_t Counter(World& w, const char* name) { return w.store().rows().Counter(name); }

TEST(Tier1Kept, ChainKeepsNoTwoNearDuplicates) {
  World w;
  Chain(w);
  ASSERT_EQ(w.GroupOf(v1), w.GroupOf(v4));  // one transitive group
  const pb::Tier1Group g = w.GroupOfUrl(v1);
  EXPECT_TRUE(g.kept_set());
  EXPECT_EQ(std::vector<std::string>(g.kept().begin(), g.kept().end()), (std::vector<std::string>{v1, v3}));
  EXPECT_EQ(w.Query(v1).status, StatusAnswer::kWinner);
  const StatusAnswer a2 = w.Query(v2);
  EXPECT_EQ(a2.status, StatusAnswer::kDuplicate);
  EXPECT_EQ(a2.duplicate_of, v1);
  EXPECT_NEAR(a2.similarity_to_duplicate_of, 95.0 / 105.0, 1e-12);
  // v3 is below the threshold from the winner and from every other kept page: kept.
  const StatusAnswer a3 = w.Query(v3);
  EXPECT_EQ(a3.status, StatusAnswer::kUnique);
  EXPECT_TRUE(a3.duplicate_of.empty());
  EXPECT_EQ(a3.winner_url, v1);
  // v4 is below the threshold from the winner too, but a near-duplicate of v3, which is kept.
  const StatusAnswer a4 = w.Query(v4);
  EXPECT_EQ(a4.status, StatusAnswer::kDuplicate);
  EXPECT_EQ(a4.duplicate_of, v3);
  EXPECT_NEAR(a4.similarity_to_duplicate_of, 95.0 / 105.0, 1e-12);
  EXPECT_LT(a4.similarity_to_winner, 0.9);
  // Rejections still count verifications against the winner (what repairs act on).
  w.Flush();
  EXPECT_EQ(w.last_check().kept, 2u);
  EXPECT_EQ(w.last_check().dropped, 2u);
  EXPECT_EQ(w.last_check().kept_sets, 1u);
  // The read-only question answers the same.
  EXPECT_EQ(w.ReadOnlyQuery(v4).duplicate_of, v3);
}

TEST(Tier1Kept, OneBatchIsTheGreedyInWinnerOrder) {
  World w;
  // Arriving in reverse order within a batch changes nothing: decided in rank order.
  w.Run({Page(v4, R(15, 115), 10), Page(v3, R(10, 110), 20), Page(v2, R(5, 105), 30), Page(v1, R(0, 100), 40)});
  const pb::Tier1Group g = w.GroupOfUrl(v1);
  EXPECT_EQ(std::vector<std::string>(g.kept().begin(), g.kept().end()), (std::vector<std::string>{v1, v3}));
  EXPECT_EQ(w.Query(v4).duplicate_of, v3);
  EXPECT_EQ(w.Query(v2).duplicate_of, v1);
}

TEST(Tier1Kept, AJoinDecidesOnlyTheNewPage) {
  World w;
  Chain(w);
  const int64_t decisions = Counter(w, "kept_decisions");
  const int64_t scans = Counter(w, "kept_scans");
  // v5 is a near-duplicate of v4 (dropped) only: it joins and is kept.
  const std::string v5 = "http://docs.com/v5/page";
  w.Run({Page(v5, R(20, 120), 5)});
  EXPECT_EQ(w.GroupOf(v5), w.GroupOf(v1));
  EXPECT_EQ(Counter(w, "kept_decisions") - decisions, 1);
  EXPECT_EQ(Counter(w, "kept_scans") - scans, 0);  // no member list read
  EXPECT_EQ(w.Query(v5).status, StatusAnswer::kUnique);
  // v6, close to v5, is dropped to it.
  const std::string v6 = "http://docs.com/v6/page";
  w.Run({Page(v6, R(21, 121), 1)});
  EXPECT_EQ(w.Query(v6).duplicate_of, v5);
  EXPECT_EQ(Counter(w, "kept_decisions") - decisions, 2);
}

TEST(Tier1Kept, AKeptPageThatChangesHasItsDuplicatesDecidedAgain) {
  World w;
  Chain(w);
  // v3 changes: still a near-duplicate of v2 (it stays in the group), no longer of v4.
  w.Run({Page(v3, R(8, 108), 20)});
  ASSERT_EQ(w.GroupOf(v3), w.GroupOf(v1));
  EXPECT_EQ(w.Query(v3).status, StatusAnswer::kUnique);
  // v4 pointed at v3: nothing kept is close to it now, so it is kept.
  const StatusAnswer a4 = w.Query(v4);
  EXPECT_EQ(a4.status, StatusAnswer::kUnique);
  EXPECT_TRUE(w.PageRec(v4).kept());
  EXPECT_EQ(w.last_check().kept, 3u);
}

TEST(Tier1Kept, AKeptPageThatLeavesHasItsDuplicatesDecidedAgain) {
  World w;
  Chain(w);
  // v3 changes beyond everything: it leaves for a group of its own (Case 1); v4, dropped to it,
  // stays behind and is kept.
  w.Run({Page(v3, R(500, 600), 20)});
  EXPECT_NE(w.GroupOf(v3), w.GroupOf(v1));
  EXPECT_EQ(w.Query(v3).status, StatusAnswer::kUnique);
  EXPECT_EQ(w.Query(v4).status, StatusAnswer::kUnique);
  EXPECT_EQ(w.Query(v2).duplicate_of, v1);
  // Gone: v1, the winner, leaves; v2 wins and is kept, v4 stays kept.
  w.Run({Gone(v1)});
  EXPECT_EQ(w.Query(v2).status, StatusAnswer::kWinner);
  EXPECT_EQ(w.Query(v4).status, StatusAnswer::kUnique);
}

TEST(Tier1Kept, ANewWinnerDisplacesTheKeptPagesCloseToIt) {
  World w;
  Chain(w);
  // v0 is close to v3 and v4, and the most popular: it wins; v3 is dropped to it, and v4 (which
  // pointed at v3) is decided again.
  const std::string v0 = "http://docs.com/v0/page";
  w.Run({Page(v0, R(12, 112), 100)});
  ASSERT_EQ(w.GroupOfUrl(v1).winner(), v0);
  EXPECT_EQ(w.Query(v0).status, StatusAnswer::kWinner);
  EXPECT_EQ(w.Query(v3).duplicate_of, v0);
  EXPECT_EQ(w.Query(v4).duplicate_of, v0);
  EXPECT_EQ(w.Query(v1).status, StatusAnswer::kUnique);
  EXPECT_EQ(w.Query(v2).duplicate_of, v1);
  const pb::Tier1Group g = w.GroupOfUrl(v1);
  EXPECT_EQ(std::vector<std::string>(g.kept().begin(), g.kept().end()), (std::vector<std::string>{v0, v1}));
}

TEST(Tier1Kept, MergedGroupsKeepTheirDroppedPages) {
  World w;
  const std::string a1 = "http://a.com/1", a2 = "http://a.com/2", b1 = "http://b.com/1", b2 = "http://b.com/2";
  w.Run({Page(a1, R(0, 100), 50), Page(a2, R(1, 101), 5)});       // a1 wins, a2 dropped
  w.Run({Page(b1, R(11, 111), 40), Page(b2, R(12, 112), 4)});     // b1 wins, b2 dropped
  ASSERT_NE(w.GroupOf(a1), w.GroupOf(b1));
  const int64_t decisions = Counter(w, "kept_decisions");
  // A bridge close to a2 and b1 merges them.
  const std::string bridge = "http://bridge.com/";
  w.Run({Page(bridge, R(6, 106), 1)});
  ASSERT_EQ(w.GroupOf(a1), w.GroupOf(b1));
  // Decided again: the bridge and the merged group's kept page, not its dropped one.
  EXPECT_LE(Counter(w, "kept_decisions") - decisions, 2);
  EXPECT_EQ(w.Query(a2).duplicate_of, a1);
  EXPECT_EQ(w.Query(b2).duplicate_of, b1);
  EXPECT_EQ(w.Query(b1).status, StatusAnswer::kUnique);  // far from a1
  EXPECT_EQ(w.Query(bridge).duplicate_of, b1);
}

TEST(Tier1Kept, AFailedBatchLeavesTheKeptSetsAsCommitted) {
  World w;
  Chain(w);
  // The batch fails while its kept set is updated (v3's signature cannot be read): nothing of it
  // is committed; after a restart the store is as before, and the batch applies again.
  const std::string v5 = "http://docs.com/v5/page";
  w.source().fail_url = v3;
  std::vector<PageUpdate> batch{Update(v5, nullptr)};
  const pb::PageSignature s5 = Sig(v5, R(20, 120));
  batch[0].signature = &s5;
  std::vector<Classification> classes;
  ASSERT_TRUE(w.t1().Classify(batch, &classes).ok());
  Tier2Matches m;
  m.resident.push_back({0, v4, J(s5, w.source().sigs.at(v4))});
  ApplyOutcome out;
  const Status s = w.t1().Apply(batch, classes, m, nullptr, &out);
  EXPECT_EQ(s.code(), StatusCode::kIoError) << s.ToString();
  w.source().fail_url.clear();
  w.Reopen();
  EXPECT_FALSE(w.HasPage(v5));
  w.Check();
  EXPECT_EQ(w.Query(v4).duplicate_of, v3);
  w.Run({Page(v5, R(20, 120), 5)});
  EXPECT_EQ(w.Query(v5).status, StatusAnswer::kUnique);
  // Kept sets are in the store: a restart answers the same.
  w.Reopen();
  EXPECT_EQ(w.Query(v4).duplicate_of, v3);
  EXPECT_EQ(w.Query(v5).status, StatusAnswer::kUnique);
  w.Check();
}

TEST(Tier1Kept, GroupsOverTheBoundKeepNone) {
  Tier1Options o;
  o.kept_max_members = 3;
  World w(o);
  Chain(w);
  const pb::Tier1Group g = w.GroupOfUrl(v1);
  EXPECT_FALSE(g.kept_set());
  EXPECT_EQ(g.kept_size(), 0);
  // The winner verification alone: v4 is unique (the redundancy kept sets remove).
  EXPECT_EQ(w.Query(v4).status, StatusAnswer::kUnique);
  const StatusAnswer a2 = w.Query(v2);
  EXPECT_EQ(a2.status, StatusAnswer::kDuplicate);
  EXPECT_EQ(a2.duplicate_of, v1);
  // Back under the bound (v4 leaves): recomputed whole.
  w.Run({Gone(v4)});
  const pb::Tier1Group g2 = w.GroupOfUrl(v1);
  EXPECT_TRUE(g2.kept_set());
  EXPECT_EQ(std::vector<std::string>(g2.kept().begin(), g2.kept().end()), (std::vector<std::string>{v1, v3}));
}

TEST(Tier1Kept, ARepairRecomputesItsParts) {
  Tier1Options o;
  o.repair_min_rejections = 1;
  o.repair_rejection_share = 0.1;
  World w(o);
  Chain(w);
  // v2 leaves the chain's middle: v1 and {v3, v4} are no longer connected; the rejections of v3
  // and v4 against the winner repair the group, which splits.
  w.Run({Page(v2, R(700, 800), 30)});
  for (const std::string& u : {v1, v3, v4}) w.Query(u);
  const std::vector<RepairReport> repairs = w.Flush();
  ASSERT_FALSE(repairs.empty());
  EXPECT_NE(w.GroupOf(v3), w.GroupOf(v1));
  EXPECT_EQ(w.GroupOf(v3), w.GroupOf(v4));
  EXPECT_EQ(w.Query(v3).status, StatusAnswer::kWinner);
  EXPECT_EQ(w.Query(v4).duplicate_of, v3);
  EXPECT_TRUE(w.GroupOfUrl(v3).kept_set());
}

}  // namespace
}  // namespace neardup::tier1
