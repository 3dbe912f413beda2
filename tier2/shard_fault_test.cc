// The shard under file-system faults (storage/fault_file_env.h): short writes, ENOSPC, failed
// syncs and crashes that tear the unsynced tail. Whatever fails, the error names the file and the
// reason, the shard keeps serving what it had, and after a crash it reopens holding exactly the
// batches it acknowledged.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "storage/fault_file_env.h"
#include "testing/signatures.h"
#include "testing/temp_dir.h"
#include "tier2/shard.h"

namespace neardup::tier2 {
namespace {

using ::testing::HasSubstr;
using test::SignatureOf;
using test::TempDir;

ShardOptions Options(const std::string& path, FileEnv* env) {
  ShardOptions o;
  o.path = path;
  o.env = env;
  o.dims = 3;
  o.min_threshold = 0.5;
  o.sync = true;
  o.expected_pages = 256;
  o.order_sample_pages = 30;          // the token order file is written during the runs
  o.frequent_min_pages = 2;
  o.log_compact_min_bytes = 4096;     // and the log is compacted
  return o;
}

std::vector<uint64_t> Hashes(std::mt19937_64& rng, int n) {
  std::vector<uint64_t> h(static_cast<size_t>(n));
  for (auto& x : h) x = rng();
  return h;
}

std::vector<ShardPage> Home(const std::vector<pb::PageSignature>& sigs) {
  std::vector<ShardPage> out;
  for (const auto& s : sigs) out.push_back(ShardPage{&s, /*home=*/true});
  return out;
}

// URL -> shingles: what the shard must hold.
using Model = std::map<std::string, std::vector<uint64_t>>;

// The model of a store that holds exactly `pages`.
Model ModelOf(const std::vector<pb::PageSignature>& pages) {
  Model m;
  for (const auto& s : pages) m[s.url()] = {s.shingles().begin(), s.shingles().end()};
  return m;
}

std::set<std::string> UrlsOf(std::initializer_list<const std::vector<pb::PageSignature>*> batches) {
  std::set<std::string> urls;
  for (const auto* b : batches) {
    for (const auto& s : *b) urls.insert(s.url());
  }
  return urls;
}

// Reopens the store at `path` (default file system) and checks it holds exactly `model` among
// `urls`.
void ExpectHolds(const std::string& path, const Model& model, const std::set<std::string>& urls,
                 const std::string& context) {
  auto shard = Shard::Open(Options(path, FileEnv::Default()));
  ASSERT_TRUE(shard.ok()) << context << ": " << shard.status().ToString();
  EXPECT_EQ((*shard)->Stats().resident_pages, model.size()) << context;
  for (const std::string& url : urls) {
    auto got = (*shard)->Get(url);
    auto it = model.find(url);
    if (it == model.end()) {
      EXPECT_EQ(got.status().code(), StatusCode::kNotFound) << context << ": " << url << " should be gone";
      continue;
    }
    ASSERT_TRUE(got.ok()) << context << ": " << url << ": " << got.status().ToString();
    EXPECT_EQ(std::vector<uint64_t>(got->shingles().begin(), got->shingles().end()), it->second)
        << context << ": " << url;
  }
}

TEST(ShardFault, DiskFullDuringAnAppendIsAnErrorAndLosesNothing) {
  TempDir dir;
  FaultFileEnv env(FileEnv::Default());
  std::mt19937_64 rng(1);
  std::vector<pb::PageSignature> a, b;
  for (int i = 0; i < 10; ++i) a.push_back(SignatureOf("http://a/" + std::to_string(i), Hashes(rng, 60)));
  for (int i = 0; i < 10; ++i) b.push_back(SignatureOf("http://b/" + std::to_string(i), Hashes(rng, 60)));
  Model model = ModelOf(a);
  const std::set<std::string> urls = UrlsOf({&a, &b});
  {
    auto shard = Shard::Open(Options(dir.str(), &env));
    ASSERT_TRUE(shard.ok()) << shard.status().ToString();
    ASSERT_TRUE((*shard)->Apply(Home(a), {}).ok());
    env.FailWritesAfter(100);  // the disk fills up inside the next batch's append
    const std::vector<std::string> removed = {"http://a/0"};
    const Status s = (*shard)->Apply(Home(b), removed);
    EXPECT_EQ(s.code(), StatusCode::kIoError);
    EXPECT_THAT(s.message(), HasSubstr("No space left on device"));
    EXPECT_THAT(s.message(), HasSubstr("sigs-1.log"));
    // The shard serves what it had, and takes the batch once there is room.
    EXPECT_TRUE((*shard)->Get("http://a/0").ok());
    EXPECT_EQ((*shard)->Get("http://b/0").status().code(), StatusCode::kNotFound);
    CompareResult r;
    const std::vector<pb::PageSignature> probe = {SignatureOf("http://p/", {a[3].shingles().begin(), a[3].shingles().end()})};
    ASSERT_TRUE((*shard)->CompareBatch(Home(probe), 0.9, &r).ok());
    ASSERT_EQ(r.resident.size(), 1u);
    EXPECT_EQ(r.resident[0].url, "http://a/3");
  }
  ExpectHolds(dir.str(), model, urls, "after the failed batch");
  {
    auto shard = Shard::Open(Options(dir.str(), &env));
    ASSERT_TRUE(shard.ok());
    env.FailWritesAfter(-1);
    const std::vector<std::string> removed = {"http://a/0"};
    ASSERT_TRUE((*shard)->Apply(Home(b), removed).ok());
  }
  model.erase("http://a/0");
  for (const auto& s : b) model[s.url()] = {s.shingles().begin(), s.shingles().end()};
  ExpectHolds(dir.str(), model, urls, "after the batch applied again");
}

TEST(ShardFault, FailedSyncIsAnErrorAndACrashThenKeepsOnlyWhatWasAcknowledged) {
  for (bool torn : {false, true}) {
    TempDir dir;
    FaultFileEnv env(FileEnv::Default());
    std::mt19937_64 rng(2);
    std::vector<pb::PageSignature> a, b;
    for (int i = 0; i < 8; ++i) a.push_back(SignatureOf("http://a/" + std::to_string(i), Hashes(rng, 40)));
    for (int i = 0; i < 8; ++i) b.push_back(SignatureOf("http://a/" + std::to_string(i + 4), Hashes(rng, 40)));
    const Model model = ModelOf(a);
    const std::set<std::string> urls = UrlsOf({&a, &b});
    {
      auto shard = Shard::Open(Options(dir.str(), &env));
      ASSERT_TRUE(shard.ok());
      ASSERT_TRUE((*shard)->Apply(Home(a), {}, nullptr, 1).ok());
      env.FailSyncs(true);
      const std::vector<std::string> removed = {"http://a/0"};
      const Status s = (*shard)->Apply(Home(b), removed, nullptr, 2);
      EXPECT_EQ(s.code(), StatusCode::kIoError);
      EXPECT_THAT(s.message(), HasSubstr("Input/output error"));
      EXPECT_EQ(*(*shard)->AppliedSequence(), 1u);
    }
    env.Crash(torn);
    ExpectHolds(dir.str(), model, urls, torn ? "torn" : "clean");
  }
}

// A commit record that cannot be written leaves the batch published (readers see it) and
// uncommitted (AppliedSequence, a restart): a retry commits it, a restart drops it.
TEST(ShardFault, FailedCommitRecordKeepsTheBatchPublishedUntilARetry) {
  TempDir dir;
  FaultFileEnv env(FileEnv::Default());
  std::mt19937_64 rng(3);
  std::vector<pb::PageSignature> a = {SignatureOf("http://a/1", Hashes(rng, 50))};
  std::vector<pb::PageSignature> b = {SignatureOf("http://b/1", Hashes(rng, 50))};
  {
    auto shard = Shard::Open(Options(dir.str(), &env));
    ASSERT_TRUE(shard.ok());
    ASSERT_TRUE((*shard)->Apply(Home(a), {}, nullptr, 1).ok());
    auto staged = (*shard)->Stage(Home(b));
    ASSERT_TRUE(staged.ok());
    ASSERT_TRUE((*shard)->Publish(std::move(*staged), {}, nullptr, 2).ok());
    env.FailWritesAfter(10);  // the commit record is a 64-byte slot: a short write
    const Status s = (*shard)->CommitPublished();
    EXPECT_EQ(s.code(), StatusCode::kIoError);
    EXPECT_THAT(s.message(), HasSubstr("commit"));
    EXPECT_TRUE((*shard)->Get("http://b/1").ok());  // published
    EXPECT_EQ(*(*shard)->AppliedSequence(), 1u);
    // Another batch waits for this one's commit.
    EXPECT_EQ((*shard)->Apply(Home(a), {}).code(), StatusCode::kFailedPrecondition);
  }
  env.Crash(/*torn=*/true);
  Model model = {{"http://a/1", {a[0].shingles().begin(), a[0].shingles().end()}}};
  ExpectHolds(dir.str(), model, {"http://a/1", "http://b/1"}, "dropped");
  {
    auto shard = Shard::Open(Options(dir.str(), &env));
    ASSERT_TRUE(shard.ok());
    auto staged = (*shard)->Stage(Home(b));
    ASSERT_TRUE(staged.ok());
    ASSERT_TRUE((*shard)->Publish(std::move(*staged), {}, nullptr, 2).ok());
    env.FailWritesAfter(10);
    EXPECT_FALSE((*shard)->CommitPublished().ok());
    env.FailWritesAfter(-1);
    ASSERT_TRUE((*shard)->CommitPublished().ok());  // the retry
    EXPECT_EQ(*(*shard)->AppliedSequence(), 2u);
  }
  env.Crash(/*torn=*/true);
  model["http://b/1"] = {b[0].shingles().begin(), b[0].shingles().end()};
  ExpectHolds(dir.str(), model, {"http://a/1", "http://b/1"}, "retried");
}

// The same run of batches (inserts, replacements, removals, empty pages, a token order, log
// compactions), with the disk filling up at every point of it in turn: the first failure stops
// the run as a crash would, the unsynced tail is torn, and the store reopens holding exactly the
// batches that were acknowledged.
TEST(ShardFault, DiskFullAtAnyPointThenACrashLosesNothingAcknowledged) {
  struct Batch {
    std::vector<pb::PageSignature> pages;
    std::vector<std::string> removed;
  };
  std::mt19937_64 rng(4);
  std::vector<Batch> run(8);
  std::set<std::string> urls;
  for (size_t k = 0; k < run.size(); ++k) {
    for (int i = 0; i < 12; ++i) {
      // URLs from a small pool: later batches replace earlier pages.
      const std::string url = "http://s/" + std::to_string(rng() % 40);
      std::vector<uint64_t> h = Hashes(rng, 80);
      for (uint64_t footer = 1; footer <= 10; ++footer) h.push_back(footer);  // frequent tokens
      if (i == 0 && k % 3 == 2) h.clear();
      run[k].pages.push_back(SignatureOf(url, h));
      urls.insert(url);
    }
    if (k > 0) run[k].removed.push_back("http://s/" + std::to_string(rng() % 40));
  }
  auto apply_model = [](const Batch& b, Model* m) {
    // Apply's rules: the last version of a URL wins, an empty page removes it, and a URL both
    // stored and removed is stored.
    std::map<std::string, const pb::PageSignature*> last;
    for (const auto& p : b.pages) last[p.url()] = &p;
    for (const std::string& u : b.removed) {
      if (!last.count(u)) m->erase(u);
    }
    for (const auto& [u, p] : last) {
      if (p->shingles_size() == 0) m->erase(u);
      else (*m)[u] = {p->shingles().begin(), p->shingles().end()};
    }
  };
  // A run without faults: how many bytes it writes.
  uint64_t total = 0;
  {
    TempDir dir;
    FaultFileEnv env(FileEnv::Default());
    Model model;
    {
      auto shard = Shard::Open(Options(dir.str(), &env));
      ASSERT_TRUE(shard.ok());
      for (const Batch& b : run) {
        ASSERT_TRUE((*shard)->Apply(Home(b.pages), b.removed).ok());
        apply_model(b, &model);
      }
      EXPECT_GT((*shard)->Stats().log_compactions, 0u);
      EXPECT_GT((*shard)->Stats().token_order_bits, 0u);
    }
    total = env.bytes_written();
    ExpectHolds(dir.str(), model, urls, "no faults");
  }
  ASSERT_GT(total, 0u);
  // 40 points spread over the run, plus its first bytes.
  std::vector<uint64_t> budgets = {0, 1, 63};
  for (int i = 1; i <= 40; ++i) budgets.push_back(total * static_cast<uint64_t>(i) / 41 + static_cast<uint64_t>(i % 7));
  int failures = 0;
  for (uint64_t budget : budgets) {
    const std::string context = "disk full after " + std::to_string(budget) + " of " + std::to_string(total) + " bytes";
    TempDir dir;
    FaultFileEnv env(FileEnv::Default());
    env.FailWritesAfter(static_cast<int64_t>(budget));
    Model model;
    {
      auto shard = Shard::Open(Options(dir.str(), &env));
      if (!shard.ok()) {
        EXPECT_EQ(shard.status().code(), StatusCode::kIoError) << context << ": " << shard.status().ToString();
        ++failures;
      } else {
        for (const Batch& b : run) {
          const Status s = (*shard)->Apply(Home(b.pages), b.removed);
          if (!s.ok()) {
            EXPECT_EQ(s.code(), StatusCode::kIoError) << context << ": " << s.ToString();
            EXPECT_THAT(s.message(), HasSubstr("No space left on device")) << context;
            ++failures;
            break;
          }
          apply_model(b, &model);
        }
      }
    }
    env.Crash(/*torn=*/true);
    if (!std::filesystem::exists(dir.File("meta"))) {
      EXPECT_TRUE(model.empty()) << context;  // the store was never made
      continue;
    }
    ExpectHolds(dir.str(), model, urls, context);
  }
  EXPECT_GE(failures, 35);  // nearly every point falls inside the run
}

// A token order refresh whose order file cannot be written changes nothing: the shard keeps its
// order and answers, and the next refresh (the shard doubled again) marks the crowded lists the
// failed one had found.
TEST(ShardFault, FailedOrderRefreshIsRetriedWhenTheShardDoubles) {
  TempDir dir;
  FaultFileEnv env(FileEnv::Default());
  std::mt19937_64 rng(3);
  // 6 sites of 40 header-and-footer shingles each, bodies of their own: the order is derived from
  // the first 100 pages (site 0 only), the next 100 are of sites 1-5 and crowd the prefixes, and
  // the last 210 belong to no site, so that the retry finds just the lists the failed refresh did.
  std::vector<std::vector<uint64_t>> sites(6);
  for (auto& b : sites) b = Hashes(rng, 40);
  auto page = [&](int i) {
    std::vector<uint64_t> h = Hashes(rng, 80);
    if (i < 200) {
      const auto& b = sites[i < 100 ? 0 : 1 + i % 5];
      h.insert(h.end(), b.begin(), b.end());
    } else {
      const std::vector<uint64_t> more = Hashes(rng, 40);
      h.insert(h.end(), more.begin(), more.end());
    }
    return SignatureOf("http://s/" + std::to_string(i), h);
  };
  std::vector<pb::PageSignature> all;
  for (int i = 0; i < 410; ++i) all.push_back(page(i));
  ShardOptions o = Options(dir.str(), &env);
  o.order_sample_pages = 100;
  o.frequent_min_pages = 3;
  o.crowded_token_pages = 16;
  auto shard = Shard::Open(o);
  ASSERT_TRUE(shard.ok()) << shard.status().ToString();
  auto apply = [&](int from, int to) {
    std::vector<pb::PageSignature> part(all.begin() + from, all.begin() + to);
    ASSERT_TRUE((*shard)->Apply(Home(part), {}).ok());
  };
  apply(0, 100);  // derives the order
  const uint64_t derived = (*shard)->Stats().frequent_tokens;
  apply(100, 200);  // due at 200 pages
  env.FailRenames(true);
  apply(200, 210);  // the refresh runs in this Stage (it reads its pages in one): no order file
  env.FailRenames(false);
  EXPECT_EQ((*shard)->Stats().order_refreshes, 0u);
  apply(210, 400);  // due again at 400
  apply(400, 410);
  const ShardStats st = (*shard)->Stats();
  EXPECT_EQ(st.order_refreshes, 1u);
  EXPECT_GT(st.refreshed_pages, 0u);
  EXPECT_GE(st.frequent_tokens, derived + 5 * 40) << "every later site's header and footer";
}

}  // namespace
}  // namespace neardup::tier2
