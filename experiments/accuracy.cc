#include "experiments/accuracy.h"

#include <fstream>
#include <map>

#include <simdjson.h>

namespace neardup::experiments {
namespace {

uint64_t Pairs(uint64_t n) { return n * (n - 1) / 2; }

}  // namespace

GroupingAccuracy CompareGroupings(const Grouping& system, const Grouping& baseline) {
  GroupingAccuracy a;
  std::unordered_map<std::string_view, uint64_t> sys_size, base_size;
  std::map<std::pair<std::string_view, std::string_view>, uint64_t> cell;
  for (const auto& [url, g] : system) {
    auto it = baseline.find(url);
    if (it == baseline.end()) {
      ++a.only_system;
      continue;
    }
    ++a.pages;
    ++sys_size[g];
    ++base_size[it->second];
    ++cell[{g, it->second}];
  }
  a.only_baseline = baseline.size() - a.pages;
  for (const auto& [g, n] : sys_size) a.system_pairs += Pairs(n);
  for (const auto& [g, n] : base_size) a.baseline_pairs += Pairs(n);
  for (const auto& [k, n] : cell) a.common_pairs += Pairs(n);
  return a;
}

StatusOr<Grouping> ReadGroupsJsonl(const std::string& path) {
  std::ifstream in(path);
  if (!in) return IoError("cannot read " + path);
  Grouping out;
  simdjson::dom::parser parser;
  std::string line;
  uint64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    simdjson::dom::element doc;
    if (parser.parse(line).get(doc) != simdjson::SUCCESS) {
      return InvalidArgument(path + ":" + std::to_string(number) + ": not JSON");
    }
    std::string_view url;
    if (doc["url"].get_string().get(url) != simdjson::SUCCESS) {
      return InvalidArgument(path + ":" + std::to_string(number) + ": no \"url\" string");
    }
    bool crawled = true;
    if (doc["crawled"].get_bool().get(crawled) == simdjson::SUCCESS && !crawled) continue;
    simdjson::dom::element g;
    if (doc["group"].get(g) != simdjson::SUCCESS) {
      return InvalidArgument(path + ":" + std::to_string(number) + ": no \"group\"");
    }
    out[std::string(url)] = simdjson::minify(g);
  }
  return out;
}

}  // namespace neardup::experiments
