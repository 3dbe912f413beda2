// Progress: periodic "records/s, ETA" lines on stderr (through spdlog) for long runs.
//
//   Progress p("baseline: signatures", reader->total_bytes());
//   while (...) p.Update(records, bytes);
//   p.Finish(records);
//
// Reports at most every `interval` (default 2 s); the ETA is shown when the total is known.
// Thread safety: Update() may be called from one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace neardup {

class Progress {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Progress(std::string what, std::optional<uint64_t> total_units = std::nullopt,
                    std::chrono::milliseconds interval = std::chrono::milliseconds(2000));
  // `items` processed so far; `units` of the total (bytes, say) consumed so far.
  void Update(uint64_t items, uint64_t units);
  // Logs the final rate; returns the elapsed seconds.
  double Finish(uint64_t items);
  double ElapsedSeconds() const;

 private:
  std::string what_;
  std::optional<uint64_t> total_;
  std::chrono::milliseconds interval_;
  Clock::time_point start_, last_;
};

// Peak resident set size of this process in bytes (VmHWM), or 0 if unknown.
uint64_t PeakRssBytes();
// Anonymous resident memory (RssAnon): the heap, without file pages mapped from the page cache
// (LevelDB maps its table files, and pages read through them count in VmRSS).
uint64_t AnonRssBytes();
// The memory this process may use: the machine's physical memory, or its cgroup's limit (cgroup
// v2 memory.max) when that is lower; 0 if unknown.
uint64_t MemoryBytes();

// Sets spdlog's level from a name (trace, debug, info, warn, error, off); InvalidArgument-like
// false if the name is unknown. Logs go to stderr.
bool SetLogLevel(const std::string& name);

}  // namespace neardup
