// Open: restarts, parameters, read-only opens, the lock, uncommitted records and damaged logs.
#include "tier2/shard_test_util.h"

namespace neardup::tier2 {
namespace {

using namespace shard_test;  // NOLINT: the shard tests' helpers
namespace fs = std::filesystem;

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

}  // namespace
}  // namespace neardup::tier2
