// Tier1's status queries (tier1/query.cc): every kind of answer, verification against the winner,
// the read-only Query against the recording QueryAndRecord. The harness (World, Page, R, ...) is
// tier1/tier1_test_util.h.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tier1/tier1.h"
#include "tier1/tier1_test_util.h"

namespace neardup::tier1 {
namespace {

// ---- Status queries ----------------------------------------------------------------------------

TEST(Tier1Status, EveryKind) {
  World w;
  EXPECT_EQ(w.Query("http://nobody.com/").status, StatusAnswer::kUnknown);
  EXPECT_EQ(w.Query("http://nobody.com/").group, 0u);
  w.Run({Page("http://w.com/", R(0, 100), 10), Page("http://l.com/", R(2, 102), 1),
         Page("http://s.com/", R(500, 600), 1)});
  w.t1().SetPending({"http://p.com/", "http://l.com/"});
  EXPECT_EQ(w.Query("http://p.com/").status, StatusAnswer::kPending);
  EXPECT_EQ(w.Query("http://l.com/").status, StatusAnswer::kPending);
  w.t1().SetPending({});
  const StatusAnswer win = w.Query("http://w.com/");
  EXPECT_EQ(win.status, StatusAnswer::kWinner);
  EXPECT_EQ(win.group_members, 2u);
  EXPECT_EQ(win.winner_url, "http://w.com/");
  EXPECT_EQ(w.Query("http://s.com/").status, StatusAnswer::kUnique);
  const StatusAnswer dup = w.Query("http://l.com/");
  EXPECT_EQ(dup.status, StatusAnswer::kDuplicate);
  EXPECT_TRUE(dup.verified);
  EXPECT_FALSE(dup.redirect);
  EXPECT_GE(dup.similarity_to_winner, 0.9);
  EXPECT_NEAR(dup.similarity_to_winner, 98.0 / 102.0, 1e-12);
  EXPECT_EQ(dup.winner_url, "http://w.com/");
  EXPECT_EQ(dup.group, w.GroupOf("http://w.com/"));
  // The caller's current content is verified instead of the stored version, and not counted.
  const pb::PageSignature far = Sig("http://l.com/", R(50, 150));
  const StatusAnswer cur = w.Query("http://l.com/", &far);
  EXPECT_EQ(cur.status, StatusAnswer::kUnique);
  EXPECT_TRUE(cur.verified);
  EXPECT_NEAR(cur.similarity_to_winner, 50.0 / 150.0, 1e-12);
  const pb::PageSignature near = Sig("http://l.com/", R(1, 101));
  const StatusAnswer cur2 = w.Query("http://l.com/", &near);
  EXPECT_EQ(cur2.status, StatusAnswer::kDuplicate);
  EXPECT_NEAR(cur2.similarity_to_winner, 99.0 / 101.0, 1e-12);
  EXPECT_TRUE(w.Flush().empty());
  EXPECT_EQ(w.GroupOfUrl("http://w.com/").rejections(), 0u);
  EXPECT_FALSE(w.PageRec("http://l.com/").rejected());
  // The stored version's verification is cached: asking again fetches nothing.
  EXPECT_EQ(w.Query("http://l.com/").status, StatusAnswer::kDuplicate);
  const uint64_t fetches = w.source().fetches;
  EXPECT_EQ(w.Query("http://l.com/").status, StatusAnswer::kDuplicate);
  EXPECT_EQ(w.source().fetches, fetches);
  // A page without words is unique.
  w.Run({Page("http://empty.com/", {})});
  EXPECT_EQ(w.Query("http://empty.com/").status, StatusAnswer::kUnique);
}

// A status answer says how the page's latest record was classified (its route).
TEST(Tier1Status, RouteIsTheLatestRecordsClassification) {
  World w;
  EXPECT_FALSE(w.Query("http://nobody.com/").route.has_value());
  w.Run({Page("http://w.com/", R(0, 100), 10), Page("http://e.com/", {}), Redirect("http://r.com/", "http://w.com/")});
  EXPECT_EQ(w.Query("http://w.com/").route, Classification::kTier2);
  EXPECT_EQ(w.Query("http://e.com/").route, Classification::kEmpty);
  EXPECT_EQ(w.Query("http://r.com/").route, Classification::kRedirect);
  w.Run({Page("http://w.com/", R(0, 100), 10)});  // the same content again
  EXPECT_EQ(w.Query("http://w.com/").route, Classification::kUnchanged);
  w.Run({Page("http://w.com/", R(1, 101), 10)});  // changed, still close to its representative
  EXPECT_EQ(w.Query("http://w.com/").route, Classification::kFastPath);
  EXPECT_EQ(w.PageRec("http://w.com/").route(), static_cast<uint32_t>(Classification::kFastPath) + 1);
}

// Between Classify and Apply (and after a batch that was never applied) queries verify against
// the stored versions, and Tier1 keeps no reference to the caller's batch.
TEST(Tier1Status, ClassifiedButUnappliedBatchIsNotUsed) {
  World w;
  w.Run({Page("http://w.com/", R(0, 100), 10), Page("http://l.com/", R(2, 102), 1)});
  {
    const pb::PageSignature next = Sig("http://w.com/", R(1, 101));
    std::vector<PageUpdate> batch = {Update("http://w.com/", &next, "", kCell, 10)};
    std::vector<Classification> classes;
    ASSERT_TRUE(w.t1().Classify(batch, &classes).ok());
    EXPECT_EQ(classes[0], Classification::kFastPath);
    const StatusAnswer a = w.Query("http://l.com/");
    EXPECT_NEAR(a.similarity_to_winner, 98.0 / 102.0, 1e-12);  // the stored w, not the batch's
    ASSERT_TRUE(w.t1().Flush().ok());
    // The batch is refused, then dropped.
    ApplyOutcome out;
    EXPECT_EQ(w.t1().Apply(batch, {}, Tier2Matches(), nullptr, &out).code(), StatusCode::kInvalidArgument);
  }
  // The cached verification of l is the stored versions'; a query with current content fetches
  // the winner's signature again: the stored one.
  EXPECT_NEAR(w.Query("http://l.com/").similarity_to_winner, 98.0 / 102.0, 1e-12);
  const pb::PageSignature current = Sig("http://l.com/", R(3, 103));
  const StatusAnswer a = w.Query("http://l.com/", &current);
  EXPECT_EQ(a.status, StatusAnswer::kDuplicate);
  EXPECT_NEAR(a.similarity_to_winner, 97.0 / 103.0, 1e-12);
}

TEST(Tier1Status, EmptyPageFormsItsOwnGroup) {
  World w;
  w.Run({Page("http://a.com/", R(0, 100))});
  Result r = w.Run({Page("http://e1.com/", {}), Page("http://e2.com/", {}), Page("http://a.com/", {})});
  EXPECT_EQ(r.classes[0], Classification::kEmpty);
  EXPECT_EQ(r.classes[2], Classification::kEmpty);
  EXPECT_NE(w.GroupOf("http://e1.com/"), w.GroupOf("http://e2.com/"));
  ASSERT_EQ(r.outcome.tier2_removals.size(), 1u);
  EXPECT_EQ(r.outcome.tier2_removals[0].first, "http://a.com/");
  EXPECT_EQ(w.Query("http://a.com/").status, StatusAnswer::kUnique);
}


// ---- Read-only queries -------------------------------------------------------------------------

// A read-only query answers as the recording one does and changes nothing: no verification cached,
// no rejection counted, nothing to repair.
TEST(Tier1Split, ReadOnlyQueryChangesNothing) {
  Tier1Options o;
  o.repair_min_rejections = 1;
  o.repair_rejection_share = 0.1;
  World w(o);
  w.Run({Page("http://q1.com/", R(0, 100), 10), Page("http://q2.com/", R(5, 105), 100),
         Page("http://q3.com/", R(10, 110), 1)});
  w.Run({Page("http://q2.com/", R(7000, 7100), 100)});
  const uint64_t g = w.GroupOf("http://q3.com/");
  for (int i = 0; i < 2; ++i) {
    const StatusAnswer a = w.ReadOnlyQuery("http://q3.com/");
    EXPECT_EQ(a.status, StatusAnswer::kUnique);
    EXPECT_TRUE(a.verified);
    EXPECT_NEAR(a.similarity_to_winner, 90.0 / 110.0, 1e-12);
  }
  EXPECT_TRUE(w.Flush().empty());
  EXPECT_EQ(w.Group(g).rejections(), 0u);
  EXPECT_FALSE(w.PageRec("http://q3.com/").rejected());
  EXPECT_TRUE(w.PageRec("http://q3.com/").verified_winner().empty());
  EXPECT_EQ(w.GroupOf("http://q1.com/"), g);
  // The acknowledgement records it, and the group is repaired.
  EXPECT_EQ(w.Query("http://q3.com/").status, StatusAnswer::kUnique);
  EXPECT_EQ(w.Flush().size(), 1u);
  EXPECT_NE(w.GroupOf("http://q1.com/"), w.GroupOf("http://q3.com/"));
}

}  // namespace
}  // namespace neardup::tier1
