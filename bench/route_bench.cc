#include "bench/route_bench.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>

#include "partitioner/crawl_sample.h"
#include "partitioner/partition_map.h"

namespace neardup::bench {
namespace {

using RouteClock = std::chrono::steady_clock;

double RouteSeconds(RouteClock::time_point a) { return std::chrono::duration<double>(RouteClock::now() - a).count(); }

}  // namespace

int RunRouteBench(const std::string& map_path, const std::string& input, uint64_t max_records, int repeat) {
  auto map = partitioner::PartitionMap::Load(map_path);
  if (!map.ok()) { spdlog::error("{}", map.status().message()); return 1; }
  partitioner::CrawlSampleOptions so;
  so.signer.signer = map->signer_options();
  so.signer.keep = [&, n = uint64_t{0}](const CrawlRecord&) mutable { return n++ < max_records; };
  auto sample = partitioner::SampleCrawl(input, so);
  if (!sample.ok()) { spdlog::error("{}", sample.status().message()); return 1; }
  const auto feature = map->proto().feature();
  const partitioner::LengthSample& s = sample->sample;
  uint64_t sink = 0;
  auto t0 = RouteClock::now();
  for (int rep = 0; rep < repeat; ++rep) {
    for (size_t i = 0; i < s.size(); ++i) sink += map->Home(s.Vector(i, feature));
  }
  const double home_s = RouteSeconds(t0);
  std::vector<uint32_t> shards;
  uint64_t contacted = 0;
  t0 = RouteClock::now();
  for (int rep = 0; rep < repeat; ++rep) {
    for (size_t i = 0; i < s.size(); ++i) {
      map->RouteShards(s.Vector(i, feature), &shards);
      contacted += shards.size();
    }
  }
  const double route_s = RouteSeconds(t0);
  const double pages = static_cast<double>(s.size()) * repeat;
  std::printf("bench route: %zu pages x %d, map of %u cells on %u shards (%s routing)\n", s.size(), repeat,
              map->cells(), map->shards(), map->proto().routing() == pb::PartitionMap::EXACT_L1 ? "exact" : "rho");
  std::printf("  home only       %8.1f ns/page\n", home_s / pages * 1e9);
  std::printf("  route shards    %8.1f ns/page  (%.2fx home), %.2f shards contacted per page  [%llu]\n",
              route_s / pages * 1e9, route_s / home_s, contacted / pages, (unsigned long long)(sink % 2));
  return 0;
}

}  // namespace neardup::bench
