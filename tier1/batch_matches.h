// BatchMatches: Tier 2's matches for a classified batch, indexed by batch page and checked against
// the classes, with the rule that decides which resident matches a page may count. Tier1::Apply
// (apply.cc) builds one per batch; it is its own unit so that the rule can be tested alone.
//
// A batch is applied as its records would be one after another, so that where batches (and
// inputs) are cut does not change the groups: each page meets every other URL as the crawl had
// it at the page's own place. A URL whose record in this batch (re-compared, kept by the fast
// path with new content, emptied, turned into a redirect or gone) comes before the page was
// replaced by then: a match with its resident version is stale and does not count (the page
// meets the new version in the in-batch join instead, or nothing when it has none). A URL whose
// record comes after the page is still its resident version there: that match counts.
//
// Thread safety: none needed (immutable once built). It keeps views of the batch's and the
// matches' URLs: both must outlive it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/status.h"
#include "tier1/tier1.h"

namespace neardup::tier1 {

class BatchMatches {
 public:
  // Indexes `matches` for `batch`, classified as `classes` (the same size). InvalidArgument, named,
  // for a page gone but not classified kGone or classified kGone but not gone (a superseded gone
  // record is neither), a resident match for a page not sent to Tier 2, or an in-batch pair whose
  // pages are not both kTier2 or kFastPath with at least one kTier2. Checked in that order.
  static StatusOr<BatchMatches> Build(std::span<const PageUpdate> batch, std::span<const Classification> classes,
                                      const Tier2Matches& matches);

  // Page i's resident matches, as (URL, similarity), in the order Tier 2 gave them.
  const std::vector<std::pair<std::string_view, double>>& resident(size_t i) const { return resident_[i]; }
  // Page i's in-batch partners, as (batch index, similarity), in the order Tier 2 gave them.
  const std::vector<std::pair<uint32_t, double>>& partners(size_t i) const { return partners_[i]; }
  // True when `url`'s record in the batch (its last one that replaces its resident version)
  // comes before page `page`: page's match with its resident version is stale.
  bool Stale(std::string_view url, size_t page) const {
    const auto it = replaced_at_.find(url);
    return it != replaced_at_.end() && it->second < page;
  }

 private:
  std::vector<std::vector<std::pair<std::string_view, double>>> resident_;
  std::vector<std::vector<std::pair<uint32_t, double>>> partners_;
  std::unordered_map<std::string_view, size_t> replaced_at_;
};

}  // namespace neardup::tier1
