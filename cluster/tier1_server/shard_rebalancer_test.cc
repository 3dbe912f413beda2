// ShardRebalancer on a store a run of the sample crawl made (3 shards in this process), with a
// batch loop that is a test double: it pauses at once and counts its pauses, and its decided
// records are the test's. A run ending the move is the test calling MoveEnded. Every wait is
// bounded.
#include "cluster/tier1_server/shard_rebalancer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "common/config.h"
#include "pipeline/pipeline_test_util.h"
#include "pipeline/placement.h"
#include "tier1/group_store.h"
#include "testing/temp_dir.h"

namespace neardup::cluster {
namespace {

using pipeline::test_util::SampleRun;
using std::chrono::milliseconds;

// A request with the fields `set` changes.
template <typename F>
ClusterRebalanceRequest Request(F set) {
  ClusterRebalanceRequest q;
  set(q);
  return q;
}

class FakeLoop final : public RebalanceLoop {
 public:
  bool PauseLoop() override {
    ++pauses;
    return !ended;
  }
  void ResumeLoop() override { ++resumes; }
  bool ServiceStopping() const override { return stopping; }
  uint64_t AcceptedRecords() override { return accepted; }
  uint64_t DecidedRecords() override { return decided; }
  double DecidedPerSecond(std::chrono::steady_clock::time_point) override { return 123; }
  double DecidedPerSecondBetween(std::chrono::steady_clock::time_point, std::chrono::steady_clock::time_point,
                                 uint64_t decided_before) override {
    return static_cast<double>(decided - decided_before);
  }

  std::atomic<int> pauses{0}, resumes{0};
  std::atomic<bool> ended{false}, stopping{false};
  std::atomic<uint64_t> accepted{0}, decided{0};
};

class ShardRebalancerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = SampleRun(dir_, "r");
    auto done = pipeline::RunPipeline(run_);
    ASSERT_TRUE(done.ok()) << done.status().ToString();
    auto groups = tier1::GroupStore::Open(pipeline::GroupStoreOptionsFor(Layout(), run_.config));
    ASSERT_TRUE(groups.ok()) << groups.status().ToString();
    groups_ = std::move(*groups);
  }
  pipeline::StoreLayout Layout() const { return pipeline::StoreLayout{run_.store}; }
  std::unique_ptr<ShardRebalancer> Make(std::vector<std::string> servers) {
    health_ = std::make_unique<ShardHealth>(servers);
    ShardRebalancerOptions o;
    o.layout = Layout();
    o.groups = groups_.get();
    o.run = &run_;
    o.health = health_.get();
    o.server = run_.config.tier1_server();
    return std::make_unique<ShardRebalancer>(o, &loop_);
  }
  // The state once it is no longer running, or moving when `moving` (at most 60 s).
  static ClusterRebalanceState WaitFor(ShardRebalancer& r, bool moving) {
    for (int i = 0; i < 1200; ++i) {
      const ClusterRebalanceState st = r.State();
      if (st.state != ClusterRebalanceState::kRunning || (moving && st.moving)) return st;
      std::this_thread::sleep_for(milliseconds(50));
    }
    return r.State();
  }

  test::TempDir dir_;
  pipeline::PipelineOptions run_;
  std::unique_ptr<tier1::GroupStore> groups_;
  std::unique_ptr<ShardHealth> health_;
  FakeLoop loop_;
};

TEST(RebalanceRequest, ValuesOutsideTheirRangesAreRefused) {
  EXPECT_TRUE(CheckRebalanceRequest({}).ok());
  EXPECT_EQ(CheckRebalanceRequest(Request([](auto& q) { q.max_move = 1.5; })).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckRebalanceRequest(Request([](auto& q) { q.max_mb_per_s = -1; })).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckRebalanceRequest(Request([](auto& q) { q.min_batch_share = 0.01; })).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckRebalanceRequest(Request([](auto& q) { q.shards = 1025; })).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckRebalanceRequest(Request([](auto& q) { q.tier2 = {"no-port"}; })).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckRebalanceRequest(Request([](auto& q) {
    q.min_batch_share = 0.5;
    q.tier2 = {"127.0.0.1:9000"};
  })).ok());
}

TEST(RebalanceRequest, AShardMayNotChangeServer) {
  EXPECT_TRUE(CheckShardPlacement({"a:1", "b:1"}, 2, {"a:1", "b:1", "c:1"}, 3).ok());  // added at the end
  EXPECT_TRUE(CheckShardPlacement({"a:1", "b:1", "c:1"}, 3, {"a:1", "b:1"}, 2).ok());  // the last drained
  const Status moved = CheckShardPlacement({"a:1", "b:1"}, 2, {"b:1", "a:1"}, 2);
  EXPECT_EQ(moved.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(moved.message().find("shard 0 is on a:1"), std::string::npos) << moved.message();
  EXPECT_EQ(CheckShardPlacement({}, 2, {"a:1"}, 2).code(), StatusCode::kInvalidArgument);
}

TEST_F(ShardRebalancerTest, ShardsInThisProcessTakeNoServerList) {
  auto r = Make({});
  ASSERT_TRUE(r->PlaceShards({}).ok());
  EXPECT_TRUE(static_cast<bool>(run_.open_shards));
  EXPECT_EQ(r->Start(Request([](auto& q) { q.tier2 = {"127.0.0.1:9000"}; })).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r->State().state, ClusterRebalanceState::kNone);
}

TEST_F(ShardRebalancerTest, ADryRunPlansWithoutPausingTheLoop) {
  auto r = Make({});
  ASSERT_TRUE(r->PlaceShards({}).ok());
  ASSERT_TRUE(r->Start(Request([](auto& q) {
    q.shards = 4;
    q.dry_run = true;
  })).ok());
  const ClusterRebalanceState st = WaitFor(*r, false);
  ASSERT_EQ(st.state, ClusterRebalanceState::kDone) << st.error;
  EXPECT_TRUE(st.report.dry_run);
  EXPECT_EQ(st.report.shards_after, 4u);
  EXPECT_FALSE(st.moving);
  EXPECT_EQ(loop_.pauses, 0);
  EXPECT_EQ(run_.config.pipeline().shards(), 3u);  // the runs' options unchanged
  EXPECT_FALSE(pipeline::ReadMoveJournal(*groups_).ok());
}

// The loop pauses for the plan and the journal; the runs' options take the move; a run ending it
// (MoveEnded) completes the state with its figures; the loop pauses again, and between its runs
// ApplyEndedMove gives them the new shard count.
TEST_F(ShardRebalancerTest, AMoveIsPlannedPausedMadeByTheRunsAndTakenBetweenThem) {
  auto r = Make({});
  ASSERT_TRUE(r->PlaceShards({}).ok());
  loop_.accepted = 10;
  loop_.decided = 100;
  ASSERT_TRUE(r->Start(Request([](auto& q) {
    q.shards = 4;
    q.max_move = 0.5;
    q.max_mb_per_s = 7;
    q.min_batch_share = 0.25;
  })).ok());
  EXPECT_EQ(r->Start({}).code(), StatusCode::kFailedPrecondition);  // one at a time
  ClusterRebalanceState st = WaitFor(*r, true);
  ASSERT_EQ(st.state, ClusterRebalanceState::kRunning) << st.error;
  ASSERT_TRUE(st.moving);
  EXPECT_EQ(loop_.pauses, 1);
  EXPECT_EQ(loop_.resumes, 1);
  EXPECT_TRUE(pipeline::ReadMoveJournal(*groups_).ok());
  EXPECT_EQ(run_.config.pipeline().shards(), 4u);
  EXPECT_EQ(run_.config.pipeline().move_max_mb_per_s(), 7);
  EXPECT_EQ(run_.config.pipeline().move_min_batch_share(), 0.25);
  EXPECT_TRUE(run_.map.empty());

  loop_.decided = 150;
  loop_.accepted = 25;
  pipeline::MoveOutcome end;
  end.generation = 9;
  end.shards = 4;
  end.pages = 40;
  end.bytes = 4000;
  end.steps = 5;
  r->MoveEnded(end);
  st = WaitFor(*r, false);
  ASSERT_EQ(st.state, ClusterRebalanceState::kDone) << st.error;
  EXPECT_EQ(st.report.pages_moved, 40u);
  EXPECT_EQ(st.report.bytes_moved, 4000u);
  EXPECT_EQ(st.report.generation_after, 9u);
  EXPECT_EQ(st.records_decided_while_moving, 50u);
  EXPECT_EQ(st.decided_per_s_while_moving, 50);
  EXPECT_EQ(st.decided_per_s_before, 123);
  EXPECT_EQ(st.records_accepted, 15u);
  EXPECT_EQ(loop_.pauses, 2);
  EXPECT_EQ(loop_.resumes, 2);
  const std::string json = ClusterRebalanceJson(st);
  EXPECT_NE(json.find("\"state\":\"done\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"records_decided_while_moving\":50"), std::string::npos) << json;

  run_.config.mutable_pipeline()->set_shards(3);
  r->ApplyEndedMove();
  EXPECT_EQ(run_.config.pipeline().shards(), 4u);
  run_.config.mutable_pipeline()->set_shards(3);
  r->ApplyEndedMove();  // taken once
  EXPECT_EQ(run_.config.pipeline().shards(), 3u);
}

TEST_F(ShardRebalancerTest, AServiceStoppingMidMoveLeavesTheMoveToTheNextStart) {
  auto r = Make({});
  ASSERT_TRUE(r->PlaceShards({}).ok());
  ASSERT_TRUE(r->Start(Request([](auto& q) {
    q.shards = 4;
    q.max_move = 0.5;
  })).ok());
  ASSERT_TRUE(WaitFor(*r, true).moving);
  loop_.stopping = true;
  const ClusterRebalanceState st = WaitFor(*r, false);
  EXPECT_EQ(st.state, ClusterRebalanceState::kFailed);
  EXPECT_NE(st.error.find("the next start finishes the move"), std::string::npos) << st.error;
  EXPECT_TRUE(pipeline::ReadMoveJournal(*groups_).ok());
}

TEST_F(ShardRebalancerTest, ALoopThatEndedInsteadOfPausingFailsTheRebalance) {
  auto r = Make({});
  ASSERT_TRUE(r->PlaceShards({}).ok());
  loop_.ended = true;
  ASSERT_TRUE(r->Start(Request([](auto& q) { q.shards = 4; })).ok());
  const ClusterRebalanceState st = WaitFor(*r, false);
  EXPECT_EQ(st.state, ClusterRebalanceState::kFailed);
  EXPECT_FALSE(pipeline::ReadMoveJournal(*groups_).ok());
}

// The servers are recorded in the store: a later start that would seek a shard elsewhere is
// refused; the same list, or one with a server added at the end, is taken.
TEST_F(ShardRebalancerTest, TheStoreKeepsItsServersAndRefusesAListThatMovesAShard) {
  ASSERT_TRUE(Make({"a:1", "b:1", "c:1"})->PlaceShards({"a:1", "b:1", "c:1"}).ok());
  pipeline::StorePlacementState state(Layout(), groups_.get());
  auto recorded = pipeline::ReadShardServers(state);
  ASSERT_TRUE(recorded.ok() && recorded->has_value());
  EXPECT_EQ((*recorded)->after, (std::vector<std::string>{"a:1", "b:1", "c:1"}));
  const Status moved = Make({})->PlaceShards({"b:1", "a:1", "c:1"});
  EXPECT_EQ(moved.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(moved.message().find("shard 0 is on a:1"), std::string::npos) << moved.message();
  EXPECT_TRUE(Make({})->PlaceShards({"a:1", "b:1", "c:1", "d:1"}).ok());
}

}  // namespace
}  // namespace neardup::cluster
