#include "tier1/winner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/config.h"

namespace neardup::tier1 {
namespace {

Candidate C(std::string_view url, double popularity = 0, bool has_content = true) {
  return Candidate{.url = url, .popularity = popularity, .has_content = has_content};
}

// The one that wins in both argument orders; fails the test if the order is not asymmetric.
std::string_view Winner(const WinnerRules& r, const Candidate& a, const Candidate& b, std::string_view market = "") {
  const bool ab = Better(r, a, b, market);
  const bool ba = Better(r, b, a, market);
  EXPECT_NE(ab, ba) << a.url << " vs " << b.url;
  return ab ? a.url : b.url;
}

TEST(Winner, ContentComesFirst) {
  const WinnerRules r;
  // The redirect is far more popular, static and shorter, but has no content.
  EXPECT_EQ(Winner(r, C("http://a.com/", 1e6, false), C("http://b.com/long/page?id=1", 0, true)),
            "http://b.com/long/page?id=1");
  // Content stays first whatever the configured order.
  WinnerRules shorter_only;
  shorter_only.order = {Rule::kShorter};
  EXPECT_EQ(Winner(shorter_only, C("http://a.com/", 0, false), C("http://a.com/longer", 0, true)),
            "http://a.com/longer");
}

TEST(Winner, PopularityDominatesAcrossBuckets) {
  const WinnerRules r;
  // 1 + 100 vs 1 + 10: several doublings apart; the popular page wins although dynamic and longer.
  EXPECT_EQ(Winner(r, C("http://a.com/x", 10), C("http://b.com/a/much/longer/path?q=1", 100)),
            "http://b.com/a/much/longer/path?q=1");
}

TEST(Winner, SameBucketFallsToStatic) {
  const WinnerRules r;  // 4 buckets per doubling
  ASSERT_EQ(PopularityBucket(100, 4), PopularityBucket(101, 4));
  EXPECT_EQ(Winner(r, C("http://a.com/p?x=1", 101), C("http://a.com/a/longer/static/path", 100)),
            "http://a.com/a/longer/static/path");
  // With finer buckets, the same two pages are told apart by popularity.
  WinnerRules fine;
  fine.buckets_per_doubling = 1000;
  ASSERT_NE(PopularityBucket(100, 1000), PopularityBucket(101, 1000));
  EXPECT_EQ(Winner(fine, C("http://a.com/p?x=1", 101), C("http://a.com/a/longer/static/path", 100)),
            "http://a.com/p?x=1");
}

TEST(Winner, PopularityBucket) {
  EXPECT_EQ(PopularityBucket(0, 4), 0);
  EXPECT_EQ(PopularityBucket(-5, 4), 0);
  EXPECT_EQ(PopularityBucket(std::nan(""), 4), 0);
  EXPECT_EQ(PopularityBucket(1, 4), 4);    // log2(2) * 4
  EXPECT_EQ(PopularityBucket(3, 4), 8);    // log2(4) * 4
  EXPECT_EQ(PopularityBucket(2, 4), 6);    // log2(3) * 4 = 6.34
  EXPECT_EQ(PopularityBucket(1, 0.5), 0);  // 0.5
  EXPECT_EQ(PopularityBucket(3, 0.5), 1);
  EXPECT_GT(PopularityBucket(std::numeric_limits<double>::infinity(), 4), 0);
  EXPECT_GT(PopularityBucket(1e300, 1000), PopularityBucket(1e299, 1000));
}

TEST(Winner, StaticBeatsDynamic) {
  const WinnerRules r;
  const char* const kDynamic[] = {
      "http://a.com/page?id=1",
      "http://a.com/page;jsessionid=ABC123",
      "http://a.com/page;JSESSIONID=abc",
      "http://a.com/page;sid=1",
      "http://a.com/sid=77/page",
      "http://a.com/x/sessionid=9",
      "http://a.com/PHPSESSID=9/x",
      "http://a.com/session_id=1",
      "http://a.com/?",
  };
  for (const char* d : kDynamic) {
    EXPECT_TRUE(IsDynamicUrl(d)) << d;
    // The static page is longer and bytewise larger, so only STATIC can make it win.
    EXPECT_EQ(Winner(r, C(d, 5), C("http://z.com/a/static/page/that/is/long/enough/to/lose.html", 5)),
              "http://z.com/a/static/page/that/is/long/enough/to/lose.html")
        << d;
  }
  EXPECT_FALSE(IsDynamicUrl("http://a.com/page.html"));
  EXPECT_FALSE(IsDynamicUrl("http://a.com/session/id/1"));
  EXPECT_FALSE(IsDynamicUrl("http://a.com/inside/x"));
}

TEST(Winner, ShorterWins) {
  const WinnerRules r;
  EXPECT_EQ(Winner(r, C("http://a.com/abc", 3), C("http://z.com/ab", 3)), "http://z.com/ab");
  // Same length: the bytewise smaller URL.
  EXPECT_EQ(Winner(r, C("http://b.com/ab", 3), C("http://a.com/ab", 3)), "http://a.com/ab");
}

TEST(Winner, IdenticalUrlsAreNeitherBetter) {
  const WinnerRules r;
  const Candidate a = C("http://a.com/x", 3);
  const Candidate b = C("http://a.com/x", 3);
  EXPECT_FALSE(Better(r, a, b, ""));
  EXPECT_FALSE(Better(r, b, a, ""));
  EXPECT_FALSE(Better(r, a, a, "uk"));
}

TEST(Winner, MarketPreferenceOnlyForTheMarketsWinner) {
  const WinnerRules r;
  const Candidate de = C("http://bbc.co.de/n", 7);  // same length, bytewise smaller
  const Candidate uk = C("http://bbc.co.uk/n", 7);
  EXPECT_EQ(Winner(r, de, uk, ""), de.url);  // the default winner ignores markets
  EXPECT_EQ(Winner(r, de, uk, "uk"), uk.url);
  EXPECT_EQ(Winner(r, de, uk, "de"), de.url);
  EXPECT_EQ(Winner(r, de, uk, "fr"), de.url);
  // MARKET comes first in the default order: the market's page wins even against a more popular,
  // static or shorter one; for the default winner those decide.
  EXPECT_EQ(Winner(r, C("http://x.com/n", 100), uk, "uk"), uk.url);
  EXPECT_EQ(Winner(r, C("http://x.com/n", 100), uk, ""), "http://x.com/n");
  EXPECT_EQ(Winner(r, C("http://bbc.co.de/n", 7), C("http://bbc.co.uk/n?x", 7), "uk"), "http://bbc.co.uk/n?x");
  EXPECT_EQ(Winner(r, C("http://x.com/n", 7), uk, "uk"), uk.url);
  EXPECT_EQ(Winner(r, C("http://bbc.com/x", 7), C("http://bbc.co.uk/x", 7), "uk"), "http://bbc.co.uk/x");
  EXPECT_EQ(Winner(r, C("http://bbc.com/x", 7), C("http://bbc.co.uk/x", 7), ""), "http://bbc.com/x");
  // Between two pages of the market, the next rules decide.
  EXPECT_EQ(Winner(r, C("http://bbc.co.uk/n?x", 7), C("http://a.co.uk/long", 7), "uk"), "http://a.co.uk/long");
  // MARKET last: POPULARITY, STATIC and SHORTER decide first.
  WinnerRules market_last;
  market_last.order = {Rule::kPopularity, Rule::kStatic, Rule::kShorter, Rule::kMarket};
  EXPECT_EQ(Winner(market_last, C("http://bbc.co.de/n", 100), uk, "uk"), "http://bbc.co.de/n");
  EXPECT_EQ(Winner(market_last, C("http://bbc.co.de/n?x", 7), C("http://bbc.co.uk/n?x", 7), "uk"),
            "http://bbc.co.uk/n?x");
  EXPECT_EQ(Winner(market_last, C("http://bbc.co.de/n", 7), C("http://bbc.co.uk/n?x", 7), "uk"), "http://bbc.co.de/n");
  EXPECT_EQ(Winner(market_last, C("http://x.com/n", 7), uk, "uk"), "http://x.com/n");
}

// Buckets at 4 per doubling: popularity 30 -> 19, 31 -> 20, 38 -> 21, 48 -> 22, 57 -> 23.
TEST(Winner, IncumbentBonusNeedsAChallengerAboveTheMargin) {
  const WinnerRules r;
  ASSERT_EQ(r.hysteresis_buckets, 1u);
  ASSERT_EQ(PopularityBucket(38, 4), 21);
  const Candidate plain = C("http://a.com/", 30);  // shorter than the challengers
  const Candidate incumbent = Incumbent(r, plain);
  EXPECT_EQ(incumbent.bucket_bonus, 1);
  const Candidate one_above = C("http://b.com/longer", 31), two_above = C("http://b.com/longer", 38);
  EXPECT_EQ(Winner(r, plain, one_above), one_above.url);  // without the bonus, popularity decides
  EXPECT_EQ(Winner(r, incumbent, one_above), incumbent.url);  // a tie at 20: SHORTER decides
  EXPECT_EQ(Winner(r, incumbent, two_above), two_above.url);  // more than the margin above
  for (const std::string_view market : {"", "uk"}) {
    // In its own bucket the incumbent wins on popularity, although dynamic and longer; one bucket
    // above ties and the later rules decide.
    const Candidate dynamic = Incumbent(r, C("http://a.com/long/page?x=1", 30));
    EXPECT_EQ(Winner(r, dynamic, C("http://b.com/", 30), market), dynamic.url);
    EXPECT_EQ(Winner(r, dynamic, C("http://b.com/", 31), market), "http://b.com/");
  }
  // MARKET comes first for a market's winner: the market's host wins whatever the bonus.
  EXPECT_EQ(Winner(r, incumbent, C("http://b.co.uk/", 0), "uk"), "http://b.co.uk/");
  // A margin of 3: three buckets above ties, four above wins; a margin of 0 is no bonus.
  WinnerRules three;
  three.hysteresis_buckets = 3;
  EXPECT_EQ(Winner(three, Incumbent(three, plain), C("http://b.com/longer", 48)), plain.url);
  EXPECT_EQ(Winner(three, Incumbent(three, plain), C("http://b.com/longer", 57)), "http://b.com/longer");
  WinnerRules none;
  none.hysteresis_buckets = 0;
  EXPECT_EQ(Winner(none, Incumbent(none, plain), one_above), one_above.url);
  // A redirect cannot win, bonus or not.
  EXPECT_EQ(Winner(r, Incumbent(r, C("http://a.com/", 1e6, false)), C("http://b.com/longer", 0)), "http://b.com/longer");
}

TEST(Winner, PreferredForMarket) {
  WinnerRules r;
  EXPECT_TRUE(PreferredForMarket(r, "http://bbc.co.uk/", "uk"));
  EXPECT_TRUE(PreferredForMarket(r, "HTTPS://User@BBC.CO.UK:8080/x", "uk"));
  EXPECT_FALSE(PreferredForMarket(r, "http://uk/", "uk"));
  EXPECT_FALSE(PreferredForMarket(r, "http://bbcuk/", "uk"));
  EXPECT_FALSE(PreferredForMarket(r, "http://bbc.com/x.uk", "uk"));  // the path does not count
  EXPECT_FALSE(PreferredForMarket(r, "http://bbc.co.uk/", ""));
  EXPECT_FALSE(PreferredForMarket(r, "ftp://bbc.co.uk/", "uk"));
  // Custom suffixes replace the default ".<market>" for that market only.
  r.market_suffixes = {{"uk", {".co.uk", ".org.uk"}}, {"gb", {".uk"}}};
  EXPECT_TRUE(PreferredForMarket(r, "http://bbc.co.uk/", "uk"));
  EXPECT_TRUE(PreferredForMarket(r, "http://x.org.UK/", "uk"));
  EXPECT_FALSE(PreferredForMarket(r, "http://gov.uk/", "uk"));
  EXPECT_TRUE(PreferredForMarket(r, "http://gov.uk/", "gb"));
  EXPECT_FALSE(PreferredForMarket(r, "http://x.gb/", "gb"));
  EXPECT_TRUE(PreferredForMarket(r, "http://x.de/", "de"));  // not configured: ".de"
}

TEST(Winner, CustomMarketSuffixesDecideTheMarketWinner) {
  WinnerRules r;
  r.market_suffixes = {{"uk", {".co.uk"}}};
  const Candidate gov = C("http://a.gov.uk/x", 1);
  const Candidate co = C("http://bb.co.uk/x", 1);  // same length, bytewise larger
  EXPECT_EQ(Winner(r, gov, co, ""), "http://a.gov.uk/x");
  EXPECT_EQ(Winner(r, gov, co, "uk"), "http://bb.co.uk/x");
  EXPECT_EQ(Winner(WinnerRules{}, gov, co, "uk"), "http://a.gov.uk/x");  // both end in ".uk"
}

TEST(Winner, ConfiguredOrderChangesTheWinner) {
  const Candidate popular = C("http://a.com/popular/but/long", 1000);
  const Candidate short_one = C("http://b.com/s", 1);
  EXPECT_EQ(Winner(WinnerRules{}, popular, short_one), popular.url);
  WinnerRules shorter_first;
  shorter_first.order = {Rule::kShorter, Rule::kPopularity, Rule::kStatic, Rule::kMarket};
  EXPECT_EQ(Winner(shorter_first, popular, short_one), short_one.url);
  // A rule left out is not used: without POPULARITY only the URL decides.
  WinnerRules no_popularity;
  no_popularity.order = {Rule::kStatic};
  EXPECT_EQ(Winner(no_popularity, C("http://b.com/x", 1000), C("http://a.com/x", 0)), "http://a.com/x");
}

TEST(Winner, RulesFromConfig) {
  pb::Tier1Config cfg;
  WinnerRules r = WinnerRulesFromConfig(cfg);
  EXPECT_EQ(r.order, (std::vector<Rule>{Rule::kMarket, Rule::kPopularity, Rule::kStatic, Rule::kShorter}));
  EXPECT_DOUBLE_EQ(r.buckets_per_doubling, 4);
  EXPECT_EQ(r.hysteresis_buckets, 1u);
  EXPECT_TRUE(r.market_suffixes.empty());
  cfg.add_winner_rules(pb::SHORTER);
  cfg.add_winner_rules(pb::MARKET);
  cfg.set_popularity_buckets_per_doubling(2.5);
  cfg.set_winner_hysteresis_buckets(0);
  auto* ms = cfg.add_market_suffix();
  ms->set_market("uk");
  ms->add_suffix(".co.uk");
  ms->add_suffix(".ac.uk");
  r = WinnerRulesFromConfig(cfg);
  EXPECT_EQ(r.order, (std::vector<Rule>{Rule::kShorter, Rule::kMarket}));
  EXPECT_DOUBLE_EQ(r.buckets_per_doubling, 2.5);
  EXPECT_EQ(r.hysteresis_buckets, 0u);
  ASSERT_EQ(r.market_suffixes.size(), 1u);
  EXPECT_EQ(r.market_suffixes[0].first, "uk");
  EXPECT_EQ(r.market_suffixes[0].second, (std::vector<std::string>{".co.uk", ".ac.uk"}));
  cfg.set_popularity_buckets_per_doubling(0);  // unset-like: the default
  EXPECT_DOUBLE_EQ(WinnerRulesFromConfig(cfg).buckets_per_doubling, 4);
}

// WinnerRules' own defaults are the configuration's (a Tier1Options built without a config uses them).
TEST(Winner, DefaultsAreTheConfigurationsDefaults) {
  const WinnerRules plain;
  const WinnerRules configured = WinnerRulesFromConfig(DefaultConfig().tier1());
  EXPECT_EQ(plain.order, configured.order);
  EXPECT_EQ(plain.order, (std::vector<Rule>{Rule::kMarket, Rule::kPopularity, Rule::kStatic, Rule::kShorter}));
  EXPECT_DOUBLE_EQ(plain.buckets_per_doubling, configured.buckets_per_doubling);
  EXPECT_EQ(plain.hysteresis_buckets, configured.hysteresis_buckets);
  EXPECT_EQ(plain.hysteresis_buckets, 1u);
}

// The paper's example of why pair-wise winners are unstable: if each arriving page were only
// compared with the current winner under pair-wise judgements that are not one total order, the
// surviving page would depend on the arrival order (x replaces z, y replaces x, but z might have
// been kept over y had they met first). Ranking the whole group under one total order makes the
// winner the best of the members, whatever order they arrived in.
TEST(Winner, GroupWinnerIsIndependentOfArrivalOrder) {
  const WinnerRules r;
  const Candidate x = C("http://x.com/page?ref=1", 10);  // popular, dynamic
  const Candidate y = C("http://y.com/a/longer/page", 9);  // same bucket as x, static, long
  const Candidate z = C("http://z.com/p", 2);             // unpopular, short, static
  ASSERT_EQ(PopularityBucket(10, 4), PopularityBucket(9, 4));
  EXPECT_EQ(Winner(r, x, z), x.url);  // popularity
  EXPECT_EQ(Winner(r, x, y), y.url);  // same bucket: static
  EXPECT_EQ(Winner(r, y, z), y.url);  // popularity
  std::vector<Candidate> group = {x, y, z};
  std::sort(group.begin(), group.end(), [](const Candidate& a, const Candidate& b) { return a.url < b.url; });
  int orders = 0;
  do {
    EXPECT_EQ(group[BestOf(r, group, "")].url, y.url);
    // Arriving one by one, the running winner is replaced only by the newcomer, and ends at y.
    std::vector<Candidate> seen;
    std::string_view running;
    for (const Candidate& c : group) {
      seen.push_back(c);
      const std::string_view now = seen[BestOf(r, seen, "")].url;
      EXPECT_TRUE(running.empty() || now == running || now == c.url);
      running = now;
    }
    EXPECT_EQ(running, y.url);
    ++orders;
  } while (std::next_permutation(group.begin(), group.end(),
                                 [](const Candidate& a, const Candidate& b) { return a.url < b.url; }));
  EXPECT_EQ(orders, 6);
}

TEST(Winner, TotalOrderOnRandomCandidates) {
  std::mt19937 rng(12345);
  const char* const kHosts[] = {"http://a.com", "https://b.co.uk", "http://c.uk", "http://d.de:8080",
                                "http://u@e.org.uk", "HTTP://F.COM"};
  const char* const kTails[] = {"", "?q=1", ";jsessionid=1", "/x", "/sid=3", ".html"};
  std::set<std::string> urls;
  while (urls.size() < 300) {
    std::string u = kHosts[rng() % 6];
    const int segments = static_cast<int>(rng() % 3);
    for (int i = 0; i < segments; ++i) {
      u += '/';
      u.append(1 + rng() % 3, static_cast<char>('a' + rng() % 3));
    }
    u += kTails[rng() % 6];
    urls.insert(u);
  }
  const double kPopularities[] = {0, 1, 2, 3, 10, 11, 100};
  std::vector<std::string> url_list(urls.begin(), urls.end());
  std::shuffle(url_list.begin(), url_list.end(), rng);
  std::vector<Candidate> cands;
  for (const std::string& u : url_list) {
    cands.push_back(C(u, kPopularities[rng() % 7], rng() % 4 != 0));
  }
  // Incumbents' bonuses are attributes like the others: the order stays total.
  for (size_t i = 0; i < 10; ++i) cands[i].bucket_bonus = 1 + static_cast<int64_t>(i % 3);
  WinnerRules custom;
  custom.order = {Rule::kMarket, Rule::kShorter, Rule::kStatic, Rule::kPopularity};
  custom.market_suffixes = {{"uk", {".co.uk"}}};
  for (const WinnerRules& r : {WinnerRules{}, custom}) {
    for (const std::string_view market : {"", "uk", "de"}) {
      const size_t n = cands.size();
      std::vector<std::vector<char>> less(n, std::vector<char>(n));
      for (size_t i = 0; i < n; ++i) {
        for (size_t j = 0; j < n; ++j) less[i][j] = Better(r, cands[i], cands[j], market);
      }
      for (size_t i = 0; i < n; ++i) {
        ASSERT_FALSE(less[i][i]) << "irreflexive: " << cands[i].url;
        for (size_t j = 0; j < n; ++j) {
          if (i == j) continue;
          ASSERT_NE(less[i][j], less[j][i]) << "asymmetric and total: " << cands[i].url << " " << cands[j].url;
          if (!less[i][j]) continue;
          for (size_t k = 0; k < n; ++k) {
            if (less[j][k]) {
              ASSERT_TRUE(less[i][k]) << "transitive: " << cands[i].url << " " << cands[j].url << " " << cands[k].url;
            }
          }
        }
      }
      // BestOf agrees with a min-element scan and with every prefix/permutation.
      const auto better = [&](const Candidate& a, const Candidate& b) { return Better(r, a, b, market); };
      const size_t best = BestOf(r, cands, market);
      EXPECT_EQ(best, static_cast<size_t>(std::min_element(cands.begin(), cands.end(), better) - cands.begin()));
      for (size_t j = 0; j < n; ++j) EXPECT_FALSE(better(cands[j], cands[best]));
      std::vector<Candidate> shuffled = cands;
      for (int round = 0; round < 5; ++round) {
        std::shuffle(shuffled.begin(), shuffled.end(), rng);
        EXPECT_EQ(shuffled[BestOf(r, shuffled, market)].url, cands[best].url);
      }
      // std::sort accepts it as a strict weak ordering and yields the same first element.
      std::vector<Candidate> sorted = cands;
      std::sort(sorted.begin(), sorted.end(), better);
      EXPECT_EQ(sorted.front().url, cands[best].url);
      for (size_t i = 1; i < n; ++i) EXPECT_TRUE(better(sorted[i - 1], sorted[i]));
    }
  }
}

TEST(Winner, BestOfSingleAndDuplicates) {
  const WinnerRules r;
  EXPECT_EQ(BestOf(r, {C("http://a.com/")}, ""), 0u);
  // Identical candidates: the first one is kept.
  EXPECT_EQ(BestOf(r, {C("http://b.com/", 1), C("http://a.com/", 1), C("http://a.com/", 1)}, ""), 1u);
}

TEST(Winner, HostOf) {
  EXPECT_EQ(HostOf("http://www.example.com/path"), "www.example.com");
  EXPECT_EQ(HostOf("HTTPS://WWW.Example.COM"), "www.example.com");
  EXPECT_EQ(HostOf("HtTp://x.com"), "x.com");
  EXPECT_EQ(HostOf("http://user:pw@Host.com:8080/p?q#f"), "host.com");
  EXPECT_EQ(HostOf("http://a@b@c.com/"), "c.com");
  EXPECT_EQ(HostOf("http://x.com/a@b.com"), "x.com");  // '@' in the path is not user info
  EXPECT_EQ(HostOf("http://x.com?q=a/b"), "x.com");
  EXPECT_EQ(HostOf("http://x.com#frag"), "x.com");
  EXPECT_EQ(HostOf("http://x.com:80"), "x.com");
  EXPECT_EQ(HostOf("http://[::1]:80/x"), "[::1]");
  EXPECT_EQ(HostOf("http://[2001:DB8::1]/"), "[2001:db8::1]");
  EXPECT_EQ(HostOf("http://u@[::1]:80"), "[::1]");
  EXPECT_EQ(HostOf("http://"), "");
  EXPECT_EQ(HostOf("http:///path"), "");
  EXPECT_EQ(HostOf("http://:80/"), "");
  EXPECT_EQ(HostOf("ftp://x.com/"), "");
  EXPECT_EQ(HostOf("x.com/path"), "");
  EXPECT_EQ(HostOf("//x.com/"), "");
  EXPECT_EQ(HostOf(""), "");
}

}  // namespace
}  // namespace neardup::tier1
