// The wall and CPU clocks a run's summary is measured with (pipeline/pipeline.h: PipelineSummary's
// seconds). Thread safety: any thread.
#pragma once

#include <time.h>

#include <chrono>

namespace neardup::pipeline::internal {

using SteadyClock = std::chrono::steady_clock;

// Seconds since `t`.
inline double Since(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

// CPU time of the calling thread (not of the threads it starts).
inline double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace neardup::pipeline::internal
