// The index: compactions, rebuilds, its sizing, the derived token order.
#include <fstream>
#include <iterator>
#include <map>
#include <random>

#include "tier2/shard_test_util.h"
#include "tier2/token_order.h"

namespace neardup::tier2 {
namespace {

using namespace shard_test;  // NOLINT: the shard tests' helpers
namespace fs = std::filesystem;

// `n` pages of 4 big "sites": a Corpus body (seed `body_seed`), each page with its site's 40
// header-and-footer shingles (drawn from `boilerplate_seed`); *boilerplate, when given, gets them.
std::vector<pb::PageSignature> SitePages(uint64_t boilerplate_seed, uint64_t body_seed, int n, const std::string& prefix,
                                         std::vector<uint64_t>* boilerplate = nullptr) {
  std::mt19937_64 rng(boilerplate_seed);
  std::vector<std::vector<uint64_t>> sites(4);
  for (auto& b : sites) {
    b.resize(40);
    for (auto& h : b) h = rng();
    if (boilerplate != nullptr) boilerplate->insert(boilerplate->end(), b.begin(), b.end());
  }
  auto body = Corpus(body_seed, n, {20, 60, 200}, 4, prefix);
  std::vector<pb::PageSignature> all;
  for (size_t i = 0; i < body.size(); ++i) {
    std::vector<uint64_t> h(body[i].shingles().begin(), body[i].shingles().end());
    const auto& b = sites[i % sites.size()];
    h.insert(h.end(), b.begin(), b.end());
    all.push_back(MakeSig(body[i].url(), h));
  }
  return all;
}

// Many replacements through a shard that starts tiny: compactions and index rebuilds happen, and
// the answers stay exact.
TEST(Shard, StaysExactThroughCompactionsAndRebuilds) {
  TempDir dir;
  ShardOptions o = Options(dir.str(), 0.6, 2);
  o.expected_pages = 1;
  o.order_sample_pages = 700;  // the order changes midway
  o.frequent_min_pages = 2;
  auto shard = Shard::Open(o);
  ASSERT_TRUE(shard.ok());
  auto all = Corpus(8, 3000, {8, 40, 120}, 5, "http://c/");
  // URLs repeat: page i takes URL i % 1200, so later pages replace earlier ones.
  std::map<std::string, pb::PageSignature> current;
  for (size_t i = 0; i < all.size(); i += 150) {
    std::vector<pb::PageSignature> part;
    for (size_t k = i; k < std::min(all.size(), i + 150); ++k) {
      pb::PageSignature s = all[k];
      s.set_url(Name("http://c/", k % 1200));
      part.push_back(s);
    }
    auto pages = Pages(part);
    ASSERT_TRUE((*shard)->Apply(pages, {}).ok());
    for (const auto& s : part) current[s.url()] = s;
  }
  const ShardStats st = (*shard)->Stats();
  EXPECT_EQ(st.resident_pages, current.size());
  EXPECT_GT(st.compactions + st.rebuilds, 0u);
  std::vector<pb::PageSignature> resident;
  for (const auto& [u, s] : current) resident.push_back(s);
  auto probe = Corpus(8, 200, {8, 40, 120}, 5, "http://probe/");  // same seed: the same families
  auto pages = Pages(probe);
  for (double t : {0.6, 0.8, 1.0}) {
    CompareResult r;
    ASSERT_TRUE((*shard)->CompareBatch(pages, t, &r).ok());
    EXPECT_EQ(Found(probe, r), BruteForce(resident, probe, t)) << t;
  }
}

// A shard told how many prefix postings to expect sizes its index for them up front: filled with
// that many it never rebuilds to grow, where one sized for a few pages rebuilds as it fills.
TEST(Shard, ExpectedPostingsSizeTheIndexSoItDoesNotRebuildToGrow) {
  const auto all = Corpus(9, 4000, {40, 120, 300}, 4, "http://e/");
  uint64_t postings = 0;
  for (const auto& s : all) postings += PrefixLength(static_cast<uint32_t>(s.shingles_size()), 0.6, 2);
  auto fill = [&](uint64_t expected_postings) {
    TempDir dir;
    ShardOptions o = Options(dir.str(), 0.6, 2);
    o.expected_pages = 1;
    o.expected_postings = expected_postings;
    o.order_sample_pages = 0;  // no reorder: only growth rebuilds the index
    auto shard = Shard::Open(o);
    EXPECT_TRUE(shard.ok());
    if (!shard.ok()) return ShardStats{};
    for (size_t i = 0; i < all.size(); i += 200) {
      std::vector<pb::PageSignature> part(all.begin() + static_cast<ptrdiff_t>(i),
                                          all.begin() + static_cast<ptrdiff_t>(std::min(all.size(), i + 200)));
      auto pages = Pages(part);
      EXPECT_TRUE((*shard)->Apply(pages, {}).ok());
    }
    return (*shard)->Stats();
  };
  const ShardStats sized = fill(postings);
  const ShardStats unsized = fill(0);
  EXPECT_EQ(sized.resident_pages, all.size());
  EXPECT_EQ(sized.rebuilds, 0u);
  EXPECT_GT(unsized.rebuilds, 0u);
}

// Pages of a few big "sites" that share a header and footer: the shard derives its token order
// from its first pages (the sites' shingles go last), re-indexes them, stays exact, and keeps the
// order across a restart.
TEST(Shard, DerivedTokenOrderStaysExactAndPersists) {
  TempDir dir;
  ShardOptions o = Options(dir.str(), 0.7, 2);
  o.order_sample_pages = 300;
  o.frequent_min_pages = 3;
  const std::vector<pb::PageSignature> all = SitePages(11, 12, 900, "http://site/");
  std::vector<pb::PageSignature> resident(all.begin(), all.begin() + 800), batch(all.begin() + 800, all.end());
  uint64_t candidates_ordered = 0, postings_ordered = 0;
  {
    auto shard = Shard::Open(o);
    ASSERT_TRUE(shard.ok());
    for (size_t i = 0; i < resident.size(); i += 100) {
      std::vector<pb::PageSignature> part(resident.begin() + i, resident.begin() + i + 100);
      auto pages = Pages(part);
      ASSERT_TRUE((*shard)->Apply(pages, {}).ok());
    }
    const ShardStats st = (*shard)->Stats();
    EXPECT_GT(st.token_order_bits, 0u);
    EXPECT_GE(st.frequent_tokens, 4u * 40);  // every site's boilerplate
    auto pages = Pages(batch);
    for (double t : {0.7, 0.8, 0.9, 1.0}) {
      CompareResult r;
      ASSERT_TRUE((*shard)->CompareBatch(pages, t, &r).ok());
      EXPECT_EQ(Found(batch, r), BruteForce(resident, batch, t)) << t;
      if (t == 0.7) candidates_ordered = r.stats.candidates, postings_ordered = r.stats.postings_scanned;
    }
  }
  auto shard = Shard::Open(o);
  ASSERT_TRUE(shard.ok());
  EXPECT_GT((*shard)->Stats().token_order_bits, 0u);
  auto pages = Pages(batch);
  CompareResult r;
  ASSERT_TRUE((*shard)->CompareBatch(pages, 0.7, &r).ok());
  EXPECT_EQ(Found(batch, r), BruteForce(resident, batch, 0.7));
  // The same order after the restart: the same candidates (postings_scanned also counts fingerprint
  // collisions, which depend on the bucket table sized at open).
  EXPECT_EQ(r.stats.candidates, candidates_ordered);
  // The same pages in plain hash order scan far more postings (the boilerplate's).
  TempDir plain_dir;
  ShardOptions plain = Options(plain_dir.str(), 0.7, 2);
  plain.order_sample_pages = 0;
  auto p = Shard::Open(plain);
  ASSERT_TRUE(p.ok());
  auto rp = Pages(resident);
  ASSERT_TRUE((*p)->Apply(rp, {}).ok());
  CompareResult rh;
  ASSERT_TRUE((*p)->CompareBatch(pages, 0.7, &rh).ok());
  EXPECT_EQ(Found(batch, rh), Found(batch, r));
  EXPECT_GT(rh.stats.postings_scanned, 2 * r.stats.postings_scanned);
  EXPECT_GT(rh.stats.postings_scanned, 2 * postings_ordered);
}

// A shard given an initial order (the sites' boilerplate frequent, as a sample of the collection
// would find it) indexes in it from its first page: exact, far fewer postings scanned than in hash
// order, no rebuild; it still derives its own order once it holds order_sample_pages pages. The
// initial order is not stored: opened again without it, a shard that derived none is back in hash
// order, with the same answers. An initial order that does not deserialize is refused.
TEST(Shard, InitialOrderIsUsedUntilTheShardDerivesItsOwn) {
  std::vector<uint64_t> frequent;
  const std::vector<pb::PageSignature> all = SitePages(12, 13, 600, "http://init/", &frequent);
  std::vector<pb::PageSignature> resident(all.begin(), all.begin() + 500), batch(all.begin() + 500, all.end());
  auto rp = Pages(resident);
  auto pages = Pages(batch);
  const std::set<Pair> truth = BruteForce(resident, batch, 0.7);

  TempDir plain_dir;
  ShardOptions plain = Options(plain_dir.str(), 0.7, 2);
  plain.order_sample_pages = 0;
  auto p = Shard::Open(plain);
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE((*p)->Apply(rp, {}).ok());
  CompareResult rh;
  ASSERT_TRUE((*p)->CompareBatch(pages, 0.7, &rh).ok());
  EXPECT_EQ(Found(batch, rh), truth);

  TempDir dir;
  ShardOptions o = Options(dir.str(), 0.7, 2);
  o.order_sample_pages = 1000;  // more than it will hold: it keeps the initial order
  o.initial_order = TokenOrder::FromFrequent(frequent).Serialize();
  {
    auto shard = Shard::Open(o);
    ASSERT_TRUE(shard.ok());
    ASSERT_TRUE((*shard)->Apply(rp, {}).ok());
    const ShardStats st = (*shard)->Stats();
    EXPECT_GT(st.token_order_bits, 0u);
    EXPECT_EQ(st.frequent_tokens, 0u);  // none derived by the shard
    EXPECT_EQ(st.rebuilds, 0u);
    CompareResult r;
    ASSERT_TRUE((*shard)->CompareBatch(pages, 0.7, &r).ok());
    EXPECT_EQ(Found(batch, r), truth);
    EXPECT_GT(rh.stats.postings_scanned, 2 * r.stats.postings_scanned);
  }
  {
    ShardOptions again = o;
    again.initial_order.clear();
    auto shard = Shard::Open(again);
    ASSERT_TRUE(shard.ok());
    EXPECT_EQ((*shard)->Stats().token_order_bits, 0u);  // hash order
    CompareResult r;
    ASSERT_TRUE((*shard)->CompareBatch(pages, 0.7, &r).ok());
    EXPECT_EQ(Found(batch, r), truth);
    // The same candidates (postings_scanned also counts the bucket table's fingerprint collisions).
    EXPECT_EQ(r.stats.candidates, rh.stats.candidates);
  }
  // Past order_sample_pages the shard derives its own order, which it keeps across a restart.
  TempDir derive_dir;
  ShardOptions d = Options(derive_dir.str(), 0.7, 2);
  d.order_sample_pages = 300;
  d.frequent_min_pages = 3;
  d.initial_order = o.initial_order;
  {
    auto shard = Shard::Open(d);
    ASSERT_TRUE(shard.ok());
    ASSERT_TRUE((*shard)->Apply(rp, {}).ok());
    EXPECT_GE((*shard)->Stats().frequent_tokens, 4u * 40);  // derived: every site's boilerplate
  }
  ShardOptions d_again = d;
  d_again.initial_order.clear();
  auto shard = Shard::Open(d_again);
  ASSERT_TRUE(shard.ok());
  EXPECT_GT((*shard)->Stats().token_order_bits, 0u);
  CompareResult r;
  ASSERT_TRUE((*shard)->CompareBatch(pages, 0.7, &r).ok());
  EXPECT_EQ(Found(batch, r), truth);

  TempDir bad_dir;
  ShardOptions bad = Options(bad_dir.str(), 0.7, 2);
  bad.initial_order = "abc";  // not a power of two bytes
  auto refused = Shard::Open(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("initial token order"), std::string::npos);
}

// Sites that appear after the shard derived its order crowd the prefixes with their header and
// footer; as the shard doubles, it marks those tokens frequent too and re-indexes the pages that
// held them. Answers stay exact (before and after a restart, which rebuilds in the stored order),
// and a probe scans far fewer postings than in the derived order alone.
TEST(Shard, CrowdedTokensGoLastAsTheShardGrows) {
  // The order is derived from sites 0-3; sites 4-7 come later, and make most of the shard.
  std::vector<uint64_t> early_boilerplate, late_boilerplate;
  const std::vector<pb::PageSignature> early = SitePages(31, 32, 200, "http://early/", &early_boilerplate);
  const std::vector<pb::PageSignature> late = SitePages(33, 34, 1400, "http://late/", &late_boilerplate);
  std::vector<pb::PageSignature> resident(early.begin(), early.begin() + 150);
  resident.insert(resident.end(), late.begin(), late.begin() + 1300);
  std::vector<pb::PageSignature> batch(early.begin() + 150, early.end());
  batch.insert(batch.end(), late.begin() + 1300, late.end());
  const std::set<Pair> truth = BruteForce(resident, batch, 0.7);
  auto pages = Pages(batch);

  auto fill = [&](const ShardOptions& o, CompareResult* r, ShardStats* st) {
    auto shard = Shard::Open(o);
    ASSERT_TRUE(shard.ok());
    for (size_t i = 0; i < resident.size(); i += 50) {
      std::vector<pb::PageSignature> part(resident.begin() + i, resident.begin() + std::min(resident.size(), i + 50));
      ASSERT_TRUE((*shard)->Apply(Pages(part), {}).ok());
    }
    ASSERT_TRUE((*shard)->CheckIndex().ok()) << (*shard)->CheckIndex().ToString();
    ASSERT_TRUE((*shard)->CompareBatch(pages, 0.7, r).ok());
    *st = (*shard)->Stats();
  };
  TempDir fixed_dir, dir;
  ShardOptions fixed = Options(fixed_dir.str(), 0.7, 2);
  fixed.order_sample_pages = 150;  // sites 0-3 only
  fixed.frequent_min_pages = 3;
  fixed.crowded_token_pages = 0;
  CompareResult rf, r;
  ShardStats sf, st;
  fill(fixed, &rf, &sf);
  EXPECT_EQ(Found(batch, rf), truth);
  EXPECT_EQ(sf.order_refreshes, 0u);

  ShardOptions o = fixed;
  o.path = dir.str();
  o.crowded_token_pages = 16;
  fill(o, &r, &st);
  EXPECT_EQ(Found(batch, r), truth);
  EXPECT_GE(st.order_refreshes, 1u);  // at 300, 600 and 1200 pages
  EXPECT_GT(st.refreshed_pages, 0u);
  EXPECT_GE(st.frequent_tokens, sf.frequent_tokens + late_boilerplate.size() / 2);
  EXPECT_GT(rf.stats.postings_scanned, 2 * r.stats.postings_scanned);
  EXPECT_LT(r.stats.candidates, rf.stats.candidates);
  {
    // The order marks the late sites' header and footer; the early ones stay marked.
    std::ifstream in(fs::path(dir.str()) / "order", std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto order = TokenOrder::Deserialize(bytes);
    ASSERT_TRUE(order.ok());
    size_t late_marked = 0;
    for (uint64_t h : late_boilerplate) late_marked += order->Frequent(h);
    EXPECT_GE(late_marked, late_boilerplate.size() * 3 / 4);
    for (uint64_t h : early_boilerplate) EXPECT_TRUE(order->Frequent(h));
  }
  // Reopened: the index is rebuilt in the stored order, with the same answers.
  auto shard = Shard::Open(o);
  ASSERT_TRUE(shard.ok());
  CompareResult again;
  ASSERT_TRUE((*shard)->CompareBatch(pages, 0.7, &again).ok());
  EXPECT_EQ(Found(batch, again), truth);
  EXPECT_LE(again.stats.candidates, r.stats.candidates);
}

// A refresh is spread over the writes that follow it (refresh_pages_per_stage): the pages stored,
// replaced and removed while it reads the pages it concerns end up indexed in its order, every
// answer on the way is exact, and so is every answer after a restart that cuts it short.
TEST(Shard, OrderRefreshSpreadOverWritesStaysExact) {
  const std::vector<pb::PageSignature> early = SitePages(41, 42, 150, "http://early/");
  const std::vector<pb::PageSignature> late = SitePages(43, 44, 2000, "http://late/");
  // Every 16th late page is a probe, never stored: its family's other pages are (families of 4).
  std::vector<pb::PageSignature> probe, stored(early.begin(), early.end());
  for (size_t i = 0; i < late.size(); ++i) (i % 16 == 15 ? probe : stored).push_back(late[i]);
  TempDir dir;
  ShardOptions o = Options(dir.str(), 0.7, 2);
  o.order_sample_pages = 150;  // the early sites only
  o.frequent_min_pages = 3;
  o.crowded_token_pages = 16;
  o.refresh_pages_per_stage = 8;
  o.expected_pages = 1 << 14;  // no rebuild to grow, which would index every page anew
  std::map<std::string, pb::PageSignature> model;  // URL -> resident page
  std::mt19937_64 rng(45);
  auto check = [&](Shard& shard, const std::string& when) {
    std::vector<pb::PageSignature> resident;
    for (const auto& [url, sig] : model) resident.push_back(sig);
    CompareResult r;
    ASSERT_TRUE(shard.CheckIndex().ok()) << when << ": " << shard.CheckIndex().ToString();
    ASSERT_TRUE(shard.CompareBatch(Pages(probe), 0.7, &r).ok());
    EXPECT_EQ(Found(probe, r), BruteForce(resident, probe, 0.7)) << when;
  };
  auto shard = Shard::Open(o);
  ASSERT_TRUE(shard.ok());
  size_t next = 0;
  int applies_while_due = 0;  // Applies that began with the first refresh due and not finished
  bool restarted = false;
  while (next < stored.size()) {
    const bool due = model.size() >= 300 && (*shard)->Stats().order_refreshes == 0;
    std::vector<pb::PageSignature> part(stored.begin() + next, stored.begin() + std::min(stored.size(), next + 50));
    next += part.size();
    std::vector<std::string> removed;
    if (model.size() >= 300) {
      // Replace a few resident late pages (a tenth of their shingles redrawn) and remove a few.
      std::vector<std::string> urls;
      for (const auto& [url, sig] : model) {
        if (url.starts_with("http://late/")) urls.push_back(url);
      }
      for (int k = 0; k < 4; ++k) {
        const pb::PageSignature& old = model[urls[rng() % urls.size()]];
        std::vector<uint64_t> h(old.shingles().begin(), old.shingles().end());
        for (size_t j = 0; j < h.size() / 10 + 1; ++j) h[rng() % h.size()] = rng();
        part.push_back(MakeSig(old.url(), h));
      }
      for (int k = 0; k < 3; ++k) removed.push_back(urls[rng() % urls.size()]);
    }
    ASSERT_TRUE((*shard)->Apply(Pages(part), removed).ok());
    for (const std::string& url : removed) model.erase(url);
    for (const pb::PageSignature& sig : part) model[sig.url()] = sig;  // (stored after the removals)
    applies_while_due += due;
    check(**shard, "after " + std::to_string(next) + " pages");
    if (!restarted && applies_while_due == 2) {
      // A restart in the middle of the refresh: the index is rebuilt in the order in force. The
      // next refresh (due when the shard has doubled) reads more pages a Stage.
      EXPECT_EQ((*shard)->Stats().order_refreshes, 0u);
      shard->reset();
      o.refresh_pages_per_stage = 64;
      shard = Shard::Open(o);
      ASSERT_TRUE(shard.ok());
      check(**shard, "after the restart");
      restarted = true;
    }
  }
  const ShardStats st = (*shard)->Stats();
  EXPECT_TRUE(restarted);
  EXPECT_GE(st.order_refreshes, 1u);  // due again at twice the pages held at the restart
  EXPECT_GT(st.refreshed_pages, 0u);
  shard->reset();
  shard = Shard::Open(o);
  ASSERT_TRUE(shard.ok());
  check(**shard, "reopened at the end");
}

}  // namespace
}  // namespace neardup::tier2
