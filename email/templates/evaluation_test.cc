#include "email/templates/evaluation.h"

#include <gtest/gtest.h>

#include <fstream>

#include "testing/temp_dir.h"

namespace neardup::email {
namespace {

TEST(Score, PurityCoverageFragmentationPersonal) {
  // a: 3 emails, two in template 1, one in template 2; b: 2 emails in template 2 and 1 unassigned;
  // one personal email assigned to template 3.
  std::vector<std::optional<uint64_t>> as = {1, 1, 2, 2, 2, std::nullopt, 3};
  std::vector<std::string> ls = {"a", "a", "a", "b", "b", "b", "none"};
  auto s = Score(as, ls);
  ASSERT_TRUE(s.ok());
  // Template 1: 2 of a; template 2: 2 of b (+1 a); template 3: 1 none -> 5 of 6 assigned.
  EXPECT_DOUBLE_EQ(s->purity, 5.0 / 6.0);
  EXPECT_DOUBLE_EQ(s->coverage, 5.0 / 6.0);
  EXPECT_DOUBLE_EQ(s->fragmentation, 3.0 / 2.0);  // a in {1,2}, b in {2}
  EXPECT_EQ(s->personal_clustered, 1u);
  EXPECT_EQ(s->templates, 3u);
  EXPECT_FALSE(Score({1}, {}).ok());
}

TEST(ReadLabels, ReadsIdAndLabel) {
  neardup::test::TempDir dir;
  {
    std::ofstream out(dir.File("e.jsonl"));
    out << R"({"id":"1","label":"x"})" << "\n" << R"({"id":"2"})" << "\n" << "junk\n";
  }
  auto l = ReadLabels(dir.File("e.jsonl"));
  ASSERT_TRUE(l.ok());
  ASSERT_EQ(l->size(), 1u);
  EXPECT_EQ(l->at("1"), "x");
}

}  // namespace
}  // namespace neardup::email
