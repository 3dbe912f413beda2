// Private to Tier1's sources (classify.cc, apply.cc, repair.cc): the helpers more than one of them
// uses. Not part of Tier1's contract (tier1/tier1.h): nothing outside tier1/*.cc includes it.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "document/shingle.h"
#include "proto/neardup.pb.h"
#include "tier1/tier1.h"

namespace neardup::tier1 {

// Groups whose winners must be brought up to date before a commit.
struct Tier1::Touched {
  struct Entry {
    bool full = false;                 // recompute over all members
    std::vector<std::string> added;    // members that joined or changed (compare with the winners)
  };
  std::map<uint64_t, Entry> groups;
};

// F(a, b): true when Jaccard(a, b) >= threshold; *sim is set to Jaccard(a, b).
inline bool Similar(const pb::PageSignature& a, const pb::PageSignature& b, double threshold, double* sim) {
  const std::span<const uint64_t> x(a.shingles().data(), static_cast<size_t>(a.shingles_size()));
  const std::span<const uint64_t> y(b.shingles().data(), static_cast<size_t>(b.shingles_size()));
  const size_t overlap = Overlap(x, y);
  const size_t uni = x.size() + y.size() - overlap;
  *sim = uni == 0 ? 0.0 : static_cast<double>(overlap) / static_cast<double>(uni);
  return JaccardAtLeast(overlap, x.size(), y.size(), threshold);
}

}  // namespace neardup::tier1
