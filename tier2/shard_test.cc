#include "tier2/shard.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "baseline/all_pairs.h"
#include "common/url_hash_map.h"
#include "document/shingle.h"
#include "document/signature.h"
#include "testing/signatures.h"
#include "testing/temp_dir.h"
#include "tier2/prefix_filter.h"

namespace neardup::tier2 {
namespace {

namespace fs = std::filesystem;

// "prefix" + number (GCC 12 warns falsely on const char* + std::to_string()).
std::string Name(std::string prefix, uint64_t n) {
  prefix += std::to_string(n);
  return prefix;
}

using test::TempDir;

pb::PageSignature MakeSig(const std::string& url, std::vector<uint64_t> hashes, int dims = 3) {
  return test::SignatureOf(url, std::move(hashes), dims);
}

std::vector<ShardPage> Pages(const std::vector<pb::PageSignature>& sigs, bool home = true) {
  std::vector<ShardPage> out;
  for (const auto& s : sigs) out.push_back(ShardPage{&s, home});
  return out;
}

ShardOptions Options(const std::string& path, double min_threshold = 0.5, uint32_t c = 2) {
  ShardOptions o;
  o.path = path;
  o.dims = 3;
  o.min_threshold = min_threshold;
  o.prefix_overlap = c;
  o.sync = false;
  o.expected_pages = 256;
  return o;
}

// A corpus shaped to stress the filters: families of near-copies whose Jaccard to the family's
// source spreads across 0.4..1.0, with sizes drawn from `sizes`.
std::vector<pb::PageSignature> Corpus(uint64_t seed, int n, const std::vector<int>& sizes, int family_size,
                                      const std::string& prefix) {
  std::mt19937_64 rng(seed);
  std::vector<pb::PageSignature> out;
  std::vector<uint64_t> base;
  for (int i = 0; i < n; ++i) {
    if (i % family_size == 0) {
      base.assign(static_cast<size_t>(sizes[rng() % sizes.size()]), 0);
      for (auto& h : base) h = rng();
    }
    std::vector<uint64_t> page = base;
    if (i % family_size != 0 && !page.empty()) {
      // Replace a share of the tokens: Jaccard = (n - r) / (n + r).
      const size_t r = rng() % (page.size() / 3 + 2);
      for (size_t k = 0; k < r && k < page.size(); ++k) page[rng() % page.size()] = rng();
      if (rng() % 4 == 0) page.push_back(rng());  // sizes differ by one
    }
    out.push_back(MakeSig(Name(prefix, i), page));
  }
  return out;
}

struct Pair {
  std::string a, b;  // urls, a < b
  bool operator<(const Pair& o) const { return a != o.a ? a < o.a : b < o.b; }
  bool operator==(const Pair& o) const { return a == o.a && b == o.b; }
};

std::set<Pair> MakePairSet(const std::vector<std::pair<std::string, std::string>>& v) {
  std::set<Pair> s;
  for (const auto& [a, b] : v) s.insert(a < b ? Pair{a, b} : Pair{b, a});
  return s;
}

// Every pair the brute force finds between batch and resident, and within the batch.
std::set<Pair> BruteForce(const std::vector<pb::PageSignature>& resident, const std::vector<pb::PageSignature>& batch,
                          double t) {
  std::vector<std::pair<std::string, std::string>> v;
  auto span = [](const pb::PageSignature& s) {
    return std::span<const uint64_t>(s.shingles().data(), static_cast<size_t>(s.shingles_size()));
  };
  for (size_t i = 0; i < batch.size(); ++i) {
    for (const auto& r : resident) {
      if (r.url() == batch[i].url()) continue;
      if (JaccardAtLeast(Overlap(span(batch[i]), span(r)), batch[i].shingles_size(), r.shingles_size(), t)) {
        v.emplace_back(batch[i].url(), r.url());
      }
    }
    for (size_t j = i + 1; j < batch.size(); ++j) {
      if (JaccardAtLeast(Overlap(span(batch[i]), span(batch[j])), batch[i].shingles_size(),
                         batch[j].shingles_size(), t)) {
        v.emplace_back(batch[i].url(), batch[j].url());
      }
    }
  }
  return MakePairSet(v);
}

std::set<Pair> Found(const std::vector<pb::PageSignature>& batch, const CompareResult& r) {
  std::vector<std::pair<std::string, std::string>> v;
  for (const auto& m : r.resident) v.emplace_back(batch[m.page].url(), m.url);
  for (const auto& m : r.in_batch) v.emplace_back(batch[m.a].url(), batch[m.b].url());
  return MakePairSet(v);
}

// Loads `resident` in batches of 97, then compares `batch` at every threshold and checks the
// answer against brute force, pair for pair, with exact similarities in range.
void CheckExact(const ShardOptions& options, const std::vector<pb::PageSignature>& resident,
                const std::vector<pb::PageSignature>& batch, const std::vector<double>& thresholds) {
  auto shard = Shard::Open(options);
  ASSERT_TRUE(shard.ok()) << shard.status().ToString();
  for (size_t i = 0; i < resident.size(); i += 97) {
    std::vector<pb::PageSignature> part(resident.begin() + i, resident.begin() + std::min(resident.size(), i + 97));
    auto pages = Pages(part);
    ASSERT_TRUE((*shard)->Apply(pages, {}).ok());
  }
  auto pages = Pages(batch);
  for (double t : thresholds) {
    CompareResult r;
    ASSERT_TRUE((*shard)->CompareBatch(pages, t, &r).ok());
    EXPECT_EQ(Found(batch, r), BruteForce(resident, batch, t)) << "threshold " << t;
    for (const auto& m : r.resident) EXPECT_GE(m.similarity, t - 1e-9);
    for (const auto& m : r.in_batch) EXPECT_GE(m.similarity, t - 1e-9);
  }
}

// CheckExact with the first `resident` pages of `all` resident and the rest as the batch.
void CheckExactSplit(const ShardOptions& options, const std::vector<pb::PageSignature>& all, size_t resident,
                     const std::vector<double>& thresholds) {
  std::vector<pb::PageSignature> r(all.begin(), all.begin() + resident), b(all.begin() + resident, all.end());
  CheckExact(options, r, b, thresholds);
}

const std::vector<double> kThresholds = {0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0};

TEST(ShardExactness, MixedSizesAllThresholds) {
  for (uint32_t c : {1u, 2u, 4u}) {
    TempDir dir;
    auto all = Corpus(1, 700, {5, 20, 60, 150, 400}, 7, "http://m/");
    CheckExactSplit(Options(dir.str(), 0.5, c), all, 600, kThresholds);
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

TEST(Shard, SurvivesRestartWithTheSameAnswers) {
  TempDir dir;
  auto all = Corpus(6, 400, {10, 80, 300}, 4, "http://r/");
  std::vector<pb::PageSignature> resident(all.begin(), all.begin() + 350), batch(all.begin() + 350, all.end());
  CompareResult before, after;
  {
    auto shard = Shard::Open(Options(dir.str()));
    ASSERT_TRUE(shard.ok());
    auto pages = Pages(resident);
    ASSERT_TRUE((*shard)->Apply(pages, {}).ok());
    auto b = Pages(batch);
    ASSERT_TRUE((*shard)->CompareBatch(b, 0.7, &before).ok());
  }
  auto shard = Shard::Open(Options(dir.str()));
  ASSERT_TRUE(shard.ok()) << shard.status().ToString();
  EXPECT_EQ((*shard)->Stats().resident_pages, resident.size());
  auto b = Pages(batch);
  ASSERT_TRUE((*shard)->CompareBatch(b, 0.7, &after).ok());
  EXPECT_EQ(Found(batch, after), Found(batch, before));
  EXPECT_FALSE(Found(batch, after).empty());
  auto got = (*shard)->Get(resident[17].url());
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->SerializeAsString(), resident[17].SerializeAsString());
}

TEST(Shard, RefusesAStoreBuiltWithOtherParameters) {
  TempDir dir;
  { ASSERT_TRUE(Shard::Open(Options(dir.str(), 0.8, 2)).ok()); }
  auto other = Shard::Open(Options(dir.str(), 0.7, 2));
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(other.status().message(), testing::HasSubstr("min_threshold"));
  ShardOptions o = Options(dir.str(), 0.8, 2);
  o.dims = 4;
  auto dims = Shard::Open(o);
  ASSERT_FALSE(dims.ok());
  EXPECT_THAT(dims.status().message(), testing::HasSubstr("dims 3"));
  o = Options(dir.str(), 0.8, 2);
  o.prefix_overlap = 0;
  EXPECT_EQ(Shard::Open(o).status().code(), StatusCode::kInvalidArgument);
}

TEST(Shard, ReplaceAndRemove) {
  TempDir dir;
  auto shard = Shard::Open(Options(dir.str()));
  ASSERT_TRUE(shard.ok());
  std::vector<uint64_t> a(40), b(40);
  for (int i = 0; i < 40; ++i) { a[i] = 1000 + i; b[i] = 5000 + i; }
  std::vector<pb::PageSignature> v1 = {MakeSig("http://x/1", a), MakeSig("http://x/2", a)};
  auto p1 = Pages(v1);
  ApplyStats st;
  ASSERT_TRUE((*shard)->Apply(p1, {}, &st).ok());
  EXPECT_EQ(st.inserted, 2u);
  // x/1 changes to b: a probe with a finds only x/2; a probe with b finds x/1.
  std::vector<pb::PageSignature> v2 = {MakeSig("http://x/1", b)};
  auto p2 = Pages(v2);
  ASSERT_TRUE((*shard)->Apply(p2, {}, &st).ok());
  EXPECT_EQ(st.replaced, 1u);
  auto got = (*shard)->Get("http://x/1");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->shingles(0), 5000u);  // the new version
  std::vector<pb::PageSignature> qa = {MakeSig("http://q/a", a)}, qb = {MakeSig("http://q/b", b)};
  CompareResult r;
  auto pa = Pages(qa), pb_ = Pages(qb);
  ASSERT_TRUE((*shard)->CompareBatch(pa, 0.9, &r).ok());
  ASSERT_EQ(r.resident.size(), 1u);
  EXPECT_EQ(r.resident[0].url, "http://x/2");
  ASSERT_TRUE((*shard)->CompareBatch(pb_, 0.9, &r).ok());
  ASSERT_EQ(r.resident.size(), 1u);
  EXPECT_EQ(r.resident[0].url, "http://x/1");
  // A page is never paired with its own resident version.
  std::vector<pb::PageSignature> self = {MakeSig("http://x/1", b)};
  auto ps = Pages(self);
  ASSERT_TRUE((*shard)->CompareBatch(ps, 0.9, &r).ok());
  EXPECT_TRUE(r.resident.empty());
  // Removal by URL, and by an empty new version.
  std::vector<std::string> removed = {"http://x/2", "http://never/seen"};
  ASSERT_TRUE((*shard)->Apply({}, removed, &st).ok());
  EXPECT_EQ(st.removed, 1u);
  std::vector<pb::PageSignature> emptied = {MakeSig("http://x/1", {})};
  auto pe = Pages(emptied);
  ASSERT_TRUE((*shard)->Apply(pe, {}, &st).ok());
  EXPECT_EQ(st.removed, 1u);
  EXPECT_EQ((*shard)->Stats().resident_pages, 0u);
  ASSERT_TRUE((*shard)->CompareBatch(pa, 0.5, &r).ok());
  EXPECT_TRUE(r.resident.empty());
  EXPECT_EQ((*shard)->Get("http://x/1").status().code(), StatusCode::kNotFound);
  // The freed slots go to other URLs: the removed ones stay gone, the new ones are found, and so
  // after a restart.
  std::vector<pb::PageSignature> v3 = {MakeSig("http://y/1", b), MakeSig("http://y/2", a), MakeSig("http://y/3", b)};
  auto p3 = Pages(v3);
  for (int reopen = 0; reopen < 2; ++reopen) {
    if (reopen == 0) {
      ASSERT_TRUE((*shard)->Apply(p3, {}, &st).ok());
      EXPECT_EQ(st.inserted, 3u);
    } else {
      shard->reset();
      shard = Shard::Open(Options(dir.str()));
      ASSERT_TRUE(shard.ok());
    }
    for (const char* gone : {"http://x/1", "http://x/2"}) {
      EXPECT_EQ((*shard)->Get(gone).status().code(), StatusCode::kNotFound) << gone << " reopen " << reopen;
    }
    for (const auto& sig : v3) {
      auto y = (*shard)->Get(sig.url());
      ASSERT_TRUE(y.ok()) << sig.url() << " reopen " << reopen;
      EXPECT_EQ(y->url(), sig.url());
      EXPECT_EQ(y->shingles(0), sig.shingles(0));
    }
  }
}

// Stage, Publish, CommitPublished is one Apply: nothing of a staged batch is seen before Publish
// (not by CompareBatch, not by Get, not after a restart), one batch is staged at a time, a batch
// is published only by the shard that staged it, and a batch dropped unpublished gives its log
// space back.
TEST(Shard, StagedBatchIsInvisibleUntilApplied) {
  TempDir dir, other_dir, crashed;
  std::vector<uint64_t> a(40), b(40);
  for (int i = 0; i < 40; ++i) { a[i] = 1000 + i; b[i] = 5000 + i; }
  std::vector<pb::PageSignature> v1 = {MakeSig("http://x/1", a)};
  std::vector<pb::PageSignature> v2 = {MakeSig("http://x/1", b), MakeSig("http://x/2", b),
                                       MakeSig("http://x/3", {})};
  std::vector<pb::PageSignature> qa = {MakeSig("http://q/a", a)}, qb = {MakeSig("http://q/b", b)};
  auto p1 = Pages(v1), p2 = Pages(v2), pa = Pages(qa), pb_ = Pages(qb);
  CompareResult r;
  {
    auto shard = Shard::Open(Options(dir.str()));
    ASSERT_TRUE(shard.ok());
    ASSERT_TRUE((*shard)->Apply(p1, {}).ok());
    const uint64_t log_bytes = (*shard)->Stats().log_bytes;

    auto staged = (*shard)->Stage(p2);
    ASSERT_TRUE(staged.ok()) << staged.status().ToString();
    EXPECT_GT((*shard)->Stats().log_bytes, log_bytes);  // appended past the committed end
    ASSERT_TRUE((*shard)->CompareBatch(pb_, 0.9, &r).ok());
    EXPECT_TRUE(r.resident.empty());
    ASSERT_TRUE((*shard)->CompareBatch(pa, 0.9, &r).ok());
    ASSERT_EQ(r.resident.size(), 1u);  // x/1 is still its old version
    auto got = (*shard)->Get("http://x/1");
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->shingles(0), 1000u);
    EXPECT_EQ((*shard)->Get("http://x/2").status().code(), StatusCode::kNotFound);
    // One staged batch at a time, whether staged or applied in one go.
    EXPECT_EQ((*shard)->Stage(pb_).status().code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ((*shard)->Apply(pb_, {}).code(), StatusCode::kFailedPrecondition);
    // Dropped: the log is cut back, and the shard takes the next batch.
    staged->reset();
    EXPECT_EQ((*shard)->Stats().log_bytes, log_bytes);

    // Applied only by the shard that staged it.
    auto other = Shard::Open(Options(other_dir.str()));
    ASSERT_TRUE(other.ok());
    auto foreign = (*other)->Stage(p2);
    ASSERT_TRUE(foreign.ok());
    EXPECT_EQ((*shard)->Publish(std::move(*foreign), {}).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ((*shard)->Publish(nullptr, {}).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ((*other)->Stats().log_bytes, 0u);  // the foreign batch was dropped, not applied

    // Staged, left unapplied when the process stops (the files as they are then, copied): the
    // restart does not see it.
    staged = (*shard)->Stage(p2);
    ASSERT_TRUE(staged.ok());
    EXPECT_GT((*shard)->Stats().log_bytes, log_bytes);
    fs::copy(dir.str(), crashed.str(), fs::copy_options::recursive);
  }
  auto shard = Shard::Open(Options(crashed.str()));
  ASSERT_TRUE(shard.ok());
  EXPECT_EQ((*shard)->Stats().resident_pages, 1u);
  ASSERT_TRUE((*shard)->CompareBatch(pb_, 0.9, &r).ok());
  EXPECT_TRUE(r.resident.empty());

  auto staged = (*shard)->Stage(p2);
  ASSERT_TRUE(staged.ok());
  ApplyStats st;
  ASSERT_TRUE((*shard)->Publish(std::move(*staged), {}, &st, 7).ok());
  ASSERT_TRUE((*shard)->CommitPublished().ok());
  EXPECT_EQ(st.replaced, 1u);
  EXPECT_EQ(st.inserted, 1u);
  EXPECT_EQ(*(*shard)->AppliedSequence(), 7u);
  ASSERT_TRUE((*shard)->CompareBatch(pb_, 0.9, &r).ok());
  ASSERT_EQ(r.resident.size(), 2u);
  EXPECT_EQ(r.resident[0].url, "http://x/1");
  ASSERT_TRUE((*shard)->CompareBatch(pa, 0.9, &r).ok());
  EXPECT_TRUE(r.resident.empty());
  EXPECT_EQ((*shard)->Stats().resident_pages, 2u);
}

// Publish makes a batch visible at once and durable only with CommitPublished: a crash in
// between (the files as they are then) drops it, one batch is published at a time (Stage may
// go on), and a log compaction that falls due waits for a commit with nothing staged.
TEST(Shard, PublishedBatchIsSeenAtOnceAndKeptOnlyOnceCommitted) {
  TempDir dir, crashed, committed_copy;
  ShardOptions o = Options(dir.str());
  o.log_compact_min_bytes = 1;
  std::vector<uint64_t> a(40), b(40);
  for (int i = 0; i < 40; ++i) { a[i] = 1000 + i; b[i] = 5000 + i; }
  std::vector<pb::PageSignature> v1 = {MakeSig("http://x/1", a), MakeSig("http://x/9", a)};
  std::vector<pb::PageSignature> v2 = {MakeSig("http://x/1", b), MakeSig("http://x/2", b)};
  // x/1 once more: with it, the dead records (x/1 twice, x/9 and its removal) outweigh the live
  // ones, so a compaction is due after batch 3 as after batch 2.
  std::vector<pb::PageSignature> v3 = {MakeSig("http://x/3", b), MakeSig("http://x/1", b)};
  std::vector<pb::PageSignature> qa = {MakeSig("http://q/a", a)}, qb = {MakeSig("http://q/b", b)};
  auto p1 = Pages(v1), p2 = Pages(v2), p3 = Pages(v3), pa = Pages(qa), pb_ = Pages(qb);
  CompareResult r;
  {
    auto shard = Shard::Open(o);
    ASSERT_TRUE(shard.ok());
    EXPECT_TRUE((*shard)->CommitPublished().ok());  // nothing published: nothing to do
    ASSERT_TRUE((*shard)->Apply(p1, {}, nullptr, 1).ok());
    const uint64_t compactions = (*shard)->Stats().log_compactions;

    auto staged = (*shard)->Stage(p2);
    ASSERT_TRUE(staged.ok());
    ApplyStats st;
    const std::vector<std::string> removed = {"http://x/9"};
    ASSERT_TRUE((*shard)->Publish(std::move(*staged), removed, &st, 2).ok());
    EXPECT_EQ(st.replaced, 1u);
    EXPECT_EQ(st.inserted, 1u);
    EXPECT_EQ(st.removed, 1u);
    // Seen at once...
    EXPECT_EQ((*shard)->Get("http://x/1")->shingles(0), 5000u);
    EXPECT_EQ((*shard)->Get("http://x/9").status().code(), StatusCode::kNotFound);
    ASSERT_TRUE((*shard)->CompareBatch(pb_, 0.9, &r).ok());
    EXPECT_EQ(r.resident.size(), 2u);
    ASSERT_TRUE((*shard)->CompareBatch(pa, 0.9, &r).ok());
    EXPECT_TRUE(r.resident.empty());
    // ...not committed: the sequence is the last commit's, and no compaction ran (x/1's old
    // record is dead, which makes one due).
    EXPECT_EQ(*(*shard)->AppliedSequence(), 1u);
    EXPECT_EQ((*shard)->Stats().log_compactions, compactions);
    // One published batch at a time; staging goes on.
    auto next = (*shard)->Stage(p3);
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    EXPECT_EQ((*shard)->Apply(pa, {}).code(), StatusCode::kFailedPrecondition);  // Stage refuses: x/3 is staged
    fs::copy(dir.str(), crashed.str(), fs::copy_options::recursive);
    // Committed with a batch staged: still no compaction (it would not copy the staged records).
    ASSERT_TRUE((*shard)->CommitPublished().ok());
    EXPECT_EQ(*(*shard)->AppliedSequence(), 2u);
    EXPECT_EQ((*shard)->Stats().log_compactions, compactions);
    EXPECT_TRUE((*shard)->CommitPublished().ok());  // once is enough
    fs::copy(dir.str(), committed_copy.str(), fs::copy_options::recursive);
    ASSERT_TRUE((*shard)->Publish(std::move(*next), {}, nullptr, 3).ok());
    auto refused = (*shard)->Stage(pa);
    ASSERT_TRUE(refused.ok());
    EXPECT_EQ((*shard)->Publish(std::move(*refused), {}).code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ((*shard)->Get("http://q/a").status().code(), StatusCode::kNotFound);  // dropped
    ASSERT_TRUE((*shard)->CommitPublished().ok());
    EXPECT_EQ((*shard)->Stats().log_compactions, compactions + 1);  // now it ran
    EXPECT_EQ(*(*shard)->AppliedSequence(), 3u);
  }
  auto check = [&](const std::string& path, uint64_t sequence, size_t pages_like_b) {
    ShardOptions reopen = Options(path);
    auto shard = Shard::Open(reopen);
    ASSERT_TRUE(shard.ok()) << shard.status().ToString();
    EXPECT_EQ(*(*shard)->AppliedSequence(), sequence) << path;
    ASSERT_TRUE((*shard)->CompareBatch(pb_, 0.9, &r).ok());
    EXPECT_EQ(r.resident.size(), pages_like_b) << path;
  };
  check(crashed.str(), 1, 0);         // published, not committed: gone
  check(committed_copy.str(), 2, 2);  // x/1 and x/2
  check(dir.str(), 3, 3);             // and x/3, after the compaction
}

// A read-only open answers from the committed batches, ignores (and keeps) an uncommitted tail,
// writes nothing, refuses every write, shares the store with other readers and not with a writer.
TEST(Shard, ReadOnlyOpenChangesNoFile) {
  TempDir dir;
  ShardOptions o = Options(dir.str());
  std::vector<uint64_t> a(40), b(40);
  for (int i = 0; i < 40; ++i) { a[i] = 1000 + i; b[i] = 5000 + i; }
  std::vector<pb::PageSignature> v1 = {MakeSig("http://x/1", a)}, v2 = {MakeSig("http://x/2", b)};
  auto p1 = Pages(v1), p2 = Pages(v2);
  {
    auto shard = Shard::Open(o);
    ASSERT_TRUE(shard.ok());
    ASSERT_TRUE((*shard)->Apply(p1, {}, nullptr, 1).ok());
    auto staged = (*shard)->Stage(p2);  // appended and synced past the committed end
    ASSERT_TRUE(staged.ok());
    ASSERT_TRUE((*shard)->Publish(std::move(*staged), {}, nullptr, 2).ok());  // never committed
    ShardOptions ro = o;
    ro.read_only = true;
    EXPECT_FALSE(Shard::Open(ro).ok());  // the writer holds it
  }
  auto files = [&] {
    std::map<std::string, std::string> out;
    for (const auto& e : fs::directory_iterator(dir.str())) {
      std::ifstream in(e.path(), std::ios::binary);
      out[e.path().filename().string()] = std::string(std::istreambuf_iterator<char>(in), {});
    }
    return out;
  };
  const auto before = files();
  ShardOptions ro = o;
  ro.read_only = true;
  {
    auto r1 = Shard::Open(ro), r2 = Shard::Open(ro);
    ASSERT_TRUE(r1.ok()) << r1.status().ToString();
    ASSERT_TRUE(r2.ok()) << r2.status().ToString();
    EXPECT_EQ((*r1)->Get("http://x/1")->shingles(0), 1000u);
    EXPECT_EQ((*r2)->Get("http://x/2").status().code(), StatusCode::kNotFound);  // not committed
    EXPECT_EQ(*(*r1)->AppliedSequence(), 1u);
    EXPECT_EQ((*r1)->Stage(p2).status().code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ((*r1)->Apply(p2, {}).code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ((*r1)->CommitPublished().code(), StatusCode::kFailedPrecondition);
    EXPECT_FALSE(Shard::Open(o).ok());  // a writer waits for the readers
  }
  EXPECT_EQ(files(), before);
  TempDir empty;
  ro.path = empty.File("store");
  EXPECT_EQ(Shard::Open(ro).status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(fs::exists(ro.path));
}

// The shard remembers which URLs it stored (so that a new URL costs no store read); after a
// restart, pages stored before it are still replaced and removed, never stored twice, and a Get
// of a URL stored by an Apply finds it.
TEST(Shard, ReplaceAndRemoveAfterRestart) {
  TempDir dir;
  auto all = Corpus(12, 300, {20, 60}, 3, "http://k/");
  {
    auto shard = Shard::Open(Options(dir.str()));
    ASSERT_TRUE(shard.ok());
    auto pages = Pages(all);
    ASSERT_TRUE((*shard)->Apply(pages, {}).ok());
  }
  auto shard = Shard::Open(Options(dir.str()));
  ASSERT_TRUE(shard.ok());
  std::vector<uint64_t> fresh(30);
  for (int i = 0; i < 30; ++i) fresh[i] = 900000 + i;
  std::vector<pb::PageSignature> changed;
  for (int i = 0; i < 100; ++i) changed.push_back(MakeSig(all[i].url(), fresh));
  changed.push_back(MakeSig("http://k/new", fresh));
  auto pages = Pages(changed);
  ApplyStats st;
  const std::vector<std::string> removed = {all[200].url(), all[201].url(), "http://k/never"};
  ASSERT_TRUE((*shard)->Apply(pages, removed, &st).ok());
  EXPECT_EQ(st.replaced, 100u);
  EXPECT_EQ(st.inserted, 1u);
  EXPECT_EQ(st.removed, 2u);
  EXPECT_EQ((*shard)->Stats().resident_pages, all.size() + 1 - 2);
  auto got = (*shard)->Get(all[5].url());
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->shingles_size(), 30);
  EXPECT_TRUE((*shard)->Get("http://k/new").ok());
  EXPECT_EQ((*shard)->Get(all[200].url()).status().code(), StatusCode::kNotFound);
  EXPECT_EQ((*shard)->Get("http://k/never").status().code(), StatusCode::kNotFound);
}

// The URL -> slot map stays exact when URL hashes collide (forced here: every URL hashing to one of
// three values, or all to one), through replacements, removals, empty pages, reinsertions and
// restarts (which rebuild it by replaying the log): every Get and every comparison answers as with
// the real hash, checked against a model of what is resident.
uint64_t ThreeHashes(std::string_view url) { return 1 + UrlHash(url) % 3; }
uint64_t OneHash(std::string_view) { return 7; }

TEST(Shard, UrlMapIsExactUnderHashCollisionsAndRestarts) {
  auto all = Corpus(21, 120, {20, 60}, 3, "http://c/");
  std::vector<uint64_t> fresh(30);
  for (int i = 0; i < 30; ++i) fresh[i] = 700000 + i;
  std::vector<pb::PageSignature> probe(all.begin() + 100, all.end());
  std::set<Pair> found_with_real_hash;
  for (auto* hash : {static_cast<uint64_t (*)(std::string_view)>(nullptr), &ThreeHashes, &OneHash}) {
    SCOPED_TRACE(hash == nullptr ? "real hash" : hash == &OneHash ? "one hash" : "three hashes");
    TempDir dir;
    ShardOptions o = Options(dir.str());
    o.url_hash = hash;
    std::map<std::string, std::string> model;  // URL -> serialized resident signature
    auto check = [&](Shard& shard) {
      EXPECT_EQ(shard.Stats().resident_pages, model.size());
      for (const auto& p : all) {
        auto got = shard.Get(p.url());
        auto it = model.find(p.url());
        if (it == model.end()) {
          EXPECT_EQ(got.status().code(), StatusCode::kNotFound) << p.url();
        } else {
          ASSERT_TRUE(got.ok()) << p.url() << ": " << got.status().ToString();
          EXPECT_EQ(got->SerializeAsString(), it->second) << p.url();
        }
      }
    };
    auto apply = [&](Shard& shard, const std::vector<pb::PageSignature>& batch, const std::vector<std::string>& removed) {
      auto pages = Pages(batch);
      ASSERT_TRUE(shard.Apply(pages, removed).ok());
      for (const auto& p : batch) {
        if (p.shingles_size() == 0) model.erase(p.url());
        else model[p.url()] = p.SerializeAsString();
      }
      for (const auto& u : removed) {
        if (std::none_of(batch.begin(), batch.end(), [&](const auto& p) { return p.url() == u; })) model.erase(u);
      }
    };
    {
      auto shard = Shard::Open(o);
      ASSERT_TRUE(shard.ok()) << shard.status().ToString();
      apply(**shard, std::vector<pb::PageSignature>(all.begin(), all.begin() + 80), {});
      // Replace 20, insert 10, remove 10 (and one never stored), empty one.
      std::vector<pb::PageSignature> b;
      for (int i = 0; i < 20; ++i) b.push_back(MakeSig(all[i].url(), fresh));
      for (int i = 80; i < 90; ++i) b.push_back(all[i]);
      b.push_back(MakeSig(all[30].url(), {}));
      std::vector<std::string> removed = {"http://c/never"};
      for (int i = 40; i < 50; ++i) removed.push_back(all[i].url());
      apply(**shard, b, removed);
      check(**shard);
    }
    for (int round = 0; round < 2; ++round) {
      auto shard = Shard::Open(o);
      ASSERT_TRUE(shard.ok()) << shard.status().ToString();
      check(**shard);
      // Bring back the removed and emptied ones, remove replaced ones.
      std::vector<pb::PageSignature> b(all.begin() + 40 + round * 5, all.begin() + 45 + round * 5);
      b.push_back(all[30]);
      std::vector<std::string> removed;
      for (int i = round * 3; i < round * 3 + 3; ++i) removed.push_back(all[i].url());
      apply(**shard, b, removed);
      check(**shard);
    }
    auto shard = Shard::Open(o);
    ASSERT_TRUE(shard.ok());
    check(**shard);
    auto pb = Pages(probe);
    CompareResult r;
    ASSERT_TRUE((*shard)->CompareBatch(pb, 0.6, &r).ok());
    if (hash == nullptr) {
      found_with_real_hash = Found(probe, r);
      EXPECT_FALSE(found_with_real_hash.empty());
    } else {
      EXPECT_EQ(Found(probe, r), found_with_real_hash);
    }
  }
}

// A store is opened by one Shard at a time; a store of the LevelDB format (3 and before) is
// refused with what to do.
TEST(Shard, OneOpenAtATimeAndOldFormatsRefused) {
  TempDir dir;
  auto first = Shard::Open(Options(dir.str()));
  ASSERT_TRUE(first.ok());
  auto second = Shard::Open(Options(dir.str()));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kIoError);
  EXPECT_THAT(second.status().message(), testing::HasSubstr("open elsewhere"));
  first->reset();
  EXPECT_TRUE(Shard::Open(Options(dir.str())).ok());

  TempDir old;
  fs::create_directories(old.str());
  { std::ofstream(old.str() + "/CURRENT") << "MANIFEST-000004\n"; }
  auto o = Shard::Open(Options(old.str()));
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(o.status().message(), testing::HasSubstr("format version 3"));
}

// Pages replaced over and over leave dead records in the signature log; the shard compacts it
// into a new generation, stays exact, and reopens on the new generation alone.
TEST(Shard, SignatureLogIsCompactedAndStaysExact) {
  TempDir dir;
  ShardOptions o = Options(dir.str());
  o.log_compact_min_bytes = 1;
  auto all = Corpus(31, 300, {20, 90, 200}, 3, "http://c/");
  std::vector<pb::PageSignature> resident(all.begin(), all.begin() + 260), batch(all.begin() + 260, all.end());
  {
    auto shard = Shard::Open(o);
    ASSERT_TRUE(shard.ok());
    // Three rounds of the same URLs with other content, then the final content.
    for (uint64_t round = 0; round < 3; ++round) {
      auto other = Corpus(100 + round, 260, {30, 120}, 2, "x");
      for (size_t i = 0; i < other.size(); ++i) other[i].set_url(resident[i].url());
      auto pages = Pages(other);
      ASSERT_TRUE((*shard)->Apply(pages, {}).ok());
    }
    auto pages = Pages(resident);
    ASSERT_TRUE((*shard)->Apply(pages, {}).ok());
    const ShardStats st = (*shard)->Stats();
    EXPECT_GE(st.log_compactions, 1u);
    EXPECT_LE(st.log_bytes - st.log_live_bytes, st.log_live_bytes);
    auto b = Pages(batch);
    CompareResult r;
    ASSERT_TRUE((*shard)->CompareBatch(b, 0.6, &r).ok());
    EXPECT_EQ(Found(batch, r), BruteForce(resident, batch, 0.6));
  }
  size_t logs = 0;
  for (const auto& e : fs::directory_iterator(dir.str())) logs += e.path().filename().string().starts_with("sigs-");
  EXPECT_EQ(logs, 1u);
  o.log_compact_min_bytes = 64 << 20;
  auto shard = Shard::Open(o);
  ASSERT_TRUE(shard.ok()) << shard.status().ToString();
  auto b = Pages(batch);
  CompareResult r;
  ASSERT_TRUE((*shard)->CompareBatch(b, 0.6, &r).ok());
  EXPECT_EQ(Found(batch, r), BruteForce(resident, batch, 0.6));
  auto got = (*shard)->Get(resident[5].url());
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->SerializeAsString(), resident[5].SerializeAsString());
}

// A signature record over 16 MiB keeps its length outside the packed in-memory location; reading,
// replacing and reopening it must account for every byte.
TEST(Shard, HugeSignatureRecordIsReadReplacedAndReopened) {
  TempDir dir;
  ShardOptions o = Options(dir.str(), 0.9);
  std::mt19937_64 rng(7);
  std::vector<uint64_t> big(2'200'000);
  for (auto& h : big) h = rng();
  std::vector<uint64_t> near = big;
  near.resize(big.size() - 1000);
  const std::vector<pb::PageSignature> resident = {MakeSig("http://h/big", big), MakeSig("http://h/small", {1, 2, 3})};
  ASSERT_GT(resident[0].ByteSizeLong(), size_t{16} << 20);
  const std::vector<pb::PageSignature> batch = {MakeSig("http://h/near", near)};
  uint64_t live = 0;
  {
    auto shard = Shard::Open(o);
    ASSERT_TRUE(shard.ok());
    auto pages = Pages(resident);
    ASSERT_TRUE((*shard)->Apply(pages, {}).ok());
    auto b = Pages(batch);
    CompareResult r;
    ASSERT_TRUE((*shard)->CompareBatch(b, 0.9, &r).ok());
    EXPECT_EQ(Found(batch, r), BruteForce(resident, batch, 0.9));
    ASSERT_EQ(r.resident.size(), 1u);
    auto got = (*shard)->Get("http://h/big");
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->shingles_size(), resident[0].shingles_size());
    live = (*shard)->Stats().log_live_bytes;
    EXPECT_GT(live, uint64_t{16} << 20);
  }
  auto shard = Shard::Open(o);
  ASSERT_TRUE(shard.ok()) << shard.status().ToString();
  EXPECT_EQ((*shard)->Stats().log_live_bytes, live);
  // Replaced by a small page: the live bytes drop by the huge record's.
  const std::vector<pb::PageSignature> replacement = {MakeSig("http://h/big", {4, 5, 6})};
  auto pages = Pages(replacement);
  ASSERT_TRUE((*shard)->Apply(pages, {}).ok());
  const uint64_t after = (*shard)->Stats().log_live_bytes;
  EXPECT_LT(after, uint64_t{1} << 10);
  auto b = Pages(batch);
  CompareResult r;
  ASSERT_TRUE((*shard)->CompareBatch(b, 0.9, &r).ok());
  EXPECT_TRUE(r.resident.empty());
  shard->reset();
  auto reopened = Shard::Open(o);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ((*reopened)->Stats().log_live_bytes, after);
}

// What a crash leaves behind: records appended after the last commit, and a log generation a
// compaction wrote but never committed. Open drops both and answers as before.
TEST(Shard, OpenDropsUncommittedLogRecordsAndGenerations) {
  TempDir dir;
  auto all = Corpus(32, 120, {40, 100}, 4, "http://u/");
  std::vector<pb::PageSignature> resident(all.begin(), all.begin() + 100), batch(all.begin() + 100, all.end());
  std::string log_path;
  uint64_t committed = 0;
  CompareResult before;
  {
    auto shard = Shard::Open(Options(dir.str()));
    ASSERT_TRUE(shard.ok());
    auto pages = Pages(resident);
    ASSERT_TRUE((*shard)->Apply(pages, {}).ok());
    committed = (*shard)->Stats().log_bytes;
    auto b = Pages(batch);
    ASSERT_TRUE((*shard)->CompareBatch(b, 0.7, &before).ok());
  }
  for (const auto& e : fs::directory_iterator(dir.str())) {
    if (e.path().filename().string().starts_with("sigs-")) log_path = e.path().string();
  }
  ASSERT_FALSE(log_path.empty());
  ASSERT_EQ(fs::file_size(log_path), committed);
  { std::ofstream(log_path, std::ios::app | std::ios::binary) << std::string(5000, 'z'); }
  { std::ofstream(dir.str() + "/sigs-99.log") << "half-written generation"; }
  auto shard = Shard::Open(Options(dir.str()));
  ASSERT_TRUE(shard.ok()) << shard.status().ToString();
  EXPECT_EQ(fs::file_size(log_path), committed);
  EXPECT_FALSE(fs::exists(dir.str() + "/sigs-99.log"));
  auto b = Pages(batch);
  CompareResult after;
  ASSERT_TRUE((*shard)->CompareBatch(b, 0.7, &after).ok());
  EXPECT_EQ(Found(batch, after), Found(batch, before));
  // New pages go where the dropped bytes were, and survive another restart.
  std::vector<pb::PageSignature> more = {MakeSig("http://u/new", {1, 2, 3, 4, 5, 6, 7, 8})};
  auto pm = Pages(more);
  ASSERT_TRUE((*shard)->Apply(pm, {}).ok());
  shard->reset();
  auto again = Shard::Open(Options(dir.str()));
  ASSERT_TRUE(again.ok());
  auto got = (*again)->Get("http://u/new");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->shingles_size(), 8);
}

// A damaged log is reported as Corruption, naming the log, never as wrong answers or a crash: at
// Open, which rebuilds the index from the signatures (format 3), or at the first read of a record
// damaged later; a log shorter than the store says is refused at Open.
TEST(Shard, DamagedSignatureLogIsCorruption) {
  TempDir dir;
  auto all = Corpus(33, 60, {50}, 60, "http://d/");  // one family: every page a candidate of every other
  std::vector<pb::PageSignature> resident(all.begin(), all.begin() + 50), batch(all.begin() + 50, all.end());
  std::string log_path;
  {
    auto shard = Shard::Open(Options(dir.str()));
    ASSERT_TRUE(shard.ok());
    auto pages = Pages(resident);
    ASSERT_TRUE((*shard)->Apply(pages, {}).ok());
  }
  for (const auto& e : fs::directory_iterator(dir.str())) {
    if (e.path().filename().string().starts_with("sigs-")) log_path = e.path().string();
  }
  const uint64_t size = fs::file_size(log_path);
  {
    auto shard = Shard::Open(Options(dir.str()));
    ASSERT_TRUE(shard.ok());
    // Damaged under a running shard: the reads that need a record find out.
    std::fstream f(log_path, std::ios::in | std::ios::out | std::ios::binary);
    for (uint64_t at = 40; at < size; at += 97) {
      f.seekp(static_cast<std::streamoff>(at));
      f.put('\x5a');
    }
    f.close();
    auto b = Pages(batch);
    CompareResult r;
    Status s = (*shard)->CompareBatch(b, 0.5, &r);
    EXPECT_EQ(s.code(), StatusCode::kCorruption) << s.ToString();
    EXPECT_THAT(s.message(), testing::HasSubstr("sigs-"));
    EXPECT_EQ((*shard)->Get(resident[3].url()).status().code(), StatusCode::kCorruption);
  }
  {
    auto shard = Shard::Open(Options(dir.str()));
    ASSERT_FALSE(shard.ok());
    EXPECT_EQ(shard.status().code(), StatusCode::kCorruption) << shard.status().ToString();
    EXPECT_THAT(shard.status().message(), testing::HasSubstr("sigs-"));
  }
  fs::resize_file(log_path, size / 2);
  auto shard = Shard::Open(Options(dir.str()));
  ASSERT_FALSE(shard.ok());
  EXPECT_EQ(shard.status().code(), StatusCode::kCorruption);
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
  std::mt19937_64 rng(11);
  std::vector<std::vector<uint64_t>> boilerplate(4);
  for (auto& b : boilerplate) {
    b.resize(40);
    for (auto& h : b) h = rng();
  }
  auto body = Corpus(12, 900, {20, 60, 200}, 4, "http://site/");
  std::vector<pb::PageSignature> all;
  for (size_t i = 0; i < body.size(); ++i) {
    std::vector<uint64_t> h(body[i].shingles().begin(), body[i].shingles().end());
    const auto& b = boilerplate[i % boilerplate.size()];
    h.insert(h.end(), b.begin(), b.end());
    all.push_back(MakeSig(body[i].url(), h));
  }
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

// Get and CompareBatch run while Apply replaces and removes pages (and compacts the index and the
// signature log): every Get answers with a version of the page that was applied (or NotFound for
// a URL that was removed), never an error, and every CompareBatch succeeds.
TEST(Shard, ReadersRunDuringApply) {
  TempDir dir;
  ShardOptions o = Options(dir.str());
  o.log_compact_min_bytes = 1;  // compact the log often
  auto opened = Shard::Open(o);
  ASSERT_TRUE(opened.ok());
  Shard& shard = **opened;
  constexpr int kUrls = 120, kRounds = 60;
  // Version v of page u: 60 shingles, the first of which names (u, v).
  auto version = [](int u, int v) {
    std::vector<uint64_t> h = {(static_cast<uint64_t>(u) << 20) | static_cast<uint64_t>(v)};
    for (int i = 1; i < 60; ++i) h.push_back((static_cast<uint64_t>(u) << 40) + static_cast<uint64_t>(v) * 1000 + i + (1ull << 32));
    return MakeSig(Name("http://r/", u), h);
  };
  std::vector<pb::PageSignature> first;
  for (int u = 0; u < kUrls; ++u) first.push_back(version(u, 0));
  auto fp = Pages(first);
  ASSERT_TRUE(shard.Apply(fp, {}).ok());
  std::atomic<bool> done{false};
  std::atomic<int> gets{0}, compares{0}, errors{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&, t] {
      std::mt19937 rng(t);
      while (!done.load()) {
        const int u = static_cast<int>(rng() % kUrls);
        auto got = shard.Get(Name("http://r/", u));
        if (got.ok()) {
          const uint64_t tag = got->shingles(0);
          if (got->url() != Name("http://r/", u) || (tag >> 20) != static_cast<uint64_t>(u) || (tag & 0xFFFFF) > kRounds) {
            ++errors;
          }
        } else if (got.status().code() != StatusCode::kNotFound) {
          ++errors;
        }
        ++gets;
      }
    });
  }
  readers.emplace_back([&] {
    std::vector<pb::PageSignature> probe = {version(7, 0)};
    probe[0].set_url("http://probe/");
    auto pp = Pages(probe, false);
    while (!done.load()) {
      CompareResult r;
      if (!shard.CompareBatch(pp, 0.5, &r).ok()) ++errors;
      ++compares;
    }
  });
  std::mt19937 rng(99);
  for (int v = 1; v <= kRounds; ++v) {
    std::vector<pb::PageSignature> batch;
    for (int k = 0; k < 30; ++k) batch.push_back(version(static_cast<int>(rng() % kUrls), v));
    std::vector<std::string> removed = {Name("http://r/", static_cast<int>(rng() % kUrls))};
    auto bp = Pages(batch);
    ASSERT_TRUE(shard.Apply(bp, removed).ok()) << "round " << v;
  }
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GT(gets.load(), 0);
  EXPECT_GT(compares.load(), 0);
  EXPECT_GT(shard.Stats().log_compactions, 0u);
}

}  // namespace
}  // namespace neardup::tier2
