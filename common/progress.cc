#include "common/progress.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <charconv>
#include <fstream>
#include <string>

namespace neardup {

Progress::Progress(std::string what, std::optional<uint64_t> total_units, std::chrono::milliseconds interval)
    : what_(std::move(what)), total_(total_units), interval_(interval), start_(Clock::now()), last_(start_) {}

double Progress::ElapsedSeconds() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

void Progress::Update(uint64_t items, uint64_t units) {
  const auto now = Clock::now();
  if (now - last_ < interval_) return;
  last_ = now;
  const double secs = std::chrono::duration<double>(now - start_).count();
  const double rate = secs > 0 ? static_cast<double>(items) / secs : 0;
  if (total_ && *total_ > 0 && units > 0) {
    const double frac = static_cast<double>(units) / static_cast<double>(*total_);
    const double eta = frac > 0 ? secs * (1 - frac) / frac : 0;
    spdlog::info("{}: {} done, {:.0f}/s, {:.1f}%, ETA {:.0f}s", what_, items, rate, 100 * frac, eta);
  } else {
    spdlog::info("{}: {} done, {:.0f}/s", what_, items, rate);
  }
}

double Progress::Finish(uint64_t items) {
  const double secs = ElapsedSeconds();
  spdlog::info("{}: {} in {:.2f}s ({:.0f}/s)", what_, items, secs, secs > 0 ? items / secs : 0.0);
  return secs;
}

namespace {
uint64_t StatusField(const char* name) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const size_t n = std::char_traits<char>::length(name);
  while (std::getline(in, line)) {
    if (line.compare(0, n, name) == 0) return std::stoull(line.substr(n)) * 1024;
  }
  return 0;
}
}  // namespace

uint64_t PeakRssBytes() { return StatusField("VmHWM:"); }
uint64_t AnonRssBytes() { return StatusField("RssAnon:"); }

uint64_t MemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  uint64_t bytes = pages > 0 && page_size > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size) : 0;
  // cgroup v2: "0::/path" names the cgroup, whose memory.max is a byte count or "max".
  std::ifstream cgroups("/proc/self/cgroup");
  std::string line;
  while (std::getline(cgroups, line)) {
    if (line.compare(0, 3, "0::") != 0) continue;
    std::ifstream max_file("/sys/fs/cgroup" + line.substr(3) + "/memory.max");
    std::string limit;
    uint64_t cap = 0;
    if (max_file >> limit) {
      const auto [end, ec] = std::from_chars(limit.data(), limit.data() + limit.size(), cap);
      if (ec == std::errc() && end == limit.data() + limit.size() && (bytes == 0 || cap < bytes)) bytes = cap;
    }
  }
  return bytes;
}

bool SetLogLevel(const std::string& name) {
  static bool init = [] {
    auto logger = spdlog::stderr_color_mt("neardup");
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
    spdlog::set_default_logger(logger);
    return true;
  }();
  (void)init;
  const auto level = spdlog::level::from_str(name);
  if (level == spdlog::level::off && name != "off") return false;
  spdlog::set_level(level);
  return true;
}

}  // namespace neardup
