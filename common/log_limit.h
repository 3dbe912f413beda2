// LogLimit: at most a few log lines a second for one kind of event that a peer or a client can
// cause at will (a bad frame, a refused request): the first ones are logged, the rest counted and
// reported with the next line logged ("... (N like it not logged)"). An attacker cannot flood the
// log; an operator still sees that it happens and how often.
//
//   static LogLimit bad_frames(5);   // lines per second
//   if (uint64_t skipped; bad_frames.Allow(&skipped)) spdlog::warn("... ({} like it not logged)", skipped);
//
// Thread safety: Allow from any thread. Time from an injected Clock (common/clock.h).
#pragma once

#include <cstdint>
#include <mutex>

#include "common/clock.h"

namespace neardup {

class LogLimit {
 public:
  explicit LogLimit(uint32_t lines_per_second, const Clock* clock = SystemClock())
      : per_second_(lines_per_second), clock_(clock) {}

  // Whether this event may be logged now. When it may, *skipped gets the events not logged since
  // the last one that was (and the count starts again).
  bool Allow(uint64_t* skipped) {
    std::lock_guard lock(mu_);
    const int64_t second = clock_->NowMillis() / 1000;
    if (second != second_) {
      second_ = second;
      in_second_ = 0;
    }
    if (in_second_ >= per_second_) {
      ++skipped_;
      return false;
    }
    ++in_second_;
    *skipped = skipped_;
    skipped_ = 0;
    return true;
  }

 private:
  const uint32_t per_second_;
  const Clock* const clock_;
  std::mutex mu_;
  int64_t second_ = -1;    // guarded by mu_
  uint32_t in_second_ = 0;  // guarded by mu_
  uint64_t skipped_ = 0;    // guarded by mu_
};

}  // namespace neardup
