// PrefixIndex: the in-memory inverted index of a Tier 2 shard, from prefix tokens to page slots.
//
// A slot is a small integer naming one resident page. Each page indexes the tokens of its prefix
// (tier2/prefix_filter.h); a probe with a token returns every slot that indexed it. To fit a
// resident page in a few hundred bytes the index is lossy on purpose: a posting is 4 bytes (a 24-bit
// slot and an 8-bit fingerprint of the token) filed under a bucket of the token's low bits, so a
// probe returns a superset of the slots that hold the token, never fewer. Callers count matches per
// slot and verify exactly; a false match costs a candidate, never a pair.
//
// Layout: the bulk of the postings lives in one compressed array per bucket range (CSR: an offset
// per bucket); postings added since the last Compact() live in an overflow hash table. Removing a
// page marks its slot dead: probes skip it at once, its postings stay until Compact(), and the slot
// is handed out again only after that, so a stale posting never names another page.
//
//   PrefixIndex index(20);
//   uint32_t slot = index.AllocateSlot();
//   index.Add(slot, prefix_tokens);
//   index.ForEach(token, [&](uint32_t s) { ++count[s]; });
//   index.Remove(slot, prefix_tokens.size());
//   if (index.NeedsCompaction()) index.Compact(/*purge=*/false);
//
// Thread safety: const methods may run concurrently with each other; any non-const call needs
// exclusive access (the shard holds a reader/writer lock).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <unordered_map>
#include <vector>

#include "common/mapped_array.h"

namespace neardup::tier2 {

class PrefixIndex {
 public:
  static constexpr uint32_t kMaxSlots = 1u << 24;
  static constexpr int kMinBucketBits = 8;
  static constexpr int kMaxBucketBits = 30;

  // `bucket_bits` is clamped to [kMinBucketBits, kMaxBucketBits]; 4..16 postings per bucket is a
  // good size (BucketBitsFor): a probe reads one or two cache lines of a bucket either way, and
  // the bucket table costs 4 bytes per bucket.
  explicit PrefixIndex(int bucket_bits);

  // Bucket bits that give 4..8 postings per bucket for `postings` postings.
  static int BucketBitsFor(uint64_t postings);

  // A free slot: one purged by Compact(), or the lowest never-used one. Does not change its state
  // (Add does). Returns kMaxSlots when every slot is taken.
  uint32_t AllocateSlot();
  // n distinct free slots, in the order AllocateSlot() would hand them out if each were added in
  // turn; fewer when the slots run out.
  std::vector<uint32_t> AllocateSlots(size_t n) const;

  // Builds an index in one go, for a restart: `scan(visit)` must call visit(slot, tokens) for every
  // page, and is called twice with the same sequence (once to count, once to fill), so the
  // postings go straight to the main arrays without an overflow copy.
  using BulkVisitor = std::function<void(uint32_t slot, std::span<const uint64_t> tokens)>;
  static PrefixIndex Build(int bucket_bits, const std::function<void(const BulkVisitor&)>& scan);

  // Makes `slot` live with postings for `tokens`. The slot must be free (fresh, or purged);
  // restarts may add slots in any order. Returns false (and changes nothing) otherwise.
  bool Add(uint32_t slot, std::span<const uint64_t> tokens);

  // Adds postings for `tokens` to a live slot (it indexes more tokens than it did: a new token
  // order moved its prefix). Its earlier postings stay. Returns false (and changes nothing) when
  // the slot is not live.
  bool AddPostings(uint32_t slot, std::span<const uint64_t> tokens);

  // Marks a live slot dead; `postings` is how many tokens it indexed (for the compaction policy).
  // Returns false when the slot was not live.
  bool Remove(uint32_t slot, uint32_t postings);

  bool IsLive(uint32_t slot) const { return slot < state_.size() && state_[slot] == kLive; }
  // Every slot a posting names is below this (slots ever added, or purged since).
  size_t slot_bound() const { return state_.size(); }

  // Calls f(slot) for every live slot with a posting in token's bucket and fingerprint.
  template <typename F>
  void ForEach(uint64_t token, F&& f) const;

  // Appends to *slots the slot of every posting in the tokens' buckets with their fingerprints,
  // dead slots included (check IsLive on the few that matter), one entry per matching posting.
  // Prefetches every bucket before reading any, so the cache misses of a probe overlap. With
  // max_per_token > 0, at most that many of each token's postings, the main array's first (the
  // pages indexed longest), and returns whether a token had more; 0: all of them (false).
  bool Collect(std::span<const uint64_t> tokens, std::vector<uint32_t>* slots, uint32_t max_per_token = 0) const;

  // A posting list many live pages share: every token of `bucket` and `fingerprint` files there,
  // so it is usually one token's (InGroup tells which tokens it may be).
  struct Crowded {
    uint32_t bucket = 0;
    uint32_t fingerprint = 0;
    uint32_t live = 0;            // live slots with a posting in it
    std::vector<uint32_t> sample;  // up to `sample` of them, spread over the list
  };
  // Every list of the main arrays with at least `min_live` live postings (the overflow is not
  // looked at: Compact first), in bucket order. O(main postings).
  std::vector<Crowded> FindCrowded(uint32_t min_live, size_t sample) const;
  bool InGroup(const Crowded& c, uint64_t token) const {
    return Bucket(token) == c.bucket && Fingerprint(token) == c.fingerprint;
  }

  // Overflow above 1/32 of the main postings plus buckets, or dead postings above 1/4 of the live
  // ones.
  bool NeedsCompaction() const;

  // Merges the overflow into the main arrays and drops dead postings, in place (no second copy of
  // the arrays); dead slots become free. O(postings + buckets). The main array grows in place or
  // by remapping (common/mapped_array.h: its postings are neither copied nor faulted in again),
  // with room for one more compaction's growth.
  // purge = false keeps dead postings (and their slots dead) unless they pass 1/32 of the main
  // postings: dropping them reads the state of every posting's slot, the dearest part of a
  // compaction, for little gain when few are dead (probes skip them either way).
  void Compact(bool purge = true);

  uint64_t live_slots() const { return live_slots_; }
  // Where AllocateSlots starts to look past the purged slots: no slot below it is fresh.
  uint32_t first_fresh_candidate() const { return scan_; }
  uint64_t main_postings() const { return postings_.size(); }
  uint64_t main_capacity() const { return postings_.capacity(); }
  uint64_t overflow_postings() const { return overflow_count_; }
  uint64_t dead_postings() const { return dead_postings_; }
  int bucket_bits() const { return bucket_bits_; }
  // Bytes held by the index's arrays (capacity, not size).
  uint64_t MemoryBytes() const;

 private:
  enum : uint8_t { kFree = 0, kLive = 1, kDead = 2 };
  static constexpr uint64_t kEmpty = ~0ull;

  uint32_t Bucket(uint64_t token) const { return static_cast<uint32_t>(token & bucket_mask_); }
  static uint32_t Fingerprint(uint64_t token) { return static_cast<uint32_t>(token >> 40) & 0xFF; }
  uint64_t OverflowSlot(uint32_t bucket) const {
    return (bucket * 0x9E3779B97F4A7C15ull) >> overflow_shift_;
  }
  uint64_t Slack(uint64_t postings) const;  // spare main-array capacity a reallocation leaves
  void AdvanceScan();  // scan_ to the lowest slot at or above it that is free (or state_.size())
  // The slot's postings for `tokens`, into the overflow.
  void InsertPostings(uint32_t slot, std::span<const uint64_t> tokens);
  // Files `entry` at the first free place from `at`, its bucket's (or after the bucket's last entry
  // when run_end_ knows it).
  void OverflowPlace(uint64_t at, uint64_t entry, uint64_t mask);
  void OverflowInsert(uint64_t entry);
  void OverflowGrow();

  int bucket_bits_;
  uint64_t bucket_mask_;
  std::vector<uint32_t> offsets_;   // 2^bucket_bits + 1
  MappedArray<uint32_t> postings_;  // slot << 8 | fingerprint, grouped by bucket; grows by mremap
  std::vector<uint64_t> overflow_;  // bucket << 32 | posting, linear probing, kEmpty = free
  int overflow_shift_;
  uint64_t overflow_count_ = 0;
  // The place of the last overflow entry of each bucket whose run of entries grew long (an insert
  // walked kLongRun places or more): inserts go on from there. Cleared with the table's entries.
  static constexpr uint32_t kLongRun = 32;
  std::unordered_map<uint32_t, uint64_t> run_end_;
  std::vector<uint8_t> state_;      // per slot
  std::vector<uint32_t> free_;      // purged slots
  uint32_t scan_ = 0;               // slots below are not fresh
  uint64_t live_slots_ = 0;
  uint64_t dead_postings_ = 0;
  uint64_t live_postings_ = 0;
};

template <typename F>
void PrefixIndex::ForEach(uint64_t token, F&& f) const {
  const uint32_t b = Bucket(token), fp = Fingerprint(token);
  for (uint32_t i = offsets_[b], e = offsets_[b + 1]; i < e; ++i) {
    const uint32_t p = postings_[i];
    if ((p & 0xFF) == fp && state_[p >> 8] == kLive) f(p >> 8);
  }
  if (overflow_count_ == 0) return;
  const uint64_t mask = overflow_.size() - 1;
  const uint64_t want = static_cast<uint64_t>(b) << 32;
  for (uint64_t i = OverflowSlot(b);; i = (i + 1) & mask) {
    const uint64_t e = overflow_[i];
    if (e == kEmpty) break;
    if ((e & 0xFFFFFFFF00000000ull) == want) {
      const uint32_t p = static_cast<uint32_t>(e);
      if ((p & 0xFF) == fp && state_[p >> 8] == kLive) f(p >> 8);
    }
  }
}

}  // namespace neardup::tier2
