#include "cluster/tier1_server/shard_rebalancer.h"

#include <algorithm>
#include <optional>

#include <spdlog/spdlog.h>

#include "cluster/http/net.h"
#include "cluster/tier2_client/remote_shard_set.h"
#include "common/json_write.h"
#include "common/thread_priority.h"
#include "pipeline/placement.h"

namespace neardup::cluster {

using std::chrono::milliseconds;
using pipeline::JoinServers;

Status CheckShardPlacement(const std::vector<std::string>& before, uint32_t shards_before,
                           const std::vector<std::string>& after, uint32_t shards_after) {
  if (before.empty() || after.empty()) return InvalidArgument("no Tier 2 servers");
  for (uint32_t m = 0; m < std::min(shards_before, shards_after); ++m) {
    const std::string& from = before[m % before.size()];
    const std::string& to = after[m % after.size()];
    if (from != to) {
      return InvalidArgument(fmt::format("shard {} is on {}, and the server list [{}] would seek it on {}: a rebalance "
                                         "moves cells between shards, not shards between servers (keep the servers "
                                         "of the shards that stay, in their places; add servers at the end)",
                                         m, from, JoinServers(after), to));
    }
  }
  return Status::Ok();
}

Status CheckRebalanceRequest(const ClusterRebalanceRequest& request) {
  if (!(request.max_move >= 0 && request.max_move <= 1)) return InvalidArgument("max_move must be in [0, 1]");
  if (!(request.max_mb_per_s >= 0)) return InvalidArgument("max_mb_per_s must be at least 0");
  if (!(request.min_batch_share == 0 || (request.min_batch_share >= 0.05 && request.min_batch_share <= 1))) {
    return InvalidArgument("min_batch_share must be in [0.05, 1]");
  }
  if (request.shards > 1024) return InvalidArgument("shards must be in 1..1024");
  for (const std::string& server : request.tier2) {
    std::string host;
    uint16_t port = 0;
    if (Status s = ParseHostPort(server, &host, &port); !s.ok()) return InvalidArgument("tier2: " + s.message());
  }
  return Status::Ok();
}

std::string ClusterRebalanceJson(const ClusterRebalanceState& s) {
  static constexpr const char* kNames[] = {"none", "running", "done", "failed"};
  std::string j = std::string("{\"state\":\"") + kNames[s.state] + "\"";
  if (s.state == ClusterRebalanceState::kFailed) {
    j += ",\"error\":";
    AppendJsonString(&j, s.error);
  }
  if (s.state == ClusterRebalanceState::kDone) {
    const std::string r = pipeline::RebalanceReportJson(s.report);
    j += ',';
    j.append(r, 1, r.size() - 2);
  }
  auto list = [&](const char* key, const std::vector<std::string>& v) {
    j += std::string(",\"") + key + "\":[";
    for (size_t i = 0; i < v.size(); ++i) {
      if (i > 0) j += ',';
      AppendJsonString(&j, v[i]);
    }
    j += ']';
  };
  list("tier2_before", s.tier2_before);
  list("tier2_after", s.tier2_after);
  j += std::string(",\"moving\":") + (s.moving ? "true" : "false");
  AppendJsonField(&j, "rebalance_seconds", s.seconds);
  AppendJsonField(&j, "paused_seconds", s.paused_seconds);
  AppendJsonField(&j, "moving_seconds", s.moving_seconds);
  j += ",\"records_accepted\":" + std::to_string(s.records_accepted);
  j += ",\"records_decided_while_moving\":" + std::to_string(s.records_decided_while_moving);
  AppendJsonField(&j, "decided_per_s_before", s.decided_per_s_before);
  AppendJsonField(&j, "decided_per_s_while_moving", s.decided_per_s_while_moving);
  j += "}";
  return j;
}

ShardRebalancer::ShardRebalancer(ShardRebalancerOptions options, RebalanceLoop* loop)
    : o_(std::move(options)), loop_(loop) {}

ShardRebalancer::~ShardRebalancer() { Join(); }

pipeline::ShardSetOpener ShardRebalancer::OpenerFor(std::vector<std::string> servers, std::vector<uint32_t> placement) {
  if (servers.empty()) return pipeline::OpenLocalShardSet;
  RemoteShardSetOptions remote;
  remote.servers = std::move(servers);
  remote.placement = std::move(placement);
  remote.call_timeout_ms = o_.server.tier2_deadline_ms();
  remote.connect_timeout_ms = std::min<uint32_t>(o_.server.tier2_deadline_ms(), 5000);
  remote.on_open = [h = o_.health](uint32_t shard, const Status& status) { h->Record(shard, status); };
  remote.tls = TlsFiles::From(o_.server.tier2_tls());
  return [remote](const pipeline::ShardSetOptions& so) { return OpenRemoteShardSet(remote, so); };
}

void ShardRebalancer::SetOpener(std::vector<std::string> servers, std::vector<uint32_t> placement) {
  o_.run->open_shards = o_.health->Observe(OpenerFor(std::move(servers), std::move(placement)));
}

Status ShardRebalancer::PlaceShards(std::vector<std::string> configured) {
  tier2_ = configured;
  if (configured.empty()) {
    SetOpener({}, {});
    return Status::Ok();
  }
  pipeline::StorePlacementState state(o_.layout, o_.groups);
  ASSIGN_OR_RETURN(const std::optional<pipeline::ShardServers> recorded, pipeline::ReadShardServers(state));
  auto params = pipeline::ReadStoreParams(*o_.groups);
  if (recorded.has_value() && !recorded->after.empty() && params.ok()) {
    auto journal = pipeline::ReadMoveJournal(*o_.groups);
    if (journal.ok() && !recorded->before.empty()) return ResumeMove(*recorded, *journal, configured);
    const uint32_t shards = params->shards();
    if (Status s = CheckShardPlacement(recorded->after, shards, configured, shards); !s.ok()) {
      return FailedPrecondition("tier1-server: store " + o_.layout.dir + " has its shards on [" +
                                JoinServers(recorded->after) + "], not where --tier2 [" + JoinServers(configured) +
                                "] seeks them: " + s.message());
    }
  }
  if (!recorded.has_value() || recorded->after != configured || !recorded->before.empty()) {
    RETURN_IF_ERROR(pipeline::WriteShardServers(&state, {{}, configured}));
  }
  SetOpener(std::move(configured), {});
  return Status::Ok();
}

Status ShardRebalancer::ResumeMove(const pipeline::ShardServers& recorded, const pb::MoveJournal& journal,
                                   const std::vector<std::string>& configured) {
  const uint32_t shards_after = journal.shards_after();
  if (Status s = CheckShardPlacement(recorded.after, shards_after, configured, shards_after); !s.ok()) {
    return FailedPrecondition("tier1-server: store " + o_.layout.dir + " has its shards on [" +
                              JoinServers(recorded.after) + "], not where --tier2 [" + JoinServers(configured) +
                              "] seeks them: " + s.message());
  }
  std::vector<std::string> servers;
  std::vector<uint32_t> placement;
  pipeline::MoveServerPlacement(recorded.before, journal.shards_before(), recorded.after, shards_after, &servers,
                                &placement);
  spdlog::warn("tier1-server: a rebalance of store {} stopped mid-move: finishing it over [{}]", o_.layout.dir,
               JoinServers(servers));
  tier2_ = recorded.after;
  SetOpener(std::move(servers), std::move(placement));
  return Status::Ok();
}

Status ShardRebalancer::Start(ClusterRebalanceRequest request) {
  std::lock_guard lock(mu_);
  if (tier2_.empty() && !request.tier2.empty()) {
    return InvalidArgument("tier1-server: the shards are in this process: a rebalance names no Tier 2 servers");
  }
  if (state_.state == ClusterRebalanceState::kRunning) return FailedPrecondition("a rebalance is running");
  if (thread_.joinable()) thread_.join();
  state_ = ClusterRebalanceState();
  state_.state = ClusterRebalanceState::kRunning;
  thread_ = std::thread([this, request = std::move(request)] {
    NameThisThread("nd-rebalance");
    Rebalance(request);
  });
  return Status::Ok();
}

ClusterRebalanceState ShardRebalancer::State() {
  std::lock_guard lock(mu_);
  return state_;
}

void ShardRebalancer::Join() {
  std::thread running;
  {
    std::lock_guard lock(mu_);
    running.swap(thread_);
  }
  if (running.joinable()) running.join();
}

void ShardRebalancer::Rebalance(ClusterRebalanceRequest q) {
  const auto start = Clock::now();
  const uint64_t accepted_before = loop_->AcceptedRecords();
  ClusterRebalanceState st;
  st.state = ClusterRebalanceState::kRunning;
  auto end = [&](Status s) {
    st.state = s.ok() ? ClusterRebalanceState::kDone : ClusterRebalanceState::kFailed;
    st.error = s.ok() ? "" : s.ToString();
    st.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    st.records_accepted = loop_->AcceptedRecords() - accepted_before;
    if (!s.ok()) spdlog::warn("tier1-server: rebalance failed: {}", s.ToString());
    std::lock_guard lock(mu_);
    state_ = st;
  };
  pipeline::StoreRebalanceOptions so;
  so.dir = o_.layout.dir;
  so.config = o_.run->config;
  so.shards = q.shards;
  so.max_move = q.max_move;
  so.dry_run = q.dry_run;
  so.defer_move = true;  // the batch loop's runs move the pages between their batches
  so.on_step = [this](uint64_t step) { return !loop_->ServiceStopping() && (!o_.on_step || o_.on_step(step)); };
  {
    std::lock_guard lock(mu_);
    st.tier2_before = tier2_;
    move_ended_ = false;
  }
  st.tier2_after = q.tier2.empty() ? st.tier2_before : q.tier2;
  if (q.dry_run) {  // a plan only: the loop goes on
    auto r = pipeline::RebalanceOpenStore(o_.groups, so);
    if (r.ok()) st.report = *r;
    st.tier2_after = st.tier2_before;
    end(r.status());
    return;
  }
  const double rate_before = loop_->DecidedPerSecond(Clock::now());
  // The loop pauses once the batch it is in commits, for the plan and the journal.
  auto pause_start = Clock::now();
  if (!loop_->PauseLoop()) {
    end(FailedPrecondition("tier1-server: stopping"));
    return;
  }
  bool moving = false;
  const Status planned = Plan(q, std::move(so), &st, &moving);
  st.paused_seconds += std::chrono::duration<double>(Clock::now() - pause_start).count();
  loop_->ResumeLoop();
  if (!planned.ok() || !moving) {
    // Failed before its journal, or nothing to move (failed after it: the loop's runs finish it).
    if (!moving) st.tier2_after = st.tier2_before;
    end(planned);
    return;
  }
  if (Status s = AwaitMove(rate_before, &st); !s.ok()) {
    end(s);
    return;
  }
  // The loop's next run opens the new map's shards on their servers (ApplyEndedMove).
  pause_start = Clock::now();
  if (loop_->PauseLoop()) {
    st.paused_seconds += std::chrono::duration<double>(Clock::now() - pause_start).count();
    loop_->ResumeLoop();
  }
  st.report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  end(Status::Ok());
}

Status ShardRebalancer::Plan(const ClusterRebalanceRequest& q, pipeline::StoreRebalanceOptions so,
                             ClusterRebalanceState* st, bool* moving) {
  pipeline::StorePlacementState state(o_.layout, o_.groups);
  std::vector<std::string> servers;
  std::vector<uint32_t> placement;
  Status planned = [&]() -> Status {
    if (!st->tier2_before.empty()) {
      ASSIGN_OR_RETURN(const pb::StoreParams params, pipeline::ReadStoreParams(*o_.groups));
      const uint32_t before = params.shards(), after = q.shards == 0 ? before : q.shards;
      RETURN_IF_ERROR(CheckShardPlacement(st->tier2_before, before, st->tier2_after, after));
      pipeline::MoveServerPlacement(st->tier2_before, before, st->tier2_after, after, &servers, &placement);
      // Before the move's journal: a restart mid-move finds the move's servers.
      RETURN_IF_ERROR(pipeline::WriteShardServers(&state, {st->tier2_before, st->tier2_after}));
      so.open_shards = OpenerFor(servers, placement);
      spdlog::info("tier1-server: rebalancing {} -> {} shards over [{}]", before, after, JoinServers(servers));
    }
    auto r = pipeline::RebalanceOpenStore(o_.groups, so);
    if (!r.ok()) return r.status();
    st->report = *r;
    return Status::Ok();
  }();
  // A move whose journal is written is the loop's runs' to make, over the move's servers.
  auto journal = pipeline::ReadMoveJournal(*o_.groups);
  *moving = journal.ok();
  if (*moving) {
    TakeMove(q, journal->shards_after());
    if (!servers.empty()) SetOpener(servers, placement);
  } else if (!st->tier2_before.empty()) {
    (void)pipeline::WriteShardServers(&state, {{}, st->tier2_before});
  }
  return planned;
}

void ShardRebalancer::TakeMove(const ClusterRebalanceRequest& q, uint32_t shards_after) {
  // The runs take the store's map and shard count from now on, and the move's throttle.
  pipeline::PipelineOptions& run = *o_.run;
  run.map.clear();
  run.given.erase("shards");
  run.config.mutable_pipeline()->set_shards(shards_after);
  run.config.mutable_pipeline()->set_move_max_mb_per_s(q.max_mb_per_s);
  if (q.min_batch_share > 0) run.config.mutable_pipeline()->set_move_min_batch_share(q.min_batch_share);
}

Status ShardRebalancer::AwaitMove(double rate_before, ClusterRebalanceState* st) {
  st->moving = true;
  {
    std::lock_guard lock(mu_);
    state_.moving = true;
  }
  // The loop's runs move the pages between their batches; the last one tells MoveEnded.
  const auto move_start = Clock::now();
  const uint64_t decided_before = loop_->DecidedRecords();
  {
    std::unique_lock lock(mu_);
    while (!move_ended_ && !loop_->ServiceStopping()) move_cv_.wait_for(lock, milliseconds(100));
    if (!move_ended_) return Unavailable("tier1-server: stopping mid-move: the next start finishes the move");
    st->report.pages_moved = move_end_.pages;
    st->report.bytes_moved = move_end_.bytes;
    st->report.planned_bytes = move_end_.bytes;
    st->report.steps += move_end_.steps;
    st->report.generation_after = move_end_.generation;
  }
  const auto move_end = Clock::now();
  st->moving_seconds = std::chrono::duration<double>(move_end - move_start).count();
  st->records_decided_while_moving = loop_->DecidedRecords() - decided_before;
  st->decided_per_s_before = rate_before;
  st->decided_per_s_while_moving = loop_->DecidedPerSecondBetween(move_start, move_end, decided_before);
  return Status::Ok();
}

void ShardRebalancer::MoveEnded(const pipeline::MoveOutcome& move) {
  std::lock_guard lock(mu_);
  move_end_ = move;
  move_ended_ = true;
  move_end_pending_ = true;
  move_cv_.notify_all();
}

void ShardRebalancer::ApplyEndedMove() {
  if (!move_end_pending_.exchange(false)) return;
  pipeline::StorePlacementState state(o_.layout, o_.groups);
  auto recorded = pipeline::ReadShardServers(state);
  std::lock_guard lock(mu_);
  const uint32_t shards = move_end_.shards;
  pipeline::PipelineOptions& run = *o_.run;
  run.map.clear();
  run.given.erase("shards");
  run.config.mutable_pipeline()->set_shards(shards);
  if (tier2_.empty()) {
    o_.health->Reset({}, shards);
    return;
  }
  if (!recorded.ok() || !recorded->has_value() || (*recorded)->after.empty()) {
    spdlog::warn("tier1-server: a move ended, but the store records no servers after it: keeping the move's");
    return;
  }
  const std::vector<std::string> after = (*recorded)->after;
  if (Status s = pipeline::WriteShardServers(&state, {{}, after}); !s.ok()) {
    spdlog::warn("tier1-server: cannot record the servers after the move: {}", s.ToString());
  }
  tier2_ = after;
  SetOpener(after, {});
  o_.health->Reset(after, shards);
  spdlog::info("tier1-server: the move ended: {} shards over [{}]", shards, JoinServers(after));
}

}  // namespace neardup::cluster
