// Winner selection: which page of a duplicate group is kept (the paper's Section 5).
//
// Pages are ranked by a total order built from configurable rules, applied in the configured
// sequence until one decides (the default sequence is the one below; MARKET is ignored for the
// default winner, which POPULARITY, STATIC, SHORTER rank as in the paper, while a market's winner
// is a host of that market whenever the group has one with content):
//   CONTENT     a crawled page with content beats a redirect or a never-crawled redirect target
//               (always first; not configurable: a redirect cannot represent a group);
//   MARKET      for a market m: a page whose host ends in one of m's suffixes wins (by default the
//               suffix ".m", so "bbc.co.uk" for market "uk"); ignored for the default winner;
//   POPULARITY  higher popularity, compared by bucket: log2(1 + popularity) * buckets_per_doubling,
//               floored, so pages of "about the same" popularity tie and the next rule decides;
//               the incumbent winner's bucket is raised by hysteresis_buckets (Incumbent);
//   STATIC      a static URL beats a dynamic one (a query string, or a session-like parameter
//               anywhere: ;jsessionid=, sid=, sessionid=, phpsessid=, ...; see IsDynamicUrl);
//   SHORTER     the shorter URL (in bytes) wins;
//   then a deterministic tie-break: the smaller URL bytewise.
// Because the order is total and depends only on the candidates' own attributes, a group's winner
// is stable when nothing relevant changed: adding a page can only replace the winner by the new
// page. Hysteresis: Tier 1 ranks a group's current winner (while it is a member with content) with
// its bucket raised by hysteresis_buckets, so a page whose popularity oscillates around a bucket
// edge does not make the winner flip. A group's winner is therefore the best of its members with
// the incumbent so raised; it depends on which member won before (among pages within the margin,
// on the order they arrived in). A group without an incumbent (new, or its winner left) gets the
// best of its members by the plain order, and with hysteresis_buckets = 0 a group's winner is the
// best of its members whatever order they arrived in.
//
//   WinnerRules rules = WinnerRulesFromConfig(cfg.tier1());
//   Candidate a{.url = "http://x.com/a", .popularity = 3, .has_content = true};
//   bool a_first = Better(rules, a, b, /*market=*/"");
//
// Thread safety: pure functions; WinnerRules is immutable after construction.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/config.h"
#include "common/status.h"
#include "proto/config.pb.h"

namespace neardup::tier1 {

enum class Rule { kPopularity, kStatic, kShorter, kMarket };

// The configuration's winner_rules as rules, in order, each once (unknown values skipped: the
// config loader refuses them).
std::vector<Rule> RuleOrderOf(const pb::Tier1Config& config);

// Defaults: the configuration's (proto/config.proto, Tier1Config).
struct WinnerRules {
  std::vector<Rule> order = RuleOrderOf(ConfigDefaults().tier1());
  // > 0; popularity buckets per doubling of (1 + popularity)
  double buckets_per_doubling = ConfigDefaults().tier1().popularity_buckets_per_doubling();
  // The incumbent winner's margin: Incumbent() raises its popularity bucket by this many, so a
  // challenger wins on POPULARITY only from more than this many buckets above it. 0 = none.
  uint32_t hysteresis_buckets = ConfigDefaults().tier1().winner_hysteresis_buckets();
  // market -> host suffixes preferred for it; a market absent here prefers ".<market>".
  std::vector<std::pair<std::string, std::vector<std::string>>> market_suffixes;
};

// From the configuration's tier1 section (config.proto Tier1Config: winner_rules,
// popularity_buckets_per_doubling, market_suffix, winner_hysteresis_buckets). The config loader
// has already validated it.
WinnerRules WinnerRulesFromConfig(const pb::Tier1Config& config);

// What winner selection looks at of a page.
struct Candidate {
  std::string_view url;
  double popularity = 0;
  bool has_content = false;  // crawled, not a redirect
  int64_t bucket_bonus = 0;  // added to its popularity bucket (>= 0; see Incumbent)
};

// `c` as the group's incumbent winner: its bucket_bonus set to rules.hysteresis_buckets.
Candidate Incumbent(const WinnerRules& rules, Candidate c);

// True when `a` ranks strictly before `b` for `market` ("" = the default winner). Irreflexive,
// asymmetric and transitive (a strict total order over distinct URLs), the bucket_bonus of each
// candidate being part of its attributes.
bool Better(const WinnerRules& rules, const Candidate& a, const Candidate& b, std::string_view market);

// Index of the best candidate for `market`; candidates must not be empty.
size_t BestOf(const WinnerRules& rules, const std::vector<Candidate>& candidates, std::string_view market);

// True when the URL has a query string or a session-like parameter (case-insensitive):
// "?" anywhere, or one of ";jsessionid=", ";sid=", "sid=", "sessionid=", "phpsessid=", "session_id=".
bool IsDynamicUrl(std::string_view url);

// The host of an absolute http(s) URL, lower-cased, without port or user info ("" if none).
std::string HostOf(std::string_view url);

// True when the URL's host ends with one of the market's preferred suffixes (see WinnerRules).
bool PreferredForMarket(const WinnerRules& rules, std::string_view url, std::string_view market);

// The popularity bucket used by POPULARITY.
int64_t PopularityBucket(double popularity, double buckets_per_doubling);

}  // namespace neardup::tier1
