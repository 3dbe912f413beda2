// Tier 1's rules (the paper's Section 5), one test per rule, on a memory-backed group store.
//
// The harness plays Tier 2: a fake SignatureSource holds every URL's current signature, and for
// each batch the Tier 2 answer is computed by brute force (every resident page similar to a kTier2
// page, other than its own URL; every similar pair among the batch's kTier2 pages), exactly what a
// Tier 2 shard returns. After each Apply the source is updated as the pipeline's Tier 2 Apply
// would, and CheckStore must find no violation.
#include "tier1/tier1.h"

#include <gtest/gtest.h>
#include <leveldb/env.h>
#include <leveldb/helpers/memenv.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/config.h"
#include "document/shingle.h"

namespace neardup::tier1 {
namespace {

constexpr uint32_t kCell = 7;

// Shingles lo, lo+1, ..., hi-1.
std::vector<uint64_t> R(uint64_t lo, uint64_t hi) {
  std::vector<uint64_t> v;
  for (uint64_t x = lo; x < hi; ++x) v.push_back(x);
  return v;
}

// A signature built directly: sorted unique shingles, a digest that differs when they differ.
pb::PageSignature Sig(const std::string& url, std::vector<uint64_t> shingles) {
  std::sort(shingles.begin(), shingles.end());
  shingles.erase(std::unique(shingles.begin(), shingles.end()), shingles.end());
  pb::PageSignature s;
  s.set_url(url);
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the shingles
  for (uint64_t x : shingles) {
    s.add_shingles(x);
    for (int b = 0; b < 8; ++b) h = (h ^ ((x >> (8 * b)) & 0xFF)) * 1099511628211ull;
  }
  h = (h ^ shingles.size()) * 1099511628211ull;
  s.set_content_digest(std::string(reinterpret_cast<const char*>(&h), sizeof h));
  s.set_word_count(static_cast<uint32_t>(shingles.size()));
  s.set_shingle_k(1);
  return s;
}

double J(const pb::PageSignature& a, const pb::PageSignature& b) {
  return Jaccard(std::span<const uint64_t>(a.shingles().data(), static_cast<size_t>(a.shingles_size())),
                 std::span<const uint64_t>(b.shingles().data(), static_cast<size_t>(b.shingles_size())));
}
bool F(const pb::PageSignature& a, const pb::PageSignature& b, double t) {
  const std::span<const uint64_t> x(a.shingles().data(), static_cast<size_t>(a.shingles_size()));
  const std::span<const uint64_t> y(b.shingles().data(), static_cast<size_t>(b.shingles_size()));
  return JaccardAtLeast(Overlap(x, y), x.size(), y.size(), t);
}

// A batch record (content when sig is given, else a redirect).
PageUpdate Update(const std::string& url, const pb::PageSignature* sig, const std::string& redirect_to = "",
                  uint32_t home_cell = 0, double popularity = 0) {
  PageUpdate u;
  u.url = url;
  u.signature = sig;
  u.redirect_to = redirect_to;
  u.home_cell = home_cell;
  u.popularity = popularity;
  return u;
}

// One record of a test batch.
struct In {
  std::string url;
  std::vector<uint64_t> shingles;
  std::string redirect_to;
  double popularity = 0;
  std::string market;
};
In Page(std::string url, std::vector<uint64_t> shingles, double popularity = 0, std::string market = "") {
  return In{std::move(url), std::move(shingles), "", popularity, std::move(market)};
}
In Redirect(std::string url, std::string target, double popularity = 0) {
  return In{std::move(url), {}, std::move(target), popularity, ""};
}

class FakeSource : public SignatureSource {
 public:
  StatusOr<pb::PageSignature> Fetch(const std::string& url, uint32_t) override {
    ++fetches;
    auto it = sigs.find(url);
    if (it == sigs.end()) return NotFound("fake source: no signature for " + url);
    return it->second;
  }
  std::map<std::string, pb::PageSignature> sigs;
  uint64_t fetches = 0;
};

struct Result {
  std::vector<Route> routes;
  std::vector<bool> changed;
  ApplyOutcome outcome;
  size_t tier2_pages = 0;
};

// A group store, a Tier1 over it, and the fake Tier 2.
class World {
 public:
  explicit World(Tier1Options options = Tier1Options()) : env_(leveldb::NewMemEnv(leveldb::Env::Default())) {
    GroupStore::Options o;
    o.path = "/tier1_test";
    o.sync = false;
    o.env = env_.get();
    auto s = GroupStore::Open(o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (s.ok()) store_ = std::move(*s);
    t1_ = std::make_unique<Tier1>(store_.get(), &source_, std::move(options));
  }

  Tier1& t1() { return *t1_; }
  GroupStore& store() { return *store_; }
  FakeSource& source() { return source_; }
  double threshold() const { return t1_->options().threshold; }

  // Classify, play Tier 2, Apply, update Tier 2, check the store.
  Result Run(const std::vector<In>& records) {
    Result r;
    std::deque<pb::PageSignature> sigs;
    std::vector<PageUpdate> batch;
    for (const In& in : records) {
      PageUpdate u;
      u.url = in.url;
      u.redirect_to = in.redirect_to;
      u.popularity = in.popularity;
      u.market = in.market;
      u.home_cell = kCell;
      if (in.redirect_to.empty()) u.signature = &sigs.emplace_back(Sig(in.url, in.shingles));
      batch.push_back(std::move(u));
    }
    Status s = t1_->Classify(batch, &r.routes, &r.changed);
    EXPECT_TRUE(s.ok()) << s.ToString();
    if (!s.ok()) return r;
    Tier2Matches m;
    const double t = threshold();
    for (uint32_t i = 0; i < batch.size(); ++i) {
      if (r.routes[i] != Route::kTier2) continue;
      ++r.tier2_pages;
      for (const auto& [url, sig] : source_.sigs) {
        if (url != batch[i].url && F(*batch[i].signature, sig, t)) {
          m.resident.push_back({i, url, J(*batch[i].signature, sig)});
        }
      }
      // The new versions of the batch's other compared pages and of the pages the fast path kept,
      // as the pipeline's in-batch join gives them.
      for (uint32_t j = 0; j < batch.size(); ++j) {
        const bool partner = (r.routes[j] == Route::kTier2 && j > i) || r.routes[j] == Route::kFastPath;
        if (partner && F(*batch[i].signature, *batch[j].signature, t)) {
          m.in_batch.push_back({std::min(i, j), std::max(i, j), J(*batch[i].signature, *batch[j].signature)});
        }
      }
    }
    s = t1_->Apply(batch, r.routes, m, nullptr, &r.outcome);
    EXPECT_TRUE(s.ok()) << s.ToString();
    for (size_t i = 0; i < batch.size(); ++i) {
      if (r.routes[i] == Route::kSuperseded) continue;
      if (batch[i].signature != nullptr && batch[i].signature->shingles_size() > 0) {
        source_.sigs[batch[i].url] = *batch[i].signature;
      } else {
        source_.sigs.erase(batch[i].url);
      }
    }
    Check();
    return r;
  }

  void Check() {
    CheckReport report;
    const Status s = CheckStore(*store_, &report);
    EXPECT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(report.violation_count, 0u);
    for (const std::string& v : report.violations) ADD_FAILURE() << "invariant: " << v;
    last_check_ = report;
  }
  const CheckReport& last_check() const { return last_check_; }

  // Without content: the pipeline's acknowledgement (QueryAndRecord: verification cached,
  // rejections counted). With content: the crawler's read-only question about that content.
  StatusAnswer Query(const std::string& url, const pb::PageSignature* current = nullptr) {
    StatusAnswer a;
    const Status s = current == nullptr ? t1_->QueryAndRecord(url, &a) : t1_->Query(url, current, &a);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return a;
  }
  // The crawler's read-only question about the stored version.
  StatusAnswer ReadOnlyQuery(const std::string& url) {
    StatusAnswer a;
    const Status s = t1_->Query(url, nullptr, &a);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return a;
  }
  std::vector<RepairReport> Flush() {
    std::vector<RepairReport> repairs;
    const Status s = t1_->Flush(&repairs);
    EXPECT_TRUE(s.ok()) << s.ToString();
    Check();
    return repairs;
  }

  pb::Tier1Page PageRec(const std::string& url) {
    pb::Tier1Page p;
    const Status s = store_->GetPage(url, &p);
    EXPECT_TRUE(s.ok()) << url << ": " << s.ToString();
    return p;
  }
  uint64_t GroupOf(const std::string& url) { return PageRec(url).group(); }
  pb::Tier1Group Group(uint64_t gid) {
    pb::Tier1Group g;
    const Status s = store_->GetGroup(gid, &g);
    EXPECT_TRUE(s.ok()) << gid << ": " << s.ToString();
    return g;
  }
  pb::Tier1Group GroupOfUrl(const std::string& url) { return Group(GroupOf(url)); }
  std::vector<std::string> Members(uint64_t gid) {
    std::vector<std::string> m;
    EXPECT_TRUE(store_->Members(gid, &m).ok());
    return m;
  }
  std::vector<std::string> MembersOf(const std::string& url) { return Members(GroupOf(url)); }
  bool HasPage(const std::string& url) {
    pb::Tier1Page p;
    return store_->GetPage(url, &p).ok();
  }

 private:
  std::unique_ptr<leveldb::Env> env_;
  std::unique_ptr<GroupStore> store_;
  FakeSource source_;
  std::unique_ptr<Tier1> t1_;
  CheckReport last_check_;
};

using Urls = std::vector<std::string>;

// Shingle sets used throughout (threshold 0.9): sets of 100 overlapping in 95 have Jaccard
// 95/105 = 0.905 (similar); overlapping in 90, 90/110 = 0.818 (not similar).
//   A = [0,100)  B = [5,105)  C = [10,110): F(A,B), F(B,C), not F(A,C).

// ---- 1. Case 2 ---------------------------------------------------------------------------------

TEST(Tier1Case2, NewUniquePageFormsSingleton) {
  World w;
  Result r = w.Run({Page("http://a.com/", R(0, 100))});
  EXPECT_EQ(r.routes[0], Route::kTier2);
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
  EXPECT_EQ(r.routes[0], Route::kTier2);
  EXPECT_EQ(r.routes[1], Route::kTier2);
  EXPECT_EQ(r.routes[2], Route::kRedirect);
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

// ---- 2. The paper's (x, z), (x, y) instability -------------------------------------------------

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

// ---- 3. Transitive merge -----------------------------------------------------------------------

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

// ---- 4. Case 1 ---------------------------------------------------------------------------------

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
      EXPECT_EQ(r.routes[0], Route::kTier2);
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
      EXPECT_EQ(r.routes[0], Route::kTier2);
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
  EXPECT_EQ(r.routes[0], Route::kTier2);
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
  ASSERT_EQ(r.routes[0], Route::kTier2);
  EXPECT_EQ(w.GroupOf("http://q.com/"), g);
  EXPECT_EQ(w.Group(g).members(), 3u);
  EXPECT_EQ(w.Group(g).winner(), "http://q.com/");
  // And the reverse: the winner's popularity drops while Tier 2 keeps it in the group.
  r = w.Run({Page("http://q.com/", R(1, 101), 0)});  // 94/106 from its previous version
  ASSERT_EQ(r.routes[0], Route::kTier2);
  EXPECT_EQ(w.GroupOf("http://q.com/"), g);
  EXPECT_EQ(w.Group(g).winner(), "http://w0.com/");
}

// ---- 5. Fast path ------------------------------------------------------------------------------

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
    EXPECT_EQ(r.routes[0], Route::kUnchanged);
    EXPECT_FALSE(r.changed[0]);
    EXPECT_EQ(r.routes[1], Route::kFastPath);
    EXPECT_TRUE(r.changed[1]);
    EXPECT_EQ(r.tier2_pages, 0u);
    EXPECT_EQ(w.GroupOf("http://b.com/"), g);
    EXPECT_EQ(w.Group(g).members(), redirects ? 4u : 2u);
    StatusAnswer a = w.Query("http://b.com/");
    EXPECT_EQ(a.status, StatusAnswer::kDuplicate);
    EXPECT_NEAR(a.similarity_to_winner, 98.0 / 102.0, 1e-12);  // the new version of b
    // b rewritten: Tier 2 decides (and finds nothing: b leaves with its redirect).
    r = w.Run({Page("http://b.com/", R(50, 150), 1)});
    EXPECT_EQ(r.routes[0], Route::kTier2);
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
  EXPECT_EQ(r.routes[0], Route::kFastPath);
  EXPECT_EQ(w.GroupOf("http://a.com/"), g);
  EXPECT_EQ(w.Group(g).winner(), "http://a.com/");
  // b's status is verified against the new representative (the cached verification is stale).
  StatusAnswer after = w.Query("http://b.com/");
  EXPECT_EQ(after.status, StatusAnswer::kDuplicate);
  EXPECT_NEAR(after.similarity_to_winner, 98.0 / 102.0, 1e-12);
  // b's fast path now compares with the new representative: [8,108) is similar to a's new
  // [3,103) (95/105), not to its old [0,100) (92/108).
  r = w.Run({Page("http://b.com/", R(8, 108), 1)});
  EXPECT_EQ(r.routes[0], Route::kFastPath);
  // A page in the batch with its group's winner compares with the winner's batch version.
  r = w.Run({Page("http://a.com/", R(13, 113), 10), Page("http://b.com/", R(12, 112), 1)});
  EXPECT_EQ(r.routes[0], Route::kTier2);  // 90/110 from [3,103)
  EXPECT_EQ(r.routes[1], Route::kFastPath);  // 99/101 from a's batch version
}

TEST(Tier1FastPath, DisabledSendsEveryChangeToTier2) {
  Tier1Options o;
  o.fast_path = false;
  World w(o);
  w.Run({Page("http://a.com/", R(0, 100), 10), Page("http://b.com/", R(1, 101), 1)});
  Result r = w.Run({Page("http://a.com/", R(0, 100), 10), Page("http://b.com/", R(2, 102), 1)});
  EXPECT_EQ(r.routes[0], Route::kUnchanged);
  EXPECT_EQ(r.routes[1], Route::kTier2);
  EXPECT_TRUE(r.changed[1]);
  EXPECT_EQ(w.GroupOf("http://b.com/"), w.GroupOf("http://a.com/"));
}

// ---- 6. The q1, q2, q3 split false positive, verification and repair -------------------------

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

// A page the fast path kept is seen by the batch's new pages in its new version only: a new page
// similar to the new version joins its group, one similar only to the old version does not.
TEST(Tier1FastPath, NewPagesMeetTheNewVersionOfAPageKeptInTheSameBatch) {
  {
    World w;
    w.Run({Page("http://y.com/", R(0, 100), 10)});
    // J(y new, y old) = 97/103: kept. J(x, y new) = 95/105 >= 0.9 > J(x, y old) = 92/108.
    Result r = w.Run({Page("http://y.com/", R(3, 103), 10), Page("http://x.com/", R(8, 108), 1)});
    EXPECT_EQ(r.routes[0], Route::kFastPath);
    EXPECT_EQ(r.routes[1], Route::kTier2);
    EXPECT_EQ(w.GroupOf("http://x.com/"), w.GroupOf("http://y.com/"));
    EXPECT_EQ(w.Query("http://x.com/").status, StatusAnswer::kDuplicate);
  }
  {
    World w;
    w.Run({Page("http://y.com/", R(10, 110), 10)});
    // J(x, y old) = 95/105 >= 0.9 > J(x, y new) = 92/108: the match is with a stale version.
    Result r = w.Run({Page("http://y.com/", R(7, 107), 10), Page("http://x.com/", R(15, 115), 1)});
    EXPECT_EQ(r.routes[0], Route::kFastPath);
    EXPECT_NE(w.GroupOf("http://x.com/"), w.GroupOf("http://y.com/"));
    EXPECT_EQ(w.Query("http://x.com/").status, StatusAnswer::kUnique);
  }
}

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
  EXPECT_EQ(r.routes[0], Route::kFastPath);
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
    ASSERT_EQ(w.Run({Page("http://w.com/", W1(), 100)}).routes[0], Route::kFastPath);
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
  ASSERT_EQ(w.Run({Page("http://w.com/", W1(), 100)}).routes[0], Route::kFastPath);
  EXPECT_EQ(w.Query("http://l1.com/").status, StatusAnswer::kUnique);
  EXPECT_TRUE(w.Flush().empty());
  EXPECT_EQ(w.Group(g).rejections(), 1u);
  EXPECT_EQ(w.Group(g).repairs(), 0u);
  EXPECT_EQ(w.store().rows().Counter("repairs"), 0);
  EXPECT_EQ(w.Query("http://l2.com/").status, StatusAnswer::kUnique);
  std::vector<RepairReport> repairs = w.Flush();
  ASSERT_EQ(repairs.size(), 1u);
  EXPECT_EQ(repairs[0].members, 23u);
  EXPECT_EQ(repairs[0].components, 2u);
  EXPECT_EQ(w.Group(w.GroupOf("http://w.com/")).members(), 21u);
  EXPECT_EQ(w.MembersOf("http://l1.com/"), (Urls{"http://l1.com/", "http://l2.com/"}));
  EXPECT_EQ(w.store().rows().Counter("repairs"), 1);
}

// ---- 7. Case 3 ---------------------------------------------------------------------------------

TEST(Tier1Case3, RedirectJoinsTargetGroup) {
  World w;
  w.Run({Page("http://q2.com/", R(0, 100), 1), Page("http://o.com/", R(1, 101), 5)});
  const uint64_t g = w.GroupOf("http://q2.com/");
  Result r = w.Run({Redirect("http://q1.com/", "http://q2.com/", 1e6)});
  EXPECT_EQ(r.routes[0], Route::kRedirect);
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
    EXPECT_EQ(r.routes[0], Route::kTier2);
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
  EXPECT_EQ(r.routes[0], Route::kRedirect);
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
  EXPECT_EQ(r.routes[0], Route::kTier2);
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

// ---- 8. Status queries -------------------------------------------------------------------------

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

// Between Classify and Apply (and after a batch that was never applied) queries verify against
// the stored versions, and Tier1 keeps no reference to the caller's batch.
TEST(Tier1Status, ClassifiedButUnappliedBatchIsNotUsed) {
  World w;
  w.Run({Page("http://w.com/", R(0, 100), 10), Page("http://l.com/", R(2, 102), 1)});
  {
    const pb::PageSignature next = Sig("http://w.com/", R(1, 101));
    std::vector<PageUpdate> batch = {Update("http://w.com/", &next, "", kCell, 10)};
    std::vector<Route> routes;
    ASSERT_TRUE(w.t1().Classify(batch, &routes).ok());
    EXPECT_EQ(routes[0], Route::kFastPath);
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
  EXPECT_EQ(r.routes[0], Route::kEmpty);
  EXPECT_EQ(r.routes[2], Route::kEmpty);
  EXPECT_NE(w.GroupOf("http://e1.com/"), w.GroupOf("http://e2.com/"));
  ASSERT_EQ(r.outcome.tier2_removals.size(), 1u);
  EXPECT_EQ(r.outcome.tier2_removals[0].first, "http://a.com/");
  EXPECT_EQ(w.Query("http://a.com/").status, StatusAnswer::kUnique);
}

// ---- 9. Market winners -------------------------------------------------------------------------

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

// ---- Winner hysteresis --------------------------------------------------------------------------

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

// ---- 10. Superseded ----------------------------------------------------------------------------

TEST(Tier1Batch, SameUrlTwiceLastVersionWins) {
  World w;
  w.Run({Page("http://o.com/", R(0, 100), 1)});
  Result r = w.Run({Page("http://a.com/", R(5000, 5100)), Page("http://a.com/", R(1, 101), 7)});
  EXPECT_EQ(r.routes[0], Route::kSuperseded);
  EXPECT_EQ(r.routes[1], Route::kTier2);
  EXPECT_EQ(w.PageRec("http://a.com/").content_digest(), Sig("http://a.com/", R(1, 101)).content_digest());
  EXPECT_EQ(w.PageRec("http://a.com/").popularity(), 7);
  EXPECT_EQ(w.GroupOf("http://a.com/"), w.GroupOf("http://o.com/"));
  EXPECT_EQ(w.Group(w.GroupOf("http://a.com/")).members(), 2u);
  // A redirect then content, and content then a redirect.
  r = w.Run({Redirect("http://b.com/", "http://o.com/"), Page("http://b.com/", R(7000, 7100))});
  EXPECT_EQ(r.routes[0], Route::kSuperseded);
  EXPECT_TRUE(w.PageRec("http://b.com/").redirect_to().empty());
  EXPECT_NE(w.GroupOf("http://b.com/"), w.GroupOf("http://o.com/"));
  EXPECT_EQ(w.last_check().redirects, 0u);
  r = w.Run({Page("http://c.com/", R(7000, 7100)), Redirect("http://c.com/", "http://o.com/")});
  EXPECT_EQ(r.routes[0], Route::kSuperseded);
  EXPECT_EQ(r.routes[1], Route::kRedirect);
  EXPECT_EQ(w.GroupOf("http://c.com/"), w.GroupOf("http://o.com/"));
  EXPECT_EQ(w.last_check().redirects, 1u);
}

TEST(Tier1Batch, BadInputIsRefused) {
  World w;
  std::vector<Route> routes;
  std::vector<PageUpdate> batch(1);
  batch[0].url = "http://a.com/";
  EXPECT_EQ(w.t1().Classify(batch, &routes).code(), StatusCode::kInvalidArgument);  // no content, no redirect
  batch[0].url = "";
  batch[0].redirect_to = "http://b.com/";
  EXPECT_EQ(w.t1().Classify(batch, &routes).code(), StatusCode::kInvalidArgument);  // no URL
  const pb::PageSignature sig = Sig("http://a.com/", R(0, 10));
  batch[0] = Update("http://a.com/", &sig);
  ASSERT_TRUE(w.t1().Classify(batch, &routes).ok());
  ApplyOutcome out;
  Tier2Matches m;
  m.resident.push_back({3, "http://x.com/", 1.0});
  EXPECT_EQ(w.t1().Apply(batch, routes, m, nullptr, &out).code(), StatusCode::kInvalidArgument);
  m.resident.clear();
  EXPECT_EQ(w.t1().Apply(batch, {}, m, nullptr, &out).code(), StatusCode::kInvalidArgument);
  w.Check();
  EXPECT_EQ(w.last_check().pages, 0u);
}

TEST(Tier1Batch, KeptPageWithANewHomeCellOwesARemoval) {
  World w;
  const pb::PageSignature a = Sig("http://a.com/", R(0, 100)), b = Sig("http://b.com/", R(1, 101));
  const pb::PageSignature b2 = Sig("http://b.com/", R(2, 102));
  std::vector<PageUpdate> batch = {Update("http://a.com/", &a, "", 1, 10), Update("http://b.com/", &b, "", 1)};
  std::vector<Route> routes;
  ApplyOutcome out;
  ASSERT_TRUE(w.t1().Classify(batch, &routes).ok());
  Tier2Matches m;
  m.in_batch.push_back({0, 1, 99.0 / 101.0});
  ASSERT_TRUE(w.t1().Apply(batch, routes, m, nullptr, &out).ok());
  w.source().sigs = {{"http://a.com/", a}, {"http://b.com/", b}};
  // Unchanged a and fast-path b, both stored in another cell now.
  batch = {Update("http://a.com/", &a, "", 2, 10), Update("http://b.com/", &b2, "", 3)};
  ASSERT_TRUE(w.t1().Classify(batch, &routes).ok());
  EXPECT_EQ(routes[0], Route::kUnchanged);
  EXPECT_EQ(routes[1], Route::kFastPath);
  ASSERT_TRUE(w.t1().Apply(batch, routes, Tier2Matches(), nullptr, &out).ok());
  std::vector<std::pair<std::string, uint32_t>> removals = out.tier2_removals;
  std::sort(removals.begin(), removals.end());
  EXPECT_EQ(removals, (std::vector<std::pair<std::string, uint32_t>>{{"http://a.com/", 1}, {"http://b.com/", 1}}));
  EXPECT_EQ(w.PageRec("http://a.com/").home_cell(), 2u);
  EXPECT_EQ(w.PageRec("http://b.com/").home_cell(), 3u);
  w.Check();
}

TEST(Tier1Batch, ProgressIsCommittedWithTheBatch) {
  World w;
  const pb::PageSignature sig = Sig("http://a.com/", R(0, 10));
  std::vector<PageUpdate> batch = {Update("http://a.com/", &sig, "", 3)};
  std::vector<Route> routes;
  ASSERT_TRUE(w.t1().Classify(batch, &routes).ok());
  pb::Tier1Progress progress;
  progress.set_records_committed(1);
  ApplyOutcome out;
  ASSERT_TRUE(w.t1().Apply(batch, routes, Tier2Matches(), &progress, &out).ok());
  // Turning it into a redirect owes a removal, recorded with the progress.
  batch = {Update("http://a.com/", nullptr, "http://b.com/")};
  ASSERT_TRUE(w.t1().Classify(batch, &routes).ok());
  progress.set_records_committed(2);
  ASSERT_TRUE(w.t1().Apply(batch, routes, Tier2Matches(), &progress, &out).ok());
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
