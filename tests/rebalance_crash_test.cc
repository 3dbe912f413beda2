// neardup rebalance --store killed (SIGKILL) at random steps of its move, then run again: each
// store ends with the same shard contents as an uninterrupted rebalance, neardup check is clean,
// and the rest of the crawl then gives the same groups (nothing acknowledged was lost).
#include <simdjson.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>

#include "common/config.h"
#include "pipeline/placement.h"
#include "pipeline/shard_set.h"
#include "pipeline/store.h"
#include "tests/binary_test.h"

namespace neardup {
namespace {

namespace fs = std::filesystem;

// Every shard's resident URLs: Tier 1's pages, looked up on every shard.
std::map<uint32_t, std::set<std::string>> ShardContents(const std::string& dir) {
  pipeline::StoreLayout layout{dir};
  pb::NeardupConfig config = DefaultConfig();
  double threshold = 0.9;
  SignerOptions signer;
  auto opened = pipeline::OpenStoreReadOnly(layout, {}, &config, &threshold, &signer);
  EXPECT_TRUE(opened.ok()) << opened.status().ToString();
  if (!opened.ok()) return {};
  std::vector<std::string> urls;
  EXPECT_TRUE(opened->groups->rows()
                  .ScanFamily(opened->groups->page_family(),
                              [&](std::string_view url, std::string_view, std::string_view) {
                                urls.emplace_back(url);
                                return true;
                              })
                  .ok());
  pipeline::ShardSetOptions so;
  so.layout = layout;
  so.config = config;
  so.shards = opened->placement->served().shards();
  so.read_only = true;
  auto shards = pipeline::OpenLocalShardSet(so);
  EXPECT_TRUE(shards.ok()) << shards.status().ToString();
  std::map<uint32_t, std::set<std::string>> out;
  for (uint32_t m = 0; m < so.shards && shards.ok(); ++m) {
    for (const std::string& u : urls) {
      if ((*shards)->Get(m, u).ok()) out[m].insert(u);
    }
  }
  return out;
}

// The last line of a command's stdout, parsed: the rebalance's JSON summary.
uint64_t Field(const std::string& out, const char* key) {
  const size_t start = out.rfind('{');
  EXPECT_NE(start, std::string::npos) << out;
  simdjson::dom::parser parser;
  simdjson::dom::element e;
  if (start == std::string::npos || parser.parse(out.substr(start)).get(e) != simdjson::SUCCESS) return 0;
  uint64_t v = 0;
  if (e[key].get_uint64().get(v) != simdjson::SUCCESS) {
    bool b = false;
    if (e[key].get_bool().get(b) == simdjson::SUCCESS) return b ? 1 : 0;
  }
  return v;
}

// SIGKILL: the shell that ran the binary reports 128 + 9.
bool Killed(const Outcome& o) { return o.code == -1 || o.code == 128 + SIGKILL; }

class RebalanceCrashTest : public BinaryTest {};

TEST_F(RebalanceCrashTest, KilledAtRandomStepsThenResumedEndsAsAnUninterruptedMove) {
  const std::string first = Path("first.jsonl"), rest = Path("rest.jsonl");
  ASSERT_EQ(Neardup("gen-crawl --pages 700 --seed 11 --out " + first).code, 0);
  ASSERT_EQ(Neardup("gen-crawl --pages 150 --seed 12 --out " + rest).code, 0);
  const std::string base = Path("base");
  const std::string sync = std::string(" --config ").append(Path("nosync.textproto"));
  Write("nosync.textproto", "tier1 { sync: false } tier2 { sync: false }\n");
  ASSERT_EQ(Neardup("run --input " + first + " --store " + base + " --shards 4 --batch 350" + sync).code, 0);

  const std::string move = std::string(" --shards 5 --max-move 0.5").append(sync);
  const std::string whole = Path("whole");
  fs::copy(base, whole, fs::copy_options::recursive);
  Outcome w = Neardup("rebalance --store " + whole + move);
  ASSERT_EQ(w.code, 0) << w.err;
  const uint64_t steps = Field(w.out, "steps");
  ASSERT_GE(steps, 4u) << w.out;
  const auto expected = ShardContents(whole);
  ASSERT_EQ(expected.size(), 5u);
  ASSERT_EQ(Neardup("run --input " + rest + " --store " + whole + " --out " + Path("whole-groups.jsonl") + sync).code, 0);
  const std::string expected_groups = Read(Path("whole-groups.jsonl"));

  // The kill points' seed: printed, and settable (NEARDUP_CRASH_SEED=N) to replay a failure.
  unsigned seed = std::random_device{}();
  if (const char* given = std::getenv("NEARDUP_CRASH_SEED"); given != nullptr && *given != '\0') {
    seed = static_cast<unsigned>(std::strtoul(given, nullptr, 10));
  }
  std::printf("rebalance_crash_test: kill points from seed %u (NEARDUP_CRASH_SEED=%u replays them)\n", seed, seed);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<uint64_t> pick(1, steps);
  for (int kill = 0; kill < 5; ++kill) {
    const uint64_t at = pick(rng);
    SCOPED_TRACE(std::string("seed ").append(std::to_string(seed)).append(", killed after step ")
                     .append(std::to_string(at)).append(" of ").append(std::to_string(steps)));
    const std::string dir = Path(std::string("k").append(std::to_string(kill)));
    fs::copy(base, dir, fs::copy_options::recursive);
    ::setenv("NEARDUP_REBALANCE_KILL_AT", std::to_string(at).c_str(), 1);
    Outcome killed = Neardup("rebalance --store " + dir + move);
    ::unsetenv("NEARDUP_REBALANCE_KILL_AT");
    ASSERT_TRUE(Killed(killed)) << killed.code << " " << killed.err;
    // Finished by the next rebalance (no --shards: it finishes the move it finds).
    Outcome resumed = Neardup("rebalance --store " + dir + sync);
    ASSERT_EQ(resumed.code, 0) << resumed.err;
    EXPECT_EQ(Field(resumed.out, "resumed"), 1u) << resumed.out;
    EXPECT_EQ(Field(resumed.out, "map_version_after"), Field(w.out, "map_version_after"));
    EXPECT_EQ(ShardContents(dir), expected);
    Outcome check = Neardup("check --store " + dir);
    EXPECT_EQ(check.code, 0) << check.out;
    // The rest of the crawl on the first: the same groups as on the uninterrupted one.
    if (kill > 0) continue;
    ASSERT_EQ(Neardup("run --input " + rest + " --store " + dir + " --out " + Path("groups.jsonl") + sync).code, 0);
    EXPECT_EQ(Read(Path("groups.jsonl")), expected_groups);
  }
}

TEST_F(RebalanceCrashTest, ARunFinishesAKilledMoveBetweenItsBatches) {
  const std::string first = Path("first.jsonl"), rest = Path("rest.jsonl");
  ASSERT_EQ(Neardup("gen-crawl --pages 800 --seed 21 --out " + first).code, 0);
  ASSERT_EQ(Neardup("gen-crawl --pages 200 --seed 22 --out " + rest).code, 0);
  const std::string dir = Path("store");
  ASSERT_EQ(Neardup("run --input " + first + " --store " + dir + " --shards 3").code, 0);
  ::setenv("NEARDUP_REBALANCE_KILL_AT", "2", 1);
  Outcome killed = Neardup("rebalance --store " + dir + " --shards 4 --max-move 0.5");
  ::unsetenv("NEARDUP_REBALANCE_KILL_AT");
  ASSERT_TRUE(Killed(killed)) << killed.code << " " << killed.err;
  Outcome run = Neardup("run --input " + rest + " --store " + dir + " --out " + Path("g.jsonl"));
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("(a rebalance's move ended in this run"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("over 4 shards"), std::string::npos) << run.out;
  Outcome check = Neardup("check --store " + dir);
  EXPECT_EQ(check.code, 0) << check.out;
}

}  // namespace
}  // namespace neardup
