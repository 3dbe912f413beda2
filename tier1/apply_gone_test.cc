// Tier1::Apply (tier1/apply.cc) for gone records (the crawler got 404 or 410): the page leaves its
// group (a new winner, or no group), Tier 2 and the store, and answers unknown; a page that others
// redirect to stays as a placeholder with them; a URL never crawled is left alone; the last record
// of a URL in a batch wins. The harness (World, Page, Redirect, Gone, ...) is
// tier1/tier1_test_util.h; every Run checks the store's invariants (CheckStore).
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

bool Removed(const ApplyOutcome& o, const std::string& url) {
  return std::find(o.tier2_removals.begin(), o.tier2_removals.end(), std::make_pair(url, kCell)) !=
         o.tier2_removals.end();
}

void ExpectUnknown(World& w, const std::string& url) {
  for (const StatusAnswer& a : {w.Query(url), w.ReadOnlyQuery(url)}) {
    EXPECT_EQ(a.status, StatusAnswer::kUnknown) << url;
    EXPECT_FALSE(a.verified) << url;
    EXPECT_TRUE(a.winner_url.empty()) << url;
  }
}

TEST(Tier1Gone, WinnerGoneGivesTheGroupANewWinner) {
  World w;
  const std::string a = "http://a.com/", b = "http://b.com/", c = "http://c.com/";
  w.Run({Page(a, R(0, 100), 1000), Page(b, R(1, 101), 30), Page(c, R(2, 102), 1)});
  const uint64_t g = w.GroupOf(a);
  ASSERT_EQ(w.GroupOf(b), g);
  ASSERT_EQ(w.GroupOf(c), g);
  ASSERT_EQ(w.Group(g).winner(), a);
  EXPECT_EQ(w.Query(b).status, StatusAnswer::kDuplicate);

  Result r = w.Run({Gone(a)});
  ASSERT_EQ(r.classes.size(), 1u);
  EXPECT_EQ(r.classes[0], Classification::kGone);
  EXPECT_EQ(r.tier2_pages, 0u);
  EXPECT_EQ(r.outcome.gone, 1u);
  EXPECT_EQ(r.outcome.gone_unknown, 0u);
  EXPECT_TRUE(Removed(r.outcome, a)) << "its signature leaves Tier 2";
  EXPECT_EQ(r.outcome.tier2_removals.size(), 1u);
  EXPECT_FALSE(w.HasPage(a)) << "its record is deleted";
  const pb::Tier1Group grp = w.Group(g);
  EXPECT_EQ(grp.winner(), b) << "the next best by the winner rules";
  EXPECT_EQ(grp.members(), 2u);
  EXPECT_EQ(w.Members(g), (Urls{b, c}));
  EXPECT_EQ(w.last_check().pages, 2u);
  ExpectUnknown(w, a);
  EXPECT_EQ(w.Query(b).status, StatusAnswer::kWinner);
  const StatusAnswer sc = w.Query(c);
  EXPECT_EQ(sc.status, StatusAnswer::kDuplicate);
  EXPECT_EQ(sc.winner_url, b);
  EXPECT_TRUE(sc.verified);
}

TEST(Tier1Gone, LastMemberGoneRemovesTheGroup) {
  World w;
  w.Run({Page("http://only.com/", R(0, 100), 5), Page("http://other.com/", R(500, 600), 5)});
  const uint64_t g = w.GroupOf("http://only.com/");
  Result r = w.Run({Gone("http://only.com/")});
  EXPECT_EQ(r.outcome.gone, 1u);
  EXPECT_TRUE(Removed(r.outcome, "http://only.com/"));
  pb::Tier1Group grp;
  EXPECT_EQ(w.store().GetGroup(g, &grp).code(), StatusCode::kNotFound);
  EXPECT_TRUE(w.Members(g).empty());
  EXPECT_EQ(w.last_check().groups, 1u);
  EXPECT_EQ(w.last_check().pages, 1u);
  ExpectUnknown(w, "http://only.com/");
  // Every page gone: an empty store.
  w.Run({Gone("http://other.com/")});
  EXPECT_EQ(w.last_check().groups, 0u);
  EXPECT_EQ(w.last_check().pages, 0u);
  EXPECT_EQ(w.last_check().members, 0u);
}

TEST(Tier1Gone, MarketWinnerGoneIsReplaced) {
  World w;
  const std::string ab = "http://abc.co.ab/x", uk = "http://abc.co.uk/x", com = "http://abc.com/xyz";
  w.Run({Page(uk, R(0, 100), 5, "uk"), Page(ab, R(1, 101), 5, ""), Page(com, R(2, 102), 5, "uk")});
  const uint64_t g = w.GroupOf(uk);
  ASSERT_EQ(w.Group(g).market_winners_size(), 1);
  ASSERT_EQ(w.Group(g).market_winners(0).url(), uk);
  w.Run({Gone(uk)});
  const pb::Tier1Group grp = w.Group(g);
  EXPECT_EQ(grp.winner(), ab);
  for (const auto& mw : grp.market_winners()) EXPECT_NE(MarketWinnerUrl(grp, mw), uk);
  const StatusAnswer a = w.Query(com);
  EXPECT_EQ(a.status, StatusAnswer::kDuplicate);
  EXPECT_NE(a.winner_url, uk);
}

TEST(Tier1Gone, ARejectionCountedAgainstTheGroupLeavesWithThePage) {
  Tier1Options o;
  o.repair_min_rejections = 1000;  // no repair: the rejection stays counted
  World w(o);
  // F(A,B), F(B,C), not F(A,C): one group, winner A; C fails verification against A.
  const std::string a = "http://a.com/", b = "http://b.com/", c = "http://c.com/";
  w.Run({Page(a, R(0, 100), 1000), Page(b, R(5, 105), 1), Page(c, R(10, 110), 1)});
  const uint64_t g = w.GroupOf(a);
  ASSERT_EQ(w.GroupOf(c), g);
  EXPECT_EQ(w.Query(c).status, StatusAnswer::kUnique);
  w.Flush();
  ASSERT_EQ(w.Group(g).rejections(), 1u);
  ASSERT_TRUE(w.PageRec(c).rejected());
  w.Run({Gone(c)});
  EXPECT_EQ(w.Group(g).rejections(), 0u);
  EXPECT_EQ(w.Group(g).members(), 2u);
}

TEST(Tier1Gone, UrlWithoutACrawledRecordIsLeftAlone) {
  World w;
  w.Run({Page("http://p.com/", R(0, 100), 1), Redirect("http://r.com/", "http://t.com/")});
  ASSERT_FALSE(w.PageRec("http://t.com/").crawled());  // a placeholder
  const uint64_t gt = w.GroupOf("http://t.com/");
  Result r = w.Run({Gone("http://never.com/"), Gone("http://t.com/")});
  EXPECT_EQ(r.classes, (std::vector<Classification>{Classification::kGone, Classification::kGone}));
  EXPECT_EQ(r.outcome.gone, 0u);
  EXPECT_EQ(r.outcome.gone_unknown, 2u);
  EXPECT_TRUE(r.outcome.tier2_removals.empty());
  EXPECT_FALSE(w.HasPage("http://never.com/"));
  EXPECT_FALSE(w.PageRec("http://t.com/").crawled());
  EXPECT_EQ(w.GroupOf("http://t.com/"), gt);
  EXPECT_EQ(w.GroupOf("http://r.com/"), gt);
  EXPECT_EQ(w.last_check().pages, 3u);
  ExpectUnknown(w, "http://never.com/");
  EXPECT_EQ(w.Query("http://t.com/").status, StatusAnswer::kUnknown);
}

// Within a batch the last record of a URL wins: gone then content is content, content then gone
// is gone.
TEST(Tier1Gone, TheLastRecordOfAUrlInABatchWins) {
  World w;
  w.Run({Page("http://dup.com/", R(0, 100), 1)});
  // A new URL.
  Result r = w.Run({Page("http://x.com/", R(1, 101), 1), Gone("http://x.com/")});
  EXPECT_EQ(r.classes, (std::vector<Classification>{Classification::kSuperseded, Classification::kGone}));
  EXPECT_EQ(r.outcome.gone_unknown, 1u);
  EXPECT_FALSE(w.HasPage("http://x.com/"));
  r = w.Run({Gone("http://x.com/"), Page("http://x.com/", R(1, 101), 1)});
  EXPECT_EQ(r.classes, (std::vector<Classification>{Classification::kSuperseded, Classification::kTier2}));
  EXPECT_EQ(r.outcome.gone + r.outcome.gone_unknown, 0u);
  EXPECT_EQ(w.GroupOf("http://x.com/"), w.GroupOf("http://dup.com/"));
  // A URL the store holds.
  r = w.Run({Gone("http://x.com/"), Page("http://x.com/", R(2, 102), 1)});
  EXPECT_EQ(r.classes[0], Classification::kSuperseded);
  EXPECT_EQ(r.outcome.gone, 0u);
  EXPECT_TRUE(w.HasPage("http://x.com/"));
  EXPECT_EQ(w.GroupOf("http://x.com/"), w.GroupOf("http://dup.com/"));
  r = w.Run({Page("http://x.com/", R(3, 103), 1), Gone("http://x.com/")});
  EXPECT_EQ(r.classes[0], Classification::kSuperseded);
  EXPECT_EQ(r.outcome.gone, 1u);
  EXPECT_TRUE(Removed(r.outcome, "http://x.com/"));
  EXPECT_FALSE(w.HasPage("http://x.com/"));
  EXPECT_EQ(w.Group(w.GroupOf("http://dup.com/")).members(), 1u);
}

// A page that comes back after it was gone is a new page: it joins its duplicates again.
TEST(Tier1Gone, AGonePageThatComesBackIsANewPage) {
  World w;
  w.Run({Page("http://a.com/", R(0, 100), 1), Page("http://b.com/", R(1, 101), 100)});
  w.Run({Gone("http://b.com/")});
  Result r = w.Run({Page("http://b.com/", R(1, 101), 100)});
  EXPECT_EQ(r.classes[0], Classification::kTier2);
  EXPECT_FALSE(r.changed[0]) << "new, not changed";
  const uint64_t g = w.GroupOf("http://a.com/");
  EXPECT_EQ(w.GroupOf("http://b.com/"), g);
  EXPECT_EQ(w.Group(g).winner(), "http://b.com/");
  EXPECT_EQ(w.Query("http://a.com/").status, StatusAnswer::kDuplicate);
}

// Gone pages other pages redirect to: as for a redirect target never crawled (Case 3), a
// placeholder keeps them together; a redirect record that is gone simply leaves.
TEST(Tier1Gone, ARedirectTargetGoneStaysAPlaceholderWithItsRedirects) {
  const std::string q2 = "http://q2.com/", o = "http://o.com/", q1 = "http://q1.com/", q0 = "http://q0.com/";
  World w;
  w.Run({Page(q2, R(0, 100), 100), Page(o, R(1, 101), 5)});
  w.Run({Redirect(q1, q2, 1), Redirect(q0, q1, 1)});  // q0 -> q1 -> q2
  const uint64_t g = w.GroupOf(q2);
  ASSERT_EQ(w.Group(g).members(), 4u);
  ASSERT_EQ(w.Group(g).winner(), q2);

  Result r = w.Run({Gone(q2)});
  EXPECT_EQ(r.outcome.gone, 1u);
  EXPECT_TRUE(Removed(r.outcome, q2));
  EXPECT_EQ(r.outcome.new_groups, 1u);
  ASSERT_TRUE(w.HasPage(q2));
  const pb::Tier1Page placeholder = w.PageRec(q2);
  EXPECT_FALSE(placeholder.crawled());
  EXPECT_FALSE(placeholder.has_signature());
  // The redirect closure left the content group for one of its own; o stays and wins.
  const uint64_t gq = w.GroupOf(q2);
  EXPECT_NE(gq, g);
  EXPECT_EQ(w.GroupOf(q1), gq);
  EXPECT_EQ(w.GroupOf(q0), gq);
  EXPECT_EQ(w.Group(gq).members(), 3u);
  EXPECT_EQ(w.Members(g), (Urls{o}));
  EXPECT_EQ(w.Group(g).winner(), o);
  EXPECT_EQ(w.Query(q2).status, StatusAnswer::kUnknown);
  EXPECT_TRUE(w.Query(q1).redirect);
  EXPECT_EQ(w.Query(o).status, StatusAnswer::kUnique);
  EXPECT_EQ(w.last_check().redirects, 2u);

  // The placeholder's redirects and it are the whole group now: a gone record finds no crawled
  // page (nothing to do), and the redirects leaving one by one leave nothing behind them.
  r = w.Run({Gone(q2)});
  EXPECT_EQ(r.outcome.gone_unknown, 1u);
  r = w.Run({Gone(q1)});  // a redirect gone; q0 redirects to it: q1 becomes a placeholder too
  EXPECT_EQ(r.outcome.gone, 1u);
  EXPECT_EQ(r.outcome.new_groups, 1u);  // {q1, q0} leave {q2, q1, q0}
  EXPECT_FALSE(w.PageRec(q1).crawled());
  EXPECT_EQ(w.GroupOf(q0), w.GroupOf(q1));
  EXPECT_EQ(w.Members(w.GroupOf(q2)), (Urls{q2}));
  EXPECT_EQ(w.last_check().redirects, 1u);
  r = w.Run({Gone(q0)});
  EXPECT_EQ(r.outcome.gone, 1u);
  EXPECT_FALSE(w.HasPage(q0));
  EXPECT_EQ(w.last_check().redirects, 0u);
  EXPECT_EQ(w.Members(w.GroupOf(q1)), (Urls{q1}));
}

TEST(Tier1Gone, ATargetGoneWithAllItsGroupsPagesKeepsTheGroup) {
  World w;
  w.Run({Page("http://t.com/", R(0, 100), 1), Redirect("http://r.com/", "http://t.com/", 50)});
  const uint64_t g = w.GroupOf("http://t.com/");
  ASSERT_EQ(w.Group(g).members(), 2u);
  Result r = w.Run({Gone("http://t.com/")});
  EXPECT_EQ(r.outcome.new_groups, 0u);
  EXPECT_EQ(w.GroupOf("http://t.com/"), g);
  EXPECT_EQ(w.GroupOf("http://r.com/"), g);
  EXPECT_EQ(w.Group(g).members(), 2u);
  EXPECT_FALSE(w.PageRec("http://t.com/").crawled());
  const StatusAnswer a = w.Query("http://r.com/");
  EXPECT_TRUE(a.redirect);
  EXPECT_EQ(a.group, g);
}

TEST(Tier1Gone, ARedirectGoneLeavesItsTargetsGroup) {
  World w;
  w.Run({Page("http://t.com/", R(0, 100), 1), Page("http://o.com/", R(1, 101), 1)});
  w.Run({Redirect("http://r.com/", "http://t.com/", 1e6)});
  const uint64_t g = w.GroupOf("http://t.com/");
  ASSERT_EQ(w.Group(g).members(), 3u);
  Result r = w.Run({Gone("http://r.com/")});
  EXPECT_EQ(r.outcome.gone, 1u);
  EXPECT_TRUE(r.outcome.tier2_removals.empty()) << "a redirect has no signature in Tier 2";
  EXPECT_FALSE(w.HasPage("http://r.com/"));
  EXPECT_EQ(w.Group(g).members(), 2u);
  EXPECT_EQ(w.last_check().redirects, 0u);
  ExpectUnknown(w, "http://r.com/");
}

// In one batch: a redirect to a page gone in that batch finds it gone (a placeholder, as a target
// never crawled); a new page similar to a gone page's old content does not join it.
TEST(Tier1Gone, TheBatchsOtherRecordsDoNotJoinItsGonePages) {
  World w;
  w.Run({Page("http://t.com/", R(0, 100), 1), Page("http://o.com/", R(500, 600), 1)});
  Result r = w.Run({Redirect("http://r.com/", "http://t.com/"), Gone("http://t.com/"),
                    Page("http://n.com/", R(1, 101), 1)});
  EXPECT_EQ(r.classes[1], Classification::kGone);
  EXPECT_EQ(r.classes[2], Classification::kTier2);
  EXPECT_EQ(r.outcome.gone, 1u);
  EXPECT_FALSE(w.PageRec("http://t.com/").crawled());
  EXPECT_EQ(w.GroupOf("http://r.com/"), w.GroupOf("http://t.com/"));
  EXPECT_EQ(w.Group(w.GroupOf("http://t.com/")).members(), 2u);
  EXPECT_EQ(w.Group(w.GroupOf("http://n.com/")).members(), 1u) << "the match with t's old content is stale";
  EXPECT_EQ(w.last_check().groups, 3u);
}

TEST(Tier1Gone, AGoneUpdateWithContentOrARedirectIsRefused) {
  World w;
  const pb::PageSignature sig = Sig("http://a.com/", R(0, 100));
  PageUpdate with_content = Update("http://a.com/", &sig);
  with_content.gone = true;
  PageUpdate with_redirect = Update("http://b.com/", nullptr, "http://c.com/");
  with_redirect.gone = true;
  for (const PageUpdate& u : {with_content, with_redirect}) {
    std::vector<Classification> classes;
    const Status s = w.t1().Classify(std::vector<PageUpdate>{u}, &classes);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("is gone but has content or a redirect"), std::string::npos) << s.ToString();
  }
  // Apply checks that gone records and kGone go together.
  PageUpdate gone;
  gone.url = "http://d.com/";
  gone.gone = true;
  ApplyOutcome outcome;
  const std::vector<PageUpdate> batch{gone};
  const std::vector<Classification> wrong{Classification::kTier2};
  EXPECT_EQ(w.t1().Apply(batch, wrong, Tier2Matches(), nullptr, &outcome).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace neardup::tier1
