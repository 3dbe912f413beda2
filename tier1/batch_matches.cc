// BatchMatches (tier1/batch_matches.h).
#include "tier1/batch_matches.h"

#include <string>

namespace neardup::tier1 {

StatusOr<BatchMatches> BatchMatches::Build(std::span<const PageUpdate> batch, std::span<const Classification> classes,
                                           const Tier2Matches& matches) {
  const size_t n = batch.size();
  BatchMatches out;
  out.resident_.resize(n);
  out.partners_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    if ((classes[i] == Classification::kGone) != (batch[i].gone && classes[i] != Classification::kSuperseded)) {
      return InvalidArgument("batch page " + std::to_string(i) + " (" + batch[i].url + ") is " +
                             (batch[i].gone ? "gone but not classified kGone" : "classified kGone but not gone"));
    }
  }
  for (const auto& r : matches.resident) {
    if (r.page >= n || classes[r.page] != Classification::kTier2) {
      return InvalidArgument("Tier 2 match for batch page " + std::to_string(r.page) + " that was not sent to Tier 2");
    }
    out.resident_[r.page].emplace_back(r.url, r.similarity);
  }
  const auto compared = [&](uint32_t k) {
    return classes[k] == Classification::kTier2 || classes[k] == Classification::kFastPath;
  };
  for (const auto& m : matches.in_batch) {
    if (m.a >= n || m.b >= n || !compared(m.a) || !compared(m.b) ||
        (classes[m.a] != Classification::kTier2 && classes[m.b] != Classification::kTier2)) {
      return InvalidArgument("in-batch match (" + std::to_string(m.a) + ", " + std::to_string(m.b) +
                             ") not between a page sent to Tier 2 and another sent to it or kept by the fast path");
    }
    out.partners_[m.a].emplace_back(m.b, m.similarity);
    out.partners_[m.b].emplace_back(m.a, m.similarity);
  }
  // Each URL's record in the batch that replaces its resident version (its last: earlier ones are
  // superseded).
  for (size_t i = 0; i < n; ++i) {
    if (classes[i] == Classification::kTier2 || classes[i] == Classification::kFastPath ||
        classes[i] == Classification::kEmpty || classes[i] == Classification::kRedirect ||
        classes[i] == Classification::kGone) {
      out.replaced_at_[batch[i].url] = i;
    }
  }
  return out;
}

}  // namespace neardup::tier1
