// Tier1Service on a new store given no partition map: it takes ingest at once and builds the map
// from the first records it took (as `neardup run` samples its input), then decides them; the map
// is kept across a restart, and a restart before it was built builds it then. The shards live in
// this process; every wait is bounded.
#include "cluster/tier1_server/tier1_service.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "common/config.h"
#include "partitioner/partition_map.h"
#include "pipeline/pipeline_test_util.h"
#include "testing/temp_dir.h"

namespace neardup::cluster {
namespace {

namespace fs = std::filesystem;
using pipeline::test_util::ReadFile;
using pipeline::test_util::SampleRun;
using std::chrono::milliseconds;

constexpr uint32_t kShards = 3;

class Tier1ServiceTest : public ::testing::Test {
 protected:
  Tier1ServiceTest() {
    std::istringstream in(ReadFile(std::string(NEARDUP_SOURCE_DIR) + "/data/sample-crawl.jsonl"));
    for (std::string line; std::getline(in, line);) lines_.push_back(line + "\n");
  }

  // A service on dir_/svc with no map: it builds one of kShards shards from `sample_records`
  // records, or the log's records `delay_ms` after the first.
  std::unique_ptr<Tier1Service> Open(uint64_t sample_records, uint32_t delay_ms = 600000) {
    Tier1ServiceOptions o;
    o.config = DefaultConfig();
    o.config.mutable_tier1()->set_sync(false);
    o.config.mutable_tier2()->set_sync(false);
    o.threshold = 0.9;
    o.batch_pages = 100;
    o.new_store_shards = kShards;
    pb::Tier1ServerConfig* c = o.config.mutable_tier1_server();
    c->set_store(Store());
    c->set_sync(false);
    c->set_linger_ms(50);
    c->set_max_batch_delay_ms(delay_ms);
    c->set_map_sample_records(sample_records);
    auto s = Tier1Service::Open(o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
  std::string Store() const { return dir_.File("svc"); }
  std::string MapFile() const { return Store() + "/map.pb"; }

  // Ingests lines [from, to) of the sample crawl; their acknowledgement's status.
  static Status Ingest(Tier1Service& s, const std::vector<std::string>& lines, size_t from, size_t to) {
    std::string body;
    for (size_t i = from; i < to; ++i) body += lines[i];
    std::promise<Status> acked;
    RETURN_IF_ERROR(s.Ingest(body, [&](const Status& st, uint64_t) { acked.set_value(st); }));
    return acked.get_future().get();
  }

  // Waits (at most `seconds`) until every record accepted is committed: nothing pending.
  static bool WaitDecided(Tier1Service& s, int seconds) {
    for (int i = 0; i < seconds * 20; ++i) {
      const Tier1ServiceStats st = s.Stats();
      if (st.pending_urls == 0 && st.committed_bytes == st.log_bytes && st.log_bytes > 0) return true;
      std::this_thread::sleep_for(milliseconds(50));
    }
    return false;
  }

  // The groups of the URLs of the sample crawl's first `records` records, as member sets: from
  // the service's answers, and from `neardup run` over the same records with the store's map.
  using Groups = std::set<std::set<std::string>>;
  Groups ServiceGroups(Tier1Service& s, size_t records) {
    std::map<uint64_t, std::set<std::string>> by_id;
    for (const std::string& url : Urls(records)) {
      auto q = s.Query(url);
      EXPECT_TRUE(q.ok()) << url << ": " << q.status().ToString();
      if (!q.ok()) continue;
      EXPECT_NE(q->answer.status, tier1::StatusAnswer::kPending) << url;
      if (q->answer.group != 0) by_id[q->answer.group].insert(url);
    }
    Groups g;
    for (auto& [id, members] : by_id) g.insert(std::move(members));
    return g;
  }
  Groups RunGroups(size_t records, const std::string& name) {
    std::string part;
    for (size_t i = 0; i < records; ++i) part += lines_[i];
    const std::string input = dir_.File(name + ".jsonl");
    test::WriteFile(input, part);
    pipeline::PipelineOptions o = SampleRun(dir_, name);
    o.input = input;
    o.map = MapFile();
    o.config.mutable_pipeline()->set_shards(kShards);
    auto run = pipeline::RunPipeline(o);
    EXPECT_TRUE(run.ok()) << run.status().ToString();
    std::map<uint64_t, std::set<std::string>> by_id;
    std::istringstream in(ReadFile(o.groups_out));
    const std::set<std::string> urls = Urls(records);
    for (std::string line; std::getline(in, line);) {
      const size_t u = line.find("\"url\":\"") + 7, g = line.find("\"group\":") + 8;
      const std::string url = line.substr(u, line.find('"', u) - u);
      const uint64_t id = std::stoull(line.substr(g));
      if (id != 0 && urls.count(url)) by_id[id].insert(url);
    }
    Groups groups;
    for (auto& [id, members] : by_id) groups.insert(std::move(members));
    return groups;
  }
  std::set<std::string> Urls(size_t records) const {
    std::set<std::string> urls;
    for (size_t i = 0; i < records; ++i) {
      const size_t u = lines_[i].find("\"url\":\"") + 7;
      urls.insert(lines_[i].substr(u, lines_[i].find('"', u) - u));
    }
    return urls;
  }

  test::TempDir dir_;
  std::vector<std::string> lines_;  // the sample crawl's, each with its '\n'
};

// A new store without a map takes records at once (pending) and waits for map_sample_records of
// them; then it builds the map (kShards shards), writes it as its map.pb and decides every record:
// the groups are those of a run over the same records with that map.
TEST_F(Tier1ServiceTest, ANewStoreWithoutAMapBuildsItFromItsFirstRecordsAndDecidesThem) {
  ASSERT_EQ(lines_.size(), 1000u);
  auto s = Open(/*sample_records=*/400);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->BuildingMap());
  ASSERT_TRUE(Ingest(*s, lines_, 0, 200).ok());
  // Fewer records than the sample waits for: no map, every record pending, and healthy.
  std::this_thread::sleep_for(milliseconds(500));
  EXPECT_TRUE(s->BuildingMap());
  EXPECT_FALSE(fs::exists(MapFile()));
  EXPECT_EQ(s->Stats().committed_bytes, 0u);
  EXPECT_TRUE(s->Health().ok());
  auto first = s->Query(*Urls(1).begin());
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->answer.status, tier1::StatusAnswer::kPending);
  EXPECT_EQ(s->StartRebalance({}).code(), StatusCode::kFailedPrecondition);

  ASSERT_TRUE(Ingest(*s, lines_, 200, 1000).ok());
  ASSERT_TRUE(WaitDecided(*s, 60)) << s->Stats().last_error;
  EXPECT_FALSE(s->BuildingMap());
  auto map = partitioner::PartitionMap::Load(MapFile());
  ASSERT_TRUE(map.ok()) << map.status().ToString();
  EXPECT_EQ(map->shards(), kShards);
  EXPECT_EQ(map->proto().generation(), 1u);
  EXPECT_EQ(s->Stats().failed_runs, 0u) << s->Stats().last_error;
  const Groups got = ServiceGroups(*s, 1000);
  s->Stop();
  const Groups want = RunGroups(1000, "run");
  EXPECT_GT(want.size(), 100u);
  EXPECT_EQ(got, want);
}

// The map built, the service stopped and opened again: it keeps that map (the same bytes), is an
// ordinary store at once, and decides what it takes next with it.
TEST_F(Tier1ServiceTest, ARestartAfterTheMapWasBuiltKeepsIt) {
  auto s = Open(/*sample_records=*/300);
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(Ingest(*s, lines_, 0, 500).ok());
  ASSERT_TRUE(WaitDecided(*s, 60)) << s->Stats().last_error;
  ASSERT_TRUE(s->Stop());
  s.reset();
  const std::string built = ReadFile(MapFile());
  ASSERT_FALSE(built.empty());

  // Would build another from fewer records: it must not.
  s = Open(/*sample_records=*/1);
  ASSERT_NE(s, nullptr);
  EXPECT_FALSE(s->BuildingMap());
  ASSERT_TRUE(Ingest(*s, lines_, 500, 1000).ok());
  ASSERT_TRUE(WaitDecided(*s, 60)) << s->Stats().last_error;
  EXPECT_EQ(ReadFile(MapFile()), built);
  const Groups got = ServiceGroups(*s, 1000);
  s->Stop();
  EXPECT_EQ(got, RunGroups(1000, "run"));
}

// Stopped (or killed: the log is all the store holds then) before the map was built: the records
// acknowledged stay pending, and the next start counts them towards the sample, builds the map
// from them and decides them.
TEST_F(Tier1ServiceTest, ARestartBeforeTheMapWasBuiltBuildsItThen) {
  auto s = Open(/*sample_records=*/1000);
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(Ingest(*s, lines_, 0, 600).ok());
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_TRUE(s->BuildingMap());
  ASSERT_TRUE(s->Stop());
  s.reset();
  ASSERT_FALSE(fs::exists(MapFile()));

  // 600 records in the log: as many as this start's sample waits for, and no more come.
  s = Open(/*sample_records=*/600);
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->BuildingMap());
  ASSERT_TRUE(WaitDecided(*s, 60)) << s->Stats().last_error;
  EXPECT_FALSE(s->BuildingMap());
  ASSERT_TRUE(fs::exists(MapFile()));
  const Groups got = ServiceGroups(*s, 600);
  s->Stop();
  EXPECT_EQ(got, RunGroups(600, "run"));
}

// Fewer records than the sample waits for: the map is built from them once max_batch_delay_ms
// passed since the first.
TEST_F(Tier1ServiceTest, AFewRecordsGetTheirMapAfterTheMaximumBatchDelay) {
  auto s = Open(/*sample_records=*/100000, /*delay_ms=*/1000);
  ASSERT_NE(s, nullptr);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(Ingest(*s, lines_, 0, 300).ok());
  ASSERT_TRUE(WaitDecided(*s, 60)) << s->Stats().last_error;
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(1000));
  ASSERT_TRUE(fs::exists(MapFile()));
  const Groups got = ServiceGroups(*s, 300);
  s->Stop();
  EXPECT_EQ(got, RunGroups(300, "run"));
}

}  // namespace
}  // namespace neardup::cluster
