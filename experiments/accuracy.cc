#include "experiments/accuracy.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <string_view>
#include <unordered_set>
#include <vector>

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

namespace {

// Calls `line(doc, number)` for each non-empty line of a JSON Lines file.
template <typename F>
Status ForEachJsonLine(const std::string& path, F&& each) {
  std::ifstream in(path);
  if (!in) return IoError("cannot read " + path);
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
    RETURN_IF_ERROR(each(doc, number));
  }
  return Status::Ok();
}

// url, group, status and similarity of a groups line; false for a "crawled": false line.
StatusOr<bool> ParseAnswer(const std::string& path, simdjson::dom::element doc, uint64_t number, std::string* url,
                           PageAnswer* a) {
  std::string_view u;
  if (doc["url"].get_string().get(u) != simdjson::SUCCESS) {
    return InvalidArgument(path + ":" + std::to_string(number) + ": no \"url\" string");
  }
  bool crawled = true;
  if (doc["crawled"].get_bool().get(crawled) == simdjson::SUCCESS && !crawled) return false;
  simdjson::dom::element g;
  if (doc["group"].get(g) != simdjson::SUCCESS) {
    return InvalidArgument(path + ":" + std::to_string(number) + ": no \"group\"");
  }
  *url = std::string(u);
  a->group = simdjson::minify(g);
  std::string_view status;
  a->status = doc["status"].get_string().get(status) == simdjson::SUCCESS ? std::string(status) : std::string();
  double sim;
  if (doc["similarity_to_winner"].get_double().get(sim) == simdjson::SUCCESS) a->similarity_to_winner = sim;
  else a->similarity_to_winner.reset();
  std::string_view dup;
  a->duplicate_of = doc["duplicate_of"].get_string().get(dup) == simdjson::SUCCESS ? std::string(dup) : std::string();
  if (doc["similarity_to_duplicate_of"].get_double().get(sim) == simdjson::SUCCESS) a->similarity_to_duplicate_of = sim;
  else a->similarity_to_duplicate_of.reset();
  return true;
}

bool Kept(const std::string& status) { return status == "winner" || status == "unique" || status == "pending"; }

}  // namespace

StatusOr<Grouping> ReadGroupsJsonl(const std::string& path) {
  Grouping out;
  std::string url;
  PageAnswer a;
  RETURN_IF_ERROR(ForEachJsonLine(path, [&](simdjson::dom::element doc, uint64_t number) -> Status {
    ASSIGN_OR_RETURN(bool crawled, ParseAnswer(path, doc, number, &url, &a));
    if (crawled) out[url] = std::move(a.group);
    return Status::Ok();
  }));
  return out;
}

StatusOr<Answers> ReadAnswersJsonl(const std::string& path) {
  Answers out;
  std::string url;
  PageAnswer a;
  RETURN_IF_ERROR(ForEachJsonLine(path, [&](simdjson::dom::element doc, uint64_t number) -> Status {
    ASSIGN_OR_RETURN(bool crawled, ParseAnswer(path, doc, number, &url, &a));
    if (crawled) out[url] = std::move(a);
    return Status::Ok();
  }));
  return out;
}

Grouping GroupingOf(const Answers& answers) {
  Grouping g;
  g.reserve(answers.size());
  for (const auto& [url, a] : answers) g.emplace(url, a.group);
  return g;
}

StatusOr<Histories> ReadHistories(const std::string& status_path) {
  Histories out;
  RETURN_IF_ERROR(ForEachJsonLine(status_path, [&](simdjson::dom::element doc, uint64_t number) -> Status {
    std::string_view url, route;
    if (doc["url"].get_string().get(url) != simdjson::SUCCESS || doc["route"].get_string().get(route) != simdjson::SUCCESS) {
      return InvalidArgument(status_path + ":" + std::to_string(number) + ": needs \"url\" and \"route\" strings");
    }
    auto [it, fresh] = out.try_emplace(std::string(url));
    it->second.route = std::string(route);
    if (!fresh) it->second.recrawled = true;
    return Status::Ok();
  }));
  return out;
}

StatusOr<std::vector<TruePair>> ReadPairsJsonl(const std::string& path) {
  std::vector<TruePair> out;
  RETURN_IF_ERROR(ForEachJsonLine(path, [&](simdjson::dom::element doc, uint64_t number) -> Status {
    std::string_view a, b;
    double sim;
    if (doc["a"].get_string().get(a) != simdjson::SUCCESS || doc["b"].get_string().get(b) != simdjson::SUCCESS ||
        doc["similarity"].get_double().get(sim) != simdjson::SUCCESS) {
      return InvalidArgument(path + ":" + std::to_string(number) + ": needs \"a\", \"b\" and \"similarity\"");
    }
    out.push_back({std::string(a), std::string(b), sim});
    return Status::Ok();
  }));
  return out;
}

CrawlerView ComputeCrawlerView(const Answers& answers, const std::vector<TruePair>& pairs, double threshold,
                               const Markets* markets) {
  CrawlerView v;
  for (const auto& [url, a] : answers) {
    ++v.pages;
    if (Kept(a.status)) {
      ++v.kept;
    } else if (a.status == "duplicate") {
      const std::optional<double>& sim = a.duplicate_of.empty() ? a.similarity_to_winner : a.similarity_to_duplicate_of;
      if (!sim) {
        ++v.dropped_without_similarity;
        continue;
      }
      ++v.dropped;
      // Similarities are printed rounded to 6 digits; a pair exactly at the threshold stays close.
      if (*sim >= threshold - 5e-7) ++v.dropped_close;
    }
  }
  // The greedy kept set.
  {
    std::unordered_map<std::string_view, std::vector<std::string_view>> adj;
    for (const TruePair& p : pairs) {
      if (answers.count(p.a) == 0 || answers.count(p.b) == 0) continue;
      adj[p.a].push_back(p.b);
      adj[p.b].push_back(p.a);
    }
    std::vector<std::pair<size_t, std::string_view>> order;
    order.reserve(answers.size());
    for (const auto& [url, a] : answers) {
      auto it = adj.find(url);
      order.emplace_back(it == adj.end() ? 0 : it->second.size(), url);
    }
    std::sort(order.begin(), order.end(), [](const auto& x, const auto& y) {
      return x.first != y.first ? x.first > y.first : x.second < y.second;
    });
    std::unordered_set<std::string_view> decided;
    for (const auto& [degree, url] : order) {
      if (!decided.insert(url).second) continue;
      ++v.greedy_kept;
      if (auto it = adj.find(url); it != adj.end()) decided.insert(it->second.begin(), it->second.end());
    }
  }
  for (const TruePair& p : pairs) {
    auto a = answers.find(p.a), b = answers.find(p.b);
    if (a == answers.end() || b == answers.end()) {
      ++v.pairs_unanswered;
      continue;
    }
    ++v.true_pairs;
    if (!Kept(a->second.status) || !Kept(b->second.status)) continue;
    ++v.both_kept;
    if (markets == nullptr) {
      ++v.both_kept_same_market;
      continue;
    }
    auto ma = markets->find(p.a), mb = markets->find(p.b);
    const std::string none;
    if ((ma == markets->end() ? none : ma->second) == (mb == markets->end() ? none : mb->second)) {
      ++v.both_kept_same_market;
    }
  }
  return v;
}

}  // namespace neardup::experiments
