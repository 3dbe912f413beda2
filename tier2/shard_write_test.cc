// The write path: Stage, Publish, CommitPublished and Apply; replacements and removals; readers during a write.
#include "tier2/shard_test_util.h"

namespace neardup::tier2 {
namespace {

using namespace shard_test;  // NOLINT: the shard tests' helpers
namespace fs = std::filesystem;

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
