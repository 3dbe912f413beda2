// Clock: time injected into everything that expires or waits, so TTL and deadline logic is
// testable without sleeping.
//
//   ManualClock clock(1000);           // tests: time moves only when told
//   RowStoreOptions o; o.clock = &clock;
//   clock.Advance(60'000);
//
// Thread safety: SystemClock() is shared and thread-safe; ManualClock is thread-safe (atomic).
#pragma once

#include <atomic>
#include <cstdint>

namespace neardup {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the Unix epoch.
  virtual int64_t NowMillis() const = 0;
};

// The process-wide real-time clock (std::chrono::system_clock). Never null, never freed.
const Clock* SystemClock();

// A clock that moves only when told to.
class ManualClock : public Clock {
 public:
  explicit ManualClock(int64_t now_millis = 0) : now_(now_millis) {}
  int64_t NowMillis() const override { return now_.load(std::memory_order_relaxed); }
  void Set(int64_t now_millis) { now_.store(now_millis, std::memory_order_relaxed); }
  void Advance(int64_t millis) { now_.fetch_add(millis, std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace neardup
