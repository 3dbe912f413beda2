// Groups files (neardup run --out, neardup baseline --groups) as the end-to-end tests read them.
#pragma once

#include <gtest/gtest.h>
#include <simdjson.h>

#include <fstream>
#include <map>
#include <string>

namespace neardup {

// One line of a groups file (neardup run --out or neardup baseline --groups).
struct PageGroup {
  std::string group;  // the group id as JSON text
  std::string winner, status;
  bool crawled = true;
};

// url -> its line in a groups file; every URL at most once.
inline std::map<std::string, PageGroup> Groups(const std::string& path) {
  std::map<std::string, PageGroup> g;
  simdjson::dom::parser parser;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    simdjson::dom::element e;
    if (parser.parse(line).get(e) != simdjson::SUCCESS) {
      ADD_FAILURE() << path << ": not JSON: " << line;
      continue;
    }
    PageGroup p;
    p.group = simdjson::minify(e["group"]);
    std::string_view s;
    if (e["winner"].get_string().get(s) == simdjson::SUCCESS) p.winner = s;
    if (e["status"].get_string().get(s) == simdjson::SUCCESS) p.status = s;
    bool crawled = true;
    if (e["crawled"].get_bool().get(crawled) == simdjson::SUCCESS) p.crawled = crawled;
    const std::string url{std::string_view(e["url"])};
    EXPECT_TRUE(g.emplace(url, std::move(p)).second) << path << ": " << url << " listed twice";
  }
  return g;
}
// The partition of crawled URLs a groups file describes: url -> smallest URL of its group.
inline std::map<std::string, std::string> Partition(const std::map<std::string, PageGroup>& groups) {
  std::map<std::string, std::string> first_of_group;  // group id -> smallest member
  for (const auto& [url, p] : groups) {
    if (p.crawled) first_of_group.try_emplace(p.group, url);  // std::map iterates URLs in order
  }
  std::map<std::string, std::string> out;
  for (const auto& [url, p] : groups) {
    if (p.crawled) out[url] = first_of_group.at(p.group);
  }
  return out;
}

}  // namespace neardup
