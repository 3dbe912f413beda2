#include "cluster/tier1_server/tier1_service.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>

#include <spdlog/spdlog.h>

#include "cluster/http/http_request.h"
#include "cluster/http/net.h"
#include "cluster/tier2_client/remote_shard_set.h"
#include "common/json_write.h"
#include "common/thread_priority.h"
#include "document/crawl_reader.h"
#include "document/html_text.h"
#include "document/shingle.h"
#include "document/signature.h"
#include "pipeline/placement.h"
#include "pipeline/rebalance_store.h"
#include "pipeline/store.h"

namespace neardup::cluster {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using pipeline::JoinServers;

Tier1Service::Tier1Service(Tier1ServiceOptions options)
    : o_(std::move(options)),
      health_(std::make_unique<ShardHealth>(
          std::vector<std::string>(o_.config.tier1_server().tier2().begin(), o_.config.tier1_server().tier2().end()))) {}

StatusOr<std::unique_ptr<Tier1Service>> Tier1Service::Open(const Tier1ServiceOptions& options) {
  const pb::Tier1ServerConfig& c = options.config.tier1_server();
  if (c.store().empty()) return InvalidArgument("tier1-server: tier1_server.store (the store directory) is required");
  std::unique_ptr<Tier1Service> s(new Tier1Service(options));
  s->layout_.dir = c.store();
  std::error_code ec;
  fs::create_directories(c.store(), ec);
  if (ec) return IoError("tier1-server: cannot create " + c.store() + ": " + ec.message());
  ASSIGN_OR_RETURN(s->groups_, tier1::GroupStore::Open(pipeline::GroupStoreOptionsFor(s->layout_, options.config)));
  // A new store given no map builds its own from its first records (the batch loop's first run).
  const bool has_params = pipeline::ReadStoreParams(*s->groups_).ok();
  s->building_map_ = !has_params && c.map().empty();
  IngestLog::Options lo;
  lo.path = c.store() + "/ingest.jsonl";
  lo.max_pending_bytes = c.max_unsynced_bytes();
  lo.sync = c.sync();
  ASSIGN_OR_RETURN(s->log_, IngestLog::Open(lo));
  // Where the batch loop stands: the records committed of the log (none for a new store).
  std::string bytes;
  if (s->groups_->rows().Get(s->groups_->meta_family(), "progress", "", &bytes).ok()) {
    pb::Tier1Progress p;
    if (p.ParseFromString(bytes)) s->committed_ = p.current().bytes();
  }

  // Records acknowledged before a restart but not yet committed answer `pending`, as before it.
  RETURN_IF_ERROR(s->MarkPendingFromLog());

  pipeline::PipelineOptions& r = s->run_;
  r.input = lo.path;
  r.store = c.store();
  if (!fs::exists(s->layout_.map())) r.map = c.map();
  r.config = options.config;
  r.given = options.given;
  if (s->building_map_ && options.new_store_shards > 0) {
    // The shard count of the map it builds: the caller's (cluster up: one shard per Tier 2 server).
    r.config.mutable_pipeline()->set_shards(options.new_store_shards);
    r.given["shards"] = "--new-store-shards";
  }
  r.threshold = options.threshold;
  r.signer = options.signer;
  r.batch_pages = options.batch_pages;
  r.progress = false;
  r.feed = s.get();
  r.groups = s->groups_.get();
  r.linger = milliseconds(c.linger_ms());
  r.max_batch_delay = milliseconds(c.max_batch_delay_ms());
  if (options.rebalance_on_step) r.move_on_step = options.rebalance_on_step;
  RETURN_IF_ERROR(s->PlaceShards(std::vector<std::string>(c.tier2().begin(), c.tier2().end())));
  s->loop_ = std::thread([p = s.get()] {
    NameThisThread("nd-t1-loop");
    p->Loop();
  });
  return s;
}

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

pipeline::ShardSetOpener Tier1Service::OpenerFor(std::vector<std::string> servers, std::vector<uint32_t> placement) {
  if (servers.empty()) return pipeline::OpenLocalShardSet;
  const pb::Tier1ServerConfig& c = o_.config.tier1_server();
  RemoteShardSetOptions remote;
  remote.servers = std::move(servers);
  remote.placement = std::move(placement);
  remote.call_timeout_ms = c.tier2_deadline_ms();
  remote.connect_timeout_ms = std::min<uint32_t>(c.tier2_deadline_ms(), 5000);
  remote.on_open = [h = health_.get()](uint32_t shard, const Status& status) { h->Record(shard, status); };
  remote.tls = TlsFiles::From(c.tier2_tls());
  return [remote](const pipeline::ShardSetOptions& so) { return OpenRemoteShardSet(remote, so); };
}

void Tier1Service::SetOpener(std::vector<std::string> servers, std::vector<uint32_t> placement) {
  run_.open_shards = health_->Observe(OpenerFor(std::move(servers), std::move(placement)));
}

Status Tier1Service::PlaceShards(std::vector<std::string> configured) {
  tier2_ = configured;
  if (configured.empty()) {
    SetOpener({}, {});
    return Status::Ok();
  }
  pipeline::StorePlacementState state(layout_, groups_.get());
  ASSIGN_OR_RETURN(const std::optional<pipeline::ShardServers> recorded, pipeline::ReadShardServers(state));
  auto params = pipeline::ReadStoreParams(*groups_);
  if (recorded.has_value() && !recorded->after.empty() && params.ok()) {
    const std::string store = layout_.dir;
    auto refuse = [&](const Status& s) {
      return FailedPrecondition("tier1-server: store " + store + " has its shards on [" + JoinServers(recorded->after) +
                                "], not where --tier2 [" + JoinServers(configured) + "] seeks them: " + s.message());
    };
    auto journal = pipeline::ReadMoveJournal(*groups_);
    if (journal.ok() && !recorded->before.empty()) {
      // A rebalance stopped mid-move: the loop's first run finishes it over the move's servers.
      const uint32_t shards_after = journal->shards_after();
      if (Status s = CheckShardPlacement(recorded->after, shards_after, configured, shards_after); !s.ok()) return refuse(s);
      std::vector<std::string> servers;
      std::vector<uint32_t> placement;
      pipeline::MoveServerPlacement(recorded->before, journal->shards_before(), recorded->after, shards_after, &servers,
                                    &placement);
      spdlog::warn("tier1-server: a rebalance of store {} stopped mid-move: finishing it over [{}]", store,
                   JoinServers(servers));
      tier2_ = recorded->after;
      SetOpener(std::move(servers), std::move(placement));
      return Status::Ok();
    }
    const uint32_t shards = params->shards();
    if (Status s = CheckShardPlacement(recorded->after, shards, configured, shards); !s.ok()) return refuse(s);
  }
  if (!recorded.has_value() || recorded->after != configured || !recorded->before.empty()) {
    RETURN_IF_ERROR(pipeline::WriteShardServers(&state, {{}, configured}));
  }
  SetOpener(std::move(configured), {});
  return Status::Ok();
}

Status Tier1Service::StartRebalance(ClusterRebalanceRequest request) {
  if (stopping_) return FailedPrecondition("tier1-server: stopping");
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
  if (building_map_) {
    return FailedPrecondition("tier1-server: the store has no partition map yet (it is built from the first records "
                              "ingested): nothing to rebalance");
  }
  std::lock_guard lock(rebalance_mu_);
  if (tier2_.empty() && !request.tier2.empty()) {
    return InvalidArgument("tier1-server: the shards are in this process: a rebalance names no Tier 2 servers");
  }
  if (rebalance_.state == ClusterRebalanceState::kRunning) return FailedPrecondition("a rebalance is running");
  if (rebalance_thread_.joinable()) rebalance_thread_.join();
  rebalance_ = ClusterRebalanceState();
  rebalance_.state = ClusterRebalanceState::kRunning;
  rebalance_thread_ = std::thread([this, request = std::move(request)] {
    NameThisThread("nd-rebalance");
    Rebalance(request);
  });
  return Status::Ok();
}

ClusterRebalanceState Tier1Service::RebalanceState() {
  std::lock_guard lock(rebalance_mu_);
  return rebalance_;
}

void Tier1Service::Rebalance(ClusterRebalanceRequest q) {
  const auto start = Clock::now();
  const uint64_t accepted_before = log_->stats().records;
  ClusterRebalanceState st;
  pipeline::StorePlacementState state(layout_, groups_.get());
  st.state = ClusterRebalanceState::kRunning;
  auto end = [&](Status s) {
    st.state = s.ok() ? ClusterRebalanceState::kDone : ClusterRebalanceState::kFailed;
    st.error = s.ok() ? "" : s.ToString();
    st.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    st.records_accepted = log_->stats().records - accepted_before;
    if (!s.ok()) spdlog::warn("tier1-server: rebalance failed: {}", s.ToString());
    std::lock_guard lock(rebalance_mu_);
    rebalance_ = st;
  };
  pipeline::StoreRebalanceOptions so;
  so.dir = layout_.dir;
  so.config = run_.config;
  so.shards = q.shards;
  so.max_move = q.max_move;
  so.dry_run = q.dry_run;
  so.defer_move = true;  // the batch loop's runs move the pages between their batches
  so.on_step = [this](uint64_t step) { return !stopping_.load() && (!o_.rebalance_on_step || o_.rebalance_on_step(step)); };
  {
    std::lock_guard lock(rebalance_mu_);
    st.tier2_before = tier2_;
    move_ended_ = false;
  }
  st.tier2_after = q.tier2.empty() ? st.tier2_before : q.tier2;
  if (q.dry_run) {  // a plan only: the loop goes on
    auto r = pipeline::RebalanceOpenStore(groups_.get(), so);
    if (r.ok()) st.report = *r;
    st.tier2_after = st.tier2_before;
    end(r.status());
    return;
  }
  const double rate_before = DecidedPerSecond(Clock::now());
  // The loop pauses once the batch it is in commits, for the plan and the journal.
  auto pause_start = Clock::now();
  if (!PauseLoop()) {
    end(FailedPrecondition("tier1-server: stopping"));
    return;
  }
  // The runs take the store's map and shard count from now on, and the move's throttle.
  auto moved = [&](uint32_t shards_after) {
    run_.map.clear();
    run_.given.erase("shards");
    run_.config.mutable_pipeline()->set_shards(shards_after);
    run_.config.mutable_pipeline()->set_move_max_mb_per_s(q.max_mb_per_s);
    if (q.min_batch_share > 0) run_.config.mutable_pipeline()->set_move_min_batch_share(q.min_batch_share);
  };
  // A move whose journal is written is the loop's runs' to make, over the move's servers.
  auto journaled = [&](const std::vector<std::string>& servers, const std::vector<uint32_t>& placement) -> bool {
    auto j = pipeline::ReadMoveJournal(*groups_);
    if (!j.ok()) return false;
    moved(j->shards_after());
    if (!servers.empty()) SetOpener(servers, placement);
    return true;
  };
  std::vector<std::string> servers;
  std::vector<uint32_t> placement;
  Status planned = [&]() -> Status {
    if (!st.tier2_before.empty()) {
      ASSIGN_OR_RETURN(const pb::StoreParams params, pipeline::ReadStoreParams(*groups_));
      const uint32_t before = params.shards(), after = q.shards == 0 ? before : q.shards;
      RETURN_IF_ERROR(CheckShardPlacement(st.tier2_before, before, st.tier2_after, after));
      pipeline::MoveServerPlacement(st.tier2_before, before, st.tier2_after, after, &servers, &placement);
      // Before the move's journal: a restart mid-move finds the move's servers.
      RETURN_IF_ERROR(pipeline::WriteShardServers(&state, {st.tier2_before, st.tier2_after}));
      so.open_shards = OpenerFor(servers, placement);
      spdlog::info("tier1-server: rebalancing {} -> {} shards over [{}]", before, after, JoinServers(servers));
    }
    auto r = pipeline::RebalanceOpenStore(groups_.get(), so);
    if (!r.ok()) return r.status();
    st.report = *r;
    return Status::Ok();
  }();
  const bool moving = journaled(servers, placement);
  if (!moving && !st.tier2_before.empty()) (void)pipeline::WriteShardServers(&state, {{}, st.tier2_before});
  st.paused_seconds += std::chrono::duration<double>(Clock::now() - pause_start).count();
  ResumeLoop();
  if (!planned.ok() || !moving) {
    // Failed before its journal, or nothing to move (failed after it: the loop's runs finish it).
    if (!moving) st.tier2_after = st.tier2_before;
    end(planned);
    return;
  }
  st.moving = true;
  {
    std::lock_guard lock(rebalance_mu_);
    rebalance_.moving = true;
  }
  // The loop's runs move the pages between their batches; the last one tells MoveEnded.
  const auto move_start = Clock::now();
  const uint64_t decided_before = Stats().totals.records;
  {
    std::unique_lock lock(rebalance_mu_);
    while (!move_ended_ && !stopping_.load()) rebalance_cv_.wait_for(lock, milliseconds(100));
    if (!move_ended_) {
      lock.unlock();
      end(Unavailable("tier1-server: stopping mid-move: the next start finishes the move"));
      return;
    }
    st.report.pages_moved = move_end_.pages;
    st.report.bytes_moved = move_end_.bytes;
    st.report.planned_bytes = move_end_.bytes;
    st.report.steps += move_end_.steps;
    st.report.generation_after = move_end_.generation;
  }
  const auto move_end = Clock::now();
  st.moving_seconds = std::chrono::duration<double>(move_end - move_start).count();
  st.records_decided_while_moving = Stats().totals.records - decided_before;
  st.decided_per_s_before = rate_before;
  {
    // Over the time batches were decided while the pages moved: from the move's start to the last
    // batch before its end (an input idle after that is not counted against the batches).
    std::lock_guard lock(stats_mu_);
    for (auto it = decided_.rbegin(); it != decided_.rend(); ++it) {
      if (it->first > move_end) continue;
      const double span = std::chrono::duration<double>(it->first - move_start).count();
      if (it->first >= move_start && span > 0 && it->second > decided_before) {
        st.decided_per_s_while_moving = static_cast<double>(it->second - decided_before) / span;
      }
      break;
    }
  }
  // The loop's next run opens the new map's shards on their servers (ApplyEndedMove).
  pause_start = Clock::now();
  if (PauseLoop()) {
    st.paused_seconds += std::chrono::duration<double>(Clock::now() - pause_start).count();
    ResumeLoop();
  }
  st.report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  end(Status::Ok());
}

bool Tier1Service::PauseLoop() {
  // pause_ and paused_ change under loop_mu_: no wake-up is lost between a wait's check and its sleep.
  std::unique_lock wait(loop_mu_);
  pause_ = true;
  loop_cv_.notify_all();
  loop_cv_.wait(wait, [&] { return paused_ || loop_done_; });
  if (!paused_) pause_ = false;
  return paused_;
}

void Tier1Service::ResumeLoop() {
  std::lock_guard lock(loop_mu_);
  pause_ = false;
  loop_cv_.notify_all();
}

void Tier1Service::ApplyEndedMove() {
  if (!move_end_pending_.exchange(false)) return;
  pipeline::StorePlacementState state(layout_, groups_.get());
  auto recorded = pipeline::ReadShardServers(state);
  std::lock_guard lock(rebalance_mu_);
  const uint32_t shards = move_end_.shards;
  run_.map.clear();
  run_.given.erase("shards");
  run_.config.mutable_pipeline()->set_shards(shards);
  if (tier2_.empty()) {
    health_->Reset({}, shards);
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
  health_->Reset(after, shards);
  spdlog::info("tier1-server: the move ended: {} shards over [{}]", shards, JoinServers(after));
}

void Tier1Service::MoveEnded(const pipeline::MoveOutcome& move) {
  {
    std::unique_lock lock(view_mu_);
    map_generation_ = move.generation;
  }
  std::lock_guard lock(rebalance_mu_);
  move_end_ = move;
  move_ended_ = true;
  move_end_pending_ = true;
  rebalance_cv_.notify_all();
}

double Tier1Service::DecidedPerSecond(Clock::time_point now) {
  std::lock_guard lock(stats_mu_);
  // Over the batches of the last minute (none, or one: 0).
  while (!decided_.empty() && now - decided_.front().first > std::chrono::seconds(60)) decided_.pop_front();
  if (decided_.size() < 2) return 0;
  const double span = std::chrono::duration<double>(decided_.back().first - decided_.front().first).count();
  return span > 0 ? static_cast<double>(decided_.back().second - decided_.front().second) / span : 0;
}

Tier1Service::~Tier1Service() {
  // An Open that failed never started the loop (and may have no log).
  if (loop_.joinable() && !Stop()) loop_.join();  // the deadline passed: wait for the loop all the same
  if (log_ != nullptr) log_->Close();
}

bool Tier1Service::Stop() {
  if (!stopping_.exchange(true)) {
    std::lock_guard lock(loop_mu_);  // a wait's check and its sleep see it or wake
    stop_loop_ = true;
    loop_cv_.notify_all();
  }
  // A rebalance stops at its next step (the store's journal finishes it on the next start).
  std::thread rebalance;
  {
    std::lock_guard lock(rebalance_mu_);
    rebalance.swap(rebalance_thread_);
  }
  if (rebalance.joinable()) rebalance.join();
  // The loop commits the batch it is in, reads no further and ends; past the deadline the caller
  // may exit anyway (what the log holds is durable: the next start continues it).
  const auto deadline = Clock::now() + milliseconds(o_.config.tier1_server().stop_deadline_ms());
  {
    std::unique_lock lock(loop_mu_);
    if (!loop_cv_.wait_until(lock, deadline, [&] { return loop_done_; })) return false;
  }
  if (loop_.joinable()) loop_.join();
  log_->Close();
  return true;
}

void Tier1Service::Loop() {
  const pb::Tier1ServerConfig& c = o_.config.tier1_server();
  uint32_t backoff = c.retry_min_ms();
  while (!stop_loop_) {
    ApplyEndedMove();  // a move the last run ended: the new map's servers from now on
    if (pause_) {
      // A rebalance holds the store between two runs.
      std::unique_lock wait(loop_mu_);
      paused_ = true;
      loop_cv_.notify_all();
      loop_cv_.wait(wait, [&] { return !pause_ || stop_loop_; });
      paused_ = false;
      continue;
    }
    // A new store's first run builds the map from the records the log holds: enough of them first.
    if (building_map_ && !WaitForMapSample()) continue;  // stopped, or paused for a rebalance
    {
      std::lock_guard lock(stats_mu_);
      ++stats_.runs;
      run_base_ = stats_.totals;
    }
    StatusOr<pipeline::PipelineSummary> run = pipeline::RunPipeline(run_);
    {
      std::lock_guard lock(stats_mu_);
      if (run.ok()) {
        failing_since_ = {};
        backoff = c.retry_min_ms();
        // The counters moved batch by batch (BatchDone); the store's totals are the run's end's.
        const pipeline::PipelineSummary& x = *run;
        pipeline::PipelineSummary& t = stats_.totals;
        t.groups = x.groups, t.multi_groups = x.multi_groups, t.pages = x.pages, t.shards = x.shards;
        if (stop_loop_ || pause_) continue;  // stopped, or paused for a rebalance
        run = FailedPrecondition("the batch loop's run ended without being stopped");
      }
      ++stats_.failed_runs;
      stats_.last_error = run.status().ToString();
      if (failing_since_ == Clock::time_point{}) failing_since_ = Clock::now();
    }
    spdlog::warn("tier1-server: the batch loop stopped: {}; starting again in {} ms", run.status().ToString(), backoff);
    std::unique_lock wait(loop_mu_);
    loop_cv_.wait_for(wait, milliseconds(backoff), [&] { return stop_loop_.load() || pause_.load(); });
    backoff = std::min(backoff * 2, c.retry_max_ms());
  }
  {
    std::lock_guard lock(loop_mu_);
    loop_done_ = true;
  }
  loop_cv_.notify_all();
}

bool Tier1Service::WaitForMapSample() {
  const pb::Tier1ServerConfig& c = o_.config.tier1_server();
  while (!stop_loop_ && !pause_) {
    const uint64_t durable = log_->durable_bytes();
    if (durable > 0) {
      if (map_wait_since_ == Clock::time_point{}) {
        map_wait_since_ = Clock::now();
        spdlog::info("tier1-server: store {} has no partition map: it is built from the first {} records ingested, or "
                     "those the log holds {} ms after the first",
                     layout_.dir, c.map_sample_records(), c.max_batch_delay_ms());
      }
      const uint64_t records = records_at_open_ + log_->stats().records;
      if (records >= c.map_sample_records() || Clock::now() - map_wait_since_ >= milliseconds(c.max_batch_delay_ms())) {
        return true;
      }
    }
    log_->WaitDurable(durable, Clock::now() + milliseconds(100));
  }
  return false;
}

uint64_t Tier1Service::ReadableBytes() { return log_->durable_bytes(); }

void Tier1Service::WaitReadable(uint64_t have, Clock::time_point until) {
  // Short waits, so that Stopping() is seen soon.
  log_->WaitDurable(have, std::min(until, Clock::now() + milliseconds(100)));
}

void Tier1Service::Opened(const View& view) {
  std::unique_lock lock(view_mu_);
  view_ = view;
  // The version the store serves: a move's old map until its flip.
  map_generation_ = view.placement->generation();
  threshold_ = view.threshold;
  signatures_ = std::make_unique<pipeline::ShardSetSignatures>(*view.placement, *view.shards);
  building_map_ = false;  // the store's map is written before its shards open
  std::lock_guard sl(stats_mu_);
  stats_.loop_running = true;
}

void Tier1Service::Closing() {
  {
    std::unique_lock lock(view_mu_);
    view_ = View();
    signatures_.reset();
  }
  std::lock_guard sl(stats_mu_);
  stats_.loop_running = false;
}

void Tier1Service::BatchDone(uint64_t, uint64_t end_offset, const pipeline::FeedCounters& run) {
  // The counters first: once the batch's pages are no longer pending, /metrics counts them.
  {
    std::lock_guard sl(stats_mu_);
    ++stats_.batches;
    failing_since_ = {};
    stats_.last_completeness = 1;
    const pipeline::PipelineSummary& b = run_base_;
    pipeline::PipelineSummary& t = stats_.totals;
    t.records = b.records + run.records, t.batches = b.batches + run.batches, t.new_pages = b.new_pages + run.new_pages;
    t.unchanged = b.unchanged + run.unchanged, t.changed = b.changed + run.changed, t.fast_path = b.fast_path + run.fast_path;
    t.tier2_pages = b.tier2_pages + run.tier2_pages, t.tier2_sends = b.tier2_sends + run.tier2_sends;
    t.redirects = b.redirects + run.redirects, t.merges = b.merges + run.merges, t.repairs = b.repairs + run.repairs;
    t.verifications = run.verifications, t.rejections = run.rejections;
    decided_.emplace_back(Clock::now(), t.records);
    if (decided_.size() > 4096) decided_.pop_front();
  }
  committed_ = end_offset;
  std::lock_guard lock(pending_mu_);
  auto end = pending_by_offset_.upper_bound(end_offset);
  for (auto it = pending_by_offset_.begin(); it != end; ++it) {
    auto p = pending_.find(it->second);
    if (p != pending_.end() && p->second <= end_offset) {
      pending_.erase(p);
      completeness_.erase(it->second);
    }
  }
  pending_by_offset_.erase(pending_by_offset_.begin(), end);
}

void Tier1Service::CompareIncomplete(uint64_t, std::span<const std::string> urls, std::span<const double> completeness) {
  double least = 1;
  {
    std::lock_guard lock(pending_mu_);
    for (size_t i = 0; i < urls.size(); ++i) {
      completeness_[urls[i]] = completeness[i];
      least = std::min(least, completeness[i]);
    }
  }
  std::lock_guard sl(stats_mu_);
  ++stats_.incomplete_batches;
  stats_.last_completeness = least;
}

Status Tier1Service::MarkPendingFromLog() {
  const uint64_t durable = log_->durable_bytes(), from = committed_.load();
  if (durable <= from) return Status::Ok();
  std::ifstream in(log_->path(), std::ios::binary);
  if (!in) return IoError("tier1-server: cannot read " + log_->path());
  in.seekg(static_cast<std::streamoff>(from));
  std::vector<std::pair<std::string, uint64_t>> urls;
  uint64_t at = from;
  CrawlRecord r;
  for (std::string line; at < durable && std::getline(in, line);) {
    at += line.size() + 1;
    // The log holds only lines checked when they were accepted; one that does not read now
    // is left to the batch loop, which reports it.
    if (ParseCrawlRecord(line, &r).ok()) urls.emplace_back(std::move(r.url), at);
  }
  MarkPending(urls);
  records_at_open_ = urls.size();
  if (!urls.empty()) {
    spdlog::info("tier1-server: {} records of the ingest log acknowledged but not committed: pending", urls.size());
  }
  return Status::Ok();
}

void Tier1Service::MarkPending(const std::vector<std::pair<std::string, uint64_t>>& urls) {
  std::lock_guard lock(pending_mu_);
  for (const auto& [url, end] : urls) {
    if (end <= committed_) continue;  // committed already (a fast loop)
    uint64_t& at = pending_[url];
    at = std::max(at, end);
    pending_by_offset_.emplace(end, url);
  }
}

Status Tier1Service::Ingest(std::string_view body, IngestDone done) {
  if (stopping_) return FailedPrecondition("tier1-server: stopping");
  const pb::Tier1ServerConfig& c = o_.config.tier1_server();
  const uint64_t durable = log_->durable_bytes(), committed = committed_.load();
  if (durable > committed && durable - committed > c.max_backlog_bytes()) {
    ++refused_;
    return ResourceExhausted("tier1-server: " + std::to_string(durable - committed) +
                             " bytes of accepted records wait for the batch loop");
  }
  // Every line is checked before any is accepted: a body is taken whole or not at all.
  std::string lines;
  auto urls = std::make_shared<std::vector<std::pair<std::string, uint64_t>>>();
  RETURN_IF_ERROR(CheckIngestBody(body, o_.config.reader().max_line_bytes(), &lines, urls.get()));
  if (urls->empty()) {
    done(Status::Ok(), 0);
    return Status::Ok();
  }
  const uint64_t size = lines.size(), n = urls->size();
  Status s = log_->Append(std::move(lines), n, [this, urls, size, n, done = std::move(done)](const Status& st, uint64_t end) {
    if (st.ok()) {
      for (auto& [url, off] : *urls) off += end - size;
      MarkPending(*urls);
    }
    done(st, st.ok() ? n : 0);
  });
  if (s.code() == StatusCode::kResourceExhausted) ++refused_;
  return s;
}

Status Tier1Service::Delete(const std::string& url, IngestDone done) {
  if (!IsAbsoluteHttpUrl(url)) return InvalidArgument("url: not an absolute http(s) URL: " + url);
  std::string line = "{\"url\":";
  AppendJsonString(&line, url);
  line += ",\"gone\":true}\n";
  return Ingest(line, std::move(done));
}

namespace {

// A source that has no signature at once, and remembers being asked.
class RefusingSource final : public tier1::SignatureSource {
 public:
  StatusOr<pb::PageSignature> Fetch(const std::string&, uint32_t) override {
    asked = true;
    return Unavailable("not waiting for a shard");
  }
  std::atomic<bool> asked{false};  // (fetches may come from two threads at once)
};

}  // namespace

StatusOr<PageStatus> Tier1Service::Query(const std::string& url) { return QueryWith(url, nullptr); }

std::optional<StatusOr<PageStatus>> Tier1Service::TryQuery(const std::string& url) {
  RefusingSource refusing;
  StatusOr<PageStatus> s = QueryWith(url, &refusing);
  if (refusing.asked) return std::nullopt;
  return s;
}

StatusOr<PageStatus> Tier1Service::QueryWith(const std::string& url, tier1::SignatureSource* source) {
  if (!IsAbsoluteHttpUrl(url)) return InvalidArgument("url: not an absolute http(s) URL: " + url);
  PageStatus out;
  {
    std::lock_guard lock(pending_mu_);
    if (auto it = pending_.find(url); it != pending_.end() && it->second > committed_.load()) {
      out.answer.status = tier1::StatusAnswer::kPending;
      if (auto c = completeness_.find(url); c != completeness_.end()) out.completeness = c->second;
    }
  }
  std::shared_lock lock(view_mu_);
  out.map_generation = map_generation_;
  if (out.answer.status == tier1::StatusAnswer::kPending) return out;
  RETURN_IF_ERROR(tier1::AnswerCommitted(*groups_, source != nullptr ? source : signatures_.get(), threshold_, url,
                                         nullptr, &out.answer));
  return out;
}

StatusOr<PageStatus> Tier1Service::Probe(std::string_view record) {
  CrawlRecord r;
  std::string_view line = record;
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  RETURN_IF_ERROR(ParseCrawlRecord(line, &r));
  if (r.is_redirect()) return Query(r.url);  // a redirect has no content to compare
  // Sign as the batch loop does: the visible text of HTML, words, shingles.
  thread_local std::unique_ptr<HtmlToText> extractor;
  if (extractor == nullptr) {
    ASSIGN_OR_RETURN(extractor, HtmlToText::Create());
  }
  std::string text;
  std::string_view body = r.body;
  if (r.is_html) {
    RETURN_IF_ERROR(extractor->Extract(r.body, &text));
    body = text;
  }
  PageStatus out;
  std::shared_lock lock(view_mu_);
  out.map_generation = map_generation_;
  if (view_.shards == nullptr) {
    out.completeness = 0;  // no shard to ask while the loop is down: Tier 1's knowledge only
  }
  const SignerOptions& so = view_.shards != nullptr ? view_.signer : o_.signer;
  PageFeatures f;
  Signer(so).Sign(body, &f);
  const pb::PageSignature sig = ToProto(r.url, f, so);
  // The stored version: answered from the page's group, verified on the content given.
  pb::Tier1Page page;
  if (groups_->GetPage(r.url, &page).ok() && page.crawled() && page.content_digest() == sig.content_digest()) {
    RETURN_IF_ERROR(tier1::AnswerCommitted(*groups_, signatures_.get(), threshold_, r.url, &sig, &out.answer));
    out.completeness = 1;
    return out;
  }
  if (view_.shards == nullptr || f.shingles.empty()) {
    out.answer.status = tier1::StatusAnswer::kUnique;  // no words, or no shard: nothing found similar
    return out;
  }
  const auto v = view_.placement->map().VectorOf(f);
  std::vector<uint32_t> routed;
  // During a move, the served map's shards hold every page, current (pipeline/store_move.h).
  view_.placement->Route(v, &routed);
  double total = 0, answered = 0;
  const tier2::ResidentMatch* best = nullptr;
  std::vector<tier2::CompareResult> results(routed.size());
  const tier2::ShardPage probe{&sig, false, /*validated=*/true};
  for (size_t i = 0; i < routed.size(); ++i) {
    const double w = std::max<double>(1, static_cast<double>(view_.shards->Stats(routed[i]).resident_pages));
    total += w;
    // Under tier2.max_matches_per_page a shard answers the first matches it verified, one of each
    // distinct content first: the best of those, whose group is the page's as long as they are
    // one group (tier2/README.md: Copies).
    if (!view_.shards->Compare(routed[i], std::span(&probe, 1), view_.threshold, {}, &results[i]).ok()) continue;
    answered += w;
    for (const auto& m : results[i].resident) {
      if (m.url == r.url) continue;  // its own stored version
      if (best == nullptr || m.similarity > best->similarity || (m.similarity == best->similarity && m.url < best->url)) best = &m;
    }
  }
  out.completeness = total > 0 ? answered / total : 1;
  if (best == nullptr) {
    out.answer.status = tier1::StatusAnswer::kUnique;
    return out;
  }
  // The best match's group, and the page's similarity to that group's winner.
  tier1::StatusAnswer of_match;
  RETURN_IF_ERROR(tier1::AnswerCommitted(*groups_, signatures_.get(), threshold_, best->url, nullptr, &of_match));
  out.answer.group = of_match.group;
  out.answer.winner_url = of_match.winner_url;
  out.answer.group_members = of_match.group_members;
  pb::Tier1Page winner;
  StatusOr<pb::PageSignature> wsig = NotFound("no winner");
  if (!of_match.winner_url.empty() && groups_->GetPage(of_match.winner_url, &winner).ok() && winner.has_signature()) {
    wsig = signatures_->Fetch(of_match.winner_url, winner.home_cell());
  }
  if (!wsig.ok()) {
    out.answer.status = tier1::StatusAnswer::kDuplicate;  // of its best match's group; not verified
    return out;
  }
  const double sim = Jaccard(std::span<const uint64_t>(sig.shingles().data(), static_cast<size_t>(sig.shingles_size())),
                             std::span<const uint64_t>(wsig->shingles().data(), static_cast<size_t>(wsig->shingles_size())));
  out.answer.verified = true;
  out.answer.similarity_to_winner = sim;
  out.answer.status = sim >= threshold_ - 1e-9 ? tier1::StatusAnswer::kDuplicate : tier1::StatusAnswer::kUnique;
  if (out.answer.status == tier1::StatusAnswer::kDuplicate) {
    out.answer.duplicate_of = out.answer.winner_url;  // content not stored: compared with the winner only
    out.answer.similarity_to_duplicate_of = sim;
  }
  return out;
}

StatusOr<GroupView> Tier1Service::Group(uint64_t id) {
  pb::Tier1Group g;
  RETURN_IF_ERROR(groups_->GetGroup(id, &g));
  GroupView v;
  v.id = id;
  v.winner = g.winner();
  v.rejections = g.rejections();
  for (const auto& mw : g.market_winners()) v.market_winners.emplace_back(mw.market(), tier1::MarketWinnerUrl(g, mw));
  RETURN_IF_ERROR(groups_->Members(id, &v.members));
  return v;
}

Tier1ServiceStats Tier1Service::Stats() {
  Tier1ServiceStats s;
  {
    std::lock_guard lock(stats_mu_);
    s = stats_;
  }
  const IngestLog::Stats ls = log_->stats();
  s.log_bytes = log_->durable_bytes();
  s.committed_bytes = committed_.load();
  s.unsynced_bytes = ls.pending_bytes;
  s.accepted_records = ls.records;
  s.refused_ingest = refused_.load() + ls.refused;
  std::lock_guard lock(pending_mu_);
  s.pending_urls = pending_.size();
  return s;
}

Status Tier1Service::Health() {
  if (Status log = log_->failure(); !log.ok()) {
    return Unavailable("the ingest log failed (nothing more is accepted; restart the server): " + log.message());
  }
  std::lock_guard lock(stats_mu_);
  if (failing_since_ != Clock::time_point{} && Clock::now() - failing_since_ > std::chrono::seconds(30)) {
    return Unavailable("the batch loop has been failing for over 30 s: " + stats_.last_error);
  }
  return Status::Ok();
}

}  // namespace neardup::cluster
