#include "tier2/prefix_index.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

namespace neardup::tier2 {
namespace {

std::set<uint32_t> Lookup(const PrefixIndex& index, uint64_t token) {
  std::set<uint32_t> out;
  index.ForEach(token, [&](uint32_t s) { out.insert(s); });
  return out;
}

// A reference model: slot -> tokens, for live slots.
using Model = std::map<uint32_t, std::vector<uint64_t>>;

void ExpectSuperset(const PrefixIndex& index, const Model& model) {
  for (const auto& [slot, tokens] : model) {
    for (uint64_t t : tokens) {
      EXPECT_TRUE(Lookup(index, t).count(slot)) << "slot " << slot << " lost token " << t;
    }
  }
}

TEST(PrefixIndex, FindsWhatWasAdded) {
  PrefixIndex index(10);
  const uint32_t s = index.AllocateSlot();
  EXPECT_EQ(s, 0u);
  ASSERT_TRUE(index.Add(s, std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(Lookup(index, 2), std::set<uint32_t>{0});
  EXPECT_TRUE(Lookup(index, 99999).empty());
  EXPECT_FALSE(index.Add(s, std::vector<uint64_t>{4})) << "a live slot cannot be added twice";
  EXPECT_EQ(index.AllocateSlot(), 1u);
}

// Growing page by page with the shard's compaction policy, the index never holds more than the
// main arrays plus about one byte per posting of overflow table (plus the slot state): the RAM
// figure a shard reports is not just a lucky moment between compactions.
TEST(PrefixIndex, OverflowTableStaysSmallWhileGrowing) {
  std::mt19937_64 rng(11);
  PrefixIndex index(PrefixIndex::BucketBitsFor(40 * 60000));
  std::vector<uint64_t> tokens(40);
  for (int page = 0; page < 60000; ++page) {
    for (auto& t : tokens) t = rng();
    ASSERT_TRUE(index.Add(index.AllocateSlot(), tokens));
    if (index.NeedsCompaction()) index.Compact();
    const uint64_t postings = index.main_postings() + index.overflow_postings();
    const uint64_t buckets = uint64_t{1} << index.bucket_bits();
    // The main array keeps room for one compaction's growth (and a page); the overflow holds up
    // to 1/32 of the main postings and buckets, 8 bytes each, in a table at least 30% full.
    const uint64_t slack = (index.main_postings() + buckets + 1) / 32 + 4096 + 1024;
    const uint64_t main_bytes = 4 * (index.main_postings() + slack + buckets + 1);
    const uint64_t slots = static_cast<uint64_t>(page) + 1;
    const uint64_t bound = main_bytes + (postings + buckets) + 8 * (4096 * 2 + 1024) + 2 * slots + 64;
    ASSERT_LE(index.MemoryBytes(), bound) << "after " << slots << " pages, " << index.overflow_postings()
                                          << " overflow postings";
  }
}

TEST(PrefixIndex, GrowingIndexKeepsLittleSpareCapacity) {
  // The main array grows by remapping (no copy), so it needs no more room than one compaction's
  // growth: (postings + buckets) / 32 + 4096 postings, plus the last page.
  std::mt19937_64 rng(12);
  const int bits = PrefixIndex::BucketBitsFor(40 * 40000);
  PrefixIndex index(bits);
  std::vector<uint64_t> tokens(40);
  int compactions = 0;
  for (int page = 0; page < 40000; ++page) {
    for (auto& t : tokens) t = rng();
    ASSERT_TRUE(index.Add(index.AllocateSlot(), tokens));
    if (index.NeedsCompaction()) {
      index.Compact();
      ++compactions;
      const uint64_t p = index.main_postings();
      EXPECT_GE(index.main_capacity(), p);
      EXPECT_LE(index.main_capacity(), p + (p + (1ull << bits) + 1) / 32 + 4096 + 1024) << compactions;
    }
  }
  ASSERT_GE(compactions, 10);
}

TEST(PrefixIndex, RemovedSlotIsHiddenAndNotReusedBeforeCompaction) {
  PrefixIndex index(10);
  ASSERT_TRUE(index.Add(0, std::vector<uint64_t>{10, 11}));
  ASSERT_TRUE(index.Add(1, std::vector<uint64_t>{10, 12}));
  ASSERT_TRUE(index.Remove(0, 2));
  EXPECT_FALSE(index.Remove(0, 2));
  EXPECT_EQ(Lookup(index, 10), std::set<uint32_t>{1});
  EXPECT_EQ(index.AllocateSlot(), 2u) << "slot 0 still has postings";
  index.Compact();
  EXPECT_EQ(index.AllocateSlot(), 0u);
  ASSERT_TRUE(index.Add(0, std::vector<uint64_t>{13}));
  // The old page's tokens no longer lead to slot 0 (tokens 10..13 differ in their low bits).
  EXPECT_EQ(Lookup(index, 11), std::set<uint32_t>{});
  EXPECT_EQ(Lookup(index, 10), std::set<uint32_t>{1});
  EXPECT_EQ(Lookup(index, 13), std::set<uint32_t>{0});
}

// Without purge, a compaction merges the overflow but leaves a few dead postings (and their slots)
// for a later purge: probes still skip them, and the slot is not handed out while its postings stay.
TEST(PrefixIndex, CompactionWithoutPurgeKeepsDeadSlotsHidden) {
  PrefixIndex index(10);
  for (uint32_t s = 0; s < 100; ++s) ASSERT_TRUE(index.Add(s, std::vector<uint64_t>{s, 1000 + s % 7}));
  ASSERT_TRUE(index.Remove(3, 2));
  index.Compact(/*purge=*/false);
  EXPECT_EQ(index.overflow_postings(), 0u);
  EXPECT_EQ(index.main_postings(), 200u) << "the dead page's postings stay";
  EXPECT_EQ(index.dead_postings(), 2u);
  EXPECT_EQ(Lookup(index, 3), std::set<uint32_t>{});
  EXPECT_EQ(Lookup(index, 1003), (std::set<uint32_t>{10, 17, 24, 31, 38, 45, 52, 59, 66, 73, 80, 87, 94}));
  EXPECT_EQ(index.AllocateSlot(), 100u) << "slot 3 still has postings";
  index.Compact();
  EXPECT_EQ(index.main_postings(), 198u);
  EXPECT_EQ(index.dead_postings(), 0u);
  EXPECT_EQ(index.AllocateSlot(), 3u);
}

TEST(PrefixIndex, AllocateSlotsMatchesOneByOneAllocation) {
  PrefixIndex index(8);
  for (uint32_t s = 0; s < 6; ++s) ASSERT_TRUE(index.Add(s, std::vector<uint64_t>{s}));
  index.Remove(1, 1);
  index.Remove(4, 1);
  index.Compact();
  const std::vector<uint32_t> planned = index.AllocateSlots(4);
  ASSERT_EQ(planned.size(), 4u);
  for (uint32_t s : planned) {
    EXPECT_EQ(index.AllocateSlot(), s);
    ASSERT_TRUE(index.Add(s, std::vector<uint64_t>{100 + s}));
  }
  EXPECT_EQ(planned, (std::vector<uint32_t>{1, 4, 6, 7}));
}

// The scan for fresh slots starts past the slots already added in the order they were handed
// out, after a bulk build too: a batch's AllocateSlots does not walk the shard's live slots again.
TEST(PrefixIndex, FreshSlotScanStartsPastTheAddedSlots) {
  PrefixIndex index(8);
  for (int batch = 0; batch < 5; ++batch) {
    for (uint32_t s : index.AllocateSlots(200)) ASSERT_TRUE(index.Add(s, std::vector<uint64_t>{s}));
    EXPECT_EQ(index.first_fresh_candidate(), 200u * static_cast<uint32_t>(batch + 1));
  }
  // Slots 0..9 and 12 from a restart: the gap is handed out first, and the scan passes it once filled.
  PrefixIndex built = PrefixIndex::Build(8, [](const PrefixIndex::BulkVisitor& visit) {
    for (uint32_t s = 0; s < 10; ++s) visit(s, std::vector<uint64_t>{s});
    visit(12, std::vector<uint64_t>{12});
  });
  EXPECT_EQ(built.first_fresh_candidate(), 10u);
  const std::vector<uint32_t> planned = built.AllocateSlots(3);
  EXPECT_EQ(planned, (std::vector<uint32_t>{10, 11, 13}));
  for (uint32_t s : planned) ASSERT_TRUE(built.Add(s, std::vector<uint64_t>{s}));
  EXPECT_EQ(built.first_fresh_candidate(), 14u);
}

// FindCrowded reports the lists with at least min_live live postings, with a sample of their
// live slots; AddPostings files more tokens under a live slot, and refuses a dead one.
TEST(PrefixIndex, FindCrowdedAndAddPostings) {
  PrefixIndex index(12);
  const uint64_t a = 0x1234567890ABCDEFull, b = 0x0FEDCBA987654321ull;
  for (uint32_t s = 0; s < 300; ++s) {
    std::vector<uint64_t> tokens{1000003ull * s + 7};  // a token of its own
    if (s < 100) tokens.push_back(a);
    else if (s < 130) tokens.push_back(b);
    std::sort(tokens.begin(), tokens.end());
    ASSERT_TRUE(index.Add(s, tokens));
  }
  for (uint32_t s = 0; s < 100; s += 10) ASSERT_TRUE(index.Remove(s, 2));
  index.Compact(/*purge=*/false);
  std::vector<PrefixIndex::Crowded> crowded = index.FindCrowded(64, 8);
  ASSERT_EQ(crowded.size(), 1u);
  EXPECT_TRUE(index.InGroup(crowded[0], a));
  EXPECT_FALSE(index.InGroup(crowded[0], b));
  EXPECT_EQ(crowded[0].live, 90u);
  ASSERT_EQ(crowded[0].sample.size(), 8u);
  for (uint32_t s : crowded[0].sample) {
    EXPECT_LT(s, 100u);
    EXPECT_TRUE(index.IsLive(s));
  }
  EXPECT_GT(crowded[0].sample.back() - crowded[0].sample.front(), 50u) << "spread over the list";
  crowded = index.FindCrowded(20, 4);
  ASSERT_EQ(crowded.size(), 2u);
  EXPECT_EQ(crowded[0].live + crowded[1].live, 120u);
  EXPECT_TRUE(index.FindCrowded(0, 8).empty());

  const uint64_t c = 0x5555555555555555ull;
  EXPECT_TRUE(index.AddPostings(150, std::vector<uint64_t>{c}));
  EXPECT_FALSE(index.AddPostings(10, std::vector<uint64_t>{c})) << "slot 10 is dead";
  EXPECT_EQ(Lookup(index, c), std::set<uint32_t>{150});
  EXPECT_EQ(Lookup(index, 1000003ull * 150 + 7), std::set<uint32_t>{150}) << "its earlier postings stay";
  index.Compact();
  EXPECT_EQ(Lookup(index, c), std::set<uint32_t>{150});
}

// Random adds, removes and compactions against the model: every live (slot, token) is found, no
// dead slot is returned, and the bulk build finds the same.
TEST(PrefixIndex, RandomOperationsKeepEveryPosting) {
  std::mt19937_64 rng(7);
  PrefixIndex index(9);  // small table: long buckets, many collisions
  Model model;
  for (int round = 0; round < 4000; ++round) {
    const int op = static_cast<int>(rng() % 10);
    if (op < 6 || model.empty()) {
      const uint32_t slot = index.AllocateSlot();
      std::vector<uint64_t> tokens(1 + rng() % 12);
      for (auto& t : tokens) t = rng() % 5000;  // shared tokens across pages
      std::sort(tokens.begin(), tokens.end());
      tokens.erase(std::unique(tokens.begin(), tokens.end()), tokens.end());
      ASSERT_TRUE(index.Add(slot, tokens));
      model[slot] = tokens;
    } else if (op < 9) {
      auto it = model.begin();
      std::advance(it, rng() % model.size());
      ASSERT_TRUE(index.Remove(it->first, static_cast<uint32_t>(it->second.size())));
      model.erase(it);
    } else {
      index.Compact();
      EXPECT_EQ(index.overflow_postings(), 0u);
    }
    if (index.NeedsCompaction()) index.Compact(/*purge=*/rng() % 2 == 0);
  }
  EXPECT_EQ(index.live_slots(), model.size());
  ExpectSuperset(index, model);
  // Collect (batched, with prefetching) finds what ForEach finds, dead slots aside.
  for (uint64_t t0 = 0; t0 < 5000; t0 += 37) {
    std::vector<uint64_t> tokens;
    for (uint64_t t = t0; t < t0 + 37 && t < 5000; ++t) tokens.push_back(t);
    std::vector<uint32_t> got;
    index.Collect(tokens, &got);
    std::multiset<uint32_t> live_got, want;
    for (uint32_t s : got) if (index.IsLive(s)) live_got.insert(s);
    for (uint64_t t : tokens) index.ForEach(t, [&](uint32_t s) { want.insert(s); });
    EXPECT_EQ(live_got, want) << "tokens from " << t0;
  }
  // Nothing dead comes back.
  for (uint64_t t = 0; t < 5000; ++t) {
    for (uint32_t s : Lookup(index, t)) EXPECT_TRUE(model.count(s)) << "dead slot " << s;
  }
  PrefixIndex built = PrefixIndex::Build(9, [&](const PrefixIndex::BulkVisitor& visit) {
    for (const auto& [slot, tokens] : model) visit(slot, tokens);
  });
  EXPECT_EQ(built.live_slots(), model.size());
  ExpectSuperset(built, model);
  for (uint64_t t = 0; t < 5000; ++t) EXPECT_EQ(Lookup(built, t), Lookup(index, t)) << t;
  // A rebuilt index hands out the gaps before new slots.
  if (!model.empty()) {
    const uint32_t s = built.AllocateSlot();
    EXPECT_FALSE(model.count(s));
  }
}

// An index that only grows skips the pass that drops dead postings and moves runs of buckets
// whole: every posting must still be found, exactly as an index built in one go has them.
TEST(PrefixIndex, GrowthOnlyCompactionsKeepEveryPosting) {
  std::mt19937_64 rng(13);
  PrefixIndex index(9);
  Model model;
  for (int page = 0; page < 3000; ++page) {
    const uint32_t slot = index.AllocateSlot();
    std::vector<uint64_t> tokens(1 + rng() % 20);
    for (auto& t : tokens) t = rng() % 20000;
    std::sort(tokens.begin(), tokens.end());
    tokens.erase(std::unique(tokens.begin(), tokens.end()), tokens.end());
    ASSERT_TRUE(index.Add(slot, tokens));
    model[slot] = tokens;
    if (page % 97 == 0 || index.NeedsCompaction()) index.Compact();
  }
  index.Compact();
  ASSERT_EQ(index.overflow_postings(), 0u);
  PrefixIndex built = PrefixIndex::Build(9, [&](const PrefixIndex::BulkVisitor& visit) {
    for (const auto& [slot, tokens] : model) visit(slot, tokens);
  });
  EXPECT_EQ(index.main_postings(), built.main_postings());
  for (uint64_t t = 0; t < 20000; ++t) {
    ASSERT_EQ(Lookup(index, t), Lookup(built, t)) << t;
    std::vector<uint32_t> a, b;  // every posting, duplicates included
    index.Collect(std::vector<uint64_t>{t}, &a);
    built.Collect(std::vector<uint64_t>{t}, &b);
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    ASSERT_EQ(a, b) << t;
  }
  ExpectSuperset(index, model);
}

// Regression: probing an index with no postings at all indexed an empty vector (UBSan).
// Copies: thousands of pages filed under one token between compactions (their inserts go on
// after the bucket's last entry instead of walking its run), mixed with other tokens, some in the
// same bucket; the overflow table grows and is compacted meanwhile. Every posting is found, and
// Collect with a limit takes that many of a token's postings, the main array's first, and says
// that it left some out.
TEST(PrefixIndex, ACrowdedBucketKeepsEveryPosting) {
  PrefixIndex index(8);
  const uint64_t crowd = 0xABull << 40 | 7;  // fingerprint 0xAB, bucket 7
  const uint64_t neighbour = 0xCDull << 40 | 7;  // the same bucket, another fingerprint
  std::vector<uint32_t> crowd_slots, neighbour_slots;
  for (int i = 0; i < 6000; ++i) {
    const uint32_t slot = index.AllocateSlot();
    std::vector<uint64_t> tokens = {crowd, 1000 + static_cast<uint64_t>(i)};
    if (i % 10 == 0) tokens.push_back(neighbour);
    ASSERT_TRUE(index.Add(slot, tokens));
    crowd_slots.push_back(slot);
    if (i % 10 == 0) neighbour_slots.push_back(slot);
    if (i % 500 == 0) {  // every posting found between compactions too, and after
      EXPECT_EQ(Lookup(index, crowd).size(), crowd_slots.size()) << "after page " << i;
      EXPECT_EQ(Lookup(index, neighbour).size(), neighbour_slots.size()) << "after page " << i;
    }
    if (i == 2500 || i == 4000) index.Compact();
  }
  const std::set<uint32_t> want_crowd(crowd_slots.begin(), crowd_slots.end());
  EXPECT_EQ(Lookup(index, crowd), want_crowd);
  EXPECT_EQ(Lookup(index, neighbour), std::set<uint32_t>(neighbour_slots.begin(), neighbour_slots.end()));
  for (int i = 0; i < 6000; i += 101) EXPECT_EQ(Lookup(index, 1000 + i).count(crowd_slots[i]), 1u);
  std::vector<uint32_t> got;
  EXPECT_FALSE(index.Collect(std::vector<uint64_t>{crowd}, &got));
  EXPECT_EQ(std::set<uint32_t>(got.begin(), got.end()), want_crowd);
  got.clear();
  EXPECT_TRUE(index.Collect(std::vector<uint64_t>{crowd, neighbour}, &got, 100));
  ASSERT_EQ(got.size(), 200u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(got[i], crowd_slots[i]) << "the main array's first";
  index.Compact();
  EXPECT_EQ(Lookup(index, crowd), want_crowd);
}

TEST(PrefixIndex, CollectOnAnEmptyIndex) {
  PrefixIndex index(8);
  std::vector<uint32_t> got;
  index.Collect(std::vector<uint64_t>{1, 2, 3}, &got);
  EXPECT_TRUE(got.empty());
}

TEST(PrefixIndex, BucketBitsGrowWithPostings) {
  EXPECT_EQ(PrefixIndex::BucketBitsFor(0), PrefixIndex::kMinBucketBits);
  EXPECT_GT(PrefixIndex::BucketBitsFor(40'000'000), PrefixIndex::BucketBitsFor(1'000'000));
  EXPECT_LE(PrefixIndex::BucketBitsFor(~0ull), PrefixIndex::kMaxBucketBits);
}

}  // namespace
}  // namespace neardup::tier2
