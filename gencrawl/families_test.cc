// Near-copy families (families.cc): their share of the pages, and edits landing near their targets.
#include "gencrawl/crawl_generator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "gencrawl/test_corpus.h"

namespace neardup::gencrawl {
namespace {

class FamiliesTest : public CorpusTest {};

TEST_F(FamiliesTest, EnoughPagesHaveNearDuplicates) {
  std::map<int64_t, int> family_size;
  int first_fetch_content = 0;
  for (const Row& r : *rows_) {
    if (!IsContent(r) || IsRecrawl(r)) continue;
    ++first_fetch_content;
    if (r.family >= 0) ++family_size[r.family];
  }
  int in_families = 0;
  for (const auto& [f, n] : family_size) {
    EXPECT_GE(n, 2) << "family " << f;
    in_families += n;
  }
  const double share = static_cast<double>(in_families) / first_fetch_content;
  EXPECT_GE(share, 0.28);
  EXPECT_LE(share, 0.45);
}

TEST_F(FamiliesTest, EditsLandNearTheirTargets) {
  const double thresholds[] = {0.5, 0.8, 0.9, 0.95};
  int edits = 0, near_target = 0, just_below_09 = 0, just_above_09 = 0;
  for (const Row& r : *rows_) {
    if (r.kind != "edit") continue;
    ++edits;
    double best = 1;
    for (double t : thresholds) best = std::min(best, std::fabs(r.jaccard - t));
    if (best <= 0.04) ++near_target;
    if (r.jaccard >= 0.86 && r.jaccard < 0.9) ++just_below_09;
    if (r.jaccard >= 0.9 && r.jaccard <= 0.94) ++just_above_09;
  }
  ASSERT_GT(edits, 100);
  EXPECT_GE(near_target, edits * 9 / 10) << near_target << " of " << edits;
  EXPECT_GT(just_below_09, 10);
  EXPECT_GT(just_above_09, 10);
}

}  // namespace
}  // namespace neardup::gencrawl
