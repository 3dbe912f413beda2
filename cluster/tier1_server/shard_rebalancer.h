// ShardRebalancer: where a Tier 1 server's shards live, and their rebalance while the service's
// batch loop runs (Tier1Service owns one). It decides which Tier 2 servers the loop's runs open
// (at start, after a move, mid-move after a crash) and drives a rebalance on a thread of its own:
//
//   1. the loop pauses once the batch it is in commits (RebalanceLoop::PauseLoop); the plan and the
//      move's journal are written (pipeline/rebalance_store.h with defer_move), the store records
//      the servers before and after, and the runs' options take the new shard count, the move's
//      throttle and a shard opener over the union of both server lists; the loop resumes;
//   2. the loop's runs move the pages between their batches (pipeline/store_move.h); the run that
//      ends the move calls MoveEnded;
//   3. the loop pauses again, and between its runs ApplyEndedMove gives them the new map's servers
//      (recorded in the store).
//
//   ShardRebalancer r({.layout = layout, .groups = groups, .run = &run, .health = health,
//                      .server = config.tier1_server()}, &loop);
//   RETURN_IF_ERROR(r.PlaceShards(configured_servers));   // at open, before the loop runs
//   RETURN_IF_ERROR(r.Start(request));                    // State() follows it
//
// Ownership: the store, the run's options, the shards' health and the loop are the service's,
// and outlive the rebalancer. The run's options are changed only while the loop is paused, or on
// its thread between two runs (ApplyEndedMove), or before it starts (PlaceShards).
//
// Thread safety: Start, State, Join and MoveEnded may be called from any thread; ApplyEndedMove
// from the loop's thread between runs; PlaceShards before the loop starts.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cluster/tier2_client/shard_health.h"
#include "common/status.h"
#include "pipeline/ingest_feed.h"
#include "pipeline/pipeline.h"
#include "pipeline/rebalance_store.h"
#include "pipeline/store.h"
#include "proto/config.pb.h"
#include "tier1/group_store.h"

namespace neardup::cluster {

// A rebalance of the store's Tier 2 shards while the service runs (Tier1Service::StartRebalance).
struct ClusterRebalanceRequest {
  uint32_t shards = 0;             // shard count after the move; 0: as many as now
  double max_move = 0.1;           // as pipeline::StoreRebalanceOptions
  double max_mb_per_s = 0;         // the copy's rate limit (0: none)
  // Share of the batch loop's time its batches keep while the move runs (0: pipeline.move_min_batch_share).
  double min_batch_share = 0;
  bool dry_run = false;
  // The Tier 2 servers (host:port) after the move, in order; empty: the ones the service uses now.
  // A server added takes the new shards placed on it; a server dropped must hold only drained
  // shards. A shard that exists before and after must stay on its server (moves carry cells
  // between shards; they do not carry shards between servers).
  std::vector<std::string> tier2;
};

struct ClusterRebalanceState {
  enum State { kNone, kRunning, kDone, kFailed };
  State state = kNone;              // of the last rebalance started
  std::string error;                // kFailed
  pipeline::StoreRebalanceReport report;  // kDone
  std::vector<std::string> tier2_before, tier2_after;
  bool moving = false;              // the journal is written: the batch loop's runs move the pages
  double seconds = 0;               // from the request to the end
  // The batch loop paused twice, each time once the batch it was in committed: for the plan and
  // the journal, and to open the new map's servers after the move; how long, in all.
  double paused_seconds = 0;
  // The move itself, made by the loop's runs between their batches: how long, the records they
  // decided meanwhile, and the loop's decided records per second over the minute before the
  // request (its first to last batch) and while the move ran (from its start to the last batch
  // decided before its end; 0 when nothing was decided).
  double moving_seconds = 0;
  uint64_t records_decided_while_moving = 0;
  double decided_per_s_before = 0, decided_per_s_while_moving = 0;
  uint64_t records_accepted = 0;    // ingest records the log accepted from the request to the end
};

// The state as one JSON object: "state" (none, running, done, failed), "error", the report's fields
// (pipeline::RebalanceReportJson) when done, tier2_before/after, moving, rebalance_seconds,
// paused_seconds, moving_seconds, records_accepted, records_decided_while_moving,
// decided_per_s_before, decided_per_s_while_moving.
std::string ClusterRebalanceJson(const ClusterRebalanceState& s);

// Whether `after` keeps every shard below min(shards_before, shards_after) on the server `before`
// places it on (shard m on list[m % list.size()]); InvalidArgument naming the first shard that
// would change server, or an empty list.
Status CheckShardPlacement(const std::vector<std::string>& before, uint32_t shards_before,
                           const std::vector<std::string>& after, uint32_t shards_after);

// A request's own values: InvalidArgument for max_move outside [0, 1], a negative max_mb_per_s,
// min_batch_share neither 0 nor in [0.05, 1], shards over 1024, or a server that is not host:port.
Status CheckRebalanceRequest(const ClusterRebalanceRequest& request);

// What the rebalance needs of the service whose batch loop it changes (Tier1Service).
class RebalanceLoop {
 public:
  virtual ~RebalanceLoop() = default;
  // Pauses the batch loop once the batch it is in commits, between two runs: true once paused,
  // false when the loop ended instead. ResumeLoop lets a paused loop run again.
  virtual bool PauseLoop() = 0;
  virtual void ResumeLoop() = 0;
  // True once the service stops (a rebalance stops at its next step).
  virtual bool ServiceStopping() const = 0;
  // The records the ingest log accepted, and those the batch loop decided, so far.
  virtual uint64_t AcceptedRecords() = 0;
  virtual uint64_t DecidedRecords() = 0;
  // The loop's decided records per second over the last minute's batches before `now` (0 with
  // fewer than two).
  virtual double DecidedPerSecond(std::chrono::steady_clock::time_point now) = 0;
  // Its records per second past `decided_before`, from `from` to its last batch decided by `to`
  // (0 when none was decided in between).
  virtual double DecidedPerSecondBetween(std::chrono::steady_clock::time_point from,
                                         std::chrono::steady_clock::time_point to, uint64_t decided_before) = 0;
};

struct ShardRebalancerOptions {
  pipeline::StoreLayout layout;
  tier1::GroupStore* groups = nullptr;       // the store's; not owned
  pipeline::PipelineOptions* run = nullptr;  // the batch loop's run options; not owned
  ShardHealth* health = nullptr;             // the loop's shards as it saw them; not owned
  pb::Tier1ServerConfig server;              // tier2_deadline_ms, tier2_tls
  // Called after each durable step of a rebalance's journal (StoreRebalanceOptions::on_step);
  // false stops it there. For crash tests; may be empty.
  std::function<bool(uint64_t step)> on_step;
};

class ShardRebalancer {
 public:
  ShardRebalancer(ShardRebalancerOptions options, RebalanceLoop* loop);
  // Join()s a running rebalance: the service stops first (ServiceStopping), so that it ends.
  ~ShardRebalancer();

  // At open: the loop's Tier 2 servers (none: the shards in this process), `configured` checked
  // against those the store records (a store stopped mid-rebalance goes on with the move's
  // servers), and recorded. FailedPrecondition when a shard would be sought on another server than
  // the one that holds it; the store's errors.
  Status PlaceShards(std::vector<std::string> configured);

  // Starts a rebalance on a thread of its own (above); the caller checked the request
  // (CheckRebalanceRequest). InvalidArgument for a server list when the shards are in this
  // process; FailedPrecondition while one runs. A failure after the start is its state's.
  Status Start(ClusterRebalanceRequest request);
  ClusterRebalanceState State();
  // Waits for the rebalance running, if any.
  void Join();

  // A run ended the move (pipeline::IngestFeed::MoveEnded).
  void MoveEnded(const pipeline::MoveOutcome& move);
  // On the loop's thread between two runs: after a move a run ended, the runs take the new map's
  // shard count and servers (recorded in the store). Does nothing otherwise.
  void ApplyEndedMove();

 private:
  using Clock = std::chrono::steady_clock;

  // A shard opener over `servers` with `placement` (RemoteShardSetOptions; each open recorded in
  // the health), or in this process when `servers` is empty.
  pipeline::ShardSetOpener OpenerFor(std::vector<std::string> servers, std::vector<uint32_t> placement);
  // The loop's shard opener: OpenerFor's, its calls recorded in the health.
  void SetOpener(std::vector<std::string> servers, std::vector<uint32_t> placement);
  // A store stopped mid-move (PlaceShards): its runs finish the move over the move's servers.
  Status ResumeMove(const pipeline::ShardServers& recorded, const pb::MoveJournal& journal,
                    const std::vector<std::string>& configured);

  void Rebalance(ClusterRebalanceRequest request);
  // With the loop paused: the plan, the servers recorded and the journal; *moving when the journal
  // is written (the runs' options then make the move). Errors: the plan's.
  Status Plan(const ClusterRebalanceRequest& request, pipeline::StoreRebalanceOptions so, ClusterRebalanceState* st,
              bool* moving);
  // The runs' options for a move to `shards_after` shards with the request's throttle.
  void TakeMove(const ClusterRebalanceRequest& request, uint32_t shards_after);
  // Waits until a run ended the move; its figures into *st. Unavailable when the service stops first.
  Status AwaitMove(double rate_before, ClusterRebalanceState* st);

  const ShardRebalancerOptions o_;
  RebalanceLoop* const loop_;

  std::mutex mu_;
  // The Tier 2 servers the loop's runs use: changed only while the loop is paused, or between its
  // runs; guarded by mu_ (but at PlaceShards).
  std::vector<std::string> tier2_;
  ClusterRebalanceState state_;       // guarded by mu_
  std::thread thread_;                // guarded by mu_
  std::condition_variable move_cv_;   // MoveEnded
  pipeline::MoveOutcome move_end_;    // the last move a run ended; guarded by mu_
  bool move_ended_ = false;           // since the rebalance began; guarded by mu_
  std::atomic<bool> move_end_pending_{false};  // ApplyEndedMove has yet to take it
};

}  // namespace neardup::cluster
