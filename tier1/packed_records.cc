#include "tier1/packed_records.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "common/coding.h"

namespace neardup::tier1 {

size_t PackedRecords::Find(uint64_t key) const {
  if (table_.empty()) return kNotFound;
  const size_t mask = table_.size() - 1;
  for (size_t i = Mix(key) & mask;; i = (i + 1) & mask) {
    const Slot& s = table_[i];
    if (s.place == kEmpty) return kNotFound;
    if (s.place != kTombstone && s.key == key) return i;
  }
}

void PackedRecords::Rehash(size_t capacity) {
  std::vector<Slot> old(capacity);
  old.swap(table_);
  tombstones_ = 0;
  const size_t mask = table_.size() - 1;
  for (const Slot& s : old) {
    if (s.place == kEmpty || s.place == kTombstone) continue;
    size_t i = Mix(s.key) & mask;
    while (table_[i].place != kEmpty) i = (i + 1) & mask;
    table_[i] = s;
  }
}

void PackedRecords::InsertSlot(uint64_t key, uint64_t place) {
  // The key is not in the table (Put released it): its first free or dead slot takes it.
  if ((live_records_ + tombstones_ + 1) * 10 > table_.size() * 7) {
    Rehash(std::max<size_t>(1024, std::bit_ceil((live_records_ + 1) * 2)));
  }
  const size_t mask = table_.size() - 1;
  size_t i = Mix(key) & mask;
  while (table_[i].place != kEmpty && table_[i].place != kTombstone) i = (i + 1) & mask;
  if (table_[i].place == kTombstone) --tombstones_;
  table_[i] = Slot{key, place};
}

uint64_t PackedRecords::Append(uint64_t key, std::string_view bytes, uint32_t epoch) {
  const size_t need = kHeaderBytes + bytes.size();
  auto fresh = [&](size_t size) -> uint32_t {
    uint32_t at;
    if (!free_segments_.empty()) {
      at = free_segments_.back();
      free_segments_.pop_back();
    } else {
      at = static_cast<uint32_t>(segments_.size());
      segments_.emplace_back();
    }
    Segment& s = segments_[at];
    s.data.reset(new char[size]);
    s.size = static_cast<uint32_t>(size);
    s.used = s.live = 0;
    return at;
  };
  uint32_t seg;
  if (need > kSegmentBytes) {
    seg = fresh(need);  // a segment of its own; the head stays
  } else {
    if (head_ == ~0u || segments_[head_].used + need > segments_[head_].size) head_ = fresh(kSegmentBytes);
    seg = head_;
  }
  Segment& s = segments_[seg];
  char* p = s.data.get() + s.used;
  StoreLittleEndian(p, key, 8);
  StoreLittleEndian(p + 8, epoch, 4);
  StoreLittleEndian(p + 12, bytes.size(), 4);
  if (!bytes.empty()) std::memcpy(p + kHeaderBytes, bytes.data(), bytes.size());
  const uint64_t place = static_cast<uint64_t>(seg) << 32 | s.used;
  s.used += static_cast<uint32_t>(need);
  s.live += static_cast<uint32_t>(need);
  segment_bytes_ += need;
  live_bytes_ += need;
  return place;
}

void PackedRecords::Put(uint64_t key, std::string_view bytes, uint32_t epoch) {
  if (const size_t slot = Find(key); slot != kNotFound) Release(slot);
  const uint64_t place = Append(key, bytes, epoch);
  InsertSlot(key, place);
  ++live_records_;
}

bool PackedRecords::Take(uint64_t key, std::string* out) {
  const size_t slot = Find(key);
  if (slot == kNotFound) return false;
  const char* p = At(table_[slot].place);
  out->assign(p + kHeaderBytes, LoadLittleEndian(p + 12, 4));
  Release(slot);
  return true;
}

void PackedRecords::Erase(uint64_t key) {
  if (const size_t slot = Find(key); slot != kNotFound) Release(slot);
}

void PackedRecords::Release(size_t slot) {
  const uint64_t place = table_[slot].place;
  const uint32_t seg = static_cast<uint32_t>(place >> 32);
  const uint32_t need = static_cast<uint32_t>(kHeaderBytes + LoadLittleEndian(At(place) + 12, 4));
  table_[slot].place = kTombstone;
  ++tombstones_;
  --live_records_;
  live_bytes_ -= need;
  segments_[seg].live -= need;
  if (live_records_ == 0) {
    Clear();  // nothing left: every segment and the table go back
    return;
  }
  if (seg != head_ && segments_[seg].live * 2 < segments_[seg].used) Clean(seg);
}

void PackedRecords::Clean(uint32_t seg) {
  // Each record still in the table is appended anew (to other segments: this one is not the
  // head), and its slot follows it.
  for (uint32_t at = 0; at < segments_[seg].used;) {
    const char* p = segments_[seg].data.get() + at;
    const uint64_t key = LoadLittleEndian(p, 8);
    const uint32_t epoch = static_cast<uint32_t>(LoadLittleEndian(p + 8, 4));
    const uint32_t n = static_cast<uint32_t>(LoadLittleEndian(p + 12, 4));
    const uint64_t place = static_cast<uint64_t>(seg) << 32 | at;
    if (const size_t slot = Find(key); slot != kNotFound && table_[slot].place == place) {
      const uint64_t moved = Append(key, std::string_view(p + kHeaderBytes, n), epoch);
      table_[slot].place = moved;
      live_bytes_ -= kHeaderBytes + n;  // counted again by Append
    }
    at += static_cast<uint32_t>(kHeaderBytes) + n;
  }
  Segment& s = segments_[seg];
  segment_bytes_ -= s.used;
  s.data.reset();
  s.size = s.used = s.live = 0;
  free_segments_.push_back(seg);
}

void PackedRecords::Shrink(size_t bound, uint32_t epoch) {
  if (bytes() <= bound) return;
  // Bytes per age (epochs before `epoch`; the last bucket holds every older one); the newest ages
  // that fit in half of the bound stay.
  constexpr uint32_t kAges = 1u << 16;
  std::vector<size_t> by_age(kAges, 0);
  auto age_of = [&](const Slot& s) {
    const uint32_t put = static_cast<uint32_t>(LoadLittleEndian(At(s.place) + 8, 4));
    return std::min<uint32_t>(epoch - put, kAges - 1);
  };
  for (const Slot& s : table_) {
    if (s.place == kEmpty || s.place == kTombstone) continue;
    by_age[age_of(s)] += kHeaderBytes + LoadLittleEndian(At(s.place) + 12, 4);
  }
  const size_t target = bound / 2;
  size_t total = 0;
  uint32_t keep = 0;  // ages below keep stay
  for (; keep < kAges; ++keep) {
    if (total + by_age[keep] > target) break;
    total += by_age[keep];
  }
  std::vector<uint64_t> drop;
  for (const Slot& s : table_) {
    if (s.place != kEmpty && s.place != kTombstone && age_of(s) >= keep) drop.push_back(s.key);
  }
  for (uint64_t key : drop) Erase(key);
  // What stays is moved together (the dead bytes of every segment go too), so that the records
  // kept take about half of the bound and the next Shrink waits until the tier has doubled.
  std::vector<uint32_t> old;
  for (uint32_t seg = 0; seg < segments_.size(); ++seg) {
    if (segments_[seg].data != nullptr) old.push_back(seg);
  }
  head_ = ~0u;  // appends go to fresh segments
  for (uint32_t seg : old) Clean(seg);
  if (live_records_ > 0) Rehash(std::max<size_t>(1024, std::bit_ceil(live_records_ * 2)));
}

void PackedRecords::Clear() {
  table_.clear();
  table_.shrink_to_fit();
  tombstones_ = 0;
  segments_.clear();
  free_segments_.clear();
  head_ = ~0u;
  live_records_ = live_bytes_ = segment_bytes_ = 0;
}

}  // namespace neardup::tier1
