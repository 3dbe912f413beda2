#include "experiments/accuracy.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace neardup::experiments {
namespace {

TEST(Accuracy, IdenticalGroupingsHaveNoError) {
  Grouping g{{"a", "1"}, {"b", "1"}, {"c", "2"}, {"d", "2"}, {"e", "3"}};
  GroupingAccuracy a = CompareGroupings(g, g);
  EXPECT_EQ(a.system_pairs, 2u);
  EXPECT_EQ(a.common_pairs, 2u);
  EXPECT_EQ(a.rep(), 0);
  EXPECT_EQ(a.rer(), 0);
}

TEST(Accuracy, LabelsNeedNotMatchOnlyThePartition) {
  Grouping sys{{"a", "x"}, {"b", "x"}, {"c", "y"}};
  Grouping base{{"a", "7"}, {"b", "7"}, {"c", "9"}};
  EXPECT_EQ(CompareGroupings(sys, base).rep(), 0);
}

TEST(Accuracy, SplitFalsePositiveCountsAgainstPrecision) {
  // The paper's q1, q2, q3: the system keeps q1 and q3 together after q2 left; the baseline does not.
  Grouping sys{{"q1", "g"}, {"q3", "g"}, {"q2", "h"}};
  Grouping base{{"q1", "1"}, {"q3", "3"}, {"q2", "2"}};
  GroupingAccuracy a = CompareGroupings(sys, base);
  EXPECT_EQ(a.system_pairs, 1u);
  EXPECT_EQ(a.baseline_pairs, 0u);
  EXPECT_DOUBLE_EQ(a.rep(), 1.0);
  EXPECT_DOUBLE_EQ(a.rer(), 0.0);
}

TEST(Accuracy, MissedPairCountsAgainstRecall) {
  Grouping sys{{"a", "1"}, {"b", "1"}, {"c", "2"}};
  Grouping base{{"a", "1"}, {"b", "1"}, {"c", "1"}};
  GroupingAccuracy a = CompareGroupings(sys, base);
  EXPECT_EQ(a.baseline_pairs, 3u);
  EXPECT_EQ(a.common_pairs, 1u);
  EXPECT_DOUBLE_EQ(a.rer(), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(a.rep(), 0.0);
}

TEST(Accuracy, UrlsOnOneSideOnlyAreCountedNotCompared) {
  Grouping sys{{"a", "1"}, {"b", "1"}, {"z", "1"}};
  Grouping base{{"a", "1"}, {"b", "1"}, {"y", "5"}};
  GroupingAccuracy a = CompareGroupings(sys, base);
  EXPECT_EQ(a.pages, 2u);
  EXPECT_EQ(a.only_system, 1u);
  EXPECT_EQ(a.only_baseline, 1u);
  EXPECT_EQ(a.system_pairs, 1u);
}

TEST(Accuracy, ReadsGroupFilesAndSkipsUncrawledTargets) {
  const std::string path = ::testing::TempDir() + "/accuracy_groups.jsonl";
  {
    std::ofstream f(path);
    f << "{\"url\":\"http://a/\",\"group\":3}\n"
      << "{\"url\":\"http://b/\",\"group\":3,\"winner\":\"http://a/\"}\n"
      << "\n"
      << "{\"url\":\"http://t/\",\"group\":3,\"crawled\":false}\n";
  }
  auto g = ReadGroupsJsonl(path);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->size(), 2u);
  EXPECT_EQ(g->at("http://b/"), "3");
  {
    std::ofstream f(path);
    f << "{\"url\":\"http://a/\"}\n";
  }
  auto bad = ReadGroupsJsonl(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(":1: no \"group\""), std::string::npos);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace neardup::experiments
