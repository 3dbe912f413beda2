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

}  // namespace neardup::experiments
