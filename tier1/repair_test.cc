// Tier1's repair (tier1/repair.cc): the q1, q2, q3 split false positive, rejections counted by
// verification, the repair threshold, the split into components and the winners it leaves. The
// harness (World, Page, R, ...) is tier1/tier1_test_util.h.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tier1/tier1.h"
#include "tier1/tier1_test_util.h"

namespace neardup::tier1 {
namespace {

// ---- The q1, q2, q3 split false positive, verification and repair ------------------------------

TEST(Tier1Split, KeptFalsePositiveRejectedThenRepaired) {
  for (bool redirects : {false, true}) {
    SCOPED_TRACE(redirects ? "with redirects" : "without redirects");
    Tier1Options o;
    o.repair_min_rejections = 1;
    o.repair_rejection_share = 0.1;
    World w(o);
    // F(q1, q2), F(q2, q3), not F(q1, q3); q2 the winner, then q1.
    w.Run({Page("http://q1.com/", R(0, 100), 10), Page("http://q2.com/", R(5, 105), 100),
           Page("http://q3.com/", R(10, 110), 1)});
    if (redirects) w.Run({Redirect("http://r3.com/", "http://q3.com/")});
    const uint64_t g = w.GroupOf("http://q1.com/");
    EXPECT_EQ(w.GroupOf("http://q3.com/"), g);
    EXPECT_EQ(w.Group(g).members(), redirects ? 4u : 3u);
    EXPECT_EQ(w.Group(g).winner(), "http://q2.com/");
    // q2 rewritten: it leaves; q1 and q3 stay together (no recomputation).
    w.Run({Page("http://q2.com/", R(7000, 7100), 100)});
    EXPECT_NE(w.GroupOf("http://q2.com/"), g);
    EXPECT_EQ(w.GroupOf("http://q1.com/"), g);
    EXPECT_EQ(w.GroupOf("http://q3.com/"), g);
    EXPECT_EQ(w.Group(g).members(), redirects ? 3u : 2u);
    EXPECT_EQ(w.Group(g).winner(), "http://q1.com/");
    // The crawler asks: q3 fails verification against q1: unique, verified, counted.
    EXPECT_EQ(w.Query("http://q1.com/").status, StatusAnswer::kWinner);
    StatusAnswer a = w.Query("http://q3.com/");
    EXPECT_EQ(a.status, StatusAnswer::kUnique);
    EXPECT_TRUE(a.verified);
    EXPECT_NEAR(a.similarity_to_winner, 90.0 / 110.0, 1e-12);
    EXPECT_EQ(a.winner_url, "http://q1.com/");
    EXPECT_EQ(a.group, g);
    // Asking again does not count the same version twice.
    EXPECT_EQ(w.Query("http://q3.com/").status, StatusAnswer::kUnique);
    std::vector<RepairReport> repairs = w.Flush();
    ASSERT_EQ(repairs.size(), 1u);
    EXPECT_EQ(repairs[0].group, g);
    EXPECT_EQ(repairs[0].members, redirects ? 3u : 2u);
    EXPECT_EQ(repairs[0].components, 2u);
    EXPECT_EQ(repairs[0].skipped, 0u);
    // Split: q1 and q3 (with its redirect) apart; counters reset.
    const uint64_t g1 = w.GroupOf("http://q1.com/"), g3 = w.GroupOf("http://q3.com/");
    EXPECT_NE(g1, g3);
    EXPECT_TRUE(g1 == g || g3 == g);
    EXPECT_EQ(w.Members(g1), (Urls{"http://q1.com/"}));
    EXPECT_EQ(w.Members(g3), redirects ? (Urls{"http://q3.com/", "http://r3.com/"}) : Urls{"http://q3.com/"});
    EXPECT_EQ(w.Group(g1).rejections(), 0u);
    EXPECT_EQ(w.Group(g3).rejections(), 0u);
    EXPECT_EQ(w.Group(g).repairs(), 1u);
    EXPECT_EQ(w.Group(g3).winner(), "http://q3.com/");
    EXPECT_FALSE(w.PageRec("http://q3.com/").rejected());
    EXPECT_EQ(w.Query("http://q1.com/").status, StatusAnswer::kUnique);
    EXPECT_EQ(w.Query("http://q3.com/").status, redirects ? StatusAnswer::kWinner : StatusAnswer::kUnique);
    EXPECT_TRUE(w.Flush().empty());
  }
}


TEST(Tier1Split, RejectionsBelowTheShareDoNotRepair) {
  World w;  // defaults: at least 2 rejections and 20% of the content members
  // e stays with q1 (similar to it, not to q3), so the one rejectable loser q3 is not all of them.
  w.Run({Page("http://q1.com/", R(0, 100), 10), Page("http://q2.com/", R(5, 105), 100),
         Page("http://q3.com/", R(10, 110), 1), Page("http://e.com/", R(1, 101), 5)});
  w.Run({Page("http://q2.com/", R(7000, 7100), 100)});
  const uint64_t g = w.GroupOf("http://q1.com/");
  EXPECT_EQ(w.Query("http://q3.com/").status, StatusAnswer::kUnique);
  EXPECT_TRUE(w.Flush().empty());
  EXPECT_EQ(w.Group(g).rejections(), 1u);
  EXPECT_TRUE(w.PageRec("http://q3.com/").rejected());
  EXPECT_EQ(w.GroupOf("http://q3.com/"), g);
  // A new version of q3 similar to the winner: the rejection no longer holds.
  Result r = w.Run({Page("http://q3.com/", R(1, 101), 1)});
  EXPECT_EQ(r.classes[0], Classification::kFastPath);
  EXPECT_EQ(w.Group(g).rejections(), 0u);
  EXPECT_FALSE(w.PageRec("http://q3.com/").rejected());
  EXPECT_EQ(w.Query("http://q3.com/").status, StatusAnswer::kDuplicate);
  // An explicit repair of a consistent group confirms it.
  RepairReport rep;
  ASSERT_TRUE(w.t1().Repair(g, &rep).ok());
  EXPECT_EQ(rep.components, 1u);
  EXPECT_EQ(rep.members, 3u);
  w.Check();
  EXPECT_EQ(w.t1().Repair(987654, &rep).code(), StatusCode::kNotFound);
}


// The winner w rewritten a little (the fast path keeps it: similar to its previous version) is no
// longer similar to its losers, which verification then rejects. W1 against L1 = [5,105):
// 90/110; against L2 = [4,104): 91/109.
const std::vector<uint64_t> kW0 = R(0, 100);
std::vector<uint64_t> W1() {
  std::vector<uint64_t> v = R(0, 95);
  for (uint64_t x = 200; x < 205; ++x) v.push_back(x);
  return v;
}

// With repair_min_rejections = 2, a group of two content pages has one loser to reject: its
// threshold is capped at that one. Redirecting members do not count.
TEST(Tier1Split, TwoContentGroupIsRepairedAfterItsOneLoser) {
  for (int redirects : {0, 20}) {
    SCOPED_TRACE(std::to_string(redirects) + " redirects");
    World w;  // defaults: repair_min_rejections 2, repair_rejection_share 0.2
    w.Run({Page("http://w.com/", kW0, 100), Page("http://l.com/", R(5, 105), 1)});
    std::vector<In> rs;
    for (int k = 0; k < redirects; ++k) rs.push_back(Redirect("http://r" + std::to_string(k) + ".com/", "http://l.com/"));
    if (!rs.empty()) w.Run(rs);
    const uint64_t g = w.GroupOf("http://w.com/");
    ASSERT_EQ(w.Group(g).members(), 2u + redirects);
    ASSERT_EQ(w.Run({Page("http://w.com/", W1(), 100)}).classes[0], Classification::kFastPath);
    EXPECT_EQ(w.Query("http://l.com/").status, StatusAnswer::kUnique);
    std::vector<RepairReport> repairs = w.Flush();
    ASSERT_EQ(repairs.size(), 1u);
    EXPECT_EQ(repairs[0].group, g);
    EXPECT_EQ(repairs[0].components, 2u);
    EXPECT_EQ(w.Members(w.GroupOf("http://w.com/")), Urls{"http://w.com/"});
    EXPECT_EQ(w.Group(w.GroupOf("http://l.com/")).members(), 1u + redirects);
    EXPECT_EQ(w.store().rows().Counter("repairs"), 1);
  }
}

// Three content pages and 20 redirectors: 2 rejections (both losers) repair it, 1 does not; a
// candidate not yet due is neither repaired nor counted.
TEST(Tier1Split, RepairThresholdCountsContentMembersOnly) {
  World w;
  w.Run({Page("http://w.com/", kW0, 100), Page("http://l1.com/", R(5, 105), 1),
         Page("http://l2.com/", R(4, 104), 1)});
  std::vector<In> rs;
  for (int k = 0; k < 20; ++k) rs.push_back(Redirect("http://r" + std::to_string(k) + ".com/", "http://w.com/"));
  w.Run(rs);
  const uint64_t g = w.GroupOf("http://w.com/");
  ASSERT_EQ(w.Group(g).members(), 23u);
  ASSERT_EQ(w.Run({Page("http://w.com/", W1(), 100)}).classes[0], Classification::kFastPath);
  EXPECT_EQ(w.Query("http://l1.com/").status, StatusAnswer::kUnique);
  EXPECT_TRUE(w.Flush().empty());
  EXPECT_EQ(w.Group(g).rejections(), 1u);
  EXPECT_EQ(w.Group(g).repairs(), 0u);
  EXPECT_EQ(w.store().rows().Counter("repairs"), 0);
  // l2 fails verification against the winner too (a rejection), but it is a near-duplicate of
  // l1, which the group keeps: dropped to it.
  const StatusAnswer l2 = w.Query("http://l2.com/");
  EXPECT_EQ(l2.status, StatusAnswer::kDuplicate);
  EXPECT_EQ(l2.duplicate_of, "http://l1.com/");
  EXPECT_LT(l2.similarity_to_winner, 0.9);
  std::vector<RepairReport> repairs = w.Flush();
  ASSERT_EQ(repairs.size(), 1u);
  EXPECT_EQ(repairs[0].members, 23u);
  EXPECT_EQ(repairs[0].components, 2u);
  EXPECT_EQ(w.Group(w.GroupOf("http://w.com/")).members(), 21u);
  EXPECT_EQ(w.MembersOf("http://l1.com/"), (Urls{"http://l1.com/", "http://l2.com/"}));
  EXPECT_EQ(w.store().rows().Counter("repairs"), 1);
}


// A group's repair threshold falls with its content members, so a group can come due without a
// new rejection: here x's rejection (against w, 90/110) is counted while the group has three
// content members (threshold 2), then y, the page linking x to w, turns into a redirect to w and
// leaves two (threshold 1). Counted after the redirect (one batch holding both, or a cut after
// the redirect) the rejection repairs the group; counted before it, the group must be checked
// again when y loses its content, or where the batches end decides whether x stays.
TEST(Tier1Split, AGroupThatLosesContentMembersIsCheckedForARepairAgain) {
  for (const bool rejected_first : {true, false}) {
    SCOPED_TRACE(rejected_first ? "rejection, then the redirect" : "the redirect, then the rejection");
    World w;  // defaults: repair_min_rejections 2, repair_rejection_share 0.2
    // F(w, y), F(y, x), not F(w, x); w the winner.
    w.Run({Page("http://w.com/", R(0, 100), 100), Page("http://y.com/", R(5, 105), 1), Page("http://x.com/", R(10, 110), 1)});
    const uint64_t g = w.GroupOf("http://w.com/");
    ASSERT_EQ(w.MembersOf("http://x.com/"), (Urls{"http://w.com/", "http://x.com/", "http://y.com/"}));
    if (rejected_first) {
      EXPECT_LT(w.Query("http://x.com/").similarity_to_winner, 0.9);
      EXPECT_TRUE(w.Flush().empty());  // 1 rejection of 3 content members: not due
      EXPECT_EQ(w.Group(g).rejections(), 1u);
    }
    w.Run({Redirect("http://y.com/", "http://w.com/")});
    if (!rejected_first) {
      EXPECT_LT(w.Query("http://x.com/").similarity_to_winner, 0.9);
    }
    const std::vector<RepairReport> repairs = w.Flush();
    ASSERT_EQ(repairs.size(), 1u);
    EXPECT_EQ(repairs[0].group, g);
    EXPECT_EQ(repairs[0].components, 2u);
    EXPECT_EQ(w.MembersOf("http://x.com/"), Urls{"http://x.com/"});
    EXPECT_EQ(w.MembersOf("http://w.com/"), (Urls{"http://w.com/", "http://y.com/"}));
  }
}

// A repair that keeps a group whole starts its members' verification afresh (no rejection left),
// though it may have counted on a page that leaves later: here b links l1 and l2 to w, their
// acknowledgements reject them against w, the repair finds the group connected through b and
// keeps it, then b is gone. The group must be checked again when b leaves (its losers verified
// again, Reverify, and its repair threshold weighed), or it keeps l1 and l2 with w for good,
// while a cut that puts b's gone record before their acknowledgements splits them off.
TEST(Tier1Split, AGroupKeptWholeByARepairIsCheckedAgainWhenAPageLeavesIt) {
  World w;  // defaults: repair_min_rejections 2, repair_rejection_share 0.2
  // A batch as the pipeline takes it: applied, each page acknowledged, Reverify, Flush.
  auto batch = [&](const std::vector<In>& records) {
    w.Run(records);
    for (const In& r : records) {
      if (w.HasPage(r.url)) w.Query(r.url);
    }
    EXPECT_TRUE(w.t1().Reverify().ok());
    return w.Flush();
  };
  // F(w, b), F(b, l1), F(b, l2), F(l1, l2); not F(w, l1), not F(w, l2). w the winner.
  const std::vector<RepairReport> confirmed =
      batch({Page("http://w.com/", R(0, 100), 100), Page("http://b.com/", R(5, 105), 1),
             Page("http://l1.com/", R(10, 110), 1), Page("http://l2.com/", R(10, 110), 2)});
  ASSERT_EQ(confirmed.size(), 1u);  // l1 and l2 rejected: 2 of 4 content members
  EXPECT_EQ(confirmed[0].components, 1u);
  EXPECT_EQ(w.MembersOf("http://w.com/").size(), 4u);
  EXPECT_EQ(w.GroupOfUrl("http://w.com/").rejections(), 0u);
  const std::vector<RepairReport> repairs = batch({Gone("http://b.com/")});
  ASSERT_EQ(repairs.size(), 1u);
  EXPECT_EQ(repairs[0].components, 2u);
  EXPECT_EQ(w.MembersOf("http://w.com/"), Urls{"http://w.com/"});
  EXPECT_EQ(w.MembersOf("http://l1.com/"), (Urls{"http://l1.com/", "http://l2.com/"}));
}

// ---- Winner hysteresis -------------------------------------------------------------------------

// A repair recomputes the winners of the part that keeps the group: its winner stays although a
// member is one bucket more popular.
TEST(Tier1Hysteresis, RepairKeepsTheIncumbent) {
  const std::string w = "http://w.com/", m = "http://www.example.com/member";
  World t;
  t.Run({Page(w, R(0, 100), 30)});
  t.Run({Page(m, R(1, 101), 31)});
  const uint64_t g = t.GroupOf(w);
  ASSERT_EQ(t.GroupOf(m), g);
  EXPECT_EQ(t.Group(g).winner(), w);
  RepairReport rep;
  ASSERT_TRUE(t.t1().Repair(g, &rep).ok());
  EXPECT_EQ(rep.components, 1u);
  EXPECT_EQ(t.Group(g).winner(), w);
  t.Check();
  // Without a margin the more popular member wins.
  Tier1Options o;
  o.rules.hysteresis_buckets = 0;
  World u(o);
  u.Run({Page(w, R(0, 100), 30)});
  u.Run({Page(m, R(1, 101), 31)});
  EXPECT_EQ(u.GroupOfUrl(w).winner(), m);
}

}  // namespace
}  // namespace neardup::tier1
