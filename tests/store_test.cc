// End-to-end tests of a store's life across commands: its own parameters rule every later
// command, a status query changes no file, --out is the store as the run leaves it, one input after
// another adds to it as if they had been one crawl, a crash between a batch's commit and its
// status lines loses no acknowledgement, and a rebalance that adds a shard says the move budget
// it takes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/binary_test.h"
#include "tests/groups_file.h"

namespace neardup {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class StoreTest : public BinaryTest {
 protected:
  // Every file under dir, by relative path, with its bytes.
  static std::map<std::string, std::string> Files(const std::string& dir) {
    std::map<std::string, std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (e.is_regular_file()) out[fs::relative(e.path(), dir).string()] = Read(e.path().string());
    }
    return out;
  }
  // The first `n` lines of `from` into `to`, the rest into `rest`.
  void Split(const std::string& from, size_t n, const std::string& to, const std::string& rest) const {
    std::ifstream in(Path(from));
    std::ofstream a(Path(to)), b(Path(rest));
    std::string line;
    for (size_t i = 0; std::getline(in, line); ++i) (i < n ? a : b) << line << '\n';
  }
  // status line "url" -> its "status", "group", "winner" as one string.
  static std::map<std::string, std::string> Answers(const std::string& jsonl) {
    std::map<std::string, std::string> out;
    simdjson::dom::parser parser;
    std::istringstream in(jsonl);
    std::string line;
    while (std::getline(in, line)) {
      simdjson::dom::element e;
      if (parser.parse(line).get(e) != simdjson::SUCCESS) {
        ADD_FAILURE() << "not JSON: " << line;
        continue;
      }
      out[std::string(std::string_view(e["url"]))] = std::string(std::string_view(e["status"])) + " " +
                                                     simdjson::minify(e["group"]) + " " +
                                                     std::string(std::string_view(e["winner"]));
    }
    return out;
  }
  // A 600-page generated crawl (seed `seed`, in crawl.jsonl) run into the store `store` in batches
  // of 100, its groups in groups.jsonl; `options` adds run options.
  Outcome RunGeneratedCrawl(int seed, const std::string& options = "") const {
    EXPECT_EQ(Neardup("gen-crawl --pages 600 --seed " + std::to_string(seed) + " --out " + Path("crawl.jsonl")).code, 0);
    return Neardup("--log-level warn run --input " + Path("crawl.jsonl") + " --store " + Path("store") + options +
                   " --batch 100 --out " + Path("groups.jsonl"));
  }
};

// A store built at threshold 0.8 answers every later command at 0.8: `status` gives each page the
// status, group and winner the run's --out gave it, without changing one byte of the store; a
// threshold, a configuration file or a map that disagree are refused, naming the parameter.
TEST_F(StoreTest, TheStoresParametersRuleAndStatusChangesNoFile) {
  const std::string store = Path("store");
  Outcome r = RunGeneratedCrawl(41, " --threshold 0.8");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto groups = Groups(Path("groups.jsonl"));
  ASSERT_GT(groups.size(), 500u);
  size_t duplicates = 0;
  std::string urls;
  std::map<std::string, std::string> expected;
  for (const auto& [url, g] : groups) {
    urls += " --url '" + url + "'";
    expected[url] = g.status + " " + g.group + " " + g.winner;
    duplicates += g.status == "duplicate";
  }
  ASSERT_GT(duplicates, 20u) << "the crawl should have duplicates";
  const auto before = Files(store);
  // No threshold given: the store's 0.8 rules, not the default 0.9.
  r = Neardup("--log-level warn status --store " + store + urls);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto answers = Answers(r.out);
  EXPECT_EQ(answers.size(), expected.size());
  size_t differ = 0;
  for (const auto& [url, want] : expected) {
    const auto it = answers.find(url);
    if (it == answers.end() || it->second != want) {
      if (++differ <= 5) ADD_FAILURE() << url << ": run said " << want << ", status says " << (it == answers.end() ? "nothing" : it->second);
    }
  }
  EXPECT_EQ(differ, 0u);
  EXPECT_TRUE(Files(store) == before) << "neardup status changed the store's files";
  r = Neardup("check --store " + store);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(Files(store) == before) << "neardup check changed the store's files";

  // Values given explicitly that disagree with the store are refused, naming what and where.
  r = Neardup("status --store " + store + " --threshold 0.9 --url x");
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("threshold 0.8"));
  EXPECT_THAT(r.err, HasSubstr("--threshold asks for 0.9"));
  Write("t09.textproto", "baseline { threshold: 0.9 }\n");
  r = Neardup("run --input " + Path("crawl.jsonl") + " --store " + store + " --config " + Path("t09.textproto"));
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("baseline.threshold asks for 0.9"));
  const std::string out_before = Read(Path("groups.jsonl"));
  r = Neardup("run --input " + Path("crawl.jsonl") + " --store " + store + " --shards 3 --out " + Path("groups.jsonl"));
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("shards 4"));
  EXPECT_TRUE(Read(Path("groups.jsonl")) == out_before) << "a refused run changed the earlier run's --out";
  // Defaults yield: a run without the threshold finds the input consumed, at the store's 0.8.
  r = Neardup("--log-level warn run --input " + Path("crawl.jsonl") + " --store " + store);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("consumed whole already"));

  // A map built for another threshold is refused for a new store, before it is used.
  ASSERT_EQ(Neardup("partition build --input " + Path("crawl.jsonl") + " --dims 3 --shards 4 --threshold 0.9 --out " +
                    Path("map09.pb") + " --report " + Path("report.json")).code, 0);
  r = Neardup("run --input " + Path("crawl.jsonl") + " --store " + Path("other") + " --threshold 0.8 --map " +
              Path("map09.pb"));
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("threshold 0.9"));
  // ...and a store's own map is the only one it takes.
  r = Neardup("run --input " + Path("crawl.jsonl") + " --store " + store + " --map " + Path("map09.pb"));
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("rebalance"));
}

// --out is every page of the store as the run leaves it, and writing it changes nothing: the same
// crawl run with and without --out leaves stores that give the same --out afterwards. Outputs that
// cannot be written are refused before any work; each bad input line is reported once.
TEST_F(StoreTest, OutIsTheStoreAndChangesNothing) {
  ASSERT_EQ(Neardup("gen-crawl --pages 1500 --seed 43 --out " + Path("crawl.jsonl")).code, 0);
  {
    std::ofstream(Path("crawl.jsonl"), std::ios::app) << "this line is not JSON\n";
  }
  Outcome r = Neardup("run --input " + Path("crawl.jsonl") + " --store " + Path("a") + " --batch 150 --out " +
                      Path("a.jsonl"));
  ASSERT_EQ(r.code, 0) << r.err;
  // The reader's warning names the line; the sample pass before the run does not repeat it.
  size_t reports = 0;
  for (size_t at = 0; (at = r.err.find("line 1501: not JSON", at)) != std::string::npos; ++at) ++reports;
  EXPECT_EQ(reports, 1u) << r.err;
  r = Neardup("--log-level warn run --input " + Path("crawl.jsonl") + " --store " + Path("b") + " --batch 150");
  ASSERT_EQ(r.code, 0) << r.err;
  // Asked again, each store writes its --out from what it holds (the input is consumed).
  for (const char* s : {"a", "b"}) {
    r = Neardup("--log-level warn run --input " + Path("crawl.jsonl") + " --store " + Path(s) + " --out " +
                Path(std::string(s) + "2.jsonl"));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("consumed whole already"));
  }
  EXPECT_TRUE(Read(Path("a.jsonl")) == Read(Path("a2.jsonl"))) << "--out is not the store as the run left it";
  EXPECT_TRUE(Read(Path("a2.jsonl")) == Read(Path("b2.jsonl"))) << "--out changed the store";

  const auto t0 = std::chrono::steady_clock::now();
  r = Neardup("run --input " + Path("crawl.jsonl") + " --store " + Path("c") + " --out /proc/nonexistent/o.jsonl");
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("/proc/nonexistent/o.jsonl"));
  r = Neardup("run --input " + Path("crawl.jsonl") + " --store " + Path("c") + " --status-out /proc/nonexistent/s.jsonl");
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("/proc/nonexistent/s.jsonl"));
  EXPECT_FALSE(fs::exists(Path("c"))) << "a run refused for its outputs made a store";
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
}

// A crawl split in two files, run into one store one after the other, ends with the same groups,
// winners and statuses as one run over both; running the first file again says it was consumed.
TEST_F(StoreTest, TwoInputsIntoOneStoreEqualOneRunOverBoth) {
  ASSERT_EQ(Neardup("gen-crawl --pages 3000 --seed 45 --out " + Path("crawl.jsonl")).code, 0);
  // Split at a batch boundary (batches of 200), so that both runs cut the same batches.
  Split("crawl.jsonl", 1800, "day1.jsonl", "day2.jsonl");
  Outcome r = Neardup("--log-level warn run --input " + Path("crawl.jsonl") + " --store " + Path("whole") +
                      " --batch 200 --out " + Path("whole.jsonl"));
  ASSERT_EQ(r.code, 0) << r.err;
  // The same partition map for both stores (a store's map comes from its first input's sample).
  const std::string map = Path("whole") + "/map.pb";
  r = Neardup("--log-level warn run --input " + Path("day1.jsonl") + " --store " + Path("days") + " --batch 200 --map " + map);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("recorded as consumed"));
  r = Neardup("--log-level warn run --input " + Path("day2.jsonl") + " --store " + Path("days") + " --batch 200 --out " +
              Path("days.jsonl"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("records            1200 in"));
  const auto whole = Groups(Path("whole.jsonl")), days = Groups(Path("days.jsonl"));
  ASSERT_EQ(whole.size(), days.size());
  EXPECT_TRUE(Partition(whole) == Partition(days)) << "the two inputs grouped the pages differently";
  size_t differ = 0;
  for (const auto& [url, w] : whole) {
    const PageGroup& d = days.at(url);
    if ((w.winner != d.winner || w.status != d.status) && ++differ <= 5) {
      ADD_FAILURE() << url << ": one run " << w.winner << " (" << w.status << "), two inputs " << d.winner << " ("
                    << d.status << ")";
    }
  }
  EXPECT_EQ(differ, 0u);
  // The first input again, under another name: consumed; the store is as it was.
  fs::copy_file(Path("day1.jsonl"), Path("day1-again.jsonl"));
  r = Neardup("--log-level warn run --input " + Path("day1-again.jsonl") + " --store " + Path("days") + " --out " +
              Path("again.jsonl"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("consumed whole already, as " + Path("day1.jsonl")));
  EXPECT_TRUE(Read(Path("again.jsonl")) == Read(Path("days.jsonl")));
}

// A crash after a batch's commit and before its status lines: the restart writes that batch's
// lines again, whole and once. (The lost lines are made by cutting them from the status file of a
// run stopped at a batch boundary.)
TEST_F(StoreTest, TheLastBatchsStatusLinesAreWrittenAgainAfterACrash) {
  ASSERT_EQ(Neardup("gen-crawl --pages 1000 --seed 47 --out " + Path("crawl.jsonl")).code, 0);
  const std::string common = "--log-level warn run --input " + Path("crawl.jsonl") + " --batch 100 --store ";
  Outcome r = Neardup(common + Path("whole") + " --status-out " + Path("whole.status"));
  ASSERT_EQ(r.code, 0) << r.err;
  r = Neardup(common + Path("cut") + " --status-out " + Path("cut.status") + " --max-records 400");
  ASSERT_EQ(r.code, 0) << r.err;
  // Lose most of batch 4's lines, the last one kept torn (batch 3's are whole: they were synced
  // before batch 4 committed).
  std::string status = Read(Path("cut.status"));
  const size_t batch4 = status.find("\"batch\":4,");
  ASSERT_NE(batch4, std::string::npos);
  status.resize(status.find('\n', batch4) + 20);
  Write("cut.status", status);
  r = Neardup(common + Path("cut") + " --status-out " + Path("cut.status"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("status lines written again"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr(" 0 status lines written again")));
  // Line for line as the run that never stopped (the batches and the answers are the same).
  EXPECT_TRUE(Read(Path("cut.status")) == Read(Path("whole.status"))) << "the status lines differ";
}

// A store whose move to 24 shards splits cells, killed mid-way (after its journal, or after the
// relabel's first step: some pages' records name a part of a split cell), answers status queries
// as before the move, and so does it once the next rebalance has finished the move.
TEST_F(StoreTest, StatusAnswersAsBeforeWhileASplitMoveIsUnfinished) {
  const std::string store = Path("store");
  Outcome r = RunGeneratedCrawl(43);
  ASSERT_EQ(r.code, 0) << r.err;
  std::string urls;
  for (const auto& [url, g] : Groups(Path("groups.jsonl"))) urls += " --url '" + url + "'";
  r = Neardup("--log-level warn status --store " + store + urls);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto expected = Answers(r.out);
  ASSERT_GT(expected.size(), 500u);
  for (const char* at : {"1", "2"}) {
    SCOPED_TRACE(std::string("killed after step ") + at);
    ::setenv("NEARDUP_REBALANCE_KILL_AT", at, 1);
    r = Neardup("--log-level warn rebalance --store " + store + " --shards 24 --max-move 1");
    ::unsetenv("NEARDUP_REBALANCE_KILL_AT");
    ASSERT_NE(r.code, 0) << "the move was to be killed";
    r = Neardup("--log-level warn status --store " + store + urls);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(Answers(r.out), expected);
  }
  r = Neardup("--log-level warn rebalance --store " + store);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("finished an interrupted move"));
  r = Neardup("--log-level warn status --store " + store + urls);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Answers(r.out), expected);
  r = Neardup("check --store " + store);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}

// `rebalance --store S --shards 5` with the default flags on the sample crawl's skewed 4-shard
// store (1.23): the move budget is raised to what the fifth shard needs, and said; the store ends
// within 1.15 and check is clean. At an unchanged shard count a --max-move too small for the
// target says that the target was out of reach, and why.
TEST_F(StoreTest, AddingAShardSaysItsMoveBudgetAndEndsBalanced) {
  const std::string store = Path("store");
  Outcome r = Neardup("--log-level warn run --input " + std::string(NEARDUP_SOURCE_DIR) +
                      "/data/sample-crawl.jsonl --store " + store + " --shards 4 --batch 100");
  ASSERT_EQ(r.code, 0) << r.err;
  auto report = [](const std::string& out) {
    const size_t start = out.rfind('{');
    EXPECT_NE(start, std::string::npos) << out;
    return start == std::string::npos ? std::string("{}") : out.substr(start);
  };
  r = Neardup("--log-level warn rebalance --store " + store + " --shards 5");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("above --max-move 0.10: 4 -> 5 shards needs it"));
  simdjson::dom::parser parser;
  simdjson::dom::element j;
  ASSERT_EQ(parser.parse(report(r.out)).get(j), simdjson::SUCCESS) << r.out;
  double before = 0, after = 0, budget = 0;
  bool reached = false;
  ASSERT_EQ(j["imbalance_before"].get_double().get(before), simdjson::SUCCESS);
  ASSERT_EQ(j["imbalance_after"].get_double().get(after), simdjson::SUCCESS);
  ASSERT_EQ(j["move_budget"].get_double().get(budget), simdjson::SUCCESS);
  ASSERT_EQ(j["target_reached"].get_bool().get(reached), simdjson::SUCCESS);
  EXPECT_GT(before, 1.15) << r.out;
  EXPECT_LE(after, 1.15) << r.out;
  EXPECT_GT(budget, 0.1) << r.out;
  EXPECT_TRUE(reached) << r.out;
  r = Neardup("check --store " + store);
  EXPECT_EQ(r.code, 0) << r.out << r.err;

  r = Neardup("--log-level warn rebalance --store " + store + " --max-move 0 --target-imbalance 1.0001 --dry-run");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("note: target 1.00 out of reach: moves and swaps within --max-move 0.00"));
  ASSERT_EQ(parser.parse(report(r.out)).get(j), simdjson::SUCCESS) << r.out;
  ASSERT_EQ(j["target_reached"].get_bool().get(reached), simdjson::SUCCESS);
  EXPECT_FALSE(reached);
}

}  // namespace
}  // namespace neardup
