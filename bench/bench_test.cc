#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "bench/docmodel_bench.h"
#include "bench/status_http_bench.h"
#include "bench/tier2_bench.h"
#include "common/config.h"
#include "testing/temp_dir.h"

namespace neardup::bench {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Tier2BenchOptions SmallTier2(const test::TempDir& dir) {
  Tier2BenchOptions o;
  o.workdir = dir.File("work");
  o.resident = 1500;
  o.batch = 100;
  o.batches = 2;
  o.brute_pages = 20;
  o.report = dir.File("report.json");
  o.threshold = 0.8;
  o.config = DefaultConfig();
  o.signer.k = static_cast<int>(o.config.shingle().k());
  o.signer.dims = static_cast<int>(o.config.shingle().dims());
  return o;
}

TEST(Tier2Bench, OnAGeneratedCrawlTheIndexFindsThePairsBruteForceFinds) {
  test::TempDir dir;
  const Tier2BenchOptions o = SmallTier2(dir);
  EXPECT_EQ(RunTier2Bench(o), 0);
  const std::string report = ReadAll(o.report);
  const size_t at = report.find("\"resident_pages\":");
  ASSERT_NE(at, std::string::npos) << report;
  EXPECT_GE(std::stoull(report.substr(at + 17)), 1500u) << report;  // whole batches past --resident
  EXPECT_NE(report.find("\"brute_force_mismatches\":0"), std::string::npos) << report;
  EXPECT_NE(report.find("\"batch\":100"), std::string::npos) << report;
}

TEST(Tier2Bench, AnUnreadableInputFails) {
  test::TempDir dir;
  Tier2BenchOptions o = SmallTier2(dir);
  o.input = dir.File("absent.jsonl");
  EXPECT_EQ(RunTier2Bench(o), 1);
}

TEST(Tier2Bench, GrowthWritesARowPerMilestoneToTheCsv) {
  test::TempDir dir;
  Tier2BenchOptions o = SmallTier2(dir);
  o.resident = 12000;  // milestones 10000 and 12000
  o.batch = 1000;
  o.batches = 1;
  o.brute_pages = 0;
  o.growth = true;
  o.csv = dir.File("growth.csv");
  ASSERT_EQ(RunTier2Bench(o), 0);
  std::istringstream csv(ReadAll(o.csv));
  std::string line;
  int rows = -1;  // the header
  while (std::getline(csv, line)) ++rows;
  EXPECT_EQ(rows, 2);
}

TEST(DocModelBench, AMissingCrawlFails) {
  test::TempDir dir;
  EXPECT_EQ(RunDocModelBench(dir.File("absent.jsonl"), 100, 1), 1);
}

TEST(DocModelBench, RunsOverACrawl) {
  test::TempDir dir;
  const std::string crawl = dir.File("crawl.jsonl");
  std::ofstream(crawl) << R"({"url":"http://a.example/1","html":"<p>one two three four five six seven</p>"})" << "\n"
                       << R"({"url":"http://a.example/2","text":"one two three four five six eight"})" << "\n";
  EXPECT_EQ(RunDocModelBench(crawl, 100, 1), 0);
}

TEST(StatusHttpBench, AnEmptyInputIsBadUsage) {
  test::TempDir dir;
  std::ofstream(dir.File("empty.jsonl")).flush();
  StatusHttpBenchOptions o;
  o.server = "http://127.0.0.1:1";
  o.input = dir.File("empty.jsonl");
  EXPECT_EQ(RunStatusHttpBench(o), 2);
}

}  // namespace
}  // namespace neardup::bench
