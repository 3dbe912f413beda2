// PackedRecords: serialized records by a 64-bit key, for the group store's packed tier
// (GroupStore::Txn::Evict): what left the decoded cache and may be wanted again, without a
// read of the store.
//
//   PackedRecords packed;
//   packed.Put(key, bytes, epoch);        // replaces the key's record
//   std::string out;
//   if (packed.Take(key, &out)) { ... }   // the record leaves: its bytes are in out
//   packed.Shrink(bound, epoch);          // past bound: the least recently put go, to half of it
//
// Layout: a log of 1 MiB segments holds each record behind a 16-byte header (key, epoch, length);
// an open-addressing table (16 bytes a slot, at most 70% full with its tombstones) maps a key to
// its record's place. A record taken or replaced leaves its bytes dead in its segment; a segment
// whose live bytes fall under half (and that is not the one being appended to) has its records
// moved to the end of the log and goes back to the allocator. So a record costs its bytes plus
// about 45 (header and slot), and a segment is at most half dead once records leave it. A record
// longer than a segment gets a segment of its own. No allocation per record: the segments and the
// table are the only allocations.
//
// Thread safety: none; one owner (the Txn, on the tiers' thread).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace neardup::tier1 {

class PackedRecords {
 public:
  static constexpr size_t kSegmentBytes = size_t{1} << 20;
  static constexpr size_t kHeaderBytes = 16;

  PackedRecords() = default;
  PackedRecords(const PackedRecords&) = delete;
  PackedRecords& operator=(const PackedRecords&) = delete;

  // Stores `bytes` as the key's record (replacing any), put at `epoch` (Shrink's age).
  void Put(uint64_t key, std::string_view bytes, uint32_t epoch);
  // Moves the key's record into *out (replacing its contents); false (out untouched) without one.
  bool Take(uint64_t key, std::string* out);
  // Drops the key's record, if any.
  void Erase(uint64_t key);
  bool Contains(uint64_t key) const { return Find(key) != kNotFound; }

  // When bytes() is above `bound`, drops the records put longest before `epoch`, all of one epoch
  // together, until at most half of `bound` stays (the newest epochs that fit in it), and moves
  // the rest together: no dead bytes stay. O(records) per call that shrinks.
  void Shrink(size_t bound, uint32_t epoch);
  void Clear();

  size_t size() const { return live_records_; }
  // Memory held: the bytes appended to the segments (live and dead) and the table. The segment
  // being appended to holds up to kSegmentBytes more, not counted.
  size_t bytes() const { return segment_bytes_ + table_.size() * sizeof(Slot); }
  size_t live_bytes() const { return live_bytes_; }  // records and their headers

 private:
  static constexpr uint64_t kEmpty = ~0ull;         // Slot::place of a slot never used
  static constexpr uint64_t kTombstone = ~0ull - 1;  // ... of a slot whose record left
  static constexpr size_t kNotFound = ~size_t{0};
  struct Slot {
    uint64_t key = 0;
    uint64_t place = kEmpty;  // segment << 32 | offset of the record's header
  };
  struct Segment {
    std::unique_ptr<char[]> data;
    uint32_t size = 0;  // bytes allocated
    uint32_t used = 0;  // bytes appended
    uint32_t live = 0;  // of those, records still in the table (headers included)
  };

  static uint64_t Mix(uint64_t key) { return (key ^ (key >> 31)) * 0x9E3779B97F4A7C15ull; }
  size_t Find(uint64_t key) const;  // the key's slot, or kNotFound
  // Appends a record (header and bytes) to the log and returns its place.
  uint64_t Append(uint64_t key, std::string_view bytes, uint32_t epoch);
  // The slot of a record leaves the table; its bytes go dead in their segment.
  void Release(size_t slot);
  // Moves the live records of a segment to the end of the log, and frees it.
  void Clean(uint32_t segment);
  void InsertSlot(uint64_t key, uint64_t place);
  void Rehash(size_t capacity);
  char* At(uint64_t place) { return segments_[place >> 32].data.get() + (place & 0xFFFFFFFFu); }
  const char* At(uint64_t place) const { return segments_[place >> 32].data.get() + (place & 0xFFFFFFFFu); }

  std::vector<Slot> table_;  // a power of two, or empty
  size_t tombstones_ = 0;
  std::vector<Segment> segments_;
  std::vector<uint32_t> free_segments_;  // indices of freed segments, reused first
  uint32_t head_ = ~0u;                  // the segment appended to (none yet: ~0u)
  size_t live_records_ = 0, live_bytes_ = 0;
  size_t segment_bytes_ = 0;  // appended to the segments held (Segment::used summed)
};

}  // namespace neardup::tier1
