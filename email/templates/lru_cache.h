// LruTtlSet: a bounded set of keys with least-recently-used eviction and a time to live per entry
// (the Crusher paper's full-template cache: rows with a template and S emails, whose further
// emails are ignored without a store read). Time is passed in (milliseconds of an injected clock).
//
//   LruTtlSet cache(100000, 3'600'000);
//   if (cache.Contains(row, now)) return;   // full: skip
//   cache.Insert(row, now);
//
// Thread safety: all methods take an internal lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <unordered_map>

namespace neardup::email {

class LruTtlSet {
 public:
  // capacity >= 1 entries, each living ttl_ms after its insertion.
  LruTtlSet(size_t capacity, int64_t ttl_ms) : capacity_(capacity < 1 ? 1 : capacity), ttl_ms_(ttl_ms) {}

  // True when `key` is present and not expired (it becomes the most recently used); an expired
  // entry is removed.
  bool Contains(uint64_t key, int64_t now_ms) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(key);
    if (it == index_.end()) return false;
    if (it->second->expires_ms <= now_ms) {
      order_.erase(it->second);
      index_.erase(it);
      return false;
    }
    order_.splice(order_.begin(), order_, it->second);
    return true;
  }

  // Adds `key` (or renews its TTL) as the most recently used; evicts the least recently used
  // entry beyond capacity.
  void Insert(uint64_t key, int64_t now_ms) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(key);
    if (it != index_.end()) {
      it->second->expires_ms = now_ms + ttl_ms_;
      order_.splice(order_.begin(), order_, it->second);
      return;
    }
    order_.push_front({key, now_ms + ttl_ms_});
    index_[key] = order_.begin();
    if (index_.size() > capacity_) {
      index_.erase(order_.back().key);
      order_.pop_back();
      ++evictions_;
    }
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return index_.size();
  }
  uint64_t evictions() const {
    std::lock_guard<std::mutex> lock(mu_);
    return evictions_;
  }

 private:
  struct Entry {
    uint64_t key;
    int64_t expires_ms;
  };
  const size_t capacity_;
  const int64_t ttl_ms_;
  mutable std::mutex mu_;
  std::list<Entry> order_;  // most recently used first
  std::unordered_map<uint64_t, std::list<Entry>::iterator> index_;
  uint64_t evictions_ = 0;
};

}  // namespace neardup::email
