// Clustering accuracy against the exact baseline (the paper's Section 5.2 and Table 1).
//
// Both sides are groupings of the same crawled URLs. A pair of pages is "classified duplicate" by
// a grouping when the two share a group (groups are transitive on both sides). Then
//   REP (relative error in precision) = pairs grouped by the system that the baseline does not group
//                                        / pairs grouped by the system,
//   RER (relative error in recall)    = pairs grouped by the baseline that the system does not group
//                                        / pairs grouped by the baseline.
// Pairs are counted from the contingency table of the two labelings (sum of n(n-1)/2 over its
// cells), never enumerated, so groups of any size cost O(pages).
//
//   ASSIGN_OR_RETURN(auto ours, ReadGroupsJsonl("run-groups.jsonl"));
//   ASSIGN_OR_RETURN(auto base, ReadGroupsJsonl("baseline-groups.jsonl"));
//   GroupingAccuracy a = CompareGroupings(ours, base);
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>
#include <string>
#include <unordered_map>

#include "common/status.h"

namespace neardup::experiments {

// url -> group label.
using Grouping = std::unordered_map<std::string, std::string>;

struct GroupingAccuracy {
  uint64_t pages = 0;            // URLs in both groupings (the others are listed below)
  uint64_t only_system = 0, only_baseline = 0;
  uint64_t system_pairs = 0;     // pairs the system groups
  uint64_t baseline_pairs = 0;   // pairs the baseline groups
  uint64_t common_pairs = 0;     // pairs both group
  double rep() const { return system_pairs == 0 ? 0 : double(system_pairs - common_pairs) / double(system_pairs); }
  double rer() const { return baseline_pairs == 0 ? 0 : double(baseline_pairs - common_pairs) / double(baseline_pairs); }
};

// Compares over the URLs present in both.
GroupingAccuracy CompareGroupings(const Grouping& system, const Grouping& baseline);

// Reads {"url": ..., "group": ...} lines (neardup baseline --groups, neardup run --out); a line
// with "crawled": false is skipped (a redirect target never crawled). IoError if unreadable;
// InvalidArgument naming the line for a line without url or group.
StatusOr<Grouping> ReadGroupsJsonl(const std::string& path);

// The crawler's view of a run: what a search engine acts on is each page's status.
//   drop precision = pages answered `duplicate` whose similarity to the page they are a duplicate
//                    of (duplicate_of: a kept member of their group, tier1/kept.cc; the winner in
//                    answers without it) is >= the threshold / pages answered `duplicate` (with a
//                    similarity: content pages; a redirect answered `duplicate` is counted apart,
//                    in dropped_without_similarity)
//   redundancy     = true near-duplicate pairs (the exact baseline's) with both pages answered as
//                    kept (winner, unique or pending; a group's kept pages other than its winner
//                    answer unique) / true pairs
//   greedy kept    = the fewest pages a crawler could keep with no exact pair among them, found
//                    greedily (pages by exact partners, most first; a page is kept unless a kept
//                    page is its partner): the share kept is compared with it
struct PageAnswer {
  std::string group;   // as JSON text
  std::string status;  // unique | winner | duplicate | pending | unknown
  std::optional<double> similarity_to_winner;
  std::string duplicate_of;
  std::optional<double> similarity_to_duplicate_of;
};
using Answers = std::unordered_map<std::string, PageAnswer>;

// A pair of `neardup baseline --pairs`.
struct TruePair {
  std::string a, b;
  double similarity = 0;
};

struct CrawlerView {
  uint64_t pages = 0;     // pages answered (crawled)
  uint64_t kept = 0;      // answered winner, unique or pending
  uint64_t dropped = 0;   // answered duplicate, with a similarity to the winner
  uint64_t dropped_close = 0;  // of those, similarity >= threshold
  uint64_t dropped_without_similarity = 0;  // answered duplicate without one (redirects)
  uint64_t true_pairs = 0;     // baseline pairs with both pages answered
  uint64_t both_kept = 0;      // of those, both pages kept
  // Of those, the two pages in the same market (when markets are given): a group keeps one
  // winner per market (tier1/tier1.h), so pairs across markets are kept on purpose.
  uint64_t both_kept_same_market = 0;
  uint64_t pairs_unanswered = 0;  // baseline pairs with a page the run does not answer
  uint64_t greedy_kept = 0;       // the greedy kept set over the answered pages and the pairs
  double drop_precision() const { return dropped == 0 ? 1 : double(dropped_close) / double(dropped); }
  double redundancy() const { return true_pairs == 0 ? 0 : double(both_kept) / double(true_pairs); }
  double same_market_redundancy() const {
    return true_pairs == 0 ? 0 : double(both_kept_same_market) / double(true_pairs);
  }
  double kept_share() const { return pages == 0 ? 0 : double(kept) / double(pages); }
  double greedy_kept_share() const { return pages == 0 ? 0 : double(greedy_kept) / double(pages); }
};

// url -> market (CrawlRecord::market; "" for none).
using Markets = std::unordered_map<std::string, std::string>;

// `markets` may be null (then both_kept_same_market = both_kept).
CrawlerView ComputeCrawlerView(const Answers& answers, const std::vector<TruePair>& pairs, double threshold,
                               const Markets* markets = nullptr);

// Reads neardup run --out lines: url, group, status, similarity_to_winner, duplicate_of and
// similarity_to_duplicate_of (each when present);
// "crawled": false lines are skipped. Errors as ReadGroupsJsonl.
StatusOr<Answers> ReadAnswersJsonl(const std::string& path);
// The grouping of answers (url -> group).
Grouping GroupingOf(const Answers& answers);
// What the run did last to a page: its latest record's classification (tier1::ClassificationName)
// and whether it had an earlier record.
struct PageHistory {
  std::string route;
  bool recrawled = false;
};
using Histories = std::unordered_map<std::string, PageHistory>;

// Reads a run's --status-out lines (url, route) in order: each URL's last. IoError if unreadable;
// InvalidArgument naming the line for a line without url or route.
StatusOr<Histories> ReadHistories(const std::string& status_path);

// Reads neardup baseline --pairs lines. IoError if unreadable; InvalidArgument naming the line.
StatusOr<std::vector<TruePair>> ReadPairsJsonl(const std::string& path);

}  // namespace neardup::experiments
