// ReadAhead: a caller's coming reads, made first by helper threads while its reads reach the disk.
//
// A thread that reads many random records of a store larger than the page cache waits for the
// disk one read at a time. Handed the same reads first, a few helper threads wait for several of
// them at once (the disk serves them in parallel), and the caller's own reads then find their
// blocks in the page cache. The helpers only warm the cache: what they read is dropped, a read
// they have not reached yet when the caller makes it costs the caller nothing more, and no
// answer depends on them.
//
//   ReadAhead ahead(4, "nd-t1-ahead");
//   ahead.Start(keys.size(), [&](size_t i) { (void)rows.Touch(family, keys[i], false); });
//   for (const auto& k : keys) ... rows.Get(family, k, ...) ...   // mostly from the page cache now
//
// Start hands the reads over only while reading reaches the disk: when the calling thread and the
// helpers together read at least min_disk_bytes from it (the kernel's count of each thread's block
// reads) since the previous Start. Otherwise it drops them: over a store the page cache holds, the
// helpers' reads would only cost CPU, and the caller's own reads, should they start missing the
// cache, turn them on again by the next Start.
//
// Thread safety: Start, Cancel and the destructor are called from one thread (the caller's).
// `read` runs on the helpers, concurrently with itself and with the caller: it may only read
// what is safe to read so (a RowStore's reads are). Lifetime: `read` and what it refers to must
// stay valid until the next Start or Cancel returns, or the destructor does (each waits for the
// reads in progress and drops the rest).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace neardup {

class ReadAhead {
 public:
  // `threads` helpers (at least 1), named name-1, name-2, ... Reads ahead from the first Start
  // that follows `min_disk_bytes` of disk reads (0: always).
  ReadAhead(int threads, const std::string& name, uint64_t min_disk_bytes = kDefaultMinDiskBytes);
  ~ReadAhead();
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // Drops the reads not yet made (waiting for those in progress), then, when due (above), has
  // the helpers call read(0) .. read(count - 1), about in that order, and returns at once. True
  // when it handed them over.
  bool Start(size_t count, std::function<void(size_t)> read);
  // Drops the reads not yet made and waits for those in progress.
  void Cancel();

  // What the helpers did: reads made, Starts that handed reads over, and Starts that did not.
  struct Stats {
    uint64_t reads = 0, started = 0, skipped = 0;
  };
  Stats stats() const;

  // 256 KiB: 64 pages of 4 KiB, a few milliseconds of a disk's random reads.
  static constexpr uint64_t kDefaultMinDiskBytes = 256 << 10;

 private:
  void Helper(int index, std::string name);

  const uint64_t min_disk_bytes_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_, idle_cv_;
  std::function<void(size_t)> read_;  // guarded by mu_; runs while active_ > 0
  size_t count_ = 0;                  // reads of the current Start
  std::atomic<size_t> next_{0};       // the next read to claim
  int active_ = 0;                    // helpers inside read_
  std::atomic<uint64_t> generation_{0};  // bumped (under mu_) by every Start and Cancel
  bool stop_ = false;
  Stats stats_;
  // Disk bytes read: by the helpers (added as they go), and at the last Start (caller's and
  // helpers' counts then).
  std::atomic<uint64_t> helper_disk_bytes_{0};
  uint64_t last_caller_disk_bytes_ = 0, last_helper_disk_bytes_ = 0;
  bool measured_ = false;
  std::vector<std::thread> threads_;
};

// Bytes the calling thread has read from block devices so far (getrusage RUSAGE_THREAD: what the
// page cache did not hold). 0 where the system does not count them.
uint64_t ThreadDiskReadBytes();

}  // namespace neardup
