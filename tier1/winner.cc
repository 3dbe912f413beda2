#include "tier1/winner.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <limits>

namespace neardup::tier1 {
namespace {

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

bool StartsWithIgnoreCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && EqualsIgnoreCase(s.substr(0, prefix.size()), prefix);
}

bool EndsWithIgnoreCase(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && EqualsIgnoreCase(s.substr(s.size() - suffix.size()), suffix);
}

bool ContainsIgnoreCase(std::string_view s, std::string_view needle) {
  if (needle.empty()) return true;
  if (s.size() < needle.size()) return false;
  for (size_t i = 0; i + needle.size() <= s.size(); ++i) {
    if (EqualsIgnoreCase(s.substr(i, needle.size()), needle)) return true;
  }
  return false;
}

// The host part of an absolute http(s) URL as it is written (case preserved), or "".
std::string_view HostView(std::string_view url) {
  std::string_view rest;
  if (StartsWithIgnoreCase(url, "http://")) {
    rest = url.substr(7);
  } else if (StartsWithIgnoreCase(url, "https://")) {
    rest = url.substr(8);
  } else {
    return {};
  }
  rest = rest.substr(0, std::min(rest.find_first_of("/?#"), rest.size()));  // the authority
  if (const size_t at = rest.rfind('@'); at != std::string_view::npos) rest.remove_prefix(at + 1);
  if (!rest.empty() && rest.front() == '[') {  // IPv6 literal: keep the brackets, drop the port
    const size_t close = rest.find(']');
    return close == std::string_view::npos ? rest : rest.substr(0, close + 1);
  }
  return rest.substr(0, std::min(rest.find(':'), rest.size()));
}

bool Preferred(const WinnerRules& rules, std::string_view host, std::string_view market) {
  if (market.empty() || host.empty()) return false;
  auto matches = [host](std::string_view suffix) {
    return host.size() > suffix.size() && EndsWithIgnoreCase(host, suffix);
  };
  for (const auto& [m, suffixes] : rules.market_suffixes) {
    if (m != market) continue;
    return std::any_of(suffixes.begin(), suffixes.end(),
                       [&](const std::string& s) { return !s.empty() && matches(s); });
  }
  std::string dotted;
  dotted.reserve(market.size() + 1);
  dotted += '.';
  dotted += market;
  return matches(dotted);
}

}  // namespace

std::vector<Rule> RuleOrderOf(const pb::Tier1Config& config) {
  std::vector<Rule> order;
  for (const int r : config.winner_rules()) {
    Rule rule;
    switch (r) {
      case pb::POPULARITY: rule = Rule::kPopularity; break;
      case pb::STATIC: rule = Rule::kStatic; break;
      case pb::SHORTER: rule = Rule::kShorter; break;
      case pb::MARKET: rule = Rule::kMarket; break;
      default: continue;  // refused by the config loader
    }
    if (std::find(order.begin(), order.end(), rule) == order.end()) order.push_back(rule);
  }
  return order;
}

WinnerRules WinnerRulesFromConfig(const pb::Tier1Config& config) {
  WinnerRules rules;
  if (config.winner_rules_size() > 0) rules.order = RuleOrderOf(config);
  if (config.has_popularity_buckets_per_doubling() && config.popularity_buckets_per_doubling() > 0) {
    rules.buckets_per_doubling = config.popularity_buckets_per_doubling();
  }
  if (config.has_winner_hysteresis_buckets()) rules.hysteresis_buckets = config.winner_hysteresis_buckets();
  for (const pb::MarketSuffix& ms : config.market_suffix()) {
    rules.market_suffixes.emplace_back(ms.market(),
                                       std::vector<std::string>(ms.suffix().begin(), ms.suffix().end()));
  }
  return rules;
}

int64_t PopularityBucket(double popularity, double buckets_per_doubling) {
  const double p = std::max(0.0, popularity);  // NaN and negatives count as 0
  const double b = std::floor(std::log2(1.0 + p) * buckets_per_doubling);
  if (!(b > 0)) return 0;
  constexpr double kMax = 9.0e18;  // below INT64_MAX, so the conversion is defined
  return b >= kMax ? static_cast<int64_t>(kMax) : static_cast<int64_t>(b);
}

bool IsDynamicUrl(std::string_view url) {
  if (url.find('?') != std::string_view::npos) return true;
  static constexpr std::string_view kSessionMarkers[] = {";jsessionid=", ";sid=",       "sid=",
                                                         "sessionid=",   "phpsessid=", "session_id="};
  for (const std::string_view m : kSessionMarkers) {
    if (ContainsIgnoreCase(url, m)) return true;
  }
  return false;
}

std::string HostOf(std::string_view url) {
  const std::string_view host = HostView(url);
  std::string out(host.size(), '\0');
  std::transform(host.begin(), host.end(), out.begin(), Lower);
  return out;
}

bool PreferredForMarket(const WinnerRules& rules, std::string_view url, std::string_view market) {
  return Preferred(rules, HostView(url), market);
}

bool Better(const WinnerRules& rules, const Candidate& a, const Candidate& b, std::string_view market) {
  if (a.has_content != b.has_content) return a.has_content;
  for (const Rule rule : rules.order) {
    switch (rule) {
      case Rule::kPopularity: {
        const int64_t pa = PopularityBucket(a.popularity, rules.buckets_per_doubling) + a.bucket_bonus;
        const int64_t pb = PopularityBucket(b.popularity, rules.buckets_per_doubling) + b.bucket_bonus;
        if (pa != pb) return pa > pb;
        break;
      }
      case Rule::kStatic: {
        const bool sa = !IsDynamicUrl(a.url);
        const bool sb = !IsDynamicUrl(b.url);
        if (sa != sb) return sa;
        break;
      }
      case Rule::kShorter:
        if (a.url.size() != b.url.size()) return a.url.size() < b.url.size();
        break;
      case Rule::kMarket: {
        if (market.empty()) break;
        const bool ma = Preferred(rules, HostView(a.url), market);
        const bool mb = Preferred(rules, HostView(b.url), market);
        if (ma != mb) return ma;
        break;
      }
    }
  }
  return a.url < b.url;  // bytewise; identical URLs: neither is better
}

Candidate Incumbent(const WinnerRules& rules, Candidate c) {
  c.bucket_bonus = rules.hysteresis_buckets;
  return c;
}

size_t BestOf(const WinnerRules& rules, const std::vector<Candidate>& candidates, std::string_view market) {
  assert(!candidates.empty());
  size_t best = 0;
  for (size_t i = 1; i < candidates.size(); ++i) {
    if (Better(rules, candidates[i], candidates[best], market)) best = i;
  }
  return best;
}

}  // namespace neardup::tier1
