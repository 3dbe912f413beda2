// UrlSlots: a shard's URL -> slot map, exact, in a few bytes a page.
//
// It maps the 64-bit hash of every URL stored since the shard opened (and of those resident at
// open) to the slot the URL was last stored in. The record in that slot names its URL, so an
// entry whose page has gone, or whose slot went to another page, is recognised by reading that
// one record (the caller's `read`). A resident URL whose hash another resident URL already holds
// (a 64-bit collision) is kept, with its slot, in a small exact map instead.
//
//   UrlSlots urls(nullptr);                       // UrlHash (common/url_hash_map.h)
//   urls.AddResident("http://a/", 0);            // at open, one call per resident page
//   UrlSlots::Found f;
//   RETURN_IF_ERROR(urls.Lookup("http://a/", read, &f, &record));
//   if (f.slot != UrlSlots::kNoSlot) ...          // resident in f.slot
//
// Thread safety: Lookup, Probable and MemoryBytes may run concurrently with each other; every
// other method needs the caller's exclusive access (the shard's writer, under its location lock).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "common/status.h"
#include "common/url_hash_map.h"

namespace neardup::tier2 {

class UrlSlots {
 public:
  using HashFn = uint64_t (*)(std::string_view url);
  static constexpr uint32_t kNoSlot = UINT32_MAX;

  // `hash` replaces UrlHash when given (tests make URLs collide with it); it must never return 0.
  explicit UrlSlots(HashFn hash) : hash_(hash) {}

  // How the maps are placed for a URL.
  enum class Place {
    kFree,      // its hash leads to no resident page: the URL may take the hash's entry
    kOwner,     // the hash's entry is this URL's
    kTaken,     // the hash's entry belongs to another resident URL with the same hash
    kCollided,  // the URL is in the collision map
  };
  struct Found {
    uint32_t slot = kNoSlot;  // the URL's slot, or kNoSlot when it is not resident
    Place place = Place::kFree;
  };
  // Reads the record of a slot into *payload and the URL it names into *url (a view into
  // *payload); *resident is false (and nothing read) when the slot holds no page.
  using ReadRecord = std::function<Status(uint32_t slot, std::string* payload, std::string_view* url, bool* resident)>;

  // Where `url` is. The record of the slot found is left in *record (when not null). Errors: what
  // `read` returns.
  Status Lookup(std::string_view url, const ReadRecord& read, Found* found, std::string* record = nullptr) const;
  // The slot whose record Lookup would read first for `url` (kNoSlot when it would read none),
  // without reading it: the URL's slot if it is resident, else a slot another page holds or held.
  // For read-ahead hints.
  uint32_t Probable(std::string_view url) const;

  // Records a page resident at open (slots given in any order; each URL once).
  void AddResident(const std::string& url, uint32_t slot);
  // Records that `url`, found at `place` by Lookup before this batch, is stored in `slot`.
  // `placed` holds the hashes this batch has entered so far (another URL of the batch with one of
  // them collides with it).
  void Store(const std::string& url, uint32_t slot, Place place, std::unordered_set<uint64_t>* placed);
  // Forgets a removed URL that Lookup found in the collision map (other entries need no removal:
  // their slot's record no longer names them).
  void RemoveCollided(std::string_view url);
  void Clear();

  uint64_t Hash(std::string_view url) const { return hash_ ? hash_(url) : UrlHash(url); }
  uint64_t MemoryBytes() const;

 private:
  HashFn hash_;
  UrlHashMap<uint32_t> by_hash_;
  std::unordered_map<std::string, uint32_t, UrlHasher, std::equal_to<>> collided_;
};

}  // namespace neardup::tier2
