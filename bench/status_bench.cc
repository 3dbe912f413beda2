#include "bench/status_bench.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace neardup::bench {
namespace {

int StatusBenchFailed(const Status& s) {
  spdlog::error("{}", s.message());
  return 1;
}

}  // namespace

int RunStatusBench(tier1::GroupStore* gs, tier1::SignatureSource* source, const tier1::Tier1Options& t1o,
                   uint64_t queries) {
  std::vector<std::string> urls;
  Status s = gs->rows().ScanFamily(gs->page_family(), [&](std::string_view url, std::string_view, std::string_view) {
    urls.emplace_back(url);
    return true;
  });
  if (!s.ok() || urls.empty()) return StatusBenchFailed(s.ok() ? NotFound("the store has no pages") : s);
  uint64_t groups = 0;
  s = gs->rows().ScanFamily(gs->group_family(), [&](std::string_view, std::string_view, std::string_view) {
    ++groups;
    return true;
  });
  if (!s.ok()) return StatusBenchFailed(s);
  if (urls.size() + groups > t1o.cache_records) {
    // Each query reads a page record and its group's: when they do not all fit the record
    // cache, the random queries below read LevelDB, and the store is not warm.
    spdlog::warn("bench status: {} pages and {} groups, but cache_records is {}: the store is not warm; pass "
                 "--cache-records {} or more",
                 urls.size(), groups, t1o.cache_records, urls.size() + groups);
  }
  tier1::Tier1 t1(gs, source, t1o);
  std::mt19937_64 rng(7);
  std::vector<uint32_t> order(queries);
  for (auto& i : order) i = static_cast<uint32_t>(rng() % urls.size());
  tier1::StatusAnswer ans;
  uint64_t counts[5] = {0, 0, 0, 0, 0};
  // Warm-up: one pass over every page fills the record cache. The queries are the crawler's,
  // read-only: a loser whose verification the store has not cached is verified every time.
  for (const std::string& u : urls) {
    if (Status q = t1.Query(u, nullptr, &ans); !q.ok()) return StatusBenchFailed(q);
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (uint32_t i : order) {
    if (Status q = t1.Query(urls[i], nullptr, &ans); !q.ok()) return StatusBenchFailed(q);
    ++counts[ans.status];
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("{\"pages\":%zu,\"cache_records\":%llu,\"queries\":%llu,\"seconds\":%.3f,\"queries_per_second\":%.0f,\"unknown\":%llu,"
              "\"pending\":%llu,\"unique\":%llu,\"winner\":%llu,\"duplicate\":%llu}\n",
              urls.size(), (unsigned long long)t1o.cache_records, (unsigned long long)queries, secs, static_cast<double>(queries) / secs,
              (unsigned long long)counts[0], (unsigned long long)counts[1], (unsigned long long)counts[2],
              (unsigned long long)counts[3], (unsigned long long)counts[4]);
  return 0;
}

}  // namespace neardup::bench
