// Tier1::Apply (tier1/apply.cc) for content pages: Case 2 (new pages), transitive merges, Case 1
// (changed pages), and the batch as a whole (superseded records, bad input, what it owes Tier 2,
// the progress committed with it). Case 3 is in apply_redirect_test.cc, the winners in
// apply_winner_test.cc; the harness (World, Page, R, ...) is tier1/tier1_test_util.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tier1/tier1.h"
#include "tier1/tier1_test_util.h"

namespace neardup::tier1 {
namespace {

// ---- Case 2 ------------------------------------------------------------------------------------

TEST(Tier1Case2, NewUniquePageFormsSingleton) {
  World w;
  Result r = w.Run({Page("http://a.com/", R(0, 100))});
  EXPECT_EQ(r.classes[0], Classification::kTier2);
  EXPECT_FALSE(r.changed[0]);
  EXPECT_EQ(r.outcome.new_groups, 1u);
  const pb::Tier1Group g = w.GroupOfUrl("http://a.com/");
  EXPECT_EQ(g.members(), 1u);
  EXPECT_EQ(g.winner(), "http://a.com/");
  StatusAnswer a = w.Query("http://a.com/");
  EXPECT_EQ(a.status, StatusAnswer::kUnique);
  EXPECT_EQ(a.group_members, 1u);
  EXPECT_EQ(a.winner_url, "http://a.com/");
  // A second page not similar to it forms its own group.
  w.Run({Page("http://b.com/", R(500, 600))});
  EXPECT_NE(w.GroupOf("http://a.com/"), w.GroupOf("http://b.com/"));
  EXPECT_EQ(w.Query("http://b.com/").status, StatusAnswer::kUnique);
}

TEST(Tier1Case2, DuplicateJoinsGroupAndPopularityDecides) {
  World w;
  w.Run({Page("http://a.com/x", R(0, 100), 1)});
  // The duplicate is far more popular: it joins a's group and wins it.
  Result r = w.Run({Page("http://b.com/long/path?id=3", R(2, 102), 100)});
  EXPECT_EQ(r.outcome.new_groups, 0u);
  EXPECT_EQ(w.GroupOf("http://a.com/x"), w.GroupOf("http://b.com/long/path?id=3"));
  const pb::Tier1Group g = w.GroupOfUrl("http://a.com/x");
  EXPECT_EQ(g.members(), 2u);
  EXPECT_EQ(g.winner(), "http://b.com/long/path?id=3");
  EXPECT_EQ(w.Query("http://b.com/long/path?id=3").status, StatusAnswer::kWinner);
  StatusAnswer a = w.Query("http://a.com/x");
  EXPECT_EQ(a.status, StatusAnswer::kDuplicate);
  EXPECT_EQ(a.winner_url, "http://b.com/long/path?id=3");
  EXPECT_TRUE(a.verified);
  EXPECT_NEAR(a.similarity_to_winner, 98.0 / 102.0, 1e-12);
}

// Without hysteresis: with it, a page keeps the group it won against later pages of its bucket.
TEST(Tier1Case2, SamePopularityStaticThenShorterDecides) {
  Tier1Options o;
  o.rules.hysteresis_buckets = 0;
  World w(o);
  // Same popularity bucket: the static URL beats the dynamic one although it is longer.
  w.Run({Page("http://a.com/p?id=1", R(0, 100), 10)});
  w.Run({Page("http://a.com/a/much/longer/static/path", R(1, 101), 10)});
  EXPECT_EQ(w.GroupOfUrl("http://a.com/p?id=1").winner(), "http://a.com/a/much/longer/static/path");
  // Both static, same popularity: the shorter wins.
  w.Run({Page("http://a.com/short", R(2, 102), 10)});
  const pb::Tier1Group g = w.GroupOfUrl("http://a.com/p?id=1");
  EXPECT_EQ(g.members(), 3u);
  EXPECT_EQ(g.winner(), "http://a.com/short");
  // Arrival order does not matter: the same pages in reverse order give the same winner.
  World v(o);
  v.Run({Page("http://a.com/short", R(2, 102), 10)});
  v.Run({Page("http://a.com/a/much/longer/static/path", R(1, 101), 10)});
  v.Run({Page("http://a.com/p?id=1", R(0, 100), 10)});
  EXPECT_EQ(v.GroupOfUrl("http://a.com/p?id=1").winner(), "http://a.com/short");
  // With the default margin the dynamic page, the winner first, keeps the group; arriving in one
  // batch (no incumbent), the static page wins.
  World h;
  h.Run({Page("http://a.com/p?id=1", R(0, 100), 10)});
  h.Run({Page("http://a.com/a/much/longer/static/path", R(1, 101), 10)});
  EXPECT_EQ(h.GroupOfUrl("http://a.com/p?id=1").winner(), "http://a.com/p?id=1");
  World n;
  n.Run({Page("http://a.com/p?id=1", R(0, 100), 10), Page("http://a.com/a/much/longer/static/path", R(1, 101), 10)});
  EXPECT_EQ(n.GroupOfUrl("http://a.com/p?id=1").winner(), "http://a.com/a/much/longer/static/path");
}

TEST(Tier1Case2, InBatchDuplicatesAndRedirects) {
  World w;
  // Two new duplicates in one batch, and a redirect to one of them (the redirect is the most
  // popular and shortest, but a redirect cannot win).
  Result r = w.Run({Page("http://a.com/page", R(0, 100), 5), Page("http://b.com/page", R(3, 103), 1),
                    Redirect("http://r.com/", "http://b.com/page", 1000)});
  EXPECT_EQ(r.classes[0], Classification::kTier2);
  EXPECT_EQ(r.classes[1], Classification::kTier2);
  EXPECT_EQ(r.classes[2], Classification::kRedirect);
  const uint64_t g = w.GroupOf("http://a.com/page");
  EXPECT_EQ(w.GroupOf("http://b.com/page"), g);
  EXPECT_EQ(w.GroupOf("http://r.com/"), g);
  EXPECT_EQ(w.Members(g), (Urls{"http://a.com/page", "http://b.com/page", "http://r.com/"}));
  EXPECT_EQ(w.Group(g).winner(), "http://a.com/page");
  EXPECT_EQ(w.Query("http://a.com/page").status, StatusAnswer::kWinner);
  EXPECT_EQ(w.Query("http://b.com/page").status, StatusAnswer::kDuplicate);
  StatusAnswer a = w.Query("http://r.com/");
  EXPECT_EQ(a.status, StatusAnswer::kDuplicate);
  EXPECT_TRUE(a.redirect);
  EXPECT_EQ(a.winner_url, "http://a.com/page");
  // A later new duplicate with a redirect to it, in one batch: both join.
  w.Run({Redirect("http://s.com/", "http://c.com/page"), Page("http://c.com/page", R(1, 101), 1)});
  EXPECT_EQ(w.GroupOf("http://c.com/page"), g);
  EXPECT_EQ(w.GroupOf("http://s.com/"), g);
  EXPECT_EQ(w.Group(g).members(), 5u);
  EXPECT_EQ(w.Group(g).winner(), "http://a.com/page");
}


// ---- The paper's (x, z), (x, y) instability ----------------------------------------------------

TEST(Tier1Transitive, PairOrderDoesNotChangeGroupOrWinner) {
  // The pairs (x, z) and (x, y), y and z not similar; popularity z < x < y: x wins the pair
  // (x, z) and loses (x, y), so pairwise both x and y would be kept. In a group, y alone wins
  // whatever the order; z, not similar to y, fails verification (unique), x is y's duplicate.
  const std::string x = "http://x.com/", y = "http://y.com/", z = "http://z.com/", rz = "http://rz.com/";
  const In px = Page(x, R(5, 105), 10), py = Page(y, R(10, 110), 100), pz = Page(z, R(0, 100), 1);
  const std::vector<std::vector<std::vector<In>>> orders = {
      {{px, pz}, {py}},
      {{px, py}, {pz}},
      {{pz}, {py}, {px}},  // x bridges two groups
      {{py}, {pz}, {px}},
      {{px}, {pz}, {py}},
      {{pz, py, px}},      // in one batch
      {{px, py, pz}},
  };
  for (bool redirects : {false, true}) {
    for (size_t k = 0; k < orders.size(); ++k) {
      SCOPED_TRACE("order " + std::to_string(k) + (redirects ? " with a redirect to z" : ""));
      World w;
      if (redirects) w.Run({Redirect(rz, z, 1e6)});
      for (const auto& batch : orders[k]) w.Run(batch);
      const uint64_t g = w.GroupOf(x);
      EXPECT_EQ(w.GroupOf(y), g);
      EXPECT_EQ(w.GroupOf(z), g);
      if (redirects) { EXPECT_EQ(w.GroupOf(rz), g); }
      EXPECT_EQ(w.Group(g).members(), redirects ? 4u : 3u);
      EXPECT_EQ(w.Group(g).winner(), y);
      EXPECT_EQ(w.last_check().groups, 1u);
      int winners = 0;
      for (const std::string& u : {x, y, z}) {
        const StatusAnswer a = w.Query(u);
        winners += a.status == StatusAnswer::kWinner;
        EXPECT_EQ(a.winner_url, y);
        EXPECT_TRUE(a.verified);
      }
      EXPECT_EQ(winners, 1);
      EXPECT_EQ(w.Query(y).status, StatusAnswer::kWinner);
      EXPECT_EQ(w.Query(x).status, StatusAnswer::kDuplicate);
      EXPECT_EQ(w.Query(z).status, StatusAnswer::kUnique);  // 90/110 against y
    }
  }
}


// ---- Transitive merge --------------------------------------------------------------------------

TEST(Tier1Transitive, PageMatchingTwoGroupsMergesThem) {
  for (bool redirects : {false, true}) {
    SCOPED_TRACE(redirects ? "with redirects" : "without redirects");
    World w;
    // g1 = {a, a2} (popular), g2 = {b}; a and b are not similar.
    w.Run({Page("http://a.com/", R(0, 100), 50), Page("http://a2.com/", R(1, 101), 1)});
    w.Run({Page("http://b.com/", R(10, 110), 200)});
    if (redirects) w.Run({Redirect("http://rb.com/", "http://b.com/"), Redirect("http://ra.com/", "http://a.com/")});
    const uint64_t g1 = w.GroupOf("http://a.com/"), g2 = w.GroupOf("http://b.com/");
    ASSERT_NE(g1, g2);
    EXPECT_EQ(w.Group(g2).winner(), "http://b.com/");
    // q is similar to a, a2 and b.
    Result r = w.Run({Page("http://q.com/", R(5, 105), 2)});
    EXPECT_EQ(r.outcome.merges, 1u);
    EXPECT_EQ(r.outcome.new_groups, 0u);
    const uint64_t g = w.GroupOf("http://q.com/");
    EXPECT_EQ(g, g1);  // the bigger group absorbs the other
    for (const char* u : {"http://a.com/", "http://a2.com/", "http://b.com/"}) EXPECT_EQ(w.GroupOf(u), g) << u;
    if (redirects) {
      EXPECT_EQ(w.GroupOf("http://rb.com/"), g);
      EXPECT_EQ(w.GroupOf("http://ra.com/"), g);
    }
    const pb::Tier1Group merged = w.Group(g);
    EXPECT_EQ(merged.members(), redirects ? 6u : 4u);
    EXPECT_EQ(merged.winner(), "http://b.com/");  // the most popular member of either group
    EXPECT_EQ(w.last_check().groups, 1u);
    pb::Tier1Group gone;
    EXPECT_EQ(w.store().GetGroup(g2, &gone).code(), StatusCode::kNotFound);
  }
}


// ---- Case 1 ------------------------------------------------------------------------------------

// g1 = {q1, s1, p2 -> q1, p1 -> p2}; g2 = {q2, t2}.
void SetUpCase1(World& w, bool redirects, double q1_popularity) {
  w.Run({Page("http://q1.com/", R(0, 100), q1_popularity), Page("http://s1.com/", R(1, 101), 10)});
  if (redirects) {
    w.Run({Redirect("http://p2.com/", "http://q1.com/")});
    w.Run({Redirect("http://p1.com/", "http://p2.com/")});
  }
  w.Run({Page("http://q2.com/", R(1000, 1100), 5), Page("http://t2.com/", R(1001, 1101), 1)});
}

TEST(Tier1Case1, ChangedPageMatchingAnotherGroupMovesWithItsRedirects) {
  for (bool redirects : {false, true}) {
    for (double q1_pop : {1.0, 1000.0}) {  // q1 a loser, then q1 the winner of g1
      SCOPED_TRACE(std::string(redirects ? "with" : "without") + " redirects, q1 popularity " + std::to_string(q1_pop));
      World w;
      SetUpCase1(w, redirects, q1_pop);
      const uint64_t g1 = w.GroupOf("http://q1.com/"), g2 = w.GroupOf("http://q2.com/");
      ASSERT_NE(g1, g2);
      if (redirects) { EXPECT_EQ(w.GroupOf("http://p1.com/"), g1); }
      EXPECT_EQ(w.Group(g1).winner(), q1_pop > 10 ? "http://q1.com/" : "http://s1.com/");
      // q1's content is rewritten: now a duplicate of q2.
      Result r = w.Run({Page("http://q1.com/", R(1002, 1102), q1_pop)});
      EXPECT_EQ(r.classes[0], Classification::kTier2);
      EXPECT_TRUE(r.changed[0]);
      EXPECT_EQ(r.outcome.moves, 1u);
      EXPECT_EQ(r.outcome.new_groups, 0u);
      EXPECT_EQ(w.GroupOf("http://q1.com/"), g2);
      Urls g2_members = {"http://q1.com/", "http://q2.com/", "http://t2.com/"};
      if (redirects) {
        EXPECT_EQ(w.GroupOf("http://p2.com/"), g2);
        EXPECT_EQ(w.GroupOf("http://p1.com/"), g2);  // through the chain p1 -> p2 -> q1
        g2_members = {"http://p1.com/", "http://p2.com/", "http://q1.com/", "http://q2.com/", "http://t2.com/"};
      }
      EXPECT_EQ(w.Members(g2), g2_members);
      EXPECT_EQ(w.Group(g2).members(), g2_members.size());
      EXPECT_EQ(w.Group(g2).winner(), q1_pop > 10 ? "http://q1.com/" : "http://q2.com/");
      // g1 keeps its other member, with a winner among what is left.
      EXPECT_EQ(w.Members(g1), (Urls{"http://s1.com/"}));
      EXPECT_EQ(w.Group(g1).members(), 1u);
      EXPECT_EQ(w.Group(g1).winner(), "http://s1.com/");
      EXPECT_EQ(w.Query("http://s1.com/").status, StatusAnswer::kUnique);
      if (redirects) {
        const StatusAnswer a = w.Query("http://p1.com/");
        EXPECT_EQ(a.status, StatusAnswer::kDuplicate);
        EXPECT_TRUE(a.redirect);
        EXPECT_EQ(a.group, g2);
      }
    }
  }
}

TEST(Tier1Case1, ChangedPageWithoutMatchFormsNewGroupWithItsRedirects) {
  for (bool redirects : {false, true}) {
    for (double q1_pop : {1.0, 1000.0}) {
      SCOPED_TRACE(std::string(redirects ? "with" : "without") + " redirects, q1 popularity " + std::to_string(q1_pop));
      World w;
      SetUpCase1(w, redirects, q1_pop);
      const uint64_t g1 = w.GroupOf("http://q1.com/"), g2 = w.GroupOf("http://q2.com/");
      Result r = w.Run({Page("http://q1.com/", R(5000, 5100), q1_pop)});
      EXPECT_EQ(r.classes[0], Classification::kTier2);
      EXPECT_EQ(r.outcome.new_groups, 1u);
      EXPECT_EQ(r.outcome.moves, 1u);
      const uint64_t g = w.GroupOf("http://q1.com/");
      EXPECT_NE(g, g1);
      EXPECT_NE(g, g2);
      const Urls expected = redirects ? Urls{"http://p1.com/", "http://p2.com/", "http://q1.com/"} : Urls{"http://q1.com/"};
      EXPECT_EQ(w.Members(g), expected);
      EXPECT_EQ(w.Group(g).members(), expected.size());
      EXPECT_EQ(w.Group(g).winner(), "http://q1.com/");
      EXPECT_EQ(w.Members(g1), (Urls{"http://s1.com/"}));
      EXPECT_EQ(w.Group(g1).winner(), "http://s1.com/");
      EXPECT_EQ(w.Group(g2).members(), 2u);
      EXPECT_EQ(w.Query("http://q1.com/").status, redirects ? StatusAnswer::kWinner : StatusAnswer::kUnique);
    }
  }
}

TEST(Tier1Case1, ChangedPageAloneWithItsRedirectsKeepsItsGroup) {
  World w;
  w.Run({Page("http://q.com/", R(0, 100))});
  w.Run({Redirect("http://r.com/", "http://q.com/")});
  const uint64_t g = w.GroupOf("http://q.com/");
  Result r = w.Run({Page("http://q.com/", R(5000, 5100))});
  EXPECT_EQ(r.classes[0], Classification::kTier2);
  EXPECT_EQ(w.GroupOf("http://q.com/"), g);
  EXPECT_EQ(w.GroupOf("http://r.com/"), g);
  EXPECT_EQ(w.Group(g).members(), 2u);
}

// A page Tier 2 keeps in its own group (it still matches a member, not the representative) with a
// new popularity: the group's winner must reflect it.
TEST(Tier1Case1, ChangedPageStayingInItsGroupUpdatesWinner) {
  World w;
  // w0 the winner; s and q losers. q's new version is not similar to w0 (so not the fast path)
  // but similar to s.
  w.Run({Page("http://w0.com/", R(0, 100), 100), Page("http://s.com/", R(3, 103), 1),
         Page("http://q.com/", R(1, 101), 1)});
  const uint64_t g = w.GroupOf("http://w0.com/");
  ASSERT_EQ(w.Group(g).members(), 3u);
  ASSERT_EQ(w.Group(g).winner(), "http://w0.com/");
  Result r = w.Run({Page("http://q.com/", R(7, 107), 10000)});
  ASSERT_EQ(r.classes[0], Classification::kTier2);
  EXPECT_EQ(w.GroupOf("http://q.com/"), g);
  EXPECT_EQ(w.Group(g).members(), 3u);
  EXPECT_EQ(w.Group(g).winner(), "http://q.com/");
  // And the reverse: the winner's popularity drops while Tier 2 keeps it in the group.
  r = w.Run({Page("http://q.com/", R(1, 101), 0)});  // 94/106 from its previous version
  ASSERT_EQ(r.classes[0], Classification::kTier2);
  EXPECT_EQ(w.GroupOf("http://q.com/"), g);
  EXPECT_EQ(w.Group(g).winner(), "http://w0.com/");
}


// ---- Batches: superseded records, bad input, Tier 2 removals, progress -------------------------

TEST(Tier1Batch, SameUrlTwiceLastVersionWins) {
  World w;
  w.Run({Page("http://o.com/", R(0, 100), 1)});
  Result r = w.Run({Page("http://a.com/", R(5000, 5100)), Page("http://a.com/", R(1, 101), 7)});
  EXPECT_EQ(r.classes[0], Classification::kSuperseded);
  EXPECT_EQ(r.classes[1], Classification::kTier2);
  EXPECT_EQ(w.PageRec("http://a.com/").content_digest(), Sig("http://a.com/", R(1, 101)).content_digest());
  EXPECT_EQ(w.PageRec("http://a.com/").popularity(), 7);
  EXPECT_EQ(w.GroupOf("http://a.com/"), w.GroupOf("http://o.com/"));
  EXPECT_EQ(w.Group(w.GroupOf("http://a.com/")).members(), 2u);
  // A redirect then content, and content then a redirect.
  r = w.Run({Redirect("http://b.com/", "http://o.com/"), Page("http://b.com/", R(7000, 7100))});
  EXPECT_EQ(r.classes[0], Classification::kSuperseded);
  EXPECT_TRUE(w.PageRec("http://b.com/").redirect_to().empty());
  EXPECT_NE(w.GroupOf("http://b.com/"), w.GroupOf("http://o.com/"));
  EXPECT_EQ(w.last_check().redirects, 0u);
  r = w.Run({Page("http://c.com/", R(7000, 7100)), Redirect("http://c.com/", "http://o.com/")});
  EXPECT_EQ(r.classes[0], Classification::kSuperseded);
  EXPECT_EQ(r.classes[1], Classification::kRedirect);
  EXPECT_EQ(w.GroupOf("http://c.com/"), w.GroupOf("http://o.com/"));
  EXPECT_EQ(w.last_check().redirects, 1u);
}

// ---- A batch as its records one after another ----------------------------------------------

// The groups after `setup` (one batch each) and then `records`: as one batch, and one record per
// batch. Where batches are cut must not change the groups (pipeline/pipeline.h: inputs one after
// another into one store are one crawl), so both must hold every URL with the same co-members.
struct Cut {
  std::map<std::string, Urls> one_batch, one_by_one;  // url -> its group's members
};
Cut GroupsBothWays(const std::vector<std::vector<In>>& setup, const std::vector<In>& records) {
  Cut out;
  for (const bool one_by_one : {false, true}) {
    World w;
    for (const std::vector<In>& batch : setup) w.Run(batch);
    if (one_by_one) {
      for (const In& r : records) w.Run({r});
    } else {
      w.Run(records);
    }
    std::map<std::string, Urls>& groups = one_by_one ? out.one_by_one : out.one_batch;
    auto note = [&](const std::vector<In>& batch) {
      for (const In& r : batch) {
        if (w.HasPage(r.url)) groups[r.url] = w.MembersOf(r.url);
      }
    };
    for (const std::vector<In>& batch : setup) note(batch);
    note(records);
  }
  return out;
}

// The defect: x's match with u's resident version was dropped as stale because u's recrawl came
// later in the same batch, while a batch cut between them (two inputs, or a smaller batch) let x
// join u's group before u left it. In input order x meets u as it stands at x's place: x joins
// {u, w} through u, then u's rewrite leaves {w, x} (Case 1 does not recompute the group it
// leaves), whichever way the batches are cut. w and x are their markets' winners: the group's two
// members both answer `winner`, as in either cut.
TEST(Tier1InputOrder, APageMeetsTheResidentVersionOfAPageRecrawledLaterInItsBatch) {
  // A ~ B ~ C, not A ~ C (tier1_test_util.h); Z is like none of them.
  const std::vector<std::vector<In>> setup = {
      {Page("http://u.com/", R(5, 105), 5, "uk"), Page("http://w.co.uk/", R(10, 110), 1, "uk")}};
  const std::vector<In> records = {Page("http://x.fr/", R(0, 100), 1, "fr"), Page("http://u.com/", R(1000, 1100), 5, "uk")};
  const Cut cut = GroupsBothWays(setup, records);
  EXPECT_EQ(cut.one_batch, cut.one_by_one);
  EXPECT_EQ(cut.one_batch.at("http://x.fr/"), (Urls{"http://w.co.uk/", "http://x.fr/"}));
  EXPECT_EQ(cut.one_batch.at("http://u.com/"), (Urls{"http://u.com/"}));
  World w;
  for (const auto& batch : setup) w.Run(batch);
  w.Run(records);
  EXPECT_EQ(w.ReadOnlyQuery("http://x.fr/").status, StatusAnswer::kWinner);
  EXPECT_EQ(w.ReadOnlyQuery("http://w.co.uk/").status, StatusAnswer::kWinner);
}

// The same with u gone (404) after x in the batch: x joins u's group first, then u leaves it.
// (Gone pages used to be taken out before the batch's other records.)
TEST(Tier1InputOrder, APageMeetsAPageThatIsGoneLaterInItsBatch) {
  const std::vector<std::vector<In>> setup = {{Page("http://u.com/", R(5, 105)), Page("http://w.com/", R(10, 110))}};
  const Cut cut = GroupsBothWays(setup, {Page("http://x.com/", R(0, 100)), Gone("http://u.com/")});
  EXPECT_EQ(cut.one_batch, cut.one_by_one);
  EXPECT_EQ(cut.one_batch.at("http://x.com/"), (Urls{"http://w.com/", "http://x.com/"}));
  EXPECT_EQ(cut.one_batch.count("http://u.com/"), 0u);
  // Gone before x: x finds it gone, and is alone.
  const Cut before = GroupsBothWays(setup, {Gone("http://u.com/"), Page("http://x.com/", R(0, 100))});
  EXPECT_EQ(before.one_batch, before.one_by_one);
  EXPECT_EQ(before.one_batch.at("http://x.com/"), (Urls{"http://x.com/"}));
}

// A page kept by the fast path later in the batch is met in its resident version by the pages
// before it, and in its new version only by the pages after it.
TEST(Tier1InputOrder, APageBeforeAFastPathPageMeetsItsResidentVersion) {
  // J(y new, y old) = 97/103: kept. x ~ y's new version only (95/105; 92/108 to the old one).
  const std::vector<std::vector<In>> setup = {{Page("http://y.com/", R(0, 100), 10)}};
  for (const bool x_first : {true, false}) {
    SCOPED_TRACE(x_first ? "x first" : "y first");
    std::vector<In> records = {Page("http://x.com/", R(8, 108), 1), Page("http://y.com/", R(3, 103), 10)};
    if (!x_first) std::swap(records[0], records[1]);
    const Cut cut = GroupsBothWays(setup, records);
    EXPECT_EQ(cut.one_batch, cut.one_by_one);
    EXPECT_EQ(cut.one_batch.at("http://x.com/"), x_first ? Urls{"http://x.com/"} : (Urls{"http://x.com/", "http://y.com/"}));
  }
  // x ~ y's old version only (95/105; 92/108 to the new one): before y's record, x joins y.
  const std::vector<std::vector<In>> old_setup = {{Page("http://y.com/", R(10, 110), 10)}};
  const Cut cut = GroupsBothWays(old_setup, {Page("http://x.com/", R(15, 115), 1), Page("http://y.com/", R(7, 107), 10)});
  EXPECT_EQ(cut.one_batch, cut.one_by_one);
  EXPECT_EQ(cut.one_batch.at("http://x.com/"), (Urls{"http://x.com/", "http://y.com/"}));
}

TEST(Tier1Batch, BadInputIsRefused) {
  World w;
  std::vector<Classification> classes;
  std::vector<PageUpdate> batch(1);
  batch[0].url = "http://a.com/";
  EXPECT_EQ(w.t1().Classify(batch, &classes).code(), StatusCode::kInvalidArgument);  // no content, no redirect
  batch[0].url = "";
  batch[0].redirect_to = "http://b.com/";
  EXPECT_EQ(w.t1().Classify(batch, &classes).code(), StatusCode::kInvalidArgument);  // no URL
  const pb::PageSignature sig = Sig("http://a.com/", R(0, 10));
  batch[0] = Update("http://a.com/", &sig);
  ASSERT_TRUE(w.t1().Classify(batch, &classes).ok());
  ApplyOutcome out;
  Tier2Matches m;
  m.resident.push_back({3, "http://x.com/", 1.0});
  EXPECT_EQ(w.t1().Apply(batch, classes, m, nullptr, &out).code(), StatusCode::kInvalidArgument);
  m.resident.clear();
  EXPECT_EQ(w.t1().Apply(batch, {}, m, nullptr, &out).code(), StatusCode::kInvalidArgument);
  w.Check();
  EXPECT_EQ(w.last_check().pages, 0u);
}

// A fast-path page is stored again in its new cell, so it leaves the old one; an unchanged page is
// not stored again, so nothing removes its signature (its cell changes only when a move split the
// cell, and the move takes the signature to the part's shard).
TEST(Tier1Batch, AFastPathPageWithANewHomeCellOwesARemovalAnUnchangedOneDoesNot) {
  World w;
  const pb::PageSignature a = Sig("http://a.com/", R(0, 100)), b = Sig("http://b.com/", R(1, 101));
  const pb::PageSignature b2 = Sig("http://b.com/", R(2, 102));
  std::vector<PageUpdate> batch = {Update("http://a.com/", &a, "", 1, 10), Update("http://b.com/", &b, "", 1)};
  std::vector<Classification> classes;
  ApplyOutcome out;
  ASSERT_TRUE(w.t1().Classify(batch, &classes).ok());
  Tier2Matches m;
  m.in_batch.push_back({0, 1, 99.0 / 101.0});
  ASSERT_TRUE(w.t1().Apply(batch, classes, m, nullptr, &out).ok());
  w.source().sigs = {{"http://a.com/", a}, {"http://b.com/", b}};
  // Unchanged a and fast-path b, both stored in another cell now.
  batch = {Update("http://a.com/", &a, "", 2, 10), Update("http://b.com/", &b2, "", 3)};
  ASSERT_TRUE(w.t1().Classify(batch, &classes).ok());
  EXPECT_EQ(classes[0], Classification::kUnchanged);
  EXPECT_EQ(classes[1], Classification::kFastPath);
  ASSERT_TRUE(w.t1().Apply(batch, classes, Tier2Matches(), nullptr, &out).ok());
  std::vector<std::pair<std::string, uint32_t>> removals = out.tier2_removals;
  std::sort(removals.begin(), removals.end());
  EXPECT_EQ(removals, (std::vector<std::pair<std::string, uint32_t>>{{"http://b.com/", 1}}));
  EXPECT_EQ(w.PageRec("http://a.com/").home_cell(), 2u);
  EXPECT_EQ(w.PageRec("http://b.com/").home_cell(), 3u);
  w.Check();
}

TEST(Tier1Batch, ProgressIsCommittedWithTheBatch) {
  World w;
  const pb::PageSignature sig = Sig("http://a.com/", R(0, 10));
  std::vector<PageUpdate> batch = {Update("http://a.com/", &sig, "", 3)};
  std::vector<Classification> classes;
  ASSERT_TRUE(w.t1().Classify(batch, &classes).ok());
  pb::Tier1Progress progress;
  progress.set_records_committed(1);
  ApplyOutcome out;
  ASSERT_TRUE(w.t1().Apply(batch, classes, Tier2Matches(), &progress, &out).ok());
  // Turning it into a redirect owes a removal, recorded with the progress.
  batch = {Update("http://a.com/", nullptr, "http://b.com/")};
  ASSERT_TRUE(w.t1().Classify(batch, &classes).ok());
  progress.set_records_committed(2);
  ASSERT_TRUE(w.t1().Apply(batch, classes, Tier2Matches(), &progress, &out).ok());
  std::string bytes;
  ASSERT_TRUE(w.store().rows().Get(w.store().meta_family(), "progress", "", &bytes).ok());
  pb::Tier1Progress stored;
  ASSERT_TRUE(stored.ParseFromString(bytes));
  EXPECT_EQ(stored.records_committed(), 2u);
  ASSERT_EQ(stored.last_batch_removals_size(), 1);
  EXPECT_EQ(stored.last_batch_removals(0).url(), "http://a.com/");
  EXPECT_EQ(stored.last_batch_removals(0).cell(), 3u);
  w.Check();
}

}  // namespace
}  // namespace neardup::tier1
