// The URL -> slot map under hash collisions and restarts.
#include "tier2/shard_test_util.h"
#include "tier2/url_slots.h"

namespace neardup::tier2 {
namespace {

using namespace shard_test;  // NOLINT: the shard tests' helpers
namespace fs = std::filesystem;

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

// Probable names the slot Lookup would read first, without reading: a resident URL's own slot
// (in the hash map or the collision map), the slot of another page with the same hash, or none.
TEST(UrlSlots, ProbableIsTheSlotLookupReadsFirst) {
  UrlSlots one(&OneHash);
  EXPECT_EQ(one.Probable("http://a/"), UrlSlots::kNoSlot);
  one.AddResident("http://a/", 4);
  one.AddResident("http://b/", 9);  // the same hash: kept in the collision map
  EXPECT_EQ(one.Probable("http://a/"), 4u);
  EXPECT_EQ(one.Probable("http://b/"), 9u);
  EXPECT_EQ(one.Probable("http://c/"), 4u);  // a's, which Lookup reads to find c is not there
  UrlSlots real(nullptr);
  real.AddResident("http://a/", 4);
  EXPECT_EQ(real.Probable("http://a/"), 4u);
  EXPECT_EQ(real.Probable("http://b/"), UrlSlots::kNoSlot);
}

}  // namespace
}  // namespace neardup::tier2
