#include "tier2/prefix_index.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "common/bucket_sort.h"

namespace neardup::tier2 {

namespace {
constexpr int kOverflowMinBits = 10;
}  // namespace

PrefixIndex::PrefixIndex(int bucket_bits)
    : bucket_bits_(std::clamp(bucket_bits, kMinBucketBits, kMaxBucketBits)),
      bucket_mask_((1ull << bucket_bits_) - 1),
      offsets_((1ull << bucket_bits_) + 1, 0),
      overflow_(1ull << kOverflowMinBits, kEmpty),
      overflow_shift_(64 - kOverflowMinBits) {}

int PrefixIndex::BucketBitsFor(uint64_t postings) {
  const uint64_t buckets = std::max<uint64_t>(postings / 8, 1);  // 2^bit_width: 4..8 postings a bucket
  return std::clamp(static_cast<int>(std::bit_width(buckets)), kMinBucketBits, kMaxBucketBits);
}

void PrefixIndex::AdvanceScan() {
  while (scan_ < state_.size() && state_[scan_] != kFree) ++scan_;
}

uint32_t PrefixIndex::AllocateSlot() {
  // free_ may hold slots a restart re-added directly; those are skipped here.
  while (!free_.empty() && state_[free_.back()] != kFree) free_.pop_back();
  if (!free_.empty()) return free_.back();
  AdvanceScan();
  return scan_ < kMaxSlots ? scan_ : kMaxSlots;
}

std::vector<uint32_t> PrefixIndex::AllocateSlots(size_t n) const {
  std::vector<uint32_t> out;
  out.reserve(n);
  for (size_t i = free_.size(); i-- > 0 && out.size() < n;) {
    if (state_[free_[i]] == kFree) out.push_back(free_[i]);
  }
  std::vector<uint32_t> taken(out);  // purged slots are free too: the scan must skip them
  std::sort(taken.begin(), taken.end());
  for (uint64_t s = scan_; out.size() < n && s < kMaxSlots; ++s) {
    if ((s >= state_.size() || state_[s] == kFree) &&
        !std::binary_search(taken.begin(), taken.end(), static_cast<uint32_t>(s))) {
      out.push_back(static_cast<uint32_t>(s));
    }
  }
  return out;
}

PrefixIndex PrefixIndex::Build(int bucket_bits, const std::function<void(const BulkVisitor&)>& scan) {
  PrefixIndex index(bucket_bits);
  std::vector<uint32_t>& off = index.offsets_;
  uint64_t total = 0;
  uint32_t max_slot = 0;
  bool any = false;
  scan([&](uint32_t slot, std::span<const uint64_t> tokens) {
    for (uint64_t t : tokens) ++off[index.Bucket(t) + 1];
    total += tokens.size();
    max_slot = std::max(max_slot, slot);
    any = true;
  });
  for (size_t b = 1; b < off.size(); ++b) off[b] += off[b - 1];
  index.postings_.resize(total);
  if (any) index.state_.assign(static_cast<size_t>(max_slot) + 1, kFree);
  std::vector<uint32_t> fill(off.begin(), off.end() - 1);
  scan([&](uint32_t slot, std::span<const uint64_t> tokens) {
    if (slot >= kMaxSlots || index.state_[slot] != kFree) return;
    index.state_[slot] = kLive;
    ++index.live_slots_;
    for (uint64_t t : tokens) index.postings_[fill[index.Bucket(t)]++] = slot << 8 | Fingerprint(t);
  });
  index.live_postings_ = total;
  index.AdvanceScan();
  return index;
}

bool PrefixIndex::Add(uint32_t slot, std::span<const uint64_t> tokens) {
  if (slot >= kMaxSlots) return false;
  if (slot >= state_.size()) state_.resize(std::max<size_t>(slot + 1, state_.size() + state_.size() / 2), kFree);
  if (state_[slot] != kFree) return false;
  if (!free_.empty() && free_.back() == slot) free_.pop_back();
  state_[slot] = kLive;
  ++live_slots_;
  // Slots are mostly added in the order AllocateSlots hands them out: the scan's start moves past
  // them, so that no batch walks the live slots again.
  if (slot == scan_) AdvanceScan();
  InsertPostings(slot, tokens);
  return true;
}

void PrefixIndex::InsertPostings(uint32_t slot, std::span<const uint64_t> tokens) {
  // The table is many times the cache and each posting lands at random in it: the positions of a
  // group of postings are prefetched before any is written, so their misses overlap. Grown first,
  // so that the positions stay valid.
  while ((overflow_count_ + tokens.size()) * 10 > overflow_.size() * 6) OverflowGrow();
  constexpr size_t kGroup = 16;
  uint64_t entry[kGroup], at[kGroup];
  const uint64_t mask = overflow_.size() - 1;
  for (size_t g = 0; g < tokens.size(); g += kGroup) {
    const size_t n = std::min(kGroup, tokens.size() - g);
    for (size_t i = 0; i < n; ++i) {
      const uint64_t t = tokens[g + i];
      entry[i] = static_cast<uint64_t>(Bucket(t)) << 32 | (static_cast<uint64_t>(slot) << 8 | Fingerprint(t));
      at[i] = OverflowSlot(Bucket(t));
      __builtin_prefetch(&overflow_[at[i]], 1);
    }
    for (size_t i = 0; i < n; ++i) OverflowPlace(at[i], entry[i], mask);
    overflow_count_ += n;
  }
  live_postings_ += tokens.size();
}

bool PrefixIndex::AddPostings(uint32_t slot, std::span<const uint64_t> tokens) {
  if (!IsLive(slot)) return false;
  InsertPostings(slot, tokens);
  return true;
}

std::vector<PrefixIndex::Crowded> PrefixIndex::FindCrowded(uint32_t min_live, size_t sample) const {
  std::vector<Crowded> out;
  if (min_live == 0) return out;
  uint32_t count[256] = {};
  for (uint64_t b = 0; b + 1 < offsets_.size(); ++b) {
    const uint32_t start = offsets_[b], end = offsets_[b + 1];
    if (end - start < min_live) continue;  // most buckets
    for (uint32_t i = start; i < end; ++i) count[postings_[i] & 0xFF] += state_[postings_[i] >> 8] == kLive;
    for (uint32_t i = start; i < end; ++i) {
      const uint32_t fp = postings_[i] & 0xFF;
      if (count[fp] >= min_live) {
        Crowded c;
        c.bucket = static_cast<uint32_t>(b);
        c.fingerprint = fp;
        c.live = count[fp];
        // Every (live / sample)-th live posting of the list.
        const uint64_t step = std::max<uint64_t>(1, c.live / std::max<size_t>(sample, 1));
        uint64_t seen = 0;
        for (uint32_t j = start; j < end && c.sample.size() < sample; ++j) {
          const uint32_t p = postings_[j];
          if ((p & 0xFF) != fp || state_[p >> 8] != kLive) continue;
          if (seen++ % step == 0) c.sample.push_back(p >> 8);
        }
        out.push_back(std::move(c));
      }
      count[fp] = 0;  // each list once
    }
  }
  return out;
}

bool PrefixIndex::Remove(uint32_t slot, uint32_t postings) {
  if (!IsLive(slot)) return false;
  state_[slot] = kDead;
  --live_slots_;
  dead_postings_ += postings;
  live_postings_ -= std::min<uint64_t>(postings, live_postings_);
  return true;
}

void PrefixIndex::OverflowPlace(uint64_t at, uint64_t entry, uint64_t mask) {
  // A bucket's entries fill a run from its place, with nothing taken out until Compact() or
  // OverflowGrow(): a crowded bucket's new entry goes on after its last one instead of walking
  // the run (thousands of copies of a page filed under one token would make each insert walk all
  // of them since the last compaction). The table is the same either way.
  const uint32_t bucket = static_cast<uint32_t>(entry >> 32);
  auto end = run_end_.empty() ? run_end_.end() : run_end_.find(bucket);
  if (end != run_end_.end()) at = end->second;
  uint32_t walked = 0;
  while (overflow_[at] != kEmpty) at = (at + 1) & mask, ++walked;
  overflow_[at] = entry;
  if (end != run_end_.end()) end->second = at;
  else if (walked >= kLongRun) run_end_.emplace(bucket, at);
}

void PrefixIndex::OverflowInsert(uint64_t entry) {
  if ((overflow_count_ + 1) * 10 > overflow_.size() * 6) OverflowGrow();
  OverflowPlace(OverflowSlot(static_cast<uint32_t>(entry >> 32)), entry, overflow_.size() - 1);
  ++overflow_count_;
}

void PrefixIndex::OverflowGrow() {
  std::vector<uint64_t> old(overflow_.size() * 2, kEmpty);
  old.swap(overflow_);
  --overflow_shift_;
  overflow_count_ = 0;
  run_end_.clear();
  for (uint64_t e : old) {
    if (e != kEmpty) OverflowInsert(e);
  }
}

bool PrefixIndex::Collect(std::span<const uint64_t> tokens, std::vector<uint32_t>* slots, uint32_t max_per_token) const {
  constexpr size_t kGroup = 16;  // buckets in flight
  const uint32_t most = max_per_token == 0 ? UINT32_MAX : max_per_token;
  bool cut = false;
  uint32_t begin[kGroup], end[kGroup], taken[kGroup];
  for (size_t g = 0; g < tokens.size(); g += kGroup) {
    const size_t n = std::min(kGroup, tokens.size() - g);
    for (size_t i = 0; i < n; ++i) __builtin_prefetch(&offsets_[Bucket(tokens[g + i])]);
    for (size_t i = 0; i < n; ++i) {
      const uint32_t b = Bucket(tokens[g + i]);
      begin[i] = offsets_[b];
      end[i] = offsets_[b + 1];
      taken[i] = 0;
      __builtin_prefetch(postings_.data() + begin[i]);  // data(): postings_ may be empty
      if (overflow_count_ > 0) __builtin_prefetch(&overflow_[OverflowSlot(b)]);
    }
    for (size_t i = 0; i < n; ++i) {
      const uint32_t fp = Fingerprint(tokens[g + i]);
      for (uint32_t k = begin[i]; k < end[i]; ++k) {
        if ((postings_[k] & 0xFF) != fp) continue;
        if (taken[i] == most) {
          cut = true;
          break;
        }
        ++taken[i];
        slots->push_back(postings_[k] >> 8);
      }
    }
    if (overflow_count_ == 0) continue;
    const uint64_t mask = overflow_.size() - 1;
    for (size_t i = 0; i < n; ++i) {
      const uint32_t b = Bucket(tokens[g + i]), fp = Fingerprint(tokens[g + i]);
      const uint64_t want = static_cast<uint64_t>(b) << 32;
      for (uint64_t k = OverflowSlot(b);; k = (k + 1) & mask) {
        const uint64_t e = overflow_[k];
        if (e == kEmpty) break;
        if ((e & 0xFFFFFFFF00000000ull) == want && (static_cast<uint32_t>(e) & 0xFF) == fp) {
          if (taken[i] == most) {
            cut = true;
            break;
          }
          ++taken[i];
          slots->push_back(static_cast<uint32_t>(e) >> 8);
        }
      }
    }
  }
  return cut;
}

bool PrefixIndex::NeedsCompaction() const {
  // Compact() costs O(postings + buckets): waiting for 1/32 of that keeps it to a few dozen moves
  // per added posting, however small the index is next to its bucket table, and caps the overflow
  // table (8 bytes a slot, at most 60% full, a power of two) at about (postings + buckets) bytes
  // times 8 / 32 / 0.3, i.e. under one byte per main posting. (1/16 halved the moves but cost 30 B
  // a page and probed slower: `bench tier2` at 1M resident pages, 284 against 255 B/page.)
  return overflow_count_ > (postings_.size() + offsets_.size()) / 32 + 4096 || dead_postings_ > live_postings_ / 4 + 4096;
}

uint64_t PrefixIndex::Slack(uint64_t postings) const {
  return (postings + offsets_.size()) / 32 + 4096;
}

void PrefixIndex::Compact(bool purge) {
  const uint64_t nb = 1ull << bucket_bits_;
  auto live = [&](uint32_t p) { return state_[p >> 8] == kLive; };
  // Dropping dead postings reads every posting's slot state: worth it only for many of them.
  purge = purge || dead_postings_ > postings_.size() / 32 + 4096;
  // Overflow entries (of live slots only when purging: otherwise dead ones stay counted), by bucket.
  // Gathered without a branch per table entry (the table is 40-60% full: a branch on each would
  // miss half the time): each entry is written, and the end moves past the ones kept.
  std::vector<uint64_t> extra(overflow_count_ + 1);
  size_t kept = 0;
  if (purge) {
    for (uint64_t e : overflow_) {
      if (e != kEmpty && live(static_cast<uint32_t>(e))) extra[kept++] = e;
    }
  } else {
    for (uint64_t e : overflow_) {
      extra[kept] = e;
      kept += e != kEmpty;
    }
  }
  extra.resize(kept);
  std::vector<uint64_t> scratch;  // by bucket, then posting: the bucket is token bits, about uniform
  SortByLeadingBits(&extra, 32 + bucket_bits_, [](uint64_t e) { return e; }, &scratch);
  // The table keeps its size: it fills up as far again by the next compaction, and growing it
  // from the minimum each time costs a dozen allocations, each a fresh mapping the kernel must
  // fault in and zero, and a freed one it must unmap (TLB shootdowns: ~9% of the pipeline's CPU).
  std::fill(overflow_.begin(), overflow_.end(), kEmpty);
  overflow_count_ = 0;
  run_end_.clear();

  // Pass 1, forward: drop dead postings (moves left only).
  uint32_t w = static_cast<uint32_t>(postings_.size());
  if (purge && dead_postings_ > 0) {
    w = 0;
    for (uint64_t b = 0; b < nb; ++b) {
      const uint32_t start = offsets_[b], end = offsets_[b + 1];
      offsets_[b] = w;
      for (uint32_t i = start; i < end; ++i) {
        if (live(postings_[i])) postings_[w++] = postings_[i];
      }
    }
    offsets_[nb] = w;
  }
  // Pass 2, backward: insert the overflow (moves right only). From the highest bucket with new
  // postings down, every bucket above the next such one shifts right by the number of new
  // postings still to place, so whole runs of buckets move with one memmove; buckets below the
  // lowest one with new postings stay where they are.
  // Room for one more compaction's growth (NeedsCompaction). Growing remaps the array without
  // copying it, so the slack only saves system calls; no doubling.
  const size_t need = w + extra.size();
  if (need > postings_.capacity()) postings_.reserve(need + Slack(need));
  postings_.resize(need);
  uint32_t* const p = postings_.data();
  uint64_t hi = nb;     // buckets >= hi are in place, and offsets_[hi] is final
  uint32_t hi_old = w;  // where bucket hi started before this pass
  offsets_[nb] = static_cast<uint32_t>(need);
  for (size_t ei = extra.size(); ei > 0;) {
    const uint64_t bk = extra[ei - 1] >> 32;
    size_t cnt = 1;
    while (cnt < ei && (extra[ei - 1 - cnt] >> 32) == bk) ++cnt;
    const uint32_t shift = static_cast<uint32_t>(ei);  // new postings still to place, all in buckets <= bk
    const uint32_t run_from = bk + 1 == hi ? hi_old : offsets_[bk + 1];
    // Buckets bk+1 .. hi-1: no new postings, shifted whole.
    std::memmove(p + run_from + shift, p + run_from, static_cast<size_t>(hi_old - run_from) * sizeof(uint32_t));
    for (uint64_t k = bk + 1; k < hi; ++k) offsets_[k] += shift;
    // Bucket bk: its old postings shift by what goes below it, its new ones follow them.
    const uint32_t start = offsets_[bk], below = shift - static_cast<uint32_t>(cnt);
    std::memmove(p + start + below, p + start, static_cast<size_t>(run_from - start) * sizeof(uint32_t));
    for (size_t j = 0; j < cnt; ++j) p[run_from + below + j] = static_cast<uint32_t>(extra[ei - cnt + j]);
    hi = bk;
    hi_old = start;
    offsets_[bk] = start + below;
    ei -= cnt;
  }
  if (postings_.capacity() > postings_.size() + 2 * Slack(postings_.size())) {  // shrunk by removals
    postings_.set_capacity(postings_.size() + Slack(postings_.size()));
  }

  if (!purge) return;  // dead slots keep their postings, so they are not handed out yet
  for (uint32_t s = 0; s < state_.size(); ++s) {
    if (state_[s] == kDead) {
      state_[s] = kFree;
      free_.push_back(s);
    }
  }
  // Hand out low slots first.
  std::sort(free_.begin(), free_.end(), std::greater<>());
  dead_postings_ = 0;
  live_postings_ = postings_.size();
}

uint64_t PrefixIndex::MemoryBytes() const {
  return offsets_.capacity() * sizeof(uint32_t) + postings_.capacity() * sizeof(uint32_t) +
         overflow_.capacity() * sizeof(uint64_t) + state_.capacity() + free_.capacity() * sizeof(uint32_t);
}

}  // namespace neardup::tier2
