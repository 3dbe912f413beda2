#include "tier2/url_slots.h"

namespace neardup::tier2 {

Status UrlSlots::Lookup(std::string_view url, const ReadRecord& read, Found* found, std::string* record) const {
  *found = Found{};
  if (!collided_.empty()) {
    if (auto it = collided_.find(url); it != collided_.end()) {
      found->place = Place::kCollided;
      found->slot = it->second;
      if (record != nullptr) {
        std::string_view named;
        bool resident = false;
        RETURN_IF_ERROR(read(found->slot, record, &named, &resident));
      }
      return Status::Ok();
    }
  }
  const uint64_t h = Hash(url);
  uint32_t s;
  if (!by_hash_.Find(h, &s)) return Status::Ok();  // never stored
  std::string buffer;
  std::string_view other;
  bool resident = false;
  RETURN_IF_ERROR(read(s, record != nullptr ? record : &buffer, &other, &resident));
  if (!resident) return Status::Ok();  // gone
  if (other == url) {
    found->place = Place::kOwner;
    found->slot = s;
  } else if (Hash(other) == h) {
    found->place = Place::kTaken;  // a resident page with the same hash holds the entry
  }
  return Status::Ok();
}

uint32_t UrlSlots::Probable(std::string_view url) const {
  if (!collided_.empty()) {
    if (auto it = collided_.find(url); it != collided_.end()) return it->second;
  }
  uint32_t s;
  return by_hash_.Find(Hash(url), &s) ? s : kNoSlot;
}

void UrlSlots::AddResident(const std::string& url, uint32_t slot) {
  const uint64_t h = Hash(url);
  if (by_hash_.Contains(h)) {
    collided_.emplace(url, slot);
  } else {
    by_hash_.Insert(h, slot);
  }
}

void UrlSlots::Store(const std::string& url, uint32_t slot, Place place, std::unordered_set<uint64_t>* placed) {
  const uint64_t h = Hash(url);
  if (place == Place::kCollided || place == Place::kTaken || (place == Place::kFree && placed->count(h))) {
    collided_[url] = slot;
  } else {
    by_hash_.Insert(h, slot);
    placed->insert(h);
  }
}

void UrlSlots::RemoveCollided(std::string_view url) {
  if (auto it = collided_.find(url); it != collided_.end()) collided_.erase(it);
}

void UrlSlots::Clear() {
  by_hash_ = UrlHashMap<uint32_t>();
  collided_.clear();
}

uint64_t UrlSlots::MemoryBytes() const {
  return by_hash_.MemoryBytes() + collided_.size() * 96;  // a few collisions at most
}

}  // namespace neardup::tier2
