// End-to-end tests of `neardup run`, the embedded two-tier pipeline: real processes, real files.
//   - its groups against the exact baseline (REP/RER) over several crawls, thresholds, batch sizes
//     and shard counts;
//   - crash and resume: SIGKILL at random moments, the store's invariants after every kill, every
//     acknowledged page durable, and the resumed result equal to an uninterrupted run's;
//   - bad usage, and the README's main job.
// Built with NEARDUP_SLOW (sanitizer builds) the crawls are smaller and the time budgets longer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <simdjson.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "tests/binary_test.h"
#include "tests/groups_file.h"

namespace neardup {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

#ifdef NEARDUP_SLOW
constexpr bool kSlow = true;
#else
constexpr bool kSlow = false;
#endif

double Seconds(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }


class RunTest : public BinaryTest {
 protected:
  struct Accuracy {
    int64_t pages = -1, only_system = -1, only_baseline = -1, system_pairs = -1, baseline_pairs = -1, common_pairs = -1;
    double rep = 1, rer = 1;
    std::string line;
  };
  Accuracy CompareGroups(const std::string& system, const std::string& baseline) const {
    const Outcome r = Neardup("accuracy --groups " + system + " --baseline " + baseline);
    Accuracy a;
    EXPECT_EQ(r.code, 0) << r.err;
    if (r.code != 0) return a;
    a.line = r.out.substr(0, r.out.find('\n'));
    simdjson::dom::parser parser;
    simdjson::dom::element e;
    if (parser.parse(a.line).get(e) != simdjson::SUCCESS) {
      ADD_FAILURE() << "accuracy printed no JSON: " << r.out;
      return a;
    }
    a.pages = int64_t(e["pages"]);
    a.only_system = int64_t(e["only_system"]);
    a.only_baseline = int64_t(e["only_baseline"]);
    a.system_pairs = int64_t(e["system_pairs"]);
    a.baseline_pairs = int64_t(e["baseline_pairs"]);
    a.common_pairs = int64_t(e["common_pairs"]);
    a.rep = double(e["rep"]);
    a.rer = double(e["rer"]);
    return a;
  }
  // neardup check --store: exit 0 and "0 violations".
  void ExpectStoreChecks(const std::string& store, const std::string& context) const {
    const Outcome c = Neardup("check --store " + store);
    EXPECT_EQ(c.code, 0) << context << "\n" << c.out << c.err;
    EXPECT_THAT(c.out, HasSubstr("\n0 violations")) << context << "\n" << c.out;
    EXPECT_THAT(c.out, ::testing::Not(HasSubstr("violation:"))) << context;
  }
};

// ---------------------------------------------------------------------------------------------
// 1. The pipeline's groups against the exact baseline.

TEST_F(RunTest, RunMatchesBaseline) {
  struct Crawl { int pages, seed; };
  const std::vector<Crawl> crawls = kSlow ? std::vector<Crawl>{{3000, 31}, {5000, 32}}
                                          : std::vector<Crawl>{{3000, 31}, {5000, 32}, {4000, 33}};
  const auto t_all = Clock::now();
  double worst_rep = 0, worst_rer = 0;
  int runs = 0;
  for (const Crawl& c : crawls) {
    const std::string crawl = Path("crawl-" + std::to_string(c.seed) + ".jsonl");
    ASSERT_EQ(Neardup("gen-crawl --pages " + std::to_string(c.pages) + " --seed " + std::to_string(c.seed) +
                      " --out " + crawl).code, 0);
    for (const double t : {0.9, 0.8}) {
      const std::string ts = t == 0.9 ? "0.9" : "0.8";
      const std::string base = Path("baseline.jsonl");
      const Outcome b = Neardup("--log-level warn baseline --input " + crawl + " --threshold " + ts + " --groups " + base);
      ASSERT_EQ(b.code, 0) << b.err;
      const auto base_groups = Groups(base);
      ASSERT_GT(base_groups.size(), static_cast<size_t>(c.pages) / 2);
      for (const int batch : {1000, 97}) {
        for (const int shards : {1, 4}) {
          const std::string what = "crawl " + std::to_string(c.pages) + " seed " + std::to_string(c.seed) +
                                   ", threshold " + ts + ", batch " + std::to_string(batch) + ", shards " +
                                   std::to_string(shards);
          SCOPED_TRACE(what);
          const std::string store = Path("store"), out = Path("groups.jsonl");
          fs::remove_all(store);
          const auto t0 = Clock::now();
          const Outcome r = Neardup("--log-level warn run --input " + crawl + " --store " + store + " --out " + out +
                                    " --threshold " + ts + " --batch " + std::to_string(batch) + " --shards " +
                                    std::to_string(shards) + " --routing exact");
          const double secs = Seconds(t0);
          ASSERT_EQ(r.code, 0) << r.err;
          ++runs;
          const Accuracy a = CompareGroups(out, base);
          std::printf("[ run      ] %s: %.2f s, %s\n", what.c_str(), secs, a.line.c_str());
          EXPECT_LE(a.rep, 0.005) << a.line;
          EXPECT_LE(a.rer, 0.005) << a.line;
          EXPECT_EQ(a.only_baseline, 0) << a.line;
          EXPECT_GT(a.baseline_pairs, 100) << "the crawl should hold near-duplicates";
          worst_rep = std::max(worst_rep, a.rep);
          worst_rer = std::max(worst_rer, a.rer);
          // Every crawled URL of the baseline is a crawled page of the run.
          const auto run_groups = Groups(out);
          size_t missing = 0;
          for (const auto& [url, p] : base_groups) {
            const auto it = run_groups.find(url);
            if (it == run_groups.end() || !it->second.crawled) {
              if (++missing <= 5) ADD_FAILURE() << url << " is crawled but not in the run's groups";
            }
          }
          EXPECT_EQ(missing, 0u);
          ExpectStoreChecks(store, what);
        }
      }
    }
  }
  std::printf("[ run      ] %d runs in %.1f s; worst REP %.6f, worst RER %.6f\n", runs, Seconds(t_all), worst_rep,
              worst_rer);
}

// --shingle-k and --dims reach the store and its shards, not only the signer: a run with other
// values than the defaults matches the baseline signed the same way, and the store keeps them.
TEST_F(RunTest, ShingleAndDimsFlagsReachTheShards) {
  const std::string crawl = Path("crawl.jsonl"), base = Path("baseline.jsonl"), out = Path("groups.jsonl");
  ASSERT_EQ(Neardup("gen-crawl --pages 1500 --seed 8 --out " + crawl).code, 0);
  for (const std::string flags : {"--dims 1", "--dims 2 --shingle-k 4"}) {
    SCOPED_TRACE(flags);
    const std::string store = Path("store");
    fs::remove_all(store);
    ASSERT_EQ(Neardup("--log-level warn baseline --input " + crawl + " " + flags + " --groups " + base).code, 0);
    const Outcome r = Neardup("--log-level warn run --input " + crawl + " " + flags + " --store " + store + " --out " + out +
                              " --shards 4 --routing exact");
    ASSERT_EQ(r.code, 0) << r.err;
    const Accuracy a = CompareGroups(out, base);
    EXPECT_EQ(a.only_baseline, 0) << a.line;
    EXPECT_LE(a.rep, 0.005) << a.line;
    // The store keeps its values: the same flags resume it, others are refused.
    EXPECT_EQ(Neardup("--log-level warn run --input " + crawl + " " + flags + " --store " + store).code, 0);
    const Outcome other = Neardup("--log-level warn run --input " + crawl + " --dims 3 --shingle-k 5 --store " + store);
    EXPECT_NE(other.code, 0);
    EXPECT_THAT(other.err, HasSubstr("was built with")) << other.err;
    ExpectStoreChecks(store, flags);
  }
}

// Crawls where some recrawls find their page gone (gen-crawl --gone-share): the run against the
// exact baseline over the pages that are not gone. Neither lists a gone URL as crawled; pages that
// redirect to one stay together in both.
TEST_F(RunTest, RunWithGoneRecordsMatchesBaseline) {
  const int pages = kSlow ? 3000 : 5000;
  const std::string crawl = Path("crawl-gone.jsonl");
  const Outcome g = Neardup("gen-crawl --pages " + std::to_string(pages) + " --seed 36 --gone-share 0.5 --out " + crawl);
  ASSERT_EQ(g.code, 0) << g.err;
  // The URLs whose last record is gone.
  std::set<std::string> gone;
  {
    simdjson::dom::parser parser;
    std::ifstream in(crawl);
    for (std::string line; std::getline(in, line);) {
      simdjson::dom::element e;
      ASSERT_EQ(parser.parse(line).get(e), simdjson::SUCCESS);
      const std::string url{std::string_view(e["url"])};
      bool is_gone = false;
      if (e["gone"].get_bool().get(is_gone) == simdjson::SUCCESS && is_gone) gone.insert(url);
      else gone.erase(url);
    }
  }
  ASSERT_GT(gone.size(), static_cast<size_t>(pages) / 50) << "the crawl should have gone pages";
  for (const double t : {0.9, 0.8}) {
    const std::string ts = t == 0.9 ? "0.9" : "0.8";
    const std::string base = Path("baseline-gone.jsonl");
    const Outcome b = Neardup("--log-level warn baseline --input " + crawl + " --threshold " + ts + " --groups " + base);
    ASSERT_EQ(b.code, 0) << b.err;
    const auto base_groups = Groups(base);
    for (const std::string& url : gone) EXPECT_EQ(base_groups.count(url), 0u) << url << " is gone, yet in the baseline";
    for (const int batch : {1000, 97}) {
      for (const int shards : {1, 4}) {
        const std::string what = "threshold " + ts + ", batch " + std::to_string(batch) + ", shards " + std::to_string(shards);
        SCOPED_TRACE(what);
        const std::string store = Path("store-gone"), out = Path("groups-gone.jsonl");
        fs::remove_all(store);
        const Outcome r = Neardup("--log-level warn run --input " + crawl + " --store " + store + " --out " + out +
                                  " --threshold " + ts + " --batch " + std::to_string(batch) + " --shards " +
                                  std::to_string(shards) + " --routing exact");
        ASSERT_EQ(r.code, 0) << r.err;
        EXPECT_THAT(r.out, HasSubstr("gone               "));
        EXPECT_THAT(r.out, ::testing::Not(HasSubstr("gone               0 pages removed"))) << r.out;
        const Accuracy a = CompareGroups(out, base);
        std::printf("[ run      ] gone pages, %s: %s\n", what.c_str(), a.line.c_str());
        EXPECT_LE(a.rep, 0.005) << a.line;
        EXPECT_LE(a.rer, 0.005) << a.line;
        EXPECT_EQ(a.only_baseline, 0) << a.line;
        EXPECT_EQ(a.only_system, 0) << a.line << ": the run lists pages as crawled that the baseline does not";
        const auto run_groups = Groups(out);
        size_t listed = 0;
        for (const std::string& url : gone) {
          const auto it = run_groups.find(url);
          if (it != run_groups.end() && it->second.crawled && ++listed <= 5) {
            ADD_FAILURE() << url << " is gone but listed as crawled";
          }
        }
        EXPECT_EQ(listed, 0u);
        ExpectStoreChecks(store, what);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// 2. Crash and resume.

// Starts the binary with args (stdout and stderr to files); returns its pid.
pid_t Spawn(const std::vector<std::string>& args, const std::string& out, const std::string& err) {
  std::vector<char*> argv;
  std::string bin = NEARDUP_BIN;
  argv.push_back(bin.data());
  std::vector<std::string> copy = args;
  for (std::string& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0) ::_exit(126);
    ::dup2(o, 1);
    ::dup2(e, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

// Waits up to `ms` for pid to end by itself; returns its wait status if it did.
std::optional<int> WaitFor(pid_t pid, int ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    int st = 0;
    const pid_t r = ::waitpid(pid, &st, WNOHANG);
    if (r == pid) return st;
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// The complete status lines ("...}\n") of a status file; a torn last line (no newline) is ignored.
// Lines that do not parse (a torn tail a later run appended to) are counted.
struct StatusLines {
  std::set<std::string> urls;
  std::map<std::pair<std::string, int64_t>, int> times;  // (url, input line) -> status lines
  int64_t max_line = 0;                                  // the last input line acknowledged
  size_t unparsable = 0;
};
StatusLines ReadStatusLines(const std::string& content) {
  StatusLines s;
  simdjson::dom::parser parser;
  size_t start = 0;
  for (size_t nl; (nl = content.find('\n', start)) != std::string::npos; start = nl + 1) {
    const std::string line = content.substr(start, nl - start);
    simdjson::dom::element e;
    std::string_view url;
    int64_t number = 0;
    if (parser.parse(line).get(e) != simdjson::SUCCESS || e["url"].get_string().get(url) != simdjson::SUCCESS ||
        e["line"].get_int64().get(number) != simdjson::SUCCESS) {
      ++s.unparsable;
      continue;
    }
    s.urls.emplace(url);
    ++s.times[{std::string(url), number}];
    s.max_line = std::max(s.max_line, number);
  }
  return s;
}

TEST_F(RunTest, CrashAndResume) {
  const int pages = kSlow ? 12000 : 20000;
  const int batch = 200;
  const int rounds = 12;
  const double budget_seconds = kSlow ? 200 : 60;
  const std::string crawl = Path("crawl.jsonl");
  ASSERT_EQ(Neardup("gen-crawl --pages " + std::to_string(pages) + " --seed 77 --out " + crawl).code, 0);
  const std::vector<std::string> common = {"--log-level", "warn", "run", "--input", crawl, "--batch",
                                           std::to_string(batch), "--threshold", "0.9"};
  auto run_to_end = [&](std::vector<std::string> args, const std::string& name) {
    const pid_t pid = Spawn(args, Path(name + ".out"), Path(name + ".err"));
    ASSERT_GT(pid, 0);
    int st = 0;
    ASSERT_EQ(::waitpid(pid, &st, 0), pid);
    ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << name << ": " << Read(Path(name + ".err"));
  };

  // The reference: one uninterrupted run into store A.
  auto t0 = Clock::now();
  {
    std::vector<std::string> args = common;
    for (const std::string& a : {std::string("--store"), Path("A"), std::string("--out"), Path("A-groups.jsonl"),
                                 std::string("--status-out"), Path("A-status.jsonl")}) {
      args.push_back(a);
    }
    ASSERT_NO_FATAL_FAILURE(run_to_end(args, "A"));
  }
  const double reference_seconds = Seconds(t0);
  // Kills spread over the first part of each run (every resumed run starts again from its store).
  const int max_delay_ms = std::clamp(static_cast<int>(reference_seconds * 1000 / 3), 300, kSlow ? 4000 : 1500);
  std::printf("[ crash    ] reference run of %d records: %.2f s; kills after 20..%d ms\n", pages, reference_seconds,
              max_delay_ms);
  ExpectStoreChecks(Path("A"), "store A");

  // Store B: killed at random moments, resumed each time.
  const std::string store = Path("B"), status = Path("B-status.jsonl");
  // NEARDUP_CRASH_SEED picks other kill moments (to hunt a failure with many runs).
  const char* seed_env = std::getenv("NEARDUP_CRASH_SEED");
  std::mt19937 rng(seed_env != nullptr ? static_cast<unsigned>(std::strtoul(seed_env, nullptr, 10)) : 20240611u);
  std::uniform_int_distribution<int> delay(20, max_delay_ms);
  int kills = 0, finished_early = 0, torn_tails = 0, durability_checks = 0;
  std::set<std::string> acknowledged;
  t0 = Clock::now();
  for (int round = 0; round < rounds && Seconds(t0) < budget_seconds; ++round) {
    std::vector<std::string> args = common;
    for (const std::string& a : {std::string("--store"), store, std::string("--status-out"), status}) args.push_back(a);
    const int ms = delay(rng);
    const pid_t pid = Spawn(args, Path("B.out"), Path("B.err"));
    ASSERT_GT(pid, 0);
    const std::optional<int> ended = WaitFor(pid, ms);
    if (ended) {
      // It finished before the kill: the store is complete.
      ASSERT_TRUE(WIFEXITED(*ended) && WEXITSTATUS(*ended) == 0) << "round " << round << ": " << Read(Path("B.err"));
      ++finished_early;
      std::printf("[ crash    ] round %d: finished before the kill at %d ms\n", round, ms);
      break;
    }
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    int st = 0;
    ASSERT_EQ(::waitpid(pid, &st, 0), pid);
    if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) {
      ++kills;
    } else {
      // It ended between the last poll and the kill.
      ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "round " << round << ": " << Read(Path("B.err"));
      ++finished_early;
      break;
    }
    const std::string content = Read(status);
    const bool torn = !content.empty() && content.back() != '\n';
    torn_tails += torn;
    const StatusLines acked = ReadStatusLines(content);
    std::printf("[ crash    ] round %d: killed after %d ms; %zu URLs acknowledged so far, up to input line %lld%s\n",
                round, ms, acked.urls.size(), static_cast<long long>(acked.max_line), torn ? " (torn last line)" : "");
    acknowledged.insert(acked.urls.begin(), acked.urls.end());
    if (!fs::exists(store + "/tier1")) continue;  // killed before the group store existed
    ExpectStoreChecks(store, "after the kill of round " + std::to_string(round));
    if (acked.urls.empty() || (round % 3 != 0 && round != rounds - 1)) continue;

    // Every acknowledged page is in the store right after the crash. A copy of the store is run
    // with --max-records at the end of the last acknowledged batch (or a batch later, when the
    // kill also fell after a later batch's commit): such a run processes no new record, redoes
    // the shard writes of its last batch if the kill interrupted them, and lists every page.
    const std::string copy = Path("B-copy");
    bool listed = false;
    int attempts = 0;
    std::string why;
    const int64_t acked_records = (acked.max_line + batch - 1) / batch * batch;
    for (int extra = 0; extra < 4 && !listed; ++extra) {
      fs::remove_all(copy);
      fs::copy(store, copy, fs::copy_options::recursive);
      std::vector<std::string> list = common;
      for (const std::string& a : {std::string("--store"), copy, std::string("--out"), Path("copy-groups.jsonl"),
                                   std::string("--max-records"), std::to_string(acked_records + extra * batch)}) {
        list.push_back(a);
      }
      const pid_t lp = Spawn(list, Path("copy.out"), Path("copy.err"));
      ASSERT_GT(lp, 0);
      int ls = 0;
      ASSERT_EQ(::waitpid(lp, &ls, 0), lp);
      listed = WIFEXITED(ls) && WEXITSTATUS(ls) == 0;
      why += Read(Path("copy.err"));
      ++attempts;
    }
    ASSERT_TRUE(listed) << "round " << round << ": the copy of the store could not be listed:\n" << why;
    // Nothing new was processed: whatever was acknowledged had been committed.
    EXPECT_THAT(Read(Path("copy.out")), HasSubstr("records            0 in")) << "round " << round;
    const auto in_store = Groups(Path("copy-groups.jsonl"));
    size_t lost = 0;
    for (const std::string& url : acked.urls) {
      const auto it = in_store.find(url);
      if (it == in_store.end() || !it->second.crawled) {
        if (++lost <= 5) ADD_FAILURE() << "round " << round << ": " << url << " was acknowledged but is not in the store";
      }
    }
    EXPECT_EQ(lost, 0u) << "round " << round;
    ++durability_checks;
    std::printf("[ crash    ] round %d: %zu acknowledged URLs all in the store (listed with --max-records, %d attempt%s)\n",
                round, acked.urls.size(), attempts, attempts == 1 ? "" : "s");
    fs::remove_all(copy);
  }
  const double crash_seconds = Seconds(t0);

  // To completion, then the same groups as the uninterrupted run.
  {
    std::vector<std::string> args = common;
    for (const std::string& a : {std::string("--store"), store, std::string("--status-out"), status,
                                 std::string("--out"), Path("B-groups.jsonl")}) {
      args.push_back(a);
    }
    ASSERT_NO_FATAL_FAILURE(run_to_end(args, "B"));
  }
  std::printf("[ crash    ] %d kills landed mid-run, %d runs finished before their kill, %d durability checks, "
              "%d torn status tails; %.1f s of crash rounds\n",
              kills, finished_early, durability_checks, torn_tails, crash_seconds);
  std::printf("[ crash    ] final resume:\n%s", Read(Path("B.out")).c_str());
  ExpectStoreChecks(store, "store B at the end");
  EXPECT_GT(kills, 0) << "no kill landed mid-run: the crawl is too small for the delays";

  const Accuracy a = CompareGroups(Path("B-groups.jsonl"), Path("A-groups.jsonl"));
  std::printf("[ crash    ] resumed vs uninterrupted: %s\n", a.line.c_str());
  EXPECT_EQ(a.rep, 0) << a.line;
  EXPECT_EQ(a.rer, 0) << a.line;
  EXPECT_EQ(a.only_system, 0) << a.line;
  EXPECT_EQ(a.only_baseline, 0) << a.line;

  const auto groups_a = Groups(Path("A-groups.jsonl"));
  const auto groups_b = Groups(Path("B-groups.jsonl"));
  EXPECT_EQ(groups_a.size(), groups_b.size());
  EXPECT_TRUE(Partition(groups_a) == Partition(groups_b)) << "the resumed run grouped the pages differently";
  // The same winners and statuses too: the resumed run cut the same batches.
  size_t other_winner = 0;
  for (const auto& [url, pa] : groups_a) {
    const auto it = groups_b.find(url);
    if (it == groups_b.end()) continue;
    if (it->second.winner != pa.winner || it->second.status != pa.status) {
      if (++other_winner <= 5) {
        ADD_FAILURE() << url << ": uninterrupted winner " << pa.winner << " (" << pa.status << "), resumed winner "
                      << it->second.winner << " (" << it->second.status << ")";
      }
    }
  }
  EXPECT_EQ(other_winner, 0u);

  // Every acknowledged URL is in the final groups, and no record was acknowledged twice (a
  // resumed run redoing an acknowledged batch would mean its commit had been lost).
  const std::string final_status = Read(status);
  const StatusLines acked = ReadStatusLines(final_status);
  acknowledged.insert(acked.urls.begin(), acked.urls.end());
  EXPECT_GT(acknowledged.size(), 0u);
  size_t lost = 0, twice = 0;
  for (const std::string& url : acknowledged) {
    const auto it = groups_b.find(url);
    if (it == groups_b.end() || !it->second.crawled) {
      if (++lost <= 5) ADD_FAILURE() << url << " was acknowledged but is not in the final groups";
    }
  }
  EXPECT_EQ(lost, 0u);
  for (const auto& [key, n] : acked.times) {
    if (n > 1 && ++twice <= 5) ADD_FAILURE() << key.first << " (input line " << key.second << ") acknowledged " << n << " times";
  }
  EXPECT_EQ(twice, 0u);
  // Every record the uninterrupted run acknowledged is acknowledged once in the resumed runs'
  // status file too: a kill between a batch's commit and its status lines loses nothing, since
  // the restart writes that batch's lines again.
  const StatusLines reference = ReadStatusLines(Read(Path("A-status.jsonl")));
  size_t missing = 0;
  for (const auto& [key, n] : reference.times) {
    if (acked.times.count(key) == 0 && ++missing <= 5) {
      ADD_FAILURE() << key.first << " (input line " << key.second << ") was committed but never acknowledged";
    }
  }
  EXPECT_EQ(missing, 0u);
  EXPECT_EQ(acked.times.size(), reference.times.size());
  std::printf("[ crash    ] status file: %zu records acknowledged (uninterrupted run: %zu), %zu unparsable lines\n",
              acked.times.size(), reference.times.size(), acked.unparsable);
  // A torn tail of a killed run may be glued to the next run's first line; nothing else is damaged.
  EXPECT_LE(acked.unparsable, static_cast<size_t>(torn_tails));
  EXPECT_TRUE(final_status.empty() || final_status.back() == '\n');
}

// ---------------------------------------------------------------------------------------------
// 3. Bad usage.

TEST_F(RunTest, BadUsageIsRefused) {
  ASSERT_EQ(Neardup("gen-crawl --pages 300 --seed 5 --out " + Path("one.jsonl")).code, 0);
  ASSERT_EQ(Neardup("gen-crawl --pages 300 --seed 6 --out " + Path("two.jsonl")).code, 0);

  Outcome r = Neardup("run --out " + Path("g.jsonl"));
  EXPECT_EQ(r.code, 2) << "missing --input";
  EXPECT_THAT(r.err, HasSubstr("--input"));

  // Another input while the store stopped in the middle of one: refused, naming both.
  r = Neardup("--log-level warn run --input " + Path("one.jsonl") + " --store " + Path("store") +
              " --batch 100 --max-records 200");
  ASSERT_EQ(r.code, 0) << r.err;
  r = Neardup("run --input " + Path("two.jsonl") + " --store " + Path("store"));
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr(Path("one.jsonl")));
  EXPECT_THAT(r.err, HasSubstr(Path("two.jsonl")));
  EXPECT_THAT(r.err, HasSubstr("--abandon-interrupted"));
  // The store is left as it was, and it resumes from its own input, recognised by content.
  ExpectStoreChecks(Path("store"), "after the refusal");
  fs::copy_file(Path("one.jsonl"), Path("one-moved.jsonl"));
  r = Neardup("run --input " + Path("one-moved.jsonl") + " --store " + Path("store") + " --batch 100");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("200 skipped"));
  EXPECT_THAT(r.out, HasSubstr("recorded as consumed"));

  // A threshold the shards cannot answer (tier2.min_threshold is 0.8 by default). Refused after
  // the run made its temporary store, which goes with it all the same.
  fs::create_directories(Path("tmp"));
  r = Neardup("run --input " + Path("one.jsonl") + " --threshold 0.7", "TMPDIR=" + Path("tmp"));
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("threshold 0.7"));
  EXPECT_THAT(r.err, HasSubstr("min_threshold"));
  EXPECT_TRUE(fs::is_empty(Path("tmp"))) << "a refused run left its temporary store";
  r = Neardup("run --input " + Path("one.jsonl") + " --threshold 0.79 --store " + Path("low"));
  EXPECT_NE(r.code, 0);
  EXPECT_THAT(r.err, HasSubstr("min_threshold 0.8"));

  r = Neardup("run --input " + Path("one.jsonl") + " --shards 0");
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--shards"));
  r = Neardup("run --input " + Path("one.jsonl") + " --routing nearest");
  EXPECT_EQ(r.code, 2);
  r = Neardup("run --input " + Path("one.jsonl") + " --batch 0");
  EXPECT_EQ(r.code, 2);
  r = Neardup("run --input " + Path("missing.jsonl"));
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("missing.jsonl"));

  r = Neardup("check --store " + Path("nothing-here"));
  EXPECT_EQ(r.code, 2);
}

// ---------------------------------------------------------------------------------------------
// 4. The README's main job.

// The working set Tier 1 keeps in memory is a cache: its size must not change any answer. (It
// did: a query that overflowed it also ran the pending group repairs in the middle of a batch.)
TEST_F(RunTest, ResultsDoNotDependOnTheTier1CacheSize) {
  const int pages = kSlow ? 8000 : 20000;
  const std::string crawl = Path("crawl.jsonl");
  ASSERT_EQ(Neardup("gen-crawl --pages " + std::to_string(pages) + " --seed 35 --out " + crawl).code, 0);
  // The default; 16 decoded records; 16 decoded records with the rest packed (1 MiB: some are
  // dropped from it too).
  const std::string configs[3] = {"", "tier1 { cache_records: 16 }\n",
                                  "tier1 { cache_records: 16 packed_cache_mib: 1 }\n"};
  std::string out[3], status[3], summary[3], lookups[3];
  for (int k = 0; k < 3; ++k) {
    const std::string store = Path("store" + std::to_string(k));
    const std::string config = Path("cache" + std::to_string(k) + ".textproto");
    std::ofstream(config) << configs[k];
    out[k] = Path("groups" + std::to_string(k) + ".jsonl");
    status[k] = Path("status" + std::to_string(k) + ".jsonl");
    const Outcome r = Neardup("--log-level warn run --input " + crawl + " --store " + store + " --out " + out[k] +
                              " --status-out " + status[k] + " --threshold 0.8 --config " + config);
    ASSERT_EQ(r.code, 0) << r.err;
    const size_t v = r.out.find("verification");
    ASSERT_NE(v, std::string::npos) << r.out;
    summary[k] = r.out.substr(v, r.out.find('\n', v) - v);
    const size_t l = r.out.find("tier 1 lookups");
    ASSERT_NE(l, std::string::npos) << r.out;
    lookups[k] = r.out.substr(l, r.out.find('\n', l) - l);
    std::printf("[ run      ] %s%s\n[ run      ] %s\n", configs[k].empty() ? "default\n" : configs[k].c_str(),
                summary[k].c_str(), lookups[k].c_str());
  }
  EXPECT_THAT(summary[0], ::testing::Not(HasSubstr(" 0 repairs"))) << "the crawl should need repairs";
  // The packed tier was used: some lookups were answered from packed records.
  EXPECT_THAT(lookups[2], ::testing::Not(HasSubstr("(0 packed)"))) << lookups[2];
  for (int k = 1; k < 3; ++k) {
    EXPECT_EQ(summary[0], summary[k]) << configs[k];
    EXPECT_TRUE(Read(out[0]) == Read(out[k])) << "the groups differ: " << configs[k];
    EXPECT_TRUE(Read(status[0]) == Read(status[k])) << "the status lines differ: " << configs[k];
  }
}

TEST_F(RunTest, ReadmeMainJob) {
  // scripts/run-sample.sh: the real crawl of the libstdc++ 11 and 12 manuals, as the README shows it.
  const std::string src = NEARDUP_SOURCE_DIR;
  const std::string warc = src + "/data/sample-docs.warc.gz";
  const Outcome r = Neardup("run --input " + warc + " --config " + src + "/configs/embedded.textproto --shards 2 --batch 100 --store " +
                            Path("store") + " --out " + Path("groups.jsonl"));
  ASSERT_EQ(r.code, 0) << r.err;
  std::printf("%s", r.out.c_str());
  EXPECT_THAT(r.out, HasSubstr("pages              195 new"));
  EXPECT_THAT(r.out, HasSubstr("tier 1 lookups     pages: "));
  const auto groups = Groups(Path("groups.jsonl"));
  // The same manual page in both versions is one group, the version 11 page its winner; the
  // README names these pages.
  const std::string site = "http://127.0.0.1:8765/";
  for (const char* page : {"api.html", "memory.html", "abi.html", "algorithms.html"}) {
    const auto a = groups.find(site + "libstdc++-11/manual/" + page);
    const auto b = groups.find(site + "libstdc++-12/manual/" + page);
    ASSERT_NE(a, groups.end()) << page;
    ASSERT_NE(b, groups.end()) << page;
    EXPECT_EQ(a->second.group, b->second.group) << page;
    EXPECT_EQ(b->second.status, "duplicate") << page;
    EXPECT_EQ(b->second.winner, a->first) << page;
  }
  EXPECT_EQ(groups.at(site + "index.html").status, "unique");
  // The sample against the exact baseline.
  const Outcome base = Neardup("baseline --input " + warc + " --config " + src + "/configs/embedded.textproto --groups " +
                               Path("baseline.jsonl"));
  ASSERT_EQ(base.code, 0) << base.err;
  const Accuracy acc = CompareGroups(Path("groups.jsonl"), Path("baseline.jsonl"));
  std::printf("sample vs baseline: %s\n", acc.line.c_str());
  EXPECT_EQ(acc.only_baseline, 0) << acc.line;
  EXPECT_EQ(acc.rep, 0) << acc.line;
  EXPECT_EQ(acc.rer, 0) << acc.line;
}

}  // namespace
}  // namespace neardup

namespace neardup {
namespace {

// neardup status: the crawler's question against a stopped run's store, with and without content.
TEST_F(RunTest, StatusCommandAnswersFromTheStore) {
  const std::string src = NEARDUP_SOURCE_DIR;
  const std::string store = Path("store");
  const Outcome r = Neardup("run --input " + src + "/data/sample-crawl.jsonl --store " + store + " --out " +
                            Path("groups.jsonl") + " --log-level warn");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto groups = Groups(Path("groups.jsonl"));
  std::string loser, winner;
  for (const auto& [url, g] : groups) {
    if (g.status == "duplicate" && g.winner != url && groups.count(g.winner) > 0) {
      loser = url;
      winner = g.winner;
      break;
    }
  }
  ASSERT_FALSE(loser.empty()) << "the sample has no verified duplicate";

  // URLs carry '&' and '?': quoted for the shell.
  Outcome s = Neardup("status --store " + store + " --url '" + loser + "' --url http://never.example/ --log-level warn");
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_THAT(s.out, HasSubstr("\"url\":\"" + loser + "\",\"status\":\"duplicate\""));
  EXPECT_THAT(s.out, HasSubstr("\"winner\":\"" + winner + "\""));
  EXPECT_THAT(s.out, HasSubstr("\"url\":\"http://never.example/\",\"status\":\"unknown\""));

  // Current content that no longer resembles the winner is verified as given: unique for now.
  std::string text;
  for (int i = 0; i < 300; ++i) text += "zqx" + std::to_string(i * 7919 % 1000) + " ";
  Write("ask.jsonl", "{\"url\":\"" + loser + "\",\"text\":\"" + text + "\"}\n");
  s = Neardup("status --store " + store + " --input " + Path("ask.jsonl") + " --log-level warn");
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_THAT(s.out, HasSubstr("\"status\":\"unique\""));
  EXPECT_THAT(s.out, HasSubstr("\"verified\":true"));
  EXPECT_THAT(s.out, HasSubstr("\"content\":\"given\""));

  EXPECT_EQ(Neardup("status --store " + store).code, 2);                       // nothing asked
  EXPECT_EQ(Neardup("status --store " + Path("nostore") + " --url x").code, 2);  // no store there
}

}  // namespace
}  // namespace neardup
