// Tier1::Classify (tier1/classify.cc): the fast path, and what the batch's new pages see of a page
// it kept. The harness (World, Page, R, ...) is tier1/tier1_test_util.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tier1/tier1.h"
#include "tier1/tier1_test_util.h"

namespace neardup::tier1 {
namespace {

// ---- Fast path ---------------------------------------------------------------------------------

TEST(Tier1FastPath, UnchangedSlightlyChangedAndRewrittenPages) {
  for (bool redirects : {false, true}) {
    SCOPED_TRACE(redirects ? "with redirects" : "without redirects");
    World w;
    w.Run({Page("http://a.com/", R(0, 100), 10), Page("http://b.com/", R(1, 101), 1)});
    if (redirects) w.Run({Redirect("http://rb.com/", "http://b.com/"), Redirect("http://ra.com/", "http://a.com/")});
    const uint64_t g = w.GroupOf("http://a.com/");
    ASSERT_EQ(w.GroupOf("http://b.com/"), g);
    // a unchanged; b changed a little, still similar to the representative (a): no Tier 2.
    Result r = w.Run({Page("http://a.com/", R(0, 100), 10), Page("http://b.com/", R(2, 102), 1)});
    EXPECT_EQ(r.classes[0], Classification::kUnchanged);
    EXPECT_FALSE(r.changed[0]);
    EXPECT_EQ(r.classes[1], Classification::kFastPath);
    EXPECT_TRUE(r.changed[1]);
    EXPECT_EQ(r.tier2_pages, 0u);
    EXPECT_EQ(w.GroupOf("http://b.com/"), g);
    EXPECT_EQ(w.Group(g).members(), redirects ? 4u : 2u);
    StatusAnswer a = w.Query("http://b.com/");
    EXPECT_EQ(a.status, StatusAnswer::kDuplicate);
    EXPECT_NEAR(a.similarity_to_winner, 98.0 / 102.0, 1e-12);  // the new version of b
    // b rewritten: Tier 2 decides (and finds nothing: b leaves with its redirect).
    r = w.Run({Page("http://b.com/", R(50, 150), 1)});
    EXPECT_EQ(r.classes[0], Classification::kTier2);
    EXPECT_TRUE(r.changed[0]);
    EXPECT_NE(w.GroupOf("http://b.com/"), g);
    if (redirects) { EXPECT_EQ(w.GroupOf("http://rb.com/"), w.GroupOf("http://b.com/")); }
    EXPECT_EQ(w.Group(g).members(), redirects ? 2u : 1u);
  }
}

TEST(Tier1FastPath, WinnerChangingALittleUpdatesTheRepresentative) {
  World w;
  w.Run({Page("http://a.com/", R(0, 100), 10), Page("http://b.com/", R(1, 101), 1)});
  const uint64_t g = w.GroupOf("http://a.com/");
  StatusAnswer before = w.Query("http://b.com/");
  EXPECT_EQ(before.status, StatusAnswer::kDuplicate);
  EXPECT_NEAR(before.similarity_to_winner, 99.0 / 101.0, 1e-12);
  // The winner changes a little: compared with its own previous version, it stays.
  Result r = w.Run({Page("http://a.com/", R(3, 103), 10)});
  EXPECT_EQ(r.classes[0], Classification::kFastPath);
  EXPECT_EQ(w.GroupOf("http://a.com/"), g);
  EXPECT_EQ(w.Group(g).winner(), "http://a.com/");
  // b's status is verified against the new representative (the cached verification is stale).
  StatusAnswer after = w.Query("http://b.com/");
  EXPECT_EQ(after.status, StatusAnswer::kDuplicate);
  EXPECT_NEAR(after.similarity_to_winner, 98.0 / 102.0, 1e-12);
  // b's fast path now compares with the new representative: [8,108) is similar to a's new
  // [3,103) (95/105), not to its old [0,100) (92/108).
  r = w.Run({Page("http://b.com/", R(8, 108), 1)});
  EXPECT_EQ(r.classes[0], Classification::kFastPath);
  // A page in the batch with its group's winner compares with the winner's batch version.
  r = w.Run({Page("http://a.com/", R(13, 113), 10), Page("http://b.com/", R(12, 112), 1)});
  EXPECT_EQ(r.classes[0], Classification::kTier2);  // 90/110 from [3,103)
  EXPECT_EQ(r.classes[1], Classification::kFastPath);  // 99/101 from a's batch version
}

// A page before its winner's recrawl in the batch compares with the winner the store holds, as it
// would with a batch cut between them: here it is then no longer similar, Tier 2 finds nothing
// like it, and it leaves; compared with the winner's new version it would have stayed. After the
// recrawl, a page compares with the new version (WinnerChangingALittleUpdatesTheRepresentative).
TEST(Tier1FastPath, APageBeforeItsWinnersRecrawlComparesWithTheStoredWinner) {
  std::map<std::string, Urls> groups[2];
  for (const bool one_by_one : {false, true}) {
    World w;
    w.Run({Page("http://a.com/", R(0, 100), 10), Page("http://b.com/", R(1, 101), 1)});
    ASSERT_EQ(w.GroupOf("http://b.com/"), w.GroupOf("http://a.com/"));
    // b's [8,108): 92/108 from a's stored [0,100), 95/105 from a's new [3,103).
    const std::vector<In> records = {Page("http://b.com/", R(8, 108), 1), Page("http://a.com/", R(3, 103), 10)};
    if (one_by_one) {
      for (const In& r : records) w.Run({r});
    } else {
      Result r = w.Run(records);
      EXPECT_EQ(r.classes[0], Classification::kTier2);
      EXPECT_EQ(r.classes[1], Classification::kFastPath);
    }
    for (const char* url : {"http://a.com/", "http://b.com/"}) groups[one_by_one][url] = w.MembersOf(url);
  }
  EXPECT_EQ(groups[0], groups[1]);
  EXPECT_EQ(groups[0]["http://b.com/"], Urls{"http://b.com/"});
}

// Classify finds the batch's representatives first and hints them to the source in one call
// before it fetches any: the winners of changed losers, and a changed winner's previous version,
// but not a winner whose new version is in the batch (it is compared with that, not fetched).
TEST(Tier1FastPath, RepresentativesAreHintedTogetherBeforeAnyFetch) {
  World w;
  w.Run({Page("http://a.com/", R(0, 100), 10), Page("http://b.com/", R(1, 101), 1)});
  w.Run({Page("http://c.com/", R(200, 300), 1)});
  ASSERT_EQ(w.GroupOf("http://b.com/"), w.GroupOf("http://a.com/"));
  auto hinted_in_next_run = [&](const std::vector<In>& records) {
    w.source().hints.clear();
    w.source().fetches_at_hint.clear();
    const uint64_t before = w.source().fetches;
    Result r = w.Run(records);
    EXPECT_FALSE(w.source().hints.empty());  // Classify's first (Apply's may follow)
    if (w.source().hints.empty()) return std::vector<std::string>();
    EXPECT_EQ(w.source().fetches_at_hint[0], before) << "a fetch came before the hint";
    for (Classification c : r.classes) EXPECT_EQ(c, Classification::kFastPath);
    std::vector<std::string> urls = w.source().hints[0];
    std::sort(urls.begin(), urls.end());
    return urls;
  };
  EXPECT_EQ(hinted_in_next_run({Page("http://b.com/", R(2, 102), 1), Page("http://c.com/", R(201, 301), 1)}),
            (std::vector<std::string>{"http://a.com/", "http://c.com/"}));
  EXPECT_EQ(hinted_in_next_run({Page("http://a.com/", R(3, 103), 10), Page("http://b.com/", R(4, 104), 1)}),
            (std::vector<std::string>{"http://a.com/"}));
}

TEST(Tier1FastPath, DisabledSendsEveryChangeToTier2) {
  Tier1Options o;
  o.fast_path = false;
  World w(o);
  w.Run({Page("http://a.com/", R(0, 100), 10), Page("http://b.com/", R(1, 101), 1)});
  Result r = w.Run({Page("http://a.com/", R(0, 100), 10), Page("http://b.com/", R(2, 102), 1)});
  EXPECT_EQ(r.classes[0], Classification::kUnchanged);
  EXPECT_EQ(r.classes[1], Classification::kTier2);
  EXPECT_TRUE(r.changed[1]);
  EXPECT_EQ(w.GroupOf("http://b.com/"), w.GroupOf("http://a.com/"));
}


// A page the fast path kept is seen by the batch's new pages in its new version only: a new page
// similar to the new version joins its group, one similar only to the old version does not.
TEST(Tier1FastPath, NewPagesMeetTheNewVersionOfAPageKeptInTheSameBatch) {
  {
    World w;
    w.Run({Page("http://y.com/", R(0, 100), 10)});
    // J(y new, y old) = 97/103: kept. J(x, y new) = 95/105 >= 0.9 > J(x, y old) = 92/108.
    Result r = w.Run({Page("http://y.com/", R(3, 103), 10), Page("http://x.com/", R(8, 108), 1)});
    EXPECT_EQ(r.classes[0], Classification::kFastPath);
    EXPECT_EQ(r.classes[1], Classification::kTier2);
    EXPECT_EQ(w.GroupOf("http://x.com/"), w.GroupOf("http://y.com/"));
    EXPECT_EQ(w.Query("http://x.com/").status, StatusAnswer::kDuplicate);
  }
  {
    World w;
    w.Run({Page("http://y.com/", R(10, 110), 10)});
    // J(x, y old) = 95/105 >= 0.9 > J(x, y new) = 92/108: the match is with a stale version.
    Result r = w.Run({Page("http://y.com/", R(7, 107), 10), Page("http://x.com/", R(15, 115), 1)});
    EXPECT_EQ(r.classes[0], Classification::kFastPath);
    EXPECT_NE(w.GroupOf("http://x.com/"), w.GroupOf("http://y.com/"));
    EXPECT_EQ(w.Query("http://x.com/").status, StatusAnswer::kUnique);
  }
}

}  // namespace
}  // namespace neardup::tier1
