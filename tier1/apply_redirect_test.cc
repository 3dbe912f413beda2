// Tier1::Apply (tier1/apply.cc) for redirects: Case 3 (q1 -> q2 -> ... -> qt), placeholders for
// targets never crawled, pages turning into redirects and back, cycles. The harness (World,
// Page, Redirect, ...) is tier1/tier1_test_util.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tier1/tier1.h"
#include "tier1/tier1_test_util.h"

namespace neardup::tier1 {
namespace {

// ---- Case 3 ------------------------------------------------------------------------------------

TEST(Tier1Case3, RedirectJoinsTargetGroup) {
  World w;
  w.Run({Page("http://q2.com/", R(0, 100), 1), Page("http://o.com/", R(1, 101), 5)});
  const uint64_t g = w.GroupOf("http://q2.com/");
  Result r = w.Run({Redirect("http://q1.com/", "http://q2.com/", 1e6)});
  EXPECT_EQ(r.classes[0], Classification::kRedirect);
  EXPECT_EQ(w.GroupOf("http://q1.com/"), g);
  EXPECT_EQ(w.Group(g).members(), 3u);
  EXPECT_EQ(w.Group(g).winner(), "http://o.com/");
  const StatusAnswer a = w.Query("http://q1.com/");
  EXPECT_EQ(a.status, StatusAnswer::kDuplicate);
  EXPECT_TRUE(a.redirect);
  EXPECT_TRUE(a.verified);
  EXPECT_EQ(a.group, g);
  EXPECT_EQ(a.winner_url, "http://o.com/");
  EXPECT_EQ(w.last_check().redirects, 1u);
}

TEST(Tier1Case3, MultiLevelChainJoinsTheContentPagesGroup) {
  // The chain arriving in every order, in one batch or one record per batch.
  const In c3 = Page("http://q3.com/", R(0, 100), 1);
  const In r2 = Redirect("http://q2.com/", "http://q3.com/", 50);
  const In r1 = Redirect("http://q1.com/", "http://q2.com/", 100);
  std::vector<In> recs = {c3, r2, r1};
  std::sort(recs.begin(), recs.end(), [](const In& a, const In& b) { return a.url < b.url; });
  do {
    for (bool one_batch : {true, false}) {
      SCOPED_TRACE(recs[0].url + " " + recs[1].url + " " + recs[2].url + (one_batch ? " one batch" : " three batches"));
      World w;
      w.Run({Page("http://x.com/", R(1, 101), 0)});  // q3 has a duplicate
      if (one_batch) {
        w.Run(recs);
      } else {
        for (const In& in : recs) w.Run({in});
      }
      const uint64_t g = w.GroupOf("http://q3.com/");
      EXPECT_EQ(w.GroupOf("http://x.com/"), g);
      EXPECT_EQ(w.GroupOf("http://q2.com/"), g);
      EXPECT_EQ(w.GroupOf("http://q1.com/"), g);
      EXPECT_EQ(w.Group(g).members(), 4u);
      EXPECT_EQ(w.Group(g).winner(), "http://q3.com/");
      EXPECT_EQ(w.last_check().groups, 1u);
      EXPECT_TRUE(w.Query("http://q1.com/").redirect);
    }
  } while (std::next_permutation(recs.begin(), recs.end(), [](const In& a, const In& b) { return a.url < b.url; }));
}

TEST(Tier1Case3, PlaceholderTargetLaterCrawledMovesWithItsRedirects) {
  for (bool match : {true, false}) {
    SCOPED_TRACE(match ? "target matches a group" : "target unique");
    World w;
    w.Run({Page("http://p.com/", R(0, 100), 1), Page("http://p2.com/", R(2, 102), 1)});
    const uint64_t gp = w.GroupOf("http://p.com/");
    Result r = w.Run({Redirect("http://r.com/", "http://t.com/")});
    EXPECT_EQ(r.outcome.new_groups, 1u);
    ASSERT_TRUE(w.HasPage("http://t.com/"));
    EXPECT_FALSE(w.PageRec("http://t.com/").crawled());
    const uint64_t gt = w.GroupOf("http://t.com/");
    EXPECT_NE(gt, 0u);
    EXPECT_EQ(w.GroupOf("http://r.com/"), gt);
    StatusAnswer a = w.Query("http://t.com/");
    EXPECT_EQ(a.status, StatusAnswer::kUnknown);
    EXPECT_EQ(a.group, gt);
    // The redirect is a duplicate by redirection, not the winner of anything.
    a = w.Query("http://r.com/");
    EXPECT_EQ(a.status, StatusAnswer::kDuplicate);
    EXPECT_TRUE(a.redirect);
    EXPECT_EQ(a.group, gt);
    // A second redirect to it, through a chain.
    w.Run({Redirect("http://r0.com/", "http://r.com/")});
    EXPECT_EQ(w.GroupOf("http://r0.com/"), gt);
    // The target is crawled.
    r = w.Run({Page("http://t.com/", match ? R(1, 101) : R(9000, 9100), 1)});
    EXPECT_EQ(r.classes[0], Classification::kTier2);
    EXPECT_FALSE(r.changed[0]);
    const uint64_t g = w.GroupOf("http://t.com/");
    EXPECT_EQ(g, match ? gp : gt);
    EXPECT_EQ(w.GroupOf("http://r.com/"), g);
    EXPECT_EQ(w.GroupOf("http://r0.com/"), g);
    EXPECT_EQ(w.Group(g).members(), match ? 5u : 3u);
    if (match) {
      pb::Tier1Group gone;
      EXPECT_EQ(w.store().GetGroup(gt, &gone).code(), StatusCode::kNotFound);
      EXPECT_EQ(w.Group(g).winner(), "http://p.com/");
    } else {
      EXPECT_EQ(w.Group(g).winner(), "http://t.com/");
    }
    a = w.Query("http://t.com/");
    EXPECT_EQ(a.status, match ? StatusAnswer::kDuplicate : StatusAnswer::kWinner);
    EXPECT_EQ(w.Query("http://r0.com/").status, StatusAnswer::kDuplicate);
  }
}

TEST(Tier1Case3, ContentPageTurningIntoRedirectLeavesItsGroup) {
  World w;
  w.Run({Page("http://c.com/", R(0, 100), 100), Page("http://d.com/", R(1, 101), 1),
         Page("http://e.com/", R(5000, 5100), 1)});
  w.Run({Redirect("http://rc.com/", "http://c.com/")});
  const uint64_t gc = w.GroupOf("http://c.com/"), ge = w.GroupOf("http://e.com/");
  ASSERT_EQ(w.Group(gc).winner(), "http://c.com/");
  Result r = w.Run({Redirect("http://c.com/", "http://e.com/", 100)});
  EXPECT_EQ(r.classes[0], Classification::kRedirect);
  ASSERT_EQ(r.outcome.tier2_removals.size(), 1u);
  EXPECT_EQ(r.outcome.tier2_removals[0], std::make_pair(std::string("http://c.com/"), kCell));
  EXPECT_EQ(r.outcome.moves, 1u);
  EXPECT_EQ(w.GroupOf("http://c.com/"), ge);
  EXPECT_EQ(w.GroupOf("http://rc.com/"), ge);  // its redirect follows it
  EXPECT_EQ(w.Members(gc), (Urls{"http://d.com/"}));
  EXPECT_EQ(w.Group(gc).winner(), "http://d.com/");
  EXPECT_EQ(w.Group(ge).winner(), "http://e.com/");
  EXPECT_EQ(w.Group(ge).members(), 3u);
  EXPECT_FALSE(w.PageRec("http://c.com/").has_signature());
  // It turns back into content: it leaves e's group (its redirect index entry goes too).
  r = w.Run({Page("http://c.com/", R(2, 102), 100)});
  EXPECT_EQ(r.classes[0], Classification::kTier2);
  EXPECT_FALSE(r.changed[0]);
  EXPECT_EQ(w.GroupOf("http://c.com/"), gc);
  EXPECT_EQ(w.GroupOf("http://rc.com/"), gc);
  EXPECT_EQ(w.Group(gc).winner(), "http://c.com/");
  EXPECT_EQ(w.Members(ge), (Urls{"http://e.com/"}));
}

TEST(Tier1Case3, RedirectCycleIsCountedAndTerminates) {
  for (bool one_batch : {true, false}) {
    SCOPED_TRACE(one_batch ? "one batch" : "two batches");
    World w;
    Result r;
    if (one_batch) {
      r = w.Run({Redirect("http://a.com/", "http://b.com/"), Redirect("http://b.com/", "http://a.com/")});
    } else {
      w.Run({Redirect("http://a.com/", "http://b.com/")});
      r = w.Run({Redirect("http://b.com/", "http://a.com/")});
    }
    EXPECT_EQ(r.outcome.redirect_cycles, 1u);
    EXPECT_EQ(w.GroupOf("http://a.com/"), w.GroupOf("http://b.com/"));
    EXPECT_EQ(w.last_check().redirect_cycles, 1u);
    EXPECT_EQ(w.last_check().groups, 1u);
    // A page redirecting into the cycle joins it; a content page breaks it.
    r = w.Run({Redirect("http://c.com/", "http://a.com/")});
    EXPECT_EQ(r.outcome.redirect_cycles, 1u);
    EXPECT_EQ(w.GroupOf("http://c.com/"), w.GroupOf("http://a.com/"));
    r = w.Run({Page("http://b.com/", R(0, 100))});
    EXPECT_EQ(w.last_check().redirect_cycles, 0u);
    const uint64_t g = w.GroupOf("http://b.com/");
    EXPECT_EQ(w.GroupOf("http://a.com/"), g);
    EXPECT_EQ(w.GroupOf("http://c.com/"), g);
    EXPECT_EQ(w.Group(g).winner(), "http://b.com/");
  }
}

TEST(Tier1Case3, RedirectChangingTargetMovesWithItsRedirects) {
  World w;
  w.Run({Page("http://b.com/", R(0, 100)), Page("http://c.com/", R(500, 600))});
  w.Run({Redirect("http://a.com/", "http://b.com/"), Redirect("http://a0.com/", "http://a.com/")});
  EXPECT_EQ(w.GroupOf("http://a0.com/"), w.GroupOf("http://b.com/"));
  Result r = w.Run({Redirect("http://a.com/", "http://c.com/")});
  EXPECT_TRUE(r.outcome.tier2_removals.empty());
  EXPECT_EQ(w.GroupOf("http://a.com/"), w.GroupOf("http://c.com/"));
  EXPECT_EQ(w.GroupOf("http://a0.com/"), w.GroupOf("http://c.com/"));
  EXPECT_EQ(w.MembersOf("http://b.com/"), (Urls{"http://b.com/"}));
  EXPECT_EQ(w.last_check().redirects, 2u);
}

TEST(Tier1Case3, SelfRedirectIsACycle) {
  for (bool existed : {false, true}) {
    SCOPED_TRACE(existed ? "page had content" : "new page");
    World w;
    if (existed) w.Run({Page("http://a.com/", R(0, 100)), Page("http://b.com/", R(1, 101))});
    Result r = w.Run({Redirect("http://a.com/", "http://a.com/")});
    EXPECT_EQ(r.outcome.redirect_cycles, 1u);
    EXPECT_NE(w.GroupOf("http://a.com/"), 0u);
    EXPECT_EQ(w.last_check().redirect_cycles, 1u);
    EXPECT_EQ(w.Query("http://a.com/").status, StatusAnswer::kDuplicate);
    if (existed) {
      EXPECT_EQ(r.outcome.tier2_removals.size(), 1u);
      EXPECT_EQ(w.GroupOfUrl("http://b.com/").winner(), "http://b.com/");
    }
  }
}

}  // namespace
}  // namespace neardup::tier1
