// The crawler's view with kept sets (duplicate_of), the greedy kept set, and the causes of wrong
// pairs (experiments/eval.h).
#include "experiments/eval.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <filesystem>
#include <string>
#include <vector>

namespace neardup::experiments {
namespace {

PageAnswer A(std::string group, std::string status, std::optional<double> to_winner = std::nullopt,
             std::string duplicate_of = "", std::optional<double> to_duplicate_of = std::nullopt) {
  PageAnswer a;
  a.group = std::move(group);
  a.status = std::move(status);
  a.similarity_to_winner = to_winner;
  a.duplicate_of = std::move(duplicate_of);
  a.similarity_to_duplicate_of = to_duplicate_of;
  return a;
}

const WrongPairCause& Cause(const WrongPairs& w, WrongCause c) { return w.causes[static_cast<size_t>(c)]; }

// The chain v1 ~ v2 ~ v3 ~ v4 with a kept set: v4 is dropped to v3 although it is far from the
// winner; drop precision judges it against v3.
TEST(CrawlerViewKept, DropPrecisionUsesDuplicateOf) {
  Answers ans{{"v1", A("1", "winner", 1.0)},
              {"v2", A("1", "duplicate", 0.95, "v1", 0.95)},
              {"v3", A("1", "unique", 0.8)},
              {"v4", A("1", "duplicate", 0.7, "v3", 0.92)}};
  std::vector<TruePair> pairs{{"v1", "v2", 0.95}, {"v2", "v3", 0.93}, {"v3", "v4", 0.92}};
  CrawlerView v = ComputeCrawlerView(ans, pairs, 0.9);
  EXPECT_EQ(v.dropped, 2u);
  EXPECT_EQ(v.dropped_close, 2u);
  EXPECT_EQ(v.both_kept, 0u);
  EXPECT_EQ(v.kept, 2u);
  // The greedy kept set: v2 and v3 (two partners each) come first: v2 kept drops v1 and v3; v4 kept.
  EXPECT_EQ(v.greedy_kept, 2u);
  EXPECT_DOUBLE_EQ(v.greedy_kept_share(), 0.5);
  // Without duplicate_of, v4's similarity to the winner is what counts: not close.
  ans["v4"] = A("1", "duplicate", 0.7);
  EXPECT_EQ(ComputeCrawlerView(ans, pairs, 0.9).dropped_close, 1u);
}

TEST(CrawlerViewKept, ReadsDuplicateOf) {
  const std::string path = ::testing::TempDir() + "/kept.jsonl";
  std::ofstream(path) << R"({"url":"v4","group":1,"winner":"v1","status":"duplicate","similarity_to_winner":0.7,)"
                         R"("duplicate_of":"v3","similarity_to_duplicate_of":0.92})" "\n";
  auto ans = ReadAnswersJsonl(path);
  ASSERT_TRUE(ans.ok()) << ans.status().ToString();
  EXPECT_EQ(ans->at("v4").duplicate_of, "v3");
  EXPECT_DOUBLE_EQ(*ans->at("v4").similarity_to_duplicate_of, 0.92);
}

TEST(WrongPairs, ExtraPairsByCause) {
  // Run group g holds {a, b} and {c} (the baseline puts c apart), and {d}, {e}: three parts.
  Answers ans{{"a", A("g", "winner")}, {"b", A("g", "duplicate")}, {"c", A("g", "duplicate")},
              {"d", A("g", "duplicate")}, {"e", A("g", "duplicate")}};
  Grouping truth{{"a", "1"}, {"b", "1"}, {"c", "2"}, {"d", "3"}, {"e", "4"}};
  std::vector<TruePair> pairs{{"a", "b", 0.95}};
  Histories h{{"c", {"fast_path", true}}, {"d", {"tier2", true}}, {"e", {"unchanged", true}}};
  WrongPairs w = ExplainWrongPairs(ans, truth, pairs, h, 0.9, false);
  // Pairs: {a,b} x c = 2, {a,b} x d = 2, {a,b} x e = 2, c-d, c-e, d-e = 3: 9 extra.
  EXPECT_EQ(w.extra, 9u);
  EXPECT_EQ(w.missed, 0u);
  // c (fast path) is the smaller part against {a,b} and against d and e (ties: the first part).
  EXPECT_EQ(Cause(w, WrongCause::kFastPath).extra, 2u + 1u + 1u);
  EXPECT_EQ(Cause(w, WrongCause::kStaleContent).extra, 2u + 1u);       // d, recrawled through Tier 2
  EXPECT_EQ(Cause(w, WrongCause::kGroupSplitting).extra, 2u);          // e, unchanged
  EXPECT_FALSE(Cause(w, WrongCause::kFastPath).examples.empty());
  EXPECT_TRUE(Cause(w, WrongCause::kFastPath).examples[0].extra);
}

TEST(WrongPairs, MissedPairsByCause) {
  // Baseline group 1 = {a, b, c, d} (a-b, b-c, c-d exact pairs); the run splits it into {a}, {b},
  // {c, d}: a-b is a direct pair (b rejected by verification), b-c direct (c kept by the fast path),
  // a-{c,d} only through the chain.
  Answers ans{{"a", A("x", "winner", 1.0)}, {"b", A("y", "unique", 0.5)}, {"c", A("z", "winner", 1.0)},
              {"d", A("z", "duplicate", 0.95)}};
  Grouping truth{{"a", "1"}, {"b", "1"}, {"c", "1"}, {"d", "1"}};
  std::vector<TruePair> pairs{{"a", "b", 0.91}, {"b", "c", 0.92}, {"c", "d", 0.95}};
  Histories h{{"c", {"fast_path", true}}};
  WrongPairs w = ExplainWrongPairs(ans, truth, pairs, h, 0.9, false);
  EXPECT_EQ(w.missed, 1u + 2u + 2u);
  EXPECT_EQ(w.extra, 0u);
  EXPECT_EQ(Cause(w, WrongCause::kVerificationRejection).missed, 1u);
  EXPECT_EQ(Cause(w, WrongCause::kFastPath).missed, 2u);
  EXPECT_EQ(Cause(w, WrongCause::kTransitiveChaining).missed, 2u);
  ASSERT_EQ(Cause(w, WrongCause::kVerificationRejection).examples.size(), 1u);
  EXPECT_DOUBLE_EQ(*Cause(w, WrongCause::kVerificationRejection).examples[0].similarity, 0.91);
  EXPECT_FALSE(Cause(w, WrongCause::kTransitiveChaining).examples[0].similarity.has_value());
  // With the rho box, a direct pair not joined is blamed on routing (unless the fast path).
  WrongPairs r = ExplainWrongPairs(ans, truth, pairs, h, 0.9, true);
  EXPECT_EQ(Cause(r, WrongCause::kRouting).missed, 1u);
  EXPECT_EQ(Cause(r, WrongCause::kVerificationRejection).missed, 0u);
  // Examples are capped.
  EXPECT_LE(Cause(ExplainWrongPairs(ans, truth, pairs, h, 0.9, false, 0), WrongCause::kFastPath).examples.size(), 0u);
}

TEST(WrongPairs, ReadsHistoriesFromStatusLines) {
  const std::string path = ::testing::TempDir() + "/status.jsonl";
  std::ofstream(path) << R"({"url":"a","status":"unique","route":"tier2"})" "\n"
                      << R"({"url":"b","status":"unique","route":"tier2"})" "\n"
                      << R"({"url":"a","status":"duplicate","route":"fast_path"})" "\n";
  auto h = ReadHistories(path);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->at("a").route, "fast_path");
  EXPECT_TRUE(h->at("a").recrawled);
  EXPECT_FALSE(h->at("b").recrawled);
  std::ofstream(path) << R"({"url":"a"})" "\n";
  auto bad = ReadHistories(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().ToString().find("status.jsonl:1"), std::string::npos) << bad.status().ToString();
}

// The figure's script draws a line per shard count from eval.csv, and gnuplot, when installed,
// draws it into eval.png; a directory with a quote in its name is quoted for the shell and gnuplot.
TEST(EvalPlot, ScriptHasALinePerShardCountAndGnuplotDrawsIt) {
  EvalOptions o;
  o.out_dir = ::testing::TempDir() + "/plot 'x'";
  std::filesystem::create_directories(o.out_dir);
  o.run.threshold = 0.9;
  EvalResult r;
  r.shards = {4, 12};
  r.input_records = 1000;
  EvalPoint p;
  p.milestone = 0.5;
  p.records = 500;
  p.shards = 4;
  r.points.push_back(p);
  p.shards = 12;
  r.points.push_back(p);
  ASSERT_TRUE(WriteEvalResults(r, o).ok());
  bool drawn = false;
  const Status s = DrawEvalPlot(r, o, &drawn);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::ifstream in(o.out_dir + "/eval.gp");
  const std::string gp((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(gp.find("$3 == 4'"), std::string::npos) << gp;
  EXPECT_NE(gp.find("$3 == 12'"), std::string::npos) << gp;
  EXPECT_NE(gp.find("title \"12 shards\""), std::string::npos) << gp;
  EXPECT_NE(gp.find("paper, 12 machines"), std::string::npos) << gp;
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) GTEST_SKIP() << "gnuplot is not installed: the script only";
  EXPECT_TRUE(drawn);
  std::ifstream png(o.out_dir + "/eval.png", std::ios::binary);
  std::string magic(8, '\0');
  png.read(magic.data(), 8);
  EXPECT_EQ(magic, "\x89PNG\r\n\x1a\n");
}

}  // namespace
}  // namespace neardup::experiments
