// End to end: `neardup eval` on a generated crawl, its table's shape, its numbers against
// `neardup run` and `neardup baseline` run separately on the same records, and an interrupted
// evaluation keeping what it measured.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <simdjson.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/binary_test.h"

namespace neardup {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// CSV rows as column -> value maps.
std::vector<std::map<std::string, std::string>> Csv(const std::string& text) {
  auto lines = Lines(text);
  std::vector<std::map<std::string, std::string>> rows;
  if (lines.empty()) return rows;
  auto split = [](const std::string& l) {
    std::vector<std::string> f;
    std::istringstream in(l);
    for (std::string x; std::getline(in, x, ',');) f.push_back(x);
    return f;
  };
  const auto head = split(lines[0]);
  for (size_t i = 1; i < lines.size(); ++i) {
    const auto f = split(lines[i]);
    EXPECT_EQ(f.size(), head.size()) << lines[i];
    std::map<std::string, std::string> row;
    for (size_t k = 0; k < head.size() && k < f.size(); ++k) row[head[k]] = f[k];
    rows.push_back(row);
  }
  return rows;
}

class EvalTest : public BinaryTest {
 protected:
  // `neardup accuracy` of a run on the first `records` lines of the crawl with `shards` shards.
  std::string Accuracy(const std::string& crawl, size_t records, int shards) {
    const auto lines = Lines(Read(crawl));
    std::string prefix;
    for (size_t i = 0; i < records && i < lines.size(); ++i) prefix += lines[i] + "\n";
    const std::string name = "prefix-" + std::to_string(records) + "-" + std::to_string(shards);
    Write(name + ".jsonl", prefix);
    // The eval's map comes from a sample of the whole crawl: give the run the same map.
    Outcome r = Neardup("run --input " + Path(name + ".jsonl") + " --shards " + std::to_string(shards) + " --store " +
                        Path(name + "-store") + " --map " + Path("map-" + std::to_string(shards) + ".pb") +
                        " --out " + Path(name + "-groups.jsonl"));
    EXPECT_EQ(r.code, 0) << r.err;
    r = Neardup("baseline --input " + Path(name + ".jsonl") + " --threshold 0.9 --groups " + Path(name + "-base.jsonl") +
                " --pairs " + Path(name + "-pairs.jsonl"));
    EXPECT_EQ(r.code, 0) << r.err;
    r = Neardup("accuracy --groups " + Path(name + "-groups.jsonl") + " --baseline " + Path(name + "-base.jsonl") +
                " --pairs " + Path(name + "-pairs.jsonl"));
    EXPECT_EQ(r.code, 0) << r.err;
    return r.out;
  }
};

TEST_F(EvalTest, TableShapeAndNumbersMatchSeparateRuns) {
  const std::string crawl = Path("crawl.jsonl");
  ASSERT_EQ(Neardup("gen-crawl --pages 1200 --seed 7 --out " + crawl).code, 0);
  const Outcome r = Neardup("eval --input " + crawl + " --milestones 50%,100% --shards 2,3 --routing exact --out " +
                            Path("res"));
  ASSERT_EQ(r.code, 0) << r.err;
  // Table 1's shape: a header with REP and RER per shard count, one row per milestone.
  const auto table = Lines(Read(Path("res/table.txt")));
  ASSERT_EQ(table.size(), 3u) << Read(Path("res/table.txt"));
  EXPECT_THAT(table[0], HasSubstr("REP,2"));
  EXPECT_THAT(table[0], HasSubstr("RER,3"));
  EXPECT_THAT(table[1], ::testing::StartsWith("50%"));
  EXPECT_THAT(table[2], ::testing::StartsWith("100%"));
  EXPECT_THAT(r.out, HasSubstr("REP,2"));
  EXPECT_THAT(r.out, HasSubstr("drop precision"));
  const auto rows = Csv(Read(Path("res/eval.csv")));
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].at("records"), "600");
  EXPECT_EQ(rows[3].at("records"), "1200");
  EXPECT_EQ(rows[3].at("shards"), "3");
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(Read(Path("res/eval.json"))).get(doc), simdjson::SUCCESS);
  EXPECT_TRUE(doc["complete"].get_bool().value());
  EXPECT_EQ(doc["points"].get_array().size(), 4u);
  // Every wrong pair is explained by one cause: the causes add up to REP's and RER's numerators.
  for (const auto& row : rows) {
    const uint64_t common = std::stoull(row.at("common_pairs"));
    EXPECT_EQ(std::stoull(row.at("extra_pairs")), std::stoull(row.at("system_pairs")) - common);
    EXPECT_EQ(std::stoull(row.at("missed_pairs")), std::stoull(row.at("baseline_pairs")) - common);
    uint64_t extra = 0, missed = 0;
    for (const char* c : {"transitive_chaining", "group_splitting", "fast_path", "routing", "stale_content",
                          "verification_rejection"}) {
      extra += std::stoull(row.at(std::string("extra_") + c));
      missed += std::stoull(row.at(std::string("missed_") + c));
    }
    EXPECT_EQ(extra, std::stoull(row.at("extra_pairs")));
    EXPECT_EQ(missed, std::stoull(row.at("missed_pairs")));
  }
  EXPECT_THAT(Read(Path("res/causes.txt")), HasSubstr("wrong pairs at 100%, 3 shards"));
  EXPECT_THAT(r.out, HasSubstr("greedy kept set"));

  // The same records through `neardup run` and `neardup baseline` separately give the same
  // truth at every milestone, and at the first (a run from an empty store, as the separate one)
  // the same groups, hence the same REP and RER. Later milestones continue a stopped run: a
  // batch cut at the milestone may group differently from a run in one go.
  for (int shards : {2, 3}) {
    ASSERT_EQ(Neardup("partition build --input " + crawl + " --dims 3 --shards " + std::to_string(shards) +
                      " --threshold 0.9 --routing exact --out " + Path("map-" + std::to_string(shards) + ".pb") +
                      " --report " + Path("report.json")).code,
              0);
  }
  for (const auto& row : rows) {
    const std::string acc = Accuracy(crawl, std::stoul(row.at("records")), std::stoi(row.at("shards")));
    simdjson::dom::element a;
    ASSERT_EQ(parser.parse(acc).get(a), simdjson::SUCCESS) << acc;
    EXPECT_EQ(std::to_string(a["baseline_pairs"].get_uint64().value()), row.at("baseline_pairs")) << acc;
    EXPECT_EQ(std::to_string(a["true_pairs"].get_uint64().value()), row.at("true_pairs")) << acc;
    EXPECT_EQ(std::to_string(a["pages"].get_uint64().value()), row.at("pages")) << acc;
    if (row.at("milestone") == "0.5") {
      EXPECT_EQ(std::to_string(a["system_pairs"].get_uint64().value()), row.at("system_pairs")) << acc;
      char rep[32], rer[32];
      std::snprintf(rep, sizeof rep, "%.6f", a["rep"].get_double().value());
      std::snprintf(rer, sizeof rer, "%.6f", a["rer"].get_double().value());
      EXPECT_EQ(rep, row.at("rep")) << acc;
      EXPECT_EQ(rer, row.at("rer")) << acc;
    }
  }
}

TEST_F(EvalTest, InterruptedEvalWritesWhatItHas) {
  const std::string crawl = Path("crawl.jsonl");
  ASSERT_EQ(Neardup("gen-crawl --pages 4000 --seed 8 --out " + crawl).code, 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int fd = ::open(Path("eval.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execl(NEARDUP_BIN, NEARDUP_BIN, "eval", "--input", crawl.c_str(), "--milestones",
            "10%,20%,30%,40%,50%,60%,70%,80%,90%,100%", "--shards", "2", "--out", Path("res").c_str(),
            static_cast<char*>(nullptr));
    _exit(127);
  }
  // Interrupt as soon as the first step's results are written.
  const auto t0 = std::chrono::steady_clock::now();
  while (!std::filesystem::exists(Path("res/eval.csv")) &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGINT);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << Read(Path("eval.log"));
  EXPECT_EQ(WEXITSTATUS(status), 130) << Read(Path("eval.log"));
  EXPECT_THAT(Read(Path("eval.log")), HasSubstr("interrupted"));
  const auto rows = Csv(Read(Path("res/eval.csv")));
  EXPECT_GE(rows.size(), 1u);
  EXPECT_LT(rows.size(), 10u);
  EXPECT_THAT(Read(Path("res/eval.json")), HasSubstr("\"complete\":false"));
  EXPECT_EQ(Lines(Read(Path("res/table.txt"))).size(), rows.size() + 1);
}

TEST_F(EvalTest, BadMilestonesAreRefused) {
  Write("c.jsonl", R"({"url":"http://a.example/","text":"x"})" "\n");
  const Outcome r = Neardup("eval --input " + Path("c.jsonl") + " --milestones 50%,20% --out " + Path("res"));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("bad item 2"));
}

}  // namespace
}  // namespace neardup
