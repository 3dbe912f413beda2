#include "storage/read_ahead.h"

#include <sys/resource.h>

#include <algorithm>

#include "common/thread_priority.h"

namespace neardup {

uint64_t ThreadDiskReadBytes() {
  rusage u{};
  if (::getrusage(RUSAGE_THREAD, &u) != 0) return 0;
  return static_cast<uint64_t>(u.ru_inblock) * 512;  // ru_inblock counts 512-byte blocks
}

ReadAhead::ReadAhead(int threads, const std::string& name, uint64_t min_disk_bytes)
    : min_disk_bytes_(min_disk_bytes) {
  threads = std::max(threads, 1);
  threads_.reserve(static_cast<size_t>(threads));
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this, i, name] { Helper(i, name); });
}

ReadAhead::~ReadAhead() {
  {
    std::unique_lock lock(mu_);
    stop_ = true;
    generation_.fetch_add(1, std::memory_order_relaxed);
    count_ = 0;
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ReadAhead::Cancel() {
  std::unique_lock lock(mu_);
  generation_.fetch_add(1, std::memory_order_relaxed);
  count_ = 0;
  idle_cv_.wait(lock, [&] { return active_ == 0; });
  read_ = nullptr;
}

bool ReadAhead::Start(size_t count, std::function<void(size_t)> read) {
  const uint64_t caller = ThreadDiskReadBytes();
  std::unique_lock lock(mu_);
  generation_.fetch_add(1, std::memory_order_relaxed);
  count_ = 0;
  idle_cv_.wait(lock, [&] { return active_ == 0; });
  read_ = nullptr;
  const uint64_t helpers = helper_disk_bytes_.load(std::memory_order_relaxed);
  const uint64_t disk = (caller - last_caller_disk_bytes_) + (helpers - last_helper_disk_bytes_);
  // The first Start has nothing to go by: it only measures (unless every Start is due).
  const bool due = min_disk_bytes_ == 0 || (measured_ && disk >= min_disk_bytes_);
  measured_ = true;
  last_caller_disk_bytes_ = caller;
  last_helper_disk_bytes_ = helpers;
  if (!due || count == 0) {
    ++stats_.skipped;
    return false;
  }
  ++stats_.started;
  read_ = std::move(read);
  count_ = count;
  next_.store(0, std::memory_order_relaxed);
  lock.unlock();
  work_cv_.notify_all();
  return true;
}

ReadAhead::Stats ReadAhead::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void ReadAhead::Helper(int index, std::string name) {
  NameThisThread(name + "-" + std::to_string(index + 1));
  uint64_t seen = 0;
  std::unique_lock lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || (generation_.load(std::memory_order_relaxed) != seen && count_ > 0); });
    if (stop_) return;
    const uint64_t generation = seen = generation_.load(std::memory_order_relaxed);
    ++active_;
    uint64_t made = 0;
    const uint64_t disk0 = ThreadDiskReadBytes();
    // read_ and count_ change only in Start and Cancel, which first wait for active_ to fall to
    // 0: they stay as they are while this helper is active. A Start or Cancel bumps the
    // generation first, which stops the helper after the read it is making.
    const size_t count = count_;
    lock.unlock();
    for (size_t i; generation_.load(std::memory_order_relaxed) == generation &&
                   (i = next_.fetch_add(1, std::memory_order_relaxed)) < count;) {
      read_(i);
      ++made;
    }
    helper_disk_bytes_.fetch_add(ThreadDiskReadBytes() - disk0, std::memory_order_relaxed);
    lock.lock();
    stats_.reads += made;
    if (--active_ == 0) idle_cv_.notify_all();
  }
}

}  // namespace neardup
