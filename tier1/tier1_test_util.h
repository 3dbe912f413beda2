// The harness of Tier1's tests (classify_test.cc, apply_test.cc, apply_redirect_test.cc,
// apply_winner_test.cc, apply_gone_test.cc, query_test.cc, repair_test.cc): Tier 1's rules (the paper's Section 5),
// one test per rule, on a memory-backed group store.
//
// The harness plays Tier 2: a fake SignatureSource holds every URL's current signature, and for
// each batch the Tier 2 answer is computed by brute force (every resident page similar to a kTier2
// page, other than its own URL; every similar pair among the batch's kTier2 pages), exactly what a
// Tier 2 shard returns. After each Apply the source is updated as the pipeline's Tier 2 Apply
// would, and CheckStore must find no violation.
//
//   World w;                                        // a store, a Tier1 over it, the fake Tier 2
//   Result r = w.Run({Page("http://a.com/", R(0, 100), 10), Redirect("http://r.com/", "http://a.com/")});
//   EXPECT_EQ(w.GroupOf("http://r.com/"), w.GroupOf("http://a.com/"));
//   EXPECT_EQ(w.Query("http://a.com/").status, StatusAnswer::kWinner);   // QueryAndRecord
#pragma once

#include <gtest/gtest.h>
#include <leveldb/env.h>
#include <leveldb/helpers/memenv.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "document/shingle.h"
#include "tier1/tier1.h"

namespace neardup::tier1 {

inline constexpr uint32_t kCell = 7;

// Shingles lo, lo+1, ..., hi-1.
inline std::vector<uint64_t> R(uint64_t lo, uint64_t hi) {
  std::vector<uint64_t> v;
  for (uint64_t x = lo; x < hi; ++x) v.push_back(x);
  return v;
}

// A signature built directly: sorted unique shingles, a digest that differs when they differ.
inline pb::PageSignature Sig(const std::string& url, std::vector<uint64_t> shingles) {
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

inline double J(const pb::PageSignature& a, const pb::PageSignature& b) {
  return Jaccard(std::span<const uint64_t>(a.shingles().data(), static_cast<size_t>(a.shingles_size())),
                 std::span<const uint64_t>(b.shingles().data(), static_cast<size_t>(b.shingles_size())));
}
inline bool F(const pb::PageSignature& a, const pb::PageSignature& b, double t) {
  const std::span<const uint64_t> x(a.shingles().data(), static_cast<size_t>(a.shingles_size()));
  const std::span<const uint64_t> y(b.shingles().data(), static_cast<size_t>(b.shingles_size()));
  return JaccardAtLeast(Overlap(x, y), x.size(), y.size(), t);
}

// A batch record (content when sig is given, else a redirect).
inline PageUpdate Update(const std::string& url, const pb::PageSignature* sig, const std::string& redirect_to = "",
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
  bool gone = false;
};
inline In Page(std::string url, std::vector<uint64_t> shingles, double popularity = 0, std::string market = "") {
  return In{std::move(url), std::move(shingles), "", popularity, std::move(market)};
}
inline In Redirect(std::string url, std::string target, double popularity = 0) {
  return In{std::move(url), {}, std::move(target), popularity, ""};
}
// The crawler got 404 or 410 for the URL.
inline In Gone(std::string url) { return In{std::move(url), {}, "", 0, "", true}; }

class FakeSource : public SignatureSource {
 public:
  StatusOr<pb::PageSignature> Fetch(const std::string& url, uint32_t) override {
    ++fetches;
    if (url == fail_url) return IoError("fake source: " + url + " cannot be read");
    auto it = sigs.find(url);
    if (it == sigs.end()) return NotFound("fake source: no signature for " + url);
    return it->second;
  }
  void WillFetch(std::span<const SignatureRef> refs) override {
    std::vector<std::string>& urls = hints.emplace_back();
    for (const SignatureRef& r : refs) urls.emplace_back(r.url);
    fetches_at_hint.push_back(fetches);
  }
  std::map<std::string, pb::PageSignature> sigs;
  uint64_t fetches = 0;
  std::vector<std::vector<std::string>> hints;  // the URLs of each WillFetch call
  std::vector<uint64_t> fetches_at_hint;       // `fetches` when each came
  std::string fail_url;  // Fetch fails (IoError) for this URL
};

struct Result {
  std::vector<Classification> classes;
  std::vector<bool> changed;
  ApplyOutcome outcome;
  size_t tier2_pages = 0;
};

// A group store, a Tier1 over it, and the fake Tier 2.
class World {
 public:
  explicit World(Tier1Options options = Tier1Options()) : env_(leveldb::NewMemEnv(leveldb::Env::Default())) {
    Open(std::move(options));
  }
  // A restart: the Tier1 and its store dropped as they are (what they did not commit is lost)
  // and opened again over the same files.
  void Reopen() {
    Tier1Options options = t1_->options();
    t1_.reset();
    store_.reset();
    Open(std::move(options));
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
      u.gone = in.gone;
      if (!in.gone && in.redirect_to.empty()) u.signature = &sigs.emplace_back(Sig(in.url, in.shingles));
      batch.push_back(std::move(u));
    }
    Status s = t1_->Classify(batch, &r.classes, &r.changed);
    EXPECT_TRUE(s.ok()) << s.ToString();
    if (!s.ok()) return r;
    Tier2Matches m;
    const double t = threshold();
    for (uint32_t i = 0; i < batch.size(); ++i) {
      if (r.classes[i] != Classification::kTier2) continue;
      ++r.tier2_pages;
      for (const auto& [url, sig] : source_.sigs) {
        if (url != batch[i].url && F(*batch[i].signature, sig, t)) {
          m.resident.push_back({i, url, J(*batch[i].signature, sig)});
        }
      }
      // The new versions of the batch's other compared pages and of the pages the fast path kept,
      // as the pipeline's in-batch join gives them.
      for (uint32_t j = 0; j < batch.size(); ++j) {
        const bool partner =
            (r.classes[j] == Classification::kTier2 && j > i) || r.classes[j] == Classification::kFastPath;
        if (partner && F(*batch[i].signature, *batch[j].signature, t)) {
          m.in_batch.push_back({std::min(i, j), std::max(i, j), J(*batch[i].signature, *batch[j].signature)});
        }
      }
    }
    s = t1_->Apply(batch, r.classes, m, nullptr, &r.outcome);
    EXPECT_TRUE(s.ok()) << s.ToString();
    for (size_t i = 0; i < batch.size(); ++i) {
      if (r.classes[i] == Classification::kSuperseded) continue;
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
    const Status s = CheckStore(*store_, &report, &source_, threshold());
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
  void Open(Tier1Options options) {
    GroupStore::Options o;
    o.path = "/tier1_test";
    o.sync = false;
    o.env = env_.get();
    auto s = GroupStore::Open(o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (s.ok()) store_ = std::move(*s);
    t1_ = std::make_unique<Tier1>(store_.get(), &source_, std::move(options));
  }

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

}  // namespace neardup::tier1
