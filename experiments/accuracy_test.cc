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

TEST(CrawlerView, DropPrecisionAndRedundancy) {
  Answers ans;
  ans["w"] = {"1", "winner", 1.0, "", std::nullopt};
  ans["d1"] = {"1", "duplicate", 0.95, "", std::nullopt};
  ans["d2"] = {"1", "duplicate", 0.85, "", std::nullopt};  // dropped, but too far from its winner
  ans["u1"] = {"2", "unique", 1.0, "", std::nullopt};
  ans["u2"] = {"3", "unique", 1.0, "", std::nullopt};
  ans["p"] = {"4", "pending", std::nullopt, "", std::nullopt};
  ans["r"] = {"1", "duplicate", std::nullopt, "", std::nullopt};  // a redirect
  std::vector<TruePair> pairs = {{"w", "d1", 0.95}, {"u1", "u2", 0.92}, {"u1", "p", 0.91}, {"w", "gone", 0.9}};
  CrawlerView v = ComputeCrawlerView(ans, pairs, 0.9);
  EXPECT_EQ(v.pages, 7u);
  EXPECT_EQ(v.kept, 4u);
  EXPECT_EQ(v.dropped, 2u);
  EXPECT_EQ(v.dropped_close, 1u);
  EXPECT_EQ(v.dropped_without_similarity, 1u);
  EXPECT_DOUBLE_EQ(v.drop_precision(), 0.5);
  EXPECT_EQ(v.true_pairs, 3u);
  EXPECT_EQ(v.pairs_unanswered, 1u);
  EXPECT_EQ(v.both_kept, 2u);  // u1-u2 and u1-p
  EXPECT_DOUBLE_EQ(v.redundancy(), 2.0 / 3.0);
  EXPECT_EQ(v.both_kept_same_market, 2u);
  // u1 and u2 in different markets: kept apart on purpose.
  Markets markets{{"u1", "uk"}, {"u2", "fr"}, {"p", "uk"}};
  CrawlerView m = ComputeCrawlerView(ans, pairs, 0.9, &markets);
  EXPECT_EQ(m.both_kept, 2u);
  EXPECT_EQ(m.both_kept_same_market, 1u);
  EXPECT_DOUBLE_EQ(m.same_market_redundancy(), 1.0 / 3.0);
}

TEST(CrawlerView, ReadsRunOutputAndPairs) {
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/g.jsonl") << R"({"url":"a","group":1,"winner":"a","status":"winner","similarity_to_winner":1})" "\n"
                                  << R"({"url":"b","group":1,"winner":"a","status":"duplicate","similarity_to_winner":0.93})" "\n"
                                  << R"({"url":"c","group":2,"winner":"","status":"unknown","crawled":false})" "\n";
  std::ofstream(dir + "/p.jsonl") << R"({"a":"a","b":"b","similarity":0.93})" "\n" << R"({"a":"a"})" "\n";
  auto ans = ReadAnswersJsonl(dir + "/g.jsonl");
  ASSERT_TRUE(ans.ok());
  ASSERT_EQ(ans->size(), 2u);
  EXPECT_EQ(ans->at("b").status, "duplicate");
  EXPECT_DOUBLE_EQ(*ans->at("b").similarity_to_winner, 0.93);
  EXPECT_EQ(GroupingOf(*ans).at("b"), "1");
  auto pairs = ReadPairsJsonl(dir + "/p.jsonl");
  ASSERT_FALSE(pairs.ok());
  EXPECT_NE(pairs.status().ToString().find("p.jsonl:2"), std::string::npos) << pairs.status().ToString();
}

}  // namespace
}  // namespace neardup::experiments
