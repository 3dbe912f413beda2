#include "experiments/accuracy.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <simdjson.h>

#include "document/json_lines.h"

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

// Calls each(object) for each non-blank line of a JSON Lines file. The first line that
// is not a JSON object, or that `each` refuses (InvalidArgument), is the error: "path:N: why".
template <typename F>
Status ForEachJsonObject(const std::string& path, F&& each) {
  return ForEachJsonLine(path, {.skip_bad_lines = false}, [&](std::string_view line, uint64_t) -> Status {
    simdjson::dom::object doc;
    RETURN_IF_ERROR(ParseJsonLine(line, {.padded = true}, &doc));
    return each(doc);
  }).status();
}

// url, group, status and similarity of a groups line; false for a "crawled": false line.
StatusOr<bool> ParseAnswer(simdjson::dom::object doc, std::string* url, PageAnswer* a) {
  std::string_view u;
  if (doc["url"].get_string().get(u) != simdjson::SUCCESS) {
    return InvalidArgument("no \"url\" string");
  }
  bool crawled = true;
  if (doc["crawled"].get_bool().get(crawled) == simdjson::SUCCESS && !crawled) return false;
  simdjson::dom::element g;
  if (doc["group"].get(g) != simdjson::SUCCESS) {
    return InvalidArgument("no \"group\"");
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
  RETURN_IF_ERROR(ForEachJsonObject(path, [&](simdjson::dom::object doc) -> Status {
    ASSIGN_OR_RETURN(bool crawled, ParseAnswer(doc, &url, &a));
    if (crawled) out[url] = std::move(a.group);
    return Status::Ok();
  }));
  return out;
}

StatusOr<Answers> ReadAnswersJsonl(const std::string& path) {
  Answers out;
  std::string url;
  PageAnswer a;
  RETURN_IF_ERROR(ForEachJsonObject(path, [&](simdjson::dom::object doc) -> Status {
    ASSIGN_OR_RETURN(bool crawled, ParseAnswer(doc, &url, &a));
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
  RETURN_IF_ERROR(ForEachJsonObject(status_path, [&](simdjson::dom::object doc) -> Status {
    std::string_view url, route;
    if (doc["url"].get_string().get(url) != simdjson::SUCCESS || doc["route"].get_string().get(route) != simdjson::SUCCESS) {
      return InvalidArgument("needs \"url\" and \"route\" strings");
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
  RETURN_IF_ERROR(ForEachJsonObject(path, [&](simdjson::dom::object doc) -> Status {
    std::string_view a, b;
    double sim;
    if (doc["a"].get_string().get(a) != simdjson::SUCCESS || doc["b"].get_string().get(b) != simdjson::SUCCESS ||
        doc["similarity"].get_double().get(sim) != simdjson::SUCCESS) {
      return InvalidArgument("needs \"a\", \"b\" and \"similarity\"");
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
