// CompareBatch under max_matches_per_page (tier2/README.md: Copies) and its deadline: a page of a
// crowd of copies gets at most K matches, one of each content before a second copy; stale URLs
// neither match nor take a kept match's place; copies in a batch are answered through their
// first page; the in-batch pairs kept connect, at every step Tier 1 takes, what every pair
// connects; and a compare stops at its deadline.
#include <chrono>
#include <numeric>

#include "common/url_hash_map.h"
#include "tier2/shard_test_util.h"

namespace neardup::tier2 {
namespace {

using namespace shard_test;  // NOLINT: the shard tests' helpers
using Clock = std::chrono::steady_clock;

ShardOptions Capped(const std::string& path, uint32_t cap) {
  ShardOptions o = Options(path, 0.8);
  o.max_matches_per_page = cap;
  return o;
}

// `n` distinct hashes drawn from `seed`.
std::vector<uint64_t> Text(uint64_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> h(n);
  for (auto& x : h) x = rng();
  return h;
}
// `x` with its first `changes` hashes replaced: Jaccard (n - changes) / (n + changes) to x.
std::vector<uint64_t> Edit(std::vector<uint64_t> x, size_t changes, uint64_t salt) {
  for (size_t i = 0; i < changes; ++i) x[i] = (salt + 1) * 0x9E3779B97F4A7C15ull + i * 0xC2B2AE3D27D4EB4Full;
  return x;
}
// `n` copies of `text` at prefix0, prefix1, ...
std::vector<pb::PageSignature> Copies(const std::string& prefix, const std::vector<uint64_t>& text, int n) {
  std::vector<pb::PageSignature> v;
  for (int i = 0; i < n; ++i) v.push_back(MakeSig(Name(prefix, i), text));
  return v;
}
void Load(Shard& shard, const std::vector<pb::PageSignature>& pages) {
  for (size_t i = 0; i < pages.size(); i += 500) {
    std::vector<pb::PageSignature> part(pages.begin() + i, pages.begin() + std::min(pages.size(), i + 500));
    auto p = Pages(part);
    ASSERT_TRUE(shard.Apply(p, {}).ok());
  }
}

TEST(ShardCap, APageOfACrowdOfCopiesGetsAtMostKMatches) {
  const std::vector<uint64_t> text = Text(1, 40);
  for (uint32_t cap : {0u, 1u, 8u}) {
    SCOPED_TRACE("cap " + std::to_string(cap));
    TempDir dir;
    auto shard = Shard::Open(Capped(dir.str(), cap));
    ASSERT_TRUE(shard.ok());
    ASSERT_NO_FATAL_FAILURE(Load(**shard, Copies("http://copy/", text, 600)));
    std::vector<pb::PageSignature> batch = {MakeSig("http://new/", text)};
    auto pages = Pages(batch);
    CompareResult r;
    ASSERT_TRUE((*shard)->CompareBatch(pages, 0.9, &r).ok());
    ASSERT_EQ(r.resident.size(), cap == 0 ? 600u : cap);
    for (const auto& m : r.resident) {
      EXPECT_EQ(m.page, 0u);
      EXPECT_EQ(m.url.rfind("http://copy/", 0), 0u) << m.url;
      EXPECT_DOUBLE_EQ(m.similarity, 1.0);
    }
    // The verifications stop with the cap: the crowd costs K reads, not one a copy.
    EXPECT_EQ(r.stats.verifications, cap == 0 ? 600u : cap);
    EXPECT_EQ(r.stats.capped_pages, cap == 0 ? 0u : 1u);
  }
}

// A page of another group among a crowd of copies: a copy's content is met once before any
// second copy, so the cap leaves room for the other pages (within the window a probe reads of a
// crowd, 16 K postings a token, 64 at a cap of 4: these are 63).
TEST(ShardCap, OneOfEachContentComesBeforeASecondCopy) {
  TempDir dir;
  auto shard = Shard::Open(Capped(dir.str(), 4));
  ASSERT_TRUE(shard.ok());
  const std::vector<uint64_t> text = Text(2, 40);
  std::vector<pb::PageSignature> resident = Copies("http://copy/", text, 60);
  for (int i = 0; i < 3; ++i) resident.push_back(MakeSig(Name("http://other/", i), Edit(text, 1, i)));  // J 0.95
  ASSERT_NO_FATAL_FAILURE(Load(**shard, resident));
  std::vector<pb::PageSignature> batch = {MakeSig("http://new/", text)};
  auto pages = Pages(batch);
  CompareResult r;
  ASSERT_TRUE((*shard)->CompareBatch(pages, 0.9, &r).ok());
  std::set<std::string> urls;
  for (const auto& m : r.resident) urls.insert(m.url.substr(0, m.url.rfind('/') + 1));
  ASSERT_EQ(r.resident.size(), 4u);
  EXPECT_EQ(urls, (std::set<std::string>{"http://copy/", "http://other/"}));
  EXPECT_EQ(std::count_if(r.resident.begin(), r.resident.end(),
                          [](const ResidentMatch& m) { return m.url.rfind("http://other/", 0) == 0; }),
            3);
}

// A crowd of distinct near-copies (a soft-404 family) far larger than the window: a page of it
// reads a window of each of its prefix tokens' postings, not one posting per page of the crowd,
// and gets its K matches from there.
TEST(ShardCap, ACrowdBeyondTheWindowCostsAPageTheWindowOnly) {
  const std::vector<uint64_t> text = Text(10, 40);
  std::vector<pb::PageSignature> crowd;
  for (int i = 0; i < 3000; ++i) {  // each 0.95 from the text, 0.905 from one another
    crowd.push_back(MakeSig(Name("http://soft404/", i), Edit(text, 1, i)));
  }
  for (uint32_t cap : {0u, 4u}) {
    SCOPED_TRACE("cap " + std::to_string(cap));
    TempDir dir;
    auto shard = Shard::Open(Capped(dir.str(), cap));
    ASSERT_TRUE(shard.ok());
    ASSERT_NO_FATAL_FAILURE(Load(**shard, crowd));
    std::vector<pb::PageSignature> batch = {MakeSig("http://new/", Edit(text, 1, 9999))};
    auto pages = Pages(batch);
    CompareResult r;
    ASSERT_TRUE((*shard)->CompareBatch(pages, 0.9, &r).ok());
    if (cap == 0) {
      EXPECT_EQ(r.resident.size(), 3000u);
      EXPECT_GE(r.stats.postings_scanned, 3000u);
    } else {
      EXPECT_EQ(r.resident.size(), cap);
      EXPECT_EQ(r.stats.capped_pages, 1u);
      EXPECT_LT(r.stats.postings_scanned, 3000u) << "the probe read the crowd";
    }
  }
}

// When the window's candidates give fewer than K matches, the page is probed in full: a crowd
// sharing the page's prefix tokens but not near it does not hide its one copy, indexed last.
TEST(ShardCap, AWindowThatFallsShortIsFollowedByTheWholeProbe) {
  ShardOptions o;
  TempDir dir;
  o = Capped(dir.str(), 2);
  o.order_sample_pages = 0;   // hash order throughout: the crowd keeps sharing the page's prefix
  o.crowded_token_pages = 0;
  auto shard = Shard::Open(o);
  ASSERT_TRUE(shard.ok());
  std::vector<uint64_t> text(40);
  for (size_t i = 0; i < text.size(); ++i) text[i] = 1000 + i * 7919;  // low hashes: first in hash order
  std::vector<pb::PageSignature> resident;
  std::mt19937_64 rng(11);
  for (int i = 0; i < 2000; ++i) {  // text's 20 first tokens and 20 high ones: Jaccard 1/3
    std::vector<uint64_t> h(text.begin(), text.begin() + 20);
    for (int k = 0; k < 20; ++k) h.push_back(rng() | (uint64_t{1} << 63));
    resident.push_back(MakeSig(Name("http://crowd/", i), h));
  }
  resident.push_back(MakeSig("http://copy/", text));
  ASSERT_NO_FATAL_FAILURE(Load(**shard, resident));
  std::vector<pb::PageSignature> batch = {MakeSig("http://new/", text)};
  auto pages = Pages(batch);
  CompareResult r;
  ASSERT_TRUE((*shard)->CompareBatch(pages, 0.9, &r).ok());
  ASSERT_EQ(r.resident.size(), 1u);
  EXPECT_EQ(r.resident[0].url, "http://copy/");
  EXPECT_GE(r.stats.postings_scanned, 2000u) << "the whole probe";
}

// Resident versions the batch replaces (its own URLs under a cap, and the caller's stale URLs
// always) are not matched, and do not use up the cap: the one copy left is found behind 99 stale.
TEST(ShardCap, StaleResidentsNeitherMatchNorUseUpTheCap) {
  const std::vector<uint64_t> text = Text(3, 40);
  std::vector<uint64_t> stale;
  for (int i = 0; i < 99; ++i) stale.push_back(UrlHash(Name("http://copy/", i)));
  for (uint32_t cap : {0u, 4u}) {
    SCOPED_TRACE("cap " + std::to_string(cap));
    TempDir dir;
    auto shard = Shard::Open(Capped(dir.str(), cap));
    ASSERT_TRUE(shard.ok());
    ASSERT_NO_FATAL_FAILURE(Load(**shard, Copies("http://copy/", text, 100)));
    std::vector<pb::PageSignature> batch = {MakeSig("http://new/", text)};
    auto pages = Pages(batch);
    CompareOptions compare;
    compare.stale_url_hashes = stale;
    CompareResult r;
    ASSERT_TRUE((*shard)->CompareBatch(pages, 0.9, &r, compare).ok());
    ASSERT_EQ(r.resident.size(), 1u);
    EXPECT_EQ(r.resident[0].url, "http://copy/99");
    EXPECT_EQ(r.stats.capped_pages, 0u);
  }
  // A URL of the batch (here with new content): its resident version is stale under a cap only.
  for (uint32_t cap : {0u, 4u}) {
    TempDir dir;
    auto shard = Shard::Open(Capped(dir.str(), cap));
    ASSERT_TRUE(shard.ok());
    ASSERT_NO_FATAL_FAILURE(Load(**shard, Copies("http://copy/", text, 2)));
    std::vector<pb::PageSignature> batch = {MakeSig("http://new/", text), MakeSig("http://copy/0", Text(4, 40))};
    auto pages = Pages(batch);
    CompareResult r;
    ASSERT_TRUE((*shard)->CompareBatch(pages, 0.9, &r).ok());
    std::set<std::string> urls;
    for (const auto& m : r.resident) urls.insert(m.url);
    const std::set<std::string> want =
        cap == 0 ? std::set<std::string>{"http://copy/0", "http://copy/1"} : std::set<std::string>{"http://copy/1"};
    EXPECT_EQ(urls, want);
  }
}

// Copies in a batch: the first probes the residents and joins the batch; every other is paired
// with it alone.
TEST(ShardCap, CopiesInABatchAreAnsweredThroughTheFirst) {
  TempDir dir;
  auto shard = Shard::Open(Capped(dir.str(), 8));
  ASSERT_TRUE(shard.ok());
  const std::vector<uint64_t> text = Text(5, 40);
  ASSERT_NO_FATAL_FAILURE(Load(**shard, Copies("http://copy/", text, 50)));
  std::vector<pb::PageSignature> batch = {MakeSig("http://other/", Text(6, 40))};
  for (const auto& s : Copies("http://b/", text, 200)) batch.push_back(s);
  batch.push_back(MakeSig("http://kept/", Edit(text, 1, 7)));  // a join-only page near them
  auto pages = Pages(batch);
  pages.back().join_only = true;
  CompareResult r;
  ASSERT_TRUE((*shard)->CompareBatch(pages, 0.9, &r).ok());
  EXPECT_EQ(r.stats.copies, 199u);
  EXPECT_EQ(r.resident.size(), 8u);
  for (const auto& m : r.resident) EXPECT_EQ(m.page, 1u) << m.url;
  std::set<std::pair<uint32_t, uint32_t>> pairs, want;
  for (const auto& m : r.in_batch) pairs.emplace(m.a, m.b);
  for (uint32_t i = 2; i <= 200; ++i) want.emplace(1, i);
  want.emplace(1, 201);  // the join-only page meets the first copy only
  EXPECT_EQ(pairs, want);
  EXPECT_EQ(r.in_batch.size(), want.size());
}

// Tier 1 applies an in-batch pair when it decides the later of its pages (a join-only page is in
// its group before any is decided): what the pages before it and the page are connected through,
// step by step, is the same with the pairs a cap keeps as with every pair.
std::vector<std::vector<uint32_t>> Steps(const std::vector<pb::PageSignature>& batch,
                                         const std::vector<bool>& join_only,
                                         const std::vector<std::pair<uint32_t, uint32_t>>& pairs) {
  const uint32_t n = static_cast<uint32_t>(batch.size());
  std::vector<uint32_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0u);
  auto root = [&](uint32_t p) {
    while (parent[p] != p) p = parent[p] = parent[parent[p]];
    return p;
  };
  std::vector<std::vector<uint32_t>> partners(n);
  for (const auto& [a, b] : pairs) {
    if (join_only[a] && join_only[b]) continue;  // nobody asked
    const bool b_later = join_only[a] || (!join_only[b] && b > a);
    partners[b_later ? b : a].push_back(b_later ? a : b);
  }
  // After each step: every page's component, named by its smallest page.
  std::vector<std::vector<uint32_t>> steps;
  for (uint32_t b = 0; b < n; ++b) {
    if (join_only[b]) continue;
    for (uint32_t a : partners[b]) parent[root(a)] = root(b);
    std::vector<uint32_t> smallest(n, n), name(n);
    for (uint32_t p = 0; p < n; ++p) smallest[root(p)] = std::min(smallest[root(p)], p);
    for (uint32_t p = 0; p < n; ++p) name[p] = smallest[root(p)];
    steps.push_back(std::move(name));
  }
  return steps;
}

TEST(ShardCap, InBatchPairsKeptConnectWhatEveryPairConnectsAtEveryStep) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    // Crowds of distinct near-copies (each pair at 0.82..0.95), a few chains, unrelated pages, and
    // join-only pages among them, in a shuffled order.
    std::mt19937_64 rng(seed);
    std::vector<pb::PageSignature> batch;
    for (int crowd = 0; crowd < 4; ++crowd) {
      const std::vector<uint64_t> text = Text(100 + seed * 10 + crowd, 60);
      const std::string prefix = Name("http://c", crowd) + "/";
      for (int i = 0; i < 120; ++i) batch.push_back(MakeSig(Name(prefix, i), Edit(text, 1 + rng() % 3, rng())));
    }
    std::vector<uint64_t> chain = Text(200 + seed, 60);
    for (int i = 0; i < 30; ++i) {  // each 0.94 from the one before, far from the first after a few
      batch.push_back(MakeSig(Name("http://chain/", i), chain));
      for (int k = 0; k < 2; ++k) chain[rng() % chain.size()] = rng();
    }
    for (int i = 0; i < 60; ++i) batch.push_back(MakeSig(Name("http://u/", i), Text(300 + seed * 100 + i, 60)));
    std::shuffle(batch.begin(), batch.end(), rng);
    std::vector<bool> join_only(batch.size());
    for (size_t i = 0; i < batch.size(); ++i) join_only[i] = rng() % 10 == 0;
    std::vector<std::pair<uint32_t, uint32_t>> every;
    std::map<std::string, uint32_t> index;
    for (uint32_t i = 0; i < batch.size(); ++i) index[batch[i].url()] = i;
    for (const auto& p : BruteForce({}, batch, 0.9)) every.emplace_back(index[p.a], index[p.b]);
    const auto want = Steps(batch, join_only, every);
    for (uint32_t cap : {1u, 2u, 5u}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + ", cap " + std::to_string(cap));
      TempDir dir;
      auto shard = Shard::Open(Capped(dir.str(), cap));
      ASSERT_TRUE(shard.ok());
      auto pages = Pages(batch);
      for (size_t i = 0; i < pages.size(); ++i) pages[i].join_only = join_only[i];
      CompareResult r;
      ASSERT_TRUE((*shard)->CompareBatch(pages, 0.9, &r).ok());
      std::vector<std::pair<uint32_t, uint32_t>> kept;
      const std::set<Pair> truth = BruteForce({}, batch, 0.9);
      for (const auto& m : r.in_batch) {
        kept.emplace_back(m.a, m.b);
        const std::string &a = batch[m.a].url(), &b = batch[m.b].url();
        EXPECT_EQ(truth.count(a < b ? Pair{a, b} : Pair{b, a}), 1u) << a << " " << b << " is no pair";
      }
      EXPECT_EQ(Steps(batch, join_only, kept), want);
      // A crowd of 120 costs each page about the cap's merges, not one per page before it.
      EXPECT_LT(r.stats.batch_merged, every.size() / 4) << "of " << every.size() << " pairs";
      EXPECT_GT(r.stats.batch_connected, 0u);
    }
  }
}

// Under a cap too, the answer does not depend on how many workers share the batch's pages, and
// concurrent compares on one shard each get it.
TEST(ShardCap, ThreadsGiveTheSameAnswer) {
  const std::vector<uint64_t> text = Text(12, 40);
  std::vector<pb::PageSignature> resident = Copies("http://copy/", text, 300);
  for (int i = 0; i < 300; ++i) resident.push_back(MakeSig(Name("http://near/", i), Edit(text, 1, i)));
  for (const auto& s : Corpus(13, 300, {20, 60}, 5, "http://other/")) resident.push_back(s);
  std::vector<pb::PageSignature> batch = Copies("http://b/", text, 40);
  for (int i = 0; i < 40; ++i) batch.push_back(MakeSig(Name("http://bnear/", i), Edit(text, 2, 1000 + i)));
  for (const auto& s : Corpus(14, 80, {20, 60}, 5, "http://bother/")) batch.push_back(s);
  std::vector<CompareResult> results(2);
  TempDir d1, d2;
  std::unique_ptr<Shard> shard;
  for (int k = 0; k < 2; ++k) {
    ShardOptions o = Capped((k == 0 ? d1 : d2).str(), 4);
    o.threads = k == 0 ? 1 : 3;
    auto opened = Shard::Open(o);
    ASSERT_TRUE(opened.ok());
    shard = std::move(*opened);
    ASSERT_NO_FATAL_FAILURE(Load(*shard, resident));
    auto pages = Pages(batch);
    ASSERT_TRUE(shard->CompareBatch(pages, 0.9, &results[k]).ok());
  }
  EXPECT_EQ(Found(batch, results[0]), Found(batch, results[1]));
  EXPECT_EQ(results[0].stats.verifications, results[1].stats.verifications);
  EXPECT_GT(results[0].stats.capped_pages, 0u);
  auto pages = Pages(batch);
  std::vector<CompareResult> rs(4);
  std::vector<std::thread> ts;
  for (auto& r : rs) ts.emplace_back([&] { ASSERT_TRUE(shard->CompareBatch(pages, 0.9, &r).ok()); });
  for (auto& t : ts) t.join();
  for (const auto& r : rs) EXPECT_EQ(Found(batch, r), Found(batch, results[0]));
}

// Deadlines: a compare whose deadline passes while it works stops there, answering
// DeadlineExceeded and nothing else, long before its work would end; one whose deadline has passed
// does nothing; the shard answers the next compare in full.
TEST(ShardDeadline, ACompareStopsAtItsDeadline) {
  TempDir dir;
  auto shard = Shard::Open(Capped(dir.str(), 0));  // every pair: a crowd costs the whole crowd
  ASSERT_TRUE(shard.ok());
  const std::vector<uint64_t> text = Text(8, 20);
  ASSERT_NO_FATAL_FAILURE(Load(**shard, Copies("http://copy/", text, 4000)));
  const std::vector<pb::PageSignature> batch = Copies("http://b/", text, 1000);  // 4M verifications, 500k merges
  auto pages = Pages(batch);
  const std::vector<pb::PageSignature> small = {MakeSig("http://s/", text)};
  auto small_pages = Pages(small);

  CompareResult r;
  CompareOptions compare;
  compare.deadline = Clock::now() - std::chrono::milliseconds(1);
  Status s = (*shard)->CompareBatch(pages, 0.9, &r, compare);
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
  EXPECT_TRUE(r.resident.empty() && r.in_batch.empty());

  const auto t0 = Clock::now();
  compare.deadline = t0 + std::chrono::milliseconds(50);
  s = (*shard)->CompareBatch(pages, 0.9, &r, compare);
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
  EXPECT_THAT(s.message(), testing::HasSubstr("passed its deadline"));
  EXPECT_TRUE(r.resident.empty() && r.in_batch.empty() && r.stats.resident_pairs == 0);
  EXPECT_LT(seconds, 1.0) << "a compare past its deadline goes on";

  // A batch whose pages meet no resident page: stopped in the in-batch join.
  std::vector<pb::PageSignature> many = Copies("http://j/", Text(9, 20), 3000);
  auto join_pages = Pages(many);
  compare.deadline = Clock::now() + std::chrono::milliseconds(50);
  const auto t1 = Clock::now();
  s = (*shard)->CompareBatch(join_pages, 0.9, &r, compare);  // 4.5M merges
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded) << s.ToString();
  EXPECT_THAT(s.message(), testing::HasSubstr("in the in-batch join"));
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t1).count(), 1.0);

  compare.deadline = Clock::now() + std::chrono::seconds(60);
  ASSERT_TRUE((*shard)->CompareBatch(small_pages, 0.9, &r, compare).ok());
  EXPECT_EQ(r.resident.size(), 4000u);
}

}  // namespace
}  // namespace neardup::tier2
