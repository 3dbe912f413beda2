// CompareBatch: exact against brute force on every shape of corpus, the batch rules, join-only and non-home pages, threads.
#include "tier2/shard_test_util.h"

namespace neardup::tier2 {
namespace {

using namespace shard_test;  // NOLINT: the shard tests' helpers
namespace fs = std::filesystem;

TEST(ShardExactness, MixedSizesAllThresholds) {
  for (uint32_t c : {1u, 2u, 4u}) {
    TempDir dir;
    auto all = Corpus(1, 700, {5, 20, 60, 150, 400}, 7, "http://m/");
    CheckExactSplit(Options(dir.str(), 0.5, c), all, 600, kThresholds);
  }
}

// The verification reads are hinted to the log or not: the answer is exact either way.
TEST(ShardExactness, WithAndWithoutReadAhead) {
  for (bool read_ahead : {true, false}) {
    TempDir dir;
    ShardOptions o = Options(dir.str(), 0.5);
    o.read_ahead = read_ahead;
    auto all = Corpus(4, 600, {20, 80, 300}, 6, "http://r/");
    CheckExactSplit(o, all, 450, kThresholds);
  }
}

TEST(ShardExactness, CountingPerSlotOrBySorting) {
  // The two ways a probe counts its postings per slot give the same candidates: both exact.
  for (uint64_t dense : {uint64_t{0}, uint64_t{1} << 16}) {
    TempDir dir;
    ShardOptions o = Options(dir.str(), 0.5);
    o.dense_count_slots = dense;
    auto all = Corpus(4, 600, {20, 80, 300}, 6, "http://d/");
    CheckExactSplit(o, all, 450, kThresholds);
  }
}

TEST(ShardExactness, EqualLengthPages) {
  TempDir dir;
  auto all = Corpus(2, 500, {100}, 5, "http://e/");
  for (auto& s : all) {  // keep every page at exactly 100 shingles
    std::vector<uint64_t> h(s.shingles().begin(), s.shingles().end());
    h.resize(std::min<size_t>(h.size(), 100));
    while (h.size() < 100) h.push_back(h.size() * 0x9E3779B97F4A7C15ull + 1);
    s = MakeSig(s.url(), h);
  }
  CheckExactSplit(Options(dir.str()), all, 400, kThresholds);
}

TEST(ShardExactness, TinyPages) {
  TempDir dir;
  auto all = Corpus(3, 600, {1, 2, 3}, 3, "http://t/");
  // Tiny pages over a tiny vocabulary: many identical and one-off sets.
  std::mt19937_64 rng(3);
  for (auto& s : all) {
    std::vector<uint64_t> h(1 + rng() % 3);
    for (auto& x : h) x = rng() % 6;
    s = MakeSig(s.url(), h);
  }
  CheckExactSplit(Options(dir.str()), all, 500, kThresholds);
}

namespace {
// `pages` pages http://i/0.. with the same `shingles` hashes.
std::vector<pb::PageSignature> IdenticalSigs(int pages, size_t shingles) {
  std::vector<uint64_t> h(shingles);
  for (size_t i = 0; i < h.size(); ++i) h[i] = i * 7919 + 3;
  std::vector<pb::PageSignature> all;
  for (int i = 0; i < pages; ++i) all.push_back(MakeSig(Name("http://i/", i), h));
  return all;
}
}  // namespace

TEST(ShardExactness, IdenticalPages) {
  TempDir dir;
  const std::vector<pb::PageSignature> all = IdenticalSigs(120, 50);
  CheckExactSplit(Options(dir.str()), all, 100, kThresholds);
}

// Identical pages share every prefix token: each pair is met once per token but must be a
// candidate, and a match, exactly once.
TEST(ShardExactness, IdenticalPagesInOneBatchArePairedOnce) {
  TempDir dir;
  const std::vector<pb::PageSignature> all = IdenticalSigs(60, 200);
  auto shard = Shard::Open(Options(dir.str()));
  ASSERT_TRUE(shard.ok()) << shard.status().ToString();
  auto pages = Pages(all);
  CompareResult r;
  ASSERT_TRUE((*shard)->CompareBatch(pages, 0.8, &r).ok());
  const size_t pairs = 60 * 59 / 2;
  EXPECT_EQ(r.stats.batch_candidates, pairs);
  EXPECT_EQ(r.stats.batch_merged, pairs);  // identical pages pass every filter
  ASSERT_EQ(r.in_batch.size(), pairs);
  for (size_t i = 1; i < r.in_batch.size(); ++i) {
    const auto& p = r.in_batch[i - 1];
    const auto& q = r.in_batch[i];
    EXPECT_TRUE(p.a < q.a || (p.a == q.a && p.b < q.b)) << "pair " << i << " repeated or out of order";
  }
  for (const auto& m : r.in_batch) EXPECT_DOUBLE_EQ(m.similarity, 1.0);
}

TEST(ShardExactness, IndexCutForHighThreshold) {
  TempDir dir;
  auto all = Corpus(4, 500, {30, 200, 800}, 6, "http://h/");
  CheckExactSplit(Options(dir.str(), 0.9, 3), all, 420, {0.9, 0.93, 0.97, 1.0});
}

// Real page signatures: the synthetic generator's families, boilerplate and edits near 0.8/0.9.
TEST(ShardExactness, SignedTextPages) {
  TempDir dir;
  Signer signer({.k = 5, .dims = 3});
  std::mt19937_64 rng(5);
  std::vector<std::string> words;
  for (int i = 0; i < 3000; ++i) words.push_back(Name("w", rng() % 2000));
  std::vector<pb::PageSignature> all;
  std::string footer;
  for (int i = 0; i < 40; ++i) footer += Name(" footer", i % 10);
  for (int i = 0; i < 400; ++i) {
    std::string text;
    const int len = 30 + static_cast<int>(rng() % 300);
    const int start = static_cast<int>((i / 4) * 7 % 2500);  // families of 4 overlapping windows
    for (int w = 0; w < len; ++w) text += words[(start + w + (rng() % 50 == 0 ? rng() % 100 : 0)) % words.size()] + " ";
    text += footer;
    PageFeatures f;
    signer.Sign(text, &f);
    all.push_back(ToProto(Name("http://s/", i), f, signer.options()));
  }
  CheckExactSplit(Options(dir.str()), all, 330, kThresholds);
}

TEST(Shard, NonHomePagesAreComparedButNotStored) {
  TempDir dir;
  auto shard = Shard::Open(Options(dir.str()));
  ASSERT_TRUE(shard.ok());
  std::vector<uint64_t> a(30);
  for (int i = 0; i < 30; ++i) a[i] = 77 + i * 1000;
  std::vector<pb::PageSignature> v = {MakeSig("http://n/1", a)};
  auto p = Pages(v, /*home=*/false);
  ApplyStats st;
  ASSERT_TRUE((*shard)->Apply(p, {}, &st).ok());
  EXPECT_EQ(st.not_home, 1u);
  EXPECT_EQ((*shard)->Stats().resident_pages, 0u);
}

// A join-only page meets the batch's other pages but not the residents, and two join-only pages
// are not paired: the pipeline's pages Tier 1 kept, whose new versions the batch's new pages must
// meet.
TEST(Shard, JoinOnlyPagesMeetTheBatchButNotTheResidents) {
  TempDir dir;
  auto shard = Shard::Open(Options(dir.str()));
  ASSERT_TRUE(shard.ok());
  std::vector<uint64_t> a(40);
  for (int i = 0; i < 40; ++i) a[i] = 300 + i * 7;
  std::vector<pb::PageSignature> resident = {MakeSig("http://j/old", a)};
  auto rp = Pages(resident);
  ASSERT_TRUE((*shard)->Apply(rp, {}, nullptr, 1).ok());
  std::vector<pb::PageSignature> batch = {MakeSig("http://j/kept", a), MakeSig("http://j/kept2", a),
                                          MakeSig("http://j/new", a)};
  auto bp = Pages(batch);
  bp[0].join_only = bp[1].join_only = true;
  CompareResult r;
  ASSERT_TRUE((*shard)->CompareBatch(bp, 0.9, &r).ok());
  ASSERT_EQ(r.resident.size(), 1u);  // the new page's, not the join-only pages'
  EXPECT_EQ(r.resident[0].page, 2u);
  std::set<std::pair<uint32_t, uint32_t>> pairs;
  for (const auto& m : r.in_batch) pairs.emplace(m.a, m.b);
  EXPECT_EQ(pairs, (std::set<std::pair<uint32_t, uint32_t>>{{0, 2}, {1, 2}}));
}

TEST(Shard, BadInputIsRefusedWithItsPlace) {
  TempDir dir;
  ShardOptions o = Options(dir.str(), 0.8);
  o.max_batch_pages = 3;
  auto shard = Shard::Open(o);
  ASSERT_TRUE(shard.ok());
  std::vector<uint64_t> a = {1, 2, 3, 4, 5};
  std::vector<pb::PageSignature> v = {MakeSig("http://b/0", a), MakeSig("http://b/1", a)};
  v[1].set_shingles(0, 9);  // 9, 2, 3, 4, 5: unsorted
  auto p = Pages(v);
  CompareResult r;
  Status s = (*shard)->CompareBatch(p, 0.9, &r);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), testing::HasSubstr("batch page 1 (http://b/1)"));
  s = (*shard)->Apply(p, {});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*shard)->Stats().resident_pages, 0u) << "a refused batch stores nothing";

  std::vector<pb::PageSignature> four(4, MakeSig("http://b/x", a));
  auto p4 = Pages(four);
  s = (*shard)->CompareBatch(p4, 0.9, &r);
  EXPECT_THAT(s.message(), testing::HasSubstr("exceeds max_batch_pages 3"));

  EXPECT_EQ((*shard)->CompareBatch({}, 0.7, &r).code(), StatusCode::kInvalidArgument) << "below min_threshold";

  std::vector<pb::PageSignature> dims = {MakeSig("http://b/d", a, 2)};
  auto pd = Pages(dims);
  s = (*shard)->CompareBatch(pd, 0.9, &r);
  EXPECT_THAT(s.message(), testing::HasSubstr("2 dimensions, the shard has 3"));
  // A page its caller vouches for skips the pass over its hashes, never the shape checks.
  pd[0].validated = true;
  s = (*shard)->CompareBatch(pd, 0.9, &r);
  EXPECT_THAT(s.message(), testing::HasSubstr("2 dimensions, the shard has 3"));
  p[1].validated = true;
  EXPECT_TRUE((*shard)->CompareBatch(p, 0.9, &r).ok()) << "the caller's word is taken";
  p[1].validated = false;

  // Duplicate URL: the last version wins; an empty page is listed, never paired.
  std::vector<pb::PageSignature> dup = {MakeSig("http://b/u", {100, 200}), MakeSig("http://b/v", a),
                                        MakeSig("http://b/u", a)};
  auto pu = Pages(dup);
  ASSERT_TRUE((*shard)->CompareBatch(pu, 0.9, &r).ok());
  EXPECT_EQ(r.superseded, std::vector<uint32_t>{0});
  ASSERT_EQ(r.in_batch.size(), 1u);
  EXPECT_EQ(r.in_batch[0].a, 1u);
  EXPECT_EQ(r.in_batch[0].b, 2u);
  ApplyStats st;
  ASSERT_TRUE((*shard)->Apply(pu, {}, &st).ok());
  EXPECT_EQ(st.superseded, 1u);
  EXPECT_EQ(st.inserted, 2u);
  EXPECT_EQ((*shard)->Get("http://b/u")->shingles_size(), 5);

  std::vector<pb::PageSignature> empty = {MakeSig("http://b/e", {}), MakeSig("http://b/f", {})};
  auto pe = Pages(empty);
  ASSERT_TRUE((*shard)->CompareBatch(pe, 0.9, &r).ok());
  EXPECT_EQ(r.empty, (std::vector<uint32_t>{0, 1}));
  EXPECT_TRUE(r.in_batch.empty());
}

TEST(Shard, ThreadsGiveTheSameAnswer) {
  TempDir d1, d2;
  auto all = Corpus(9, 800, {20, 100, 300}, 6, "http://p/");
  std::vector<pb::PageSignature> resident(all.begin(), all.begin() + 600), batch(all.begin() + 600, all.end());
  ShardOptions o1 = Options(d1.str()), o2 = Options(d2.str());
  o2.threads = 3;
  CompareResult r1, r2;
  for (auto* pr : {&r1, &r2}) {
    auto shard = Shard::Open(pr == &r1 ? o1 : o2);
    ASSERT_TRUE(shard.ok());
    auto pages = Pages(resident);
    ASSERT_TRUE((*shard)->Apply(pages, {}).ok());
    auto b = Pages(batch);
    ASSERT_TRUE((*shard)->CompareBatch(b, 0.6, pr).ok());
  }
  EXPECT_EQ(Found(batch, r1), Found(batch, r2));
  EXPECT_EQ(r1.stats.candidates, r2.stats.candidates);
  // Concurrent readers on one shard.
  auto shard = Shard::Open(o1);
  ASSERT_TRUE(shard.ok());
  auto b = Pages(batch);
  std::vector<CompareResult> rs(4);
  std::vector<std::thread> ts;
  for (auto& r : rs) ts.emplace_back([&] { ASSERT_TRUE((*shard)->CompareBatch(b, 0.6, &r).ok()); });
  for (auto& t : ts) t.join();
  for (const auto& r : rs) EXPECT_EQ(Found(batch, r), Found(batch, r1));
}

}  // namespace
}  // namespace neardup::tier2
