// Tier1Service: the Tier 1 server apart from HTTP. It owns the store's group store and the ingest
// log (cluster/tier1_server/ingest_log.h), runs the embedded pipeline's batch loop over that log (a run fed by
// it, pipeline/ingest_feed.h) on a thread of its own, and answers the crawlers' questions.
//
//   ingest:  Ingest(body, done)  - every line of a JSON Lines body checked (the crawl record
//            format); all are appended to the log, or none; `done` once they are durable: the
//            acknowledgement. Each accepted URL is `pending` until the batch holding its record
//            commits.
//   status:  Query(url)          - from committed records (tier1::AnswerCommitted), or pending,
//            with the completeness of the last Tier 2 comparison of its batch when that was partial.
//   groups:  Group(id)           - members, winner, per-market winners.
//   delete:  Delete(url, done)   - a `gone` record through the same log.
//
// The batch loop: RunPipeline with the log as a followed input, Tier 2 through `tier2` servers
// (cluster/tier2_client/remote_shard_set.h) or in this process. A run that fails (a Tier 2 server down or past
// its deadline) is started again after a backoff (doubling, retry_min_ms..retry_max_ms): the
// restart redoes what a shard missed, so nothing accepted is dropped and the groups end as if
// nothing failed. Meanwhile status queries are answered from the committed records.
//
// A new store given no map (tier1_server.map empty) builds its own: it takes ingest at once (each
// record pending), and the batch loop's first run waits until the log holds
// tier1_server.map_sample_records records, or max_batch_delay_ms passed since the first, then
// samples the log's records as `neardup run` samples its input (pipeline/pipeline.h: the same
// code), writes the map as the store's map.pb (durably, before the parameters that name it) and
// decides them. From then on it is an ordinary store. A start before the map was written builds it
// then; one after keeps it (cluster/tier1_server/README.md, A new store's map).
//
// Backpressure: Ingest refuses with ResourceExhausted when the log's unsynced bytes or its backlog
// (durable, not yet committed) pass their bounds; the caller answers 429.
//
// Thread safety: every public method may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cluster/tier1_server/ingest_log.h"
#include "cluster/tier1_server/shard_rebalancer.h"
#include "cluster/tier2_client/shard_health.h"
#include "common/status.h"
#include "pipeline/pipeline.h"
#include "proto/config.pb.h"
#include "tier1/tier1.h"

namespace neardup::cluster {

struct Tier1ServiceOptions {
  pb::NeardupConfig config;  // defaults filled; tier1_server: store, map, tier2, limits, timing
  double threshold = ConfigDefaults().baseline().threshold();
  SignerOptions signer;
  pipeline::GivenParams given;
  // The shard count of the map a new store builds itself (no tier1_server.map); 0: pipeline.shards.
  // A store that has a map, or is given one, keeps its shard count.
  uint32_t new_store_shards = 0;
  uint32_t batch_pages = ConfigDefaults().tier2().batch_pages();
  // Called after each durable step of a rebalance (its journal, then each step the batch loop's
  // runs take of the move: StoreRebalanceOptions::on_step, PipelineOptions::move_on_step); false
  // stops it there (the rebalance fails before its journal; a run fails, and the next one goes
  // on with the move). For crash tests; may be empty.
  std::function<bool(uint64_t step)> rebalance_on_step;
};

struct PageStatus {
  tier1::StatusAnswer answer;
  // 1: the answer rests on every shard; below: the pending page's last comparison reached only
  // this share of its routed shards' pages (it is compared again when they are back).
  double completeness = 1;
  uint64_t map_generation = 0;
};

struct GroupView {
  uint64_t id = 0;
  std::string winner;
  std::vector<std::pair<std::string, std::string>> market_winners;  // market, url
  std::vector<std::string> members;
  uint64_t rejections = 0;
};

struct Tier1ServiceStats {
  uint64_t log_bytes = 0, committed_bytes = 0, unsynced_bytes = 0;
  uint64_t accepted_records = 0, refused_ingest = 0, pending_urls = 0;
  uint64_t batches = 0, runs = 0, failed_runs = 0;
  bool loop_running = false;          // a run is open (its shards answer)
  std::string last_error;             // of the last failed run
  // The batch loop's counts over the service's life, up to its last committed batch (records,
  // pages by route, Tier 2 sends, merges, repairs), the store's verification counters, and its
  // groups and pages at the last run's end.
  pipeline::PipelineSummary totals;
  double last_completeness = 1;       // of the last partial comparison (1: none since the last commit)
  uint64_t incomplete_batches = 0;
};

class Tier1Service : public pipeline::IngestFeed, private RebalanceLoop {
 public:
  // Opens the store (creating it with tier1_server.map when new, or building its map from its
  // first records when none is given: above), the ingest log, and starts the batch loop.
  // InvalidArgument without a store; IoError/Corruption from the store or the log;
  // FailedPrecondition for parameters the store disagrees with.
  static StatusOr<std::unique_ptr<Tier1Service>> Open(const Tier1ServiceOptions& options);
  // Stop() first.
  ~Tier1Service() override;

  using IngestDone = std::function<void(const Status& status, uint64_t accepted)>;
  // Checks and queues a JSON Lines body. Refused at once (returned; `done` not called):
  // InvalidArgument naming the first bad line (1-based) and why, nothing of the body accepted;
  // ResourceExhausted past a backpressure bound; FailedPrecondition once stopping; IoError after
  // the log failed. Else `done` runs once (on the log's thread) with Ok and the records accepted
  // when durable, or the write's error.
  Status Ingest(std::string_view body, IngestDone done);
  Status Delete(const std::string& url, IngestDone done);

  // InvalidArgument for a URL that is not an absolute http(s) URL; IoError/Corruption from the store.
  // A loser whose cached verification is stale (its group's winner changed since) is verified
  // against signatures fetched from its shards, which may take up to tier2_deadline_ms when a
  // shard hangs.
  StatusOr<PageStatus> Query(const std::string& url);
  // As Query, but never waits for a shard: nullopt when the answer needs a signature from one (a
  // stale verification); the caller then asks Query where waiting harms no one (off a network
  // thread). Most answers need none.
  std::optional<StatusOr<PageStatus>> TryQuery(const std::string& url);
  // The crawler's question before it stores a page: what the page's status would be with this
  // content, from the committed state, changing nothing. Unchanged content (the stored version's
  // digest) is answered as Query, verified on the content given. Otherwise the page is compared on
  // the Tier 2 shards it routes to: its best match's group and winner, duplicate when it is as
  // similar as the threshold to that winner, else unique; completeness is the share of the routed
  // shards' pages that answered (0 while the batch loop is down and no shard can be asked).
  // InvalidArgument for a record that does not parse (one JSON line, the crawl record format).
  StatusOr<PageStatus> Probe(std::string_view record);
  // NotFound for an unknown group.
  StatusOr<GroupView> Group(uint64_t id);
  Tier1ServiceStats Stats();
  // Each Tier 2 shard as the batch loop last saw it (cluster/tier2_client/shard_health.h); never waits for one.
  std::vector<ShardState> Shards() const { return health_->Snapshot(); }
  IngestLog::Stats LogStats() const { return log_->stats(); }
  // Fails (a reason) when the loop cannot make progress for long, or the log failed.
  Status Health();
  // True while a new store's map is not built yet (its records answer pending).
  bool BuildingMap() const { return building_map_.load(std::memory_order_relaxed); }

  // Rebalances the store's shards on a thread of its own (shard_rebalancer.h; the plan and the move
  // are pipeline/rebalance_store.h's and pipeline/store_move.h's): the batch loop pauses once the
  // batch it is in commits, while the plan and the move's journal are written; then the loop's
  // runs open the shards of both maps over the Tier 2 servers before and after (a server added or
  // drained as `request.tier2` says) and move the pages between their batches, deciding ingest
  // meanwhile with the batches' share of the loop's time (request.min_batch_share) and the copy
  // under request.max_mb_per_s; once the move ended the loop pauses again to open the new map's
  // servers. Status queries are answered throughout. The server list is recorded in the store
  // (meta row "tier2_servers"): a later start must place every shard on the same server. A
  // service whose shards are in this process moves them the same way.
  // RebalanceState() follows it. Errors (nothing started): FailedPrecondition while one runs,
  // before a new store's map is built, or once stopping; InvalidArgument for bad options
  // (CheckRebalanceRequest), or a server list for shards in this process. A server list that would
  // move a shard between servers fails the rebalance (its state says why) and changes nothing.
  // Stop() lets a running move stop at its next step: the store's journal finishes it on the next
  // start.
  Status StartRebalance(ClusterRebalanceRequest request);
  ClusterRebalanceState RebalanceState();

  // Stops taking ingest and stops the batch loop at its next record or wait (the batch it is in
  // commits); the log is closed (everything acknowledged stays in it for the next start). False
  // when the loop did not end within stop_deadline_ms: the caller may exit all the same (the
  // destructor waits for it).
  bool Stop();

  // IngestFeed (the batch loop's side).
  uint64_t ReadableBytes() override;
  void WaitReadable(uint64_t have, std::chrono::steady_clock::time_point until) override;
  // True to end the run: the service stops, or a rebalance pauses the loop.
  bool Stopping() override { return stopping_.load(std::memory_order_relaxed) || pause_.load(std::memory_order_relaxed); }
  void Opened(const View& view) override;
  void Closing() override;
  void BatchDone(uint64_t batch, uint64_t end_offset, const pipeline::FeedCounters& run) override;
  void CompareIncomplete(uint64_t batch, std::span<const std::string> urls, std::span<const double> completeness) override;
  void MoveEnded(const pipeline::MoveOutcome& move) override;

 private:
  explicit Tier1Service(Tier1ServiceOptions options);
  void Loop();
  // Before a new store's first run (building_map_): waits until the log holds
  // map_sample_records records, or max_batch_delay_ms passed since its first; false when the loop
  // is to stop or pause instead. On the loop's thread.
  bool WaitForMapSample();
  // RebalanceLoop (the rebalance's side).
  // The loop pauses once the batch it is in commits (false: it ended instead), and runs again.
  bool PauseLoop() override;
  void ResumeLoop() override;
  bool ServiceStopping() const override { return stopping_.load(); }
  uint64_t AcceptedRecords() override { return log_->stats().records; }
  uint64_t DecidedRecords() override;
  double DecidedPerSecond(std::chrono::steady_clock::time_point now) override;
  double DecidedPerSecondBetween(std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to,
                                 uint64_t decided_before) override;
  // Query with signatures from `source` (null: the open run's shards).
  StatusOr<PageStatus> QueryWith(const std::string& url, tier1::SignatureSource* source);
  // Marks the URLs of an acknowledged append pending, each up to its record's end offset.
  // Marks the log's records past the committed offset pending (at open, after a restart).
  Status MarkPendingFromLog();
  void MarkPending(const std::vector<std::pair<std::string, uint64_t>>& urls);

  const Tier1ServiceOptions o_;
  pipeline::StoreLayout layout_;
  std::unique_ptr<tier1::GroupStore> groups_;
  std::unique_ptr<IngestLog> log_;
  pipeline::PipelineOptions run_;
  std::unique_ptr<ShardHealth> health_;
  uint64_t map_generation_ = 0;
  // A new store's map is not built yet (Open; cleared once a run opened the store's map).
  std::atomic<bool> building_map_{false};
  uint64_t records_at_open_ = 0;           // records of the log past the committed ones, at Open
  std::chrono::steady_clock::time_point map_wait_since_{};  // the first record seen; loop's thread

  std::atomic<bool> stopping_{false};
  std::atomic<bool> stop_loop_{false};   // the loop ends after its current run
  std::atomic<uint64_t> committed_{0};   // log bytes committed
  std::atomic<uint64_t> refused_{0};

  // The open run's view (Opened..Closing): readers hold view_mu_ shared.
  std::shared_mutex view_mu_;
  View view_;  // guarded by view_mu_
  double threshold_ = o_.threshold;  // the store's, once a run opened it; guarded by view_mu_
  std::unique_ptr<pipeline::ShardSetSignatures> signatures_;  // guarded by view_mu_

  // Pending URLs: each with the end offset of its latest acknowledged record; ordered by offset
  // to drop them as batches commit. Completeness of pages of a partially compared batch.
  std::mutex pending_mu_;
  std::unordered_map<std::string, uint64_t> pending_;         // guarded by pending_mu_
  std::multimap<uint64_t, std::string> pending_by_offset_;    // guarded by pending_mu_
  std::unordered_map<std::string, double> completeness_;      // guarded by pending_mu_

  std::mutex stats_mu_;
  Tier1ServiceStats stats_;  // guarded by stats_mu_
  pipeline::PipelineSummary run_base_;  // stats_.totals as the batch loop's run began; guarded by stats_mu_
  std::chrono::steady_clock::time_point failing_since_{};  // guarded by stats_mu_ (epoch: not failing)
  // (commit time, totals.records) of recent batches (DecidedPerSecond); guarded by stats_mu_.
  std::deque<std::pair<std::chrono::steady_clock::time_point, uint64_t>> decided_;

  std::mutex loop_mu_;
  std::condition_variable loop_cv_;  // the backoff wait; stop; the loop's end; pause and resume
  bool loop_done_ = false;           // guarded by loop_mu_
  bool paused_ = false;              // the loop waits for pause_ to clear; guarded by loop_mu_
  std::atomic<bool> pause_{false};   // a rebalance asks the loop to pause between runs
  std::thread loop_;

  // Where the shards live and their rebalance; changes run_ only while the loop is paused or
  // between its runs. Declared last: destroyed first, while what it points at lives.
  std::unique_ptr<ShardRebalancer> rebalancer_;
};

}  // namespace neardup::cluster
