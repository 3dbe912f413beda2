// Timing of the benchmarks: wall seconds since a moment, and the process's CPU seconds (user
// + system), which tell a shared machine's waiting from the benchmark's own work.
//
// Thread safety: pure functions.
#pragma once

#include <sys/resource.h>

#include <chrono>

namespace neardup {

inline double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The process's user + system CPU seconds so far.
inline double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

}  // namespace neardup
