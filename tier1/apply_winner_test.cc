// The winners Tier1::Apply (tier1/apply.cc) keeps: market winners beside the default winner, and
// the incumbent's hysteresis. The winner rules themselves are tested in winner_test.cc; the
// harness (World, Page, R, ...) is tier1/tier1_test_util.h.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/config.h"
#include "tier1/tier1.h"
#include "tier1/tier1_test_util.h"

namespace neardup::tier1 {
namespace {

// ---- Market winners ----------------------------------------------------------------------------

TEST(Tier1Market, MarketWinnerAndDefaultWinner) {
  for (bool redirects : {false, true}) {
    SCOPED_TRACE(redirects ? "with a redirect" : "without redirects");
    World w;
    // Same popularity, all static, same length: only MARKET (for "uk") and the URL tie-break
    // decide. Default winner: the bytewise smallest URL (abc.co.ab); uk winner: the .uk host.
    const std::string ab = "http://abc.co.ab/x", uk = "http://abc.co.uk/x", com = "http://abc.com/xyz";
    ASSERT_EQ(ab.size(), uk.size());
    ASSERT_EQ(uk.size(), com.size());
    w.Run({Page(uk, R(0, 100), 5, "uk"), Page(ab, R(1, 101), 5, ""), Page(com, R(2, 102), 5, "uk")});
    if (redirects) w.Run({Redirect("http://r.co.uk/", com, 5)});
    const uint64_t g = w.GroupOf(uk);
    ASSERT_EQ(w.GroupOf(ab), g);
    ASSERT_EQ(w.GroupOf(com), g);
    const pb::Tier1Group grp = w.Group(g);
    EXPECT_EQ(grp.winner(), ab);
    ASSERT_EQ(grp.market_winners_size(), 1);
    EXPECT_EQ(grp.market_winners(0).market(), "uk");
    EXPECT_EQ(grp.market_winners(0).url(), uk);
    // A uk page's status names its market's winner.
    StatusAnswer a = w.Query(com);
    EXPECT_EQ(a.status, StatusAnswer::kDuplicate);
    EXPECT_EQ(a.winner_url, uk);
    EXPECT_EQ(w.Query(uk).status, StatusAnswer::kWinner);
    a = w.Query(ab);
    EXPECT_EQ(a.status, StatusAnswer::kWinner);
    EXPECT_EQ(a.winner_url, ab);
    // MARKET comes before POPULARITY: a more popular .com page wins the default winner only.
    w.Run({Page(com, R(2, 102), 1000, "uk")});
    const pb::Tier1Group after = w.GroupOfUrl(uk);
    EXPECT_EQ(after.winner(), com);
    ASSERT_EQ(after.market_winners_size(), 1);
    EXPECT_EQ(after.market_winners(0).url(), uk);
    EXPECT_EQ(w.Query(uk).status, StatusAnswer::kWinner);
    EXPECT_EQ(w.Query(com).winner_url, uk);
    EXPECT_EQ(w.Query(ab).winner_url, com);
    // Back in abc.co.ab's bucket, com keeps the default winner (hysteresis); below it, abc.co.ab
    // wins again.
    w.Run({Page(com, R(2, 102), 5, "uk")});
    EXPECT_EQ(w.GroupOfUrl(uk).winner(), com);
    w.Run({Page(com, R(2, 102), 1, "uk")});
    EXPECT_EQ(w.GroupOfUrl(uk).winner(), ab);
    EXPECT_EQ(w.GroupOfUrl(uk).market_winners(0).url(), uk);
    // Popularity before MARKET (configured): the popular .com page wins the uk market too, and the
    // winner's URL is not repeated in the market's record.
    Tier1Options popularity_first;
    popularity_first.rules.order = {Rule::kPopularity, Rule::kStatic, Rule::kShorter, Rule::kMarket};
    World v(popularity_first);
    v.Run({Page(uk, R(0, 100), 5, "uk"), Page(ab, R(1, 101), 5, ""), Page(com, R(2, 102), 1000, "uk")});
    const pb::Tier1Group pg = v.GroupOfUrl(uk);
    EXPECT_EQ(pg.winner(), com);
    ASSERT_EQ(pg.market_winners_size(), 1);
    EXPECT_EQ(MarketWinnerUrl(pg, pg.market_winners(0)), com);
    EXPECT_EQ(pg.market_winners(0).url(), "");
    EXPECT_EQ(v.Query(uk).status, StatusAnswer::kDuplicate);
    EXPECT_EQ(v.Query(uk).winner_url, com);
  }
}

// With the default configuration MARKET decides first for a market's winner: the market's host
// wins it although longer; the default winner ignores markets and SHORTER picks the .com page.
TEST(Tier1Market, DefaultConfigPrefersTheMarketsHost) {
  World w(Tier1OptionsFromConfig(DefaultConfig().tier1(), 0.9));
  const std::string com = "http://bbc.com/x", uk = "http://bbc.co.uk/x";
  w.Run({Page(com, R(0, 100), 5, "uk"), Page(uk, R(1, 101), 5, "uk")});
  const pb::Tier1Group g = w.GroupOfUrl(com);
  ASSERT_EQ(w.GroupOf(uk), w.GroupOf(com));
  EXPECT_EQ(g.winner(), com);
  ASSERT_EQ(g.market_winners_size(), 1);
  EXPECT_EQ(g.market_winners(0).market(), "uk");
  EXPECT_EQ(MarketWinnerUrl(g, g.market_winners(0)), uk);
  EXPECT_EQ(w.Query(com).winner_url, uk);
  EXPECT_EQ(w.Query(uk).status, StatusAnswer::kWinner);
}

// Without hysteresis (with it, the first of pages in one bucket keeps the default winner).
TEST(Tier1Market, ArrivalOrderGivesSameMarketWinners) {
  const std::string ab = "http://abc.co.ab/x", uk = "http://abc.co.uk/x", com = "http://abc.com/xyz";
  const In pab = Page(ab, R(1, 101), 5, ""), puk = Page(uk, R(0, 100), 5, "uk"), pcom = Page(com, R(2, 102), 5, "uk");
  Tier1Options o;
  o.rules.hysteresis_buckets = 0;
  for (const auto& order : std::vector<std::vector<In>>{{pab, puk, pcom}, {pcom, puk, pab}, {puk, pab, pcom}, {pab, pcom, puk}}) {
    World w(o);
    for (const In& in : order) w.Run({in});
    const pb::Tier1Group g = w.GroupOfUrl(uk);
    EXPECT_EQ(g.winner(), ab);
    ASSERT_EQ(g.market_winners_size(), 1);
    EXPECT_EQ(g.market_winners(0).url(), uk);
  }
}

// A market new to a group is ranked over every member, also those that neither win nor joined:
// here the .uk host wins the uk market although it joined without a market, before uk existed.
TEST(Tier1Market, NewMarketRanksEveryMember) {
  const std::string ab = "http://abc.co.ab/x", uk = "http://abc.co.uk/x", com = "http://abc.com/xyz";
  const std::string late = "http://zzz.com/xyz";
  ASSERT_EQ(ab.size(), uk.size());
  World w;
  w.Run({Page(ab, R(1, 101), 5, ""), Page(uk, R(0, 100), 5, ""), Page(com, R(2, 102), 5, "")});
  ASSERT_EQ(w.GroupOfUrl(ab).market_winners_size(), 0);
  w.Run({Page(late, R(3, 103), 5, "uk")});
  const pb::Tier1Group g = w.GroupOfUrl(late);
  EXPECT_EQ(g.members(), 4u);
  EXPECT_EQ(g.winner(), ab);
  ASSERT_EQ(g.market_winners_size(), 1);
  EXPECT_EQ(g.market_winners(0).url(), uk);
  // Two pages of new markets joining a group of one in the same batch.
  World v;
  v.Run({Page(com, R(2, 102), 5, "")});
  v.Run({Page(uk, R(0, 100), 5, "uk"), Page("http://abc.co.de/x", R(1, 101), 5, "de")});
  const pb::Tier1Group h = v.GroupOfUrl(com);
  EXPECT_EQ(h.members(), 3u);
  // com, the incumbent, keeps the default winner against pages of its bucket (hysteresis); the
  // new markets have no incumbent and go to their hosts.
  EXPECT_EQ(h.winner(), com);
  ASSERT_EQ(h.market_winners_size(), 2);
  EXPECT_EQ(h.market_winners(0).market(), "de");
  EXPECT_EQ(h.market_winners(0).url(), "http://abc.co.de/x");
  EXPECT_EQ(h.market_winners(1).market(), "uk");
  EXPECT_EQ(h.market_winners(1).url(), uk);
  // Without hysteresis the shortest URLs tie and the bytewise smallest wins; the de winner is then
  // the default winner, whose URL is not repeated.
  Tier1Options o;
  o.rules.hysteresis_buckets = 0;
  World x(o);
  x.Run({Page(com, R(2, 102), 5, "")});
  x.Run({Page(uk, R(0, 100), 5, "uk"), Page("http://abc.co.de/x", R(1, 101), 5, "de")});
  const pb::Tier1Group k = x.GroupOfUrl(com);
  EXPECT_EQ(k.winner(), "http://abc.co.de/x");
  ASSERT_EQ(k.market_winners_size(), 2);
  EXPECT_EQ(MarketWinnerUrl(k, k.market_winners(0)), "http://abc.co.de/x");
  EXPECT_EQ(k.market_winners(0).url(), "");
  EXPECT_EQ(k.market_winners(1).url(), uk);
}


// ---- Winner hysteresis -------------------------------------------------------------------------

// Popularity 30 and 31 sit on either side of a bucket edge (buckets 19 and 20 at 4 per doubling).
// With the default margin of one bucket, the incumbent keeps the group while a page's popularity
// oscillates across the edge; a challenger more than a bucket above takes over.
TEST(Tier1Hysteresis, WinnerKeepsItsPlaceWhilePopularityOscillates) {
  ASSERT_EQ(PopularityBucket(30, 4), 19);
  ASSERT_EQ(PopularityBucket(31, 4), 20);
  const std::string w = "http://www.example.com/winner", c = "http://c.com/";  // c is shorter
  {
    SCOPED_TRACE("the winner's popularity oscillates");
    World t;
    t.Run({Page(w, R(0, 100), 31, "uk"), Page(c, R(1, 101), 30, "uk")});
    ASSERT_EQ(t.GroupOfUrl(w).winner(), w);
    const int64_t changes = t.store().rows().Counter("winner_changes");
    for (int k = 0; k < 6; ++k) {
      t.Run({Page(w, R(0, 100), k % 2 == 0 ? 30 : 31, "uk")});
      const pb::Tier1Group g = t.GroupOfUrl(w);
      EXPECT_EQ(g.winner(), w) << "batch " << k;
      ASSERT_EQ(g.market_winners_size(), 1);
      EXPECT_EQ(MarketWinnerUrl(g, g.market_winners(0)), w) << "batch " << k;
    }
    EXPECT_EQ(t.store().rows().Counter("winner_changes"), changes);
    t.Run({Page(c, R(1, 101), 1000, "uk")});
    const pb::Tier1Group g = t.GroupOfUrl(w);
    EXPECT_EQ(g.winner(), c);
    EXPECT_EQ(MarketWinnerUrl(g, g.market_winners(0)), c);
  }
  {
    SCOPED_TRACE("a challenger's popularity oscillates");
    World t;
    t.Run({Page(c, R(1, 101), 30, "uk"), Page(w, R(0, 100), 30, "uk")});
    ASSERT_EQ(t.GroupOfUrl(w).winner(), c);
    const int64_t changes = t.store().rows().Counter("winner_changes");
    for (int k = 0; k < 6; ++k) {
      t.Run({Page(w, R(0, 100), k % 2 == 0 ? 31 : 30, "uk")});
      const pb::Tier1Group g = t.GroupOfUrl(w);
      EXPECT_EQ(g.winner(), c) << "batch " << k;
      ASSERT_EQ(g.market_winners_size(), 1);
      EXPECT_EQ(MarketWinnerUrl(g, g.market_winners(0)), c) << "batch " << k;
    }
    EXPECT_EQ(t.store().rows().Counter("winner_changes"), changes);
    t.Run({Page(w, R(0, 100), 1000, "uk")});
    const pb::Tier1Group g = t.GroupOfUrl(w);
    EXPECT_EQ(g.winner(), w);
    EXPECT_EQ(MarketWinnerUrl(g, g.market_winners(0)), w);
  }
}

// ---- Losers verified again when their winner changes ------------------------------------------

// A batch that gives a group a new winner leaves its losers' cached verifications naming the old
// one; Reverify verifies them against the new winner with the batch (the winner's signature once,
// each loser's once), so that a status query from the committed store needs no signature at all.
TEST(Tier1Reverify, LosersAreVerifiedAgainstANewWinnerWithTheBatch) {
  World w;
  const std::string a = "http://a.example/1", b = "http://b.example/2", c = "http://c.example/3",
                    d = "http://d.example/4";
  w.Run({Page(a, R(0, 100), 5, ""), Page(b, R(1, 101), 1, ""), Page(c, R(2, 102), 1, "")});
  for (const auto& u : {a, b, c}) w.Query(u);
  w.Flush();
  ASSERT_EQ(w.GroupOfUrl(b).winner(), a);
  ASSERT_EQ(w.PageRec(b).verified_winner(), a);
  ReverifyReport r;
  ASSERT_TRUE(w.t1().Reverify(&r).ok());  // the first batch made a group, no winner changed
  EXPECT_EQ(r.verified, 0u);

  w.Run({Page(d, R(3, 103), 1000, "")});  // more popular: it wins
  ASSERT_EQ(w.GroupOfUrl(b).winner(), d);
  w.source().fetches = 0;
  ASSERT_TRUE(w.t1().Reverify(&r).ok());
  EXPECT_EQ(r.groups, 1u);
  EXPECT_EQ(r.verified, 3u);  // a, b and c
  EXPECT_EQ(r.skipped, 0u);
  EXPECT_EQ(w.source().fetches, 4u);  // d once, then each loser
  w.Flush();
  for (const auto& u : {a, b, c}) {
    const pb::Tier1Page p = w.PageRec(u);
    EXPECT_EQ(p.verified_winner(), d) << u;
    EXPECT_FALSE(p.rejected()) << u;
  }
  FakeSource none;  // holds nothing: a query that needed a signature would come back unverified
  StatusAnswer ans;
  ASSERT_TRUE(AnswerCommitted(w.store(), &none, w.threshold(), b, nullptr, &ans).ok());
  EXPECT_EQ(ans.status, StatusAnswer::kDuplicate);
  EXPECT_TRUE(ans.verified);
  EXPECT_EQ(ans.winner_url, d);
  EXPECT_EQ(none.fetches, 0u);
  ASSERT_TRUE(w.t1().Reverify(&r).ok());  // nothing left to do
  EXPECT_EQ(r.groups, 0u);
  EXPECT_EQ(r.verified, 0u);

  // The winner's content changes (still similar: it stays): the losers are verified again.
  w.Run({Page(d, R(4, 104), 1000, "")});
  ASSERT_EQ(w.GroupOfUrl(b).winner(), d);
  ASSERT_TRUE(w.t1().Reverify(&r).ok());
  EXPECT_EQ(r.verified, 3u);
}

// A loser that no longer passes against the new winner is counted as rejected, as its own
// acknowledgement would have counted it; groups over the bound are left for queries to verify.
TEST(Tier1Reverify, RejectionsCountAndLargeGroupsAreLeft) {
  World w;
  const std::string a = "http://a.example/1", b = "http://b.example/2", c = "http://c.example/3";
  // b is near a (0.97) and c (0.90); a and c are below the threshold (0.82): one group by chaining.
  w.Run({Page(b, R(5, 105), 5, ""), Page(a, R(0, 100), 1, ""), Page(c, R(10, 110), 1, "")});
  for (const auto& u : {a, b, c}) w.Query(u);
  w.Flush();
  ASSERT_EQ(w.GroupOf(a), w.GroupOf(c));
  ASSERT_EQ(w.GroupOfUrl(a).winner(), b);
  EXPECT_FALSE(w.PageRec(a).rejected());
  w.Run({Page(c, R(10, 110), 1000, "")});  // c wins: a is too far from it
  ASSERT_EQ(w.GroupOfUrl(a).winner(), c);
  ReverifyReport r;
  ASSERT_TRUE(w.t1().Reverify(&r).ok());
  EXPECT_EQ(r.verified, 2u);  // a and b
  w.Flush();
  // One rejection of three content members: counted, below the repair threshold (2).
  EXPECT_TRUE(w.PageRec(a).rejected());
  EXPECT_FALSE(w.PageRec(b).rejected());
  EXPECT_EQ(w.GroupOfUrl(a).rejections(), 1u);

  Tier1Options small;
  small.reverify_max_members = 2;
  World v(small);
  v.Run({Page(a, R(0, 100), 5, ""), Page(b, R(1, 101), 1, ""), Page(c, R(2, 102), 1, "")});
  v.Run({Page("http://d.example/4", R(3, 103), 1000, "")});
  ASSERT_TRUE(v.t1().Reverify(&r).ok());
  EXPECT_EQ(r.skipped, 1u);
  EXPECT_EQ(r.verified, 0u);
}

// What a batch leaves to do after its commit (the groups to verify again, the groups a rejection
// may have made due for a repair) is in the store with each commit: a restart between the commit
// and Reverify, or between Reverify and Flush, ends as the run that did not stop. Without it, the
// first loses the verifications against the new winner, the second the repair (the rejection was
// committed by the working set's bound, the repair candidate was in memory).
TEST(Tier1Reverify, ARestartBeforeReverifyOrFlushEndsAsNoRestart) {
  const std::string a = "http://a.example/1", b = "http://b.example/2", c = "http://c.example/3";
  Tier1Options o;
  o.repair_min_rejections = 1;  // a's rejection makes the group due
  o.cache_records = 1;          // the working set's bound commits between two verifications
  struct Outcome {
    bool a_rejected;
    uint64_t rejections, repairs;
    std::string winner;
  };
  // crash: 0 none, 1 after the batch's commit, 2 after Reverify (before Flush).
  auto play = [&](int crash) {
    World w(o);
    // b is near a (0.97) and c (0.90); a and c are below the threshold (0.82): one group by chaining.
    w.Run({Page(b, R(5, 105), 5, ""), Page(a, R(0, 100), 1, ""), Page(c, R(10, 110), 1, "")});
    for (const auto& u : {a, b, c}) w.Query(u);
    w.Flush();
    w.Run({Page(c, R(10, 110), 1000, "")});  // c wins: a is too far from it
    if (crash == 1) w.Reopen();
    ReverifyReport r;
    EXPECT_TRUE(w.t1().Reverify(&r).ok());
    EXPECT_EQ(r.verified, 2u) << "crash " << crash;  // a and b
    if (crash == 2) {
      // A restart redoes the batch's acknowledgements, Reverify and Flush, as the pipeline does.
      // The working set's bound had committed a's verification before b's: b is verified again.
      w.Reopen();
      EXPECT_TRUE(w.t1().Reverify(&r).ok());
      EXPECT_EQ(r.verified, 1u);
    }
    const std::vector<RepairReport> repairs = w.Flush();
    w.Reopen();  // what is stored
    EXPECT_TRUE(w.t1().Reverify(&r).ok());
    EXPECT_EQ(r.verified, 0u) << "crash " << crash << ": nothing left to verify";
    EXPECT_TRUE(w.Flush().empty()) << "crash " << crash << ": nothing left to repair";
    return Outcome{w.PageRec(a).rejected(), w.GroupOfUrl(a).rejections(), repairs.size(), w.GroupOfUrl(a).winner()};
  };
  const Outcome want = play(0);
  EXPECT_EQ(want.repairs, 1u);
  EXPECT_EQ(want.winner, c);
  for (int crash : {1, 2}) {
    const Outcome got = play(crash);
    EXPECT_EQ(got.a_rejected, want.a_rejected) << "crash " << crash;
    EXPECT_EQ(got.rejections, want.rejections) << "crash " << crash;
    EXPECT_EQ(got.repairs, want.repairs) << "crash " << crash;
    EXPECT_EQ(got.winner, want.winner) << "crash " << crash;
  }
}

// The groups a Flush's repair queues for Reverify wait for the next batch's Reverify, after its
// Apply. A restart right after that Flush redoes the last batch's acknowledgements and Reverify:
// that Reverify leaves them, so the next batch verifies what it would have without the restart.
TEST(Tier1Reverify, WhatARepairQueuedWaitsForTheNextBatchAcrossARestart) {
  const std::string a = "http://a.example/1", b = "http://b.example/2", c = "http://c.example/3",
                    d = "http://d.example/4", e = "http://e.example/5";
  Tier1Options o;
  o.repair_min_rejections = 1;
  // Returns the verifications of the Reverify after a restart (-1: no restart) and of the next
  // batch's Reverify.
  auto play = [&](bool restart) {
    World w(o);
    // a-b 0.905, b-c 0.905, c-d 0.96, a-c 0.82, a-d 0.79: one group by chaining, a wins.
    w.Run({Page(a, R(0, 100), 10), Page(b, R(5, 105), 1), Page(c, R(10, 110), 1), Page(d, R(12, 112), 1)});
    w.Flush();
    w.Run({Page(b, R(500, 600), 1)});  // b leaves: a is far from c and d now
    ReverifyReport r;
    EXPECT_TRUE(w.t1().Reverify(&r).ok());
    for (const auto& u : {c, d}) w.Query(u);  // both rejected against a
    const std::vector<RepairReport> repairs = w.Flush();
    EXPECT_EQ(repairs.size(), 1u);
    EXPECT_EQ(w.GroupOf(c), w.GroupOf(d));
    EXPECT_NE(w.GroupOf(a), w.GroupOf(c)) << "the repair splits a off";
    int after_restart = -1;
    if (restart) {
      w.Reopen();
      for (const auto& u : {b}) w.Query(u);  // the last batch's acknowledgements again
      EXPECT_TRUE(w.t1().Reverify(&r).ok());
      after_restart = static_cast<int>(r.verified);
      w.Flush();
    }
    w.Run({Page(e, R(900, 1000), 1)});
    EXPECT_TRUE(w.t1().Reverify(&r).ok());
    w.Flush();
    return std::pair<int, int>(after_restart, static_cast<int>(r.verified));
  };
  const auto straight = play(false);
  EXPECT_EQ(straight.second, 1) << "c or d, whichever lost, against the group's new winner";
  const auto restarted = play(true);
  EXPECT_EQ(restarted.first, 0) << "the restart's Reverify leaves what the repair queued";
  EXPECT_EQ(restarted.second, straight.second);
}

}  // namespace
}  // namespace neardup::tier1
