#include "pipeline/pipeline.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <time.h>
#include <unistd.h>

#include "common/json_write.h"
#include "common/progress.h"
#include "common/thread_priority.h"
#include "common/worker_pool.h"
#include "document/crawl_signer.h"
#include "partitioner/crawl_sample.h"
#include "partitioner/map_builder.h"
#include "partitioner/partition_map.h"
#include "pipeline/shard_set.h"
#include "pipeline/store.h"
#include "storage/file_env.h"
#include "storage/leveldb_threads.h"
#include "tier1/tier1.h"
#include "tier2/commit_file.h"
#include "tier2/prefix_filter.h"
#include "tier2/shard.h"

namespace neardup::pipeline {
namespace {

using tier1::ApplyOutcome;
using tier1::GroupStore;
using tier1::PageUpdate;
using tier1::RepairReport;
using tier1::Route;
using tier1::RouteName;
using tier1::StatusAnswer;
using tier1::StatusName;
using tier1::Tier1;
using tier1::Tier1OptionsFromConfig;
using tier1::Tier2Matches;

namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;

double Since(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

// CPU time of the calling thread (not of the shard threads it starts).
double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Tier 1 reads signatures from the shard that owns the page's home cell. While the shards store a
// committed batch (in the background), Tier 1 goes on with the next steps and must already see
// that batch as stored: its writes are an overlay, consulted first, with what each shard will
// hold for those URLs once it is done (a signature, or nothing when the page was removed).
// Used by the tiers' thread only.
class ShardSignatures : public ShardSetSignatures {
 public:
  using ShardSetSignatures::ShardSetSignatures;
  StatusOr<pb::PageSignature> Fetch(const std::string& url, uint32_t home_cell) override {
    if (auto it = overlay_.find(url); it != overlay_.end() && it->second.cell == home_cell) {
      if (it->second.signature == nullptr) return NotFound("shard: " + url + " was removed from cell " + std::to_string(home_cell));
      return *it->second.signature;
    }
    return ShardSetSignatures::Fetch(url, home_cell);
  }
  // What an in-flight shard write leaves for `url` in `cell` (signature not owned; null: removed).
  void Overlay(std::string_view url, uint32_t cell, const pb::PageSignature* signature) {
    overlay_.insert_or_assign(url, Pending{cell, signature});
  }
  void ClearOverlay() { overlay_.clear(); }

 private:
  struct Pending { uint32_t cell; const pb::PageSignature* signature; };
  std::unordered_map<std::string_view, Pending> overlay_;  // keys point into the in-flight batch
};

// A batch of signed records on its way from the reader to the tiers.
struct Batch {
  uint64_t number = 0;          // 1-based, as committed
  uint64_t first_record = 0;    // 0-based input record index
  bool redo = false;            // only step 5 for shards that missed it, and its status lines
  // Where its last record's line ends in the input, and the XXH3-128 of the input up to there.
  uint64_t end_offset = 0, digest_lo = 0, digest_hi = 0;
  std::vector<CrawlRecord> records;
  std::vector<pb::PageSignature> signatures;  // per record (empty for redirects); a Signer made them
  std::vector<uint32_t> cell;                 // home cell per content record
  std::vector<std::vector<uint32_t>> machines; // shards to compare on
};

// A bounded hand-off between the reading thread and the tiers' thread.
class BatchQueue {
 public:
  explicit BatchQueue(size_t capacity) : capacity_(capacity) {}
  bool Push(std::unique_ptr<Batch> b) {
    std::unique_lock lock(mu_);
    not_full_.wait(lock, [&] { return q_.size() < capacity_ || closed_; });
    if (closed_) return false;
    q_.push_back(std::move(b));
    not_empty_.notify_one();
    return true;
  }
  std::unique_ptr<Batch> Pop() {
    std::unique_lock lock(mu_);
    not_empty_.wait(lock, [&] { return !q_.empty() || closed_; });
    if (q_.empty()) return nullptr;
    auto b = std::move(q_.front());
    q_.pop_front();
    not_full_.notify_one();
    return b;
  }
  void Close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable not_empty_, not_full_;
  std::deque<std::unique_ptr<Batch>> q_;
  size_t capacity_;
  bool closed_ = false;
};

// Runs fn(s) for every shard, each on a thread of `pool` (one per shard), and returns the first
// error; adds each call's wall time to (*seconds)[s] when seconds is given.
template <typename Fn>
Status ForEachShard(WorkerPool& pool, Fn&& fn, std::vector<double>* seconds = nullptr) {
  std::vector<Status> st(static_cast<size_t>(pool.threads()));
  pool.Run([&](int w) {
    const size_t s = static_cast<size_t>(w);
    const auto t0 = SteadyClock::now();
    st[s] = fn(s);
    if (seconds != nullptr) (*seconds)[s] += Since(t0);
  });
  for (Status& s : st) RETURN_IF_ERROR(s);
  return Status::Ok();
}

// A thread that runs one Status-returning job at a time in the background: Start hands it a job,
// Wait waits for it and returns its status. The thread stays for the next job (the pipeline starts
// two jobs a batch). Start must not be called while a job is running; Start and Wait are called
// from one thread.
class BackgroundJob {
 public:
  explicit BackgroundJob(const char* name)
      : thread_([this, name] {
          NameThisThread(name);
          Loop();
        }) {}
  BackgroundJob(const BackgroundJob&) = delete;
  BackgroundJob& operator=(const BackgroundJob&) = delete;
  ~BackgroundJob() {
    (void)Wait();
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Start(std::function<Status()> job) {
    std::lock_guard lock(mu_);
    job_ = std::move(job);
    running_ = true;
    started_ = true;
    cv_.notify_all();
  }
  // A job was started and not yet waited for (it may have finished).
  bool started() const { return started_; }
  Status Wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !running_; });
    started_ = false;
    Status s = std::move(status_);
    status_ = Status::Ok();
    return s;
  }

 private:
  void Loop() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || job_ != nullptr; });
      if (job_ == nullptr) return;  // stopping
      std::function<Status()> job = std::move(job_);
      job_ = nullptr;
      lock.unlock();
      Status s = job();
      job = nullptr;  // what the job holds goes before Wait returns
      lock.lock();
      status_ = std::move(s);
      running_ = false;
      cv_.notify_all();
    }
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::function<Status()> job_;
  bool running_ = false, stop_ = false;
  bool started_ = false;  // only Start and Wait use it (one thread)
  Status status_;
  std::thread thread_;  // last: starts once the members above exist
};

class Pipeline {
 public:
  explicit Pipeline(const PipelineOptions& o) : o_(o) {}
  ~Pipeline() {
    if (status_file_ != nullptr) std::fclose(status_file_);
  }
  StatusOr<PipelineSummary> Run();

 private:
  // After the batches: --out, the store's totals, and everything closed.
  StatusOr<PipelineSummary> Finish(SteadyClock::time_point start);
  Status Setup();
  Status OpenMap();
  Status Resume();
  Status Process(std::unique_ptr<Batch> b);
  Status Redo(Batch& b);
  // Per shard: the pages of the batch it stores (home pages Tier 1 kept or Tier 2 compared) or
  // removes (home pages that became empty).
  std::vector<std::vector<tier2::ShardPage>> HomePages(const Batch& b, const std::vector<Route>& routes) const;
  // Step 5's first half: every shard in `only` (all when empty) stages its pages.
  Status StageOnShards(const std::vector<std::vector<tier2::ShardPage>>& pages, const std::vector<bool>& only);
  // Step 5's second half: the shards with a staged batch apply it, with the removals; or, with
  // publish_only, publish it (tier2/shard.h: Shard::Publish), to be committed later.
  Status ApplyToShards(uint64_t number, const google::protobuf::RepeatedPtrField<pb::Tier2Removal>& removals,
                       bool publish_only = false);
  // Step 5 in the background, once Tier 1 handed over its commit of batch b: the shards publish
  // what they staged (the batch is kept until they have) while the tiers' thread writes its
  // status lines and classifies the next batch; then, once Tier 1's commit is durable, the
  // shards commit it, while the next batch is compared.
  void StartShardWrites(std::unique_ptr<Batch> b, std::vector<Route> routes);
  // Waits until the shards have published the batch of the background writes, if any, and
  // returns how that went: the next batch may be compared then.
  Status AwaitShardsPublished();
  // Waits for the background shard writes, commits included, if any, and returns their status.
  Status FinishShardWrites();
  // A batch the tiers are done with is freed by the signing thread (DropRetired, as it starts a
  // batch): freeing a thousand signatures and records is off the tiers' thread, which every
  // batch waits for, and on the thread that runs ahead at a lower priority.
  void Retire(std::unique_ptr<Batch> b);
  void DropRetired();
  Status WriteStatus(const Batch& b, const std::vector<Route>& routes);
  // fflush + fdatasync of the status file (when there is one).
  Status SyncStatusFile();
  Status WriteGroups();
  // Opens --status-out: anew for a new input; for a resumed one, appending after cutting a torn
  // last line and the last committed batch's lines (Redo writes them again, whole).
  Status OpenStatusFile();
  // Marks the input consumed whole (its identity moves from `current` to `consumed`).
  Status RecordInputConsumed();

  const PipelineOptions& o_;
  // What the run computes with: the options', or the store's own parameters when it has them.
  pb::NeardupConfig config_;
  double threshold_ = 0;
  SignerOptions signer_;
  pb::StoreParams params_;
  std::string input_;          // o_.input, absolute (for messages)
  uint64_t input_size_ = 0;
  // The input's bytes hashed so far (the signing thread advances it to each batch's end).
  std::unique_ptr<PrefixDigest> digest_;
  bool resuming_ = false;      // the input is the store's interrupted one, continued
  std::string dir_;
  StoreLayout layout_;
  bool temporary_ = false;
  std::optional<partitioner::PartitionMap> map_;
  std::vector<uint64_t> expected_postings_;  // per shard, estimated from the map's sample (when built here)
  std::unique_ptr<ShardSet> shards_;
  size_t P() const { return shards_->size(); }
  std::unique_ptr<GroupStore> store_;
  std::unique_ptr<ShardSignatures> source_;
  std::unique_ptr<Tier1> tier1_;
  pb::Tier1Progress progress_;
  uint64_t skip_ = 0;          // records before this index are already committed
  uint64_t redo_from_ = 0;     // records [redo_from_, skip_) form the batch to redo (when redo_)
  bool redo_ = false;
  std::vector<bool> lagging_;  // shards that missed the last committed batch
  std::FILE* status_file_ = nullptr;
  PipelineSummary sum_;
  // One thread per shard for each kind of fan-out (made by Setup once the shard count is known):
  // the tiers' thread compares, the stager stages and the writer stores, at once. Declared before
  // the jobs that use them, so that they outlive them.
  std::unique_ptr<WorkerPool> compare_pool_, stage_pool_, store_pool_;
  BackgroundJob stager_{"nd-shard-stage"};
  // The batch the shards are storing in the background, and the thread doing it.
  std::unique_ptr<Batch> writing_;
  std::vector<Route> writing_routes_;
  google::protobuf::RepeatedPtrField<pb::Tier2Removal> writing_removals_;
  BackgroundJob writer_{"nd-shard-store"};
  // Set by the writer once the shards published its batch (or failed to), with how that went.
  std::mutex published_mu_;
  std::condition_variable published_cv_;
  bool published_ = true;    // guarded by published_mu_
  Status publish_status_;    // guarded by published_mu_
  std::mutex retired_mu_;
  std::vector<std::unique_ptr<Batch>> retired_;  // guarded by retired_mu_
};

void Pipeline::Retire(std::unique_ptr<Batch> b) {
  if (b == nullptr) return;
  std::lock_guard lock(retired_mu_);
  retired_.push_back(std::move(b));
}

void Pipeline::DropRetired() {
  std::vector<std::unique_ptr<Batch>> drop;
  std::lock_guard lock(retired_mu_);
  drop.swap(retired_);
  // (freed here, on return, after the lock)
}

Status Pipeline::Setup() {
  if (o_.input.empty()) return InvalidArgument("pipeline: an input crawl is required");
  if (o_.input == "-") {
    return InvalidArgument("pipeline: the input must be a file (a store recognises its inputs by their content)");
  }
  if (o_.batch_pages == 0) return InvalidArgument("pipeline: batch_pages must be at least 1");
  config_ = o_.config;
  threshold_ = o_.threshold;
  signer_ = o_.signer;
  // Outputs first: one that cannot be written is refused before any work is done (opened to
  // append, so that a run refused later leaves an earlier run's file as it was).
  for (const auto& [flag, path] : {std::pair<const char*, const std::string&>{"--out", o_.groups_out},
                                   std::pair<const char*, const std::string&>{"--status-out", o_.status_out}}) {
    if (path.empty()) continue;
    std::FILE* f = std::fopen(path.c_str(), "ab");
    if (f == nullptr) return IoError(fmt::format("pipeline: cannot write {} {}: {}", flag, path, std::strerror(errno)));
    std::fclose(f);
  }
  std::error_code path_ec;
  input_size_ = fs::file_size(o_.input, path_ec);
  if (path_ec) return IoError("pipeline: cannot read input " + o_.input + ": " + path_ec.message());
  // Named by its absolute, normalised path in messages (the store knows it by its content).
  input_ = fs::weakly_canonical(fs::absolute(o_.input, path_ec), path_ec).string();
  if (path_ec || input_.empty()) input_ = o_.input;
  dir_ = o_.store;
  if (dir_.empty()) {
    dir_ = (fs::temp_directory_path() / fmt::format("neardup-run-{}-{}", getpid(),
                                                     SteadyClock::now().time_since_epoch().count())).string();
    temporary_ = true;
  }
  layout_.dir = dir_;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return IoError("pipeline: cannot create store directory " + dir_ + ": " + ec.message());

  GroupStore::Options go;
  go.path = layout_.tier1();
  go.sync = config_.tier1().sync();
  go.cache_bytes = static_cast<uint64_t>(config_.tier1().cache_mib()) << 20;
  go.compress = config_.tier1().compress();
  // Tier 1's commit is inserted and synced by the store's writer thread while the tiers' thread
  // goes on with the batch's status queries (which see it); the status lines and the shards'
  // writes wait for it.
  go.async_writes = true;
  ASSIGN_OR_RETURN(store_, GroupStore::Open(go));
  std::string bytes;
  Status s = store_->rows().Get(store_->meta_family(), "progress", "", &bytes);
  if (s.ok()) {
    if (!progress_.ParseFromString(bytes)) return Corruption("pipeline: " + go.path + ": unreadable progress record");
  } else if (s.code() != StatusCode::kNotFound) {
    return s;
  }
  const pb::StoreParams requested = ParamsFromConfig(config_, threshold_);
  auto stored = ReadStoreParams(*store_);
  if (stored.ok()) {
    // The store's parameters rule; an explicit value that disagrees is refused.
    params_ = *stored;
    RETURN_IF_ERROR(CheckGivenParams(params_, requested, o_.given, dir_));
    ApplyParams(params_, &config_, &threshold_, &signer_);
    ASSIGN_OR_RETURN(map_, partitioner::PartitionMap::Load(layout_.map()));
    if (MapDigest(*map_) != params_.map_digest()) {
      return Corruption("pipeline: " + layout_.map() + " is not the partition map store " + dir_ + " recorded");
    }
    if (!o_.map.empty()) {
      ASSIGN_OR_RETURN(partitioner::PartitionMap given, partitioner::PartitionMap::Load(o_.map));
      if (MapDigest(given) != params_.map_digest()) {
        return FailedPrecondition(fmt::format("pipeline: store {} serves its own partition map (generation {}); --map {} "
                                              "is another map, and a store's map changes only by a rebalance",
                                              dir_, params_.map_generation(), o_.map));
      }
    }
  } else if (stored.status().code() == StatusCode::kNotFound) {
    if (progress_.batches_committed() > 0 || progress_.records_committed() > 0) {
      return FailedPrecondition("pipeline: store " + dir_ +
                                " was written by an earlier neardup (it records no parameters); build it again into "
                                "a new --store");
    }
    params_ = requested;
    if (!(threshold_ >= config_.tier2().min_threshold() && threshold_ <= 1)) {
      return InvalidArgument(fmt::format("pipeline: threshold {} is outside the shards' range [tier2.min_threshold {}, 1]",
                                         threshold_, config_.tier2().min_threshold()));
    }
    RETURN_IF_ERROR(OpenMap());
    // The first commit: the map file (atomically), then the parameters naming it. A crash in
    // between leaves a map with no parameters, which the next start checks or rebuilds.
    params_.set_shards(map_->machines());
    params_.set_map_generation(map_->proto().generation());
    params_.set_map_digest(MapDigest(*map_));
    std::string map_bytes;
    map_->proto().SerializeToString(&map_bytes);
    RETURN_IF_ERROR(WriteFileAtomically(FileEnv::Default(), layout_.map(), map_bytes, config_.tier1().sync()));
    RETURN_IF_ERROR(WriteStoreParams(store_.get(), params_));
    config_.mutable_pipeline()->set_shards(params_.shards());
  } else {
    return stored.status();
  }
  // Shards open in parallel: each rebuilds its index from its signature log.
  LocalShardSetOptions so;
  so.layout = layout_;
  so.config = config_;
  so.shards = map_->machines();
  so.expected_postings = expected_postings_;
  ASSIGN_OR_RETURN(shards_, OpenLocalShardSet(so));
  const int P = static_cast<int>(shards_->size());
  compare_pool_ = std::make_unique<WorkerPool>(P, "nd-shard");
  stage_pool_ = std::make_unique<WorkerPool>(P, "nd-stage");
  store_pool_ = std::make_unique<WorkerPool>(P, "nd-store");
  sum_.shards = map_->machines();
  sum_.shard_compare_seconds.assign(P, 0);
  sum_.shard_store_seconds.assign(P, 0);
  sum_.cells = map_->cells();
  source_ = std::make_unique<ShardSignatures>(*map_, *shards_);
  tier1_ = std::make_unique<Tier1>(store_.get(), source_.get(), Tier1OptionsFromConfig(config_.tier1(), threshold_));
  return Resume();
}

Status Pipeline::OpenMap() {
  const std::string kept = layout_.map();
  auto fits = [&](const partitioner::PartitionMap& m, const std::string& what) -> Status {
    RETURN_IF_ERROR(CheckMapFits(m, params_, what));
    if (o_.given.count("shards") && m.machines() != params_.shards()) {
      return FailedPrecondition(fmt::format("partition map {} has {} shards, but {} asks for {}", what, m.machines(),
                                            o_.given.at("shards"), params_.shards()));
    }
    return Status::Ok();
  };
  if (!o_.map.empty()) {
    ASSIGN_OR_RETURN(map_, partitioner::PartitionMap::Load(o_.map));
    RETURN_IF_ERROR(fits(*map_, o_.map));
  } else if (fs::exists(kept)) {
    // Left by a start that committed nothing: used if it fits this run's parameters.
    ASSIGN_OR_RETURN(map_, partitioner::PartitionMap::Load(kept));
    if (Status f = fits(*map_, kept); !f.ok() || map_->machines() != params_.shards()) {
      spdlog::info("pipeline: {} was left by a start that committed nothing and fits other parameters: built anew", kept);
      map_.reset();
    }
  }
  if (map_) {
    const SignerOptions want = map_->signer_options();
    if (want.dims != signer_.dims || want.k != signer_.k) {
      return FailedPrecondition(fmt::format("pipeline: the partition map expects dims {} and k {}, the signer has {} and {}",
                                            want.dims, want.k, signer_.dims, signer_.k));
    }
    return Status::Ok();
  }
  const pb::PipelineConfig& pc = config_.pipeline();
  partitioner::CrawlSampleOptions so;
  so.signer.signer = signer_;
  so.signer.reader = o_.reader;
  so.signer.reader.quiet_bad_lines = true;  // the run reports them, once
  so.signer.threads = o_.threads;
  so.sample_rate = pc.map_sample_rate();
  ASSIGN_OR_RETURN(partitioner::CrawlSample sample, partitioner::SampleCrawl(o_.input, so));
  partitioner::MapBuildOptions mo;
  mo.dims = static_cast<uint32_t>(signer_.dims);
  mo.machines = pc.shards();
  mo.threshold = threshold_;
  mo.routing = pc.routing() == "rho" ? pb::PartitionMap::RHO_BOX : pb::PartitionMap::EXACT_L1;
  mo.rho = pc.rho();
  mo.cells_per_machine = pc.cells_per_shard();
  mo.shingle_k = static_cast<uint32_t>(signer_.k);
  mo.contiguous_machines = true;  // fewer shards per page
  if (sample.sample.size() == 0) {
    // Too small an input for the sample rate: one cell per shard over everything is still exact.
    partitioner::LengthSample one(mo.dims);
    std::vector<uint32_t> v(mo.dims, 1);
    one.Add(v, v);
    sample.sample = std::move(one);
  }
  // Shards balanced by load, not pages: see PipelineConfig.shard_load_base.
  std::vector<double> page_load(sample.sample.size());
  for (size_t i = 0; i < page_load.size(); ++i) page_load[i] = pc.shard_load_base() + sample.sample.shingle_count(i);
  ASSIGN_OR_RETURN(map_, partitioner::BuildPartitionMap(sample.sample, mo, page_load));
  // Each shard's index is sized for the prefix postings its sampled pages predict, so that it
  // does not rebuild itself larger and larger as the crawl fills it.
  expected_postings_.assign(map_->machines(), 0);
  const double min_t = config_.tier2().min_threshold();
  const uint32_t overlap = config_.tier2().prefix_overlap();
  for (size_t i = 0; i < sample.sample.size(); ++i) {
    const uint32_t machine = map_->MachineOf(map_->Home(sample.sample.Vector(i, map_->proto().feature())));
    expected_postings_[machine] += tier2::PrefixLength(sample.sample.shingle_count(i), min_t, overlap);
  }
  for (uint64_t& p : expected_postings_) p = static_cast<uint64_t>(static_cast<double>(p) / so.sample_rate);
  spdlog::info("pipeline: partition map from {} sampled pages: {} cells on {} shards", sample.sample.size(),
               map_->cells(), map_->machines());
  return Status::Ok();
}

Status Pipeline::Resume() {
  lagging_.assign(P(), false);
  for (uint32_t s = 0; s < P() && progress_.batches_committed() > 0; ++s) {
    ASSIGN_OR_RETURN(uint64_t seq, shards_->CommittedBatch(s));
    if (seq < progress_.batches_committed()) lagging_[s] = true;
  }
  const bool lag = std::find(lagging_.begin(), lagging_.end(), true) != lagging_.end();
  ASSIGN_OR_RETURN(digest_, PrefixDigest::Open(o_.input));
  auto same = [&](const pb::InputIdentity& id) {
    uint64_t lo = 0, hi = 0;
    digest_->Get(&lo, &hi);
    return digest_->position() == id.bytes() && lo == id.digest_lo() && hi == id.digest_hi();
  };
  if (progress_.has_current()) {
    const pb::InputIdentity& cur = progress_.current();
    if (input_size_ >= cur.bytes()) RETURN_IF_ERROR(digest_->Advance(cur.bytes()));
    if (input_size_ >= cur.bytes() && same(cur)) {
      // The interrupted input again: go on after its last committed batch.
      resuming_ = true;
      skip_ = progress_.records_committed();
      redo_from_ = progress_.last_batch_first_record();
      spdlog::info("pipeline: resuming {} after {} committed records of {} ({} batches in the store){}", dir_, skip_,
                   o_.input, progress_.batches_committed(), lag ? "; redoing the last batch's shard writes" : "");
      return Status::Ok();
    }
    if (lag) {
      return FailedPrecondition(fmt::format(
          "pipeline: store {}'s last batch, from {}, is not on every shard yet; run neardup run --input {} --store {} "
          "again first (it redoes that batch from that input)",
          dir_, cur.name(), cur.name(), dir_));
    }
    if (!o_.abandon_interrupted) {
      return FailedPrecondition(fmt::format(
          "pipeline: store {} stopped in the middle of {} ({} of its records committed; {} is not that file); run it "
          "again to finish it, or pass --abandon-interrupted to leave its rest unread and take {} as the next crawl",
          dir_, cur.name(), progress_.records_committed(), o_.input, o_.input));
    }
    spdlog::warn("pipeline: the rest of {} after its {} committed records is left unread", cur.name(),
                 progress_.records_committed());
    ASSIGN_OR_RETURN(digest_, PrefixDigest::Open(o_.input));
  }
  for (const pb::InputIdentity& done : progress_.consumed()) {
    if (done.bytes() != input_size_) continue;
    if (digest_->position() != input_size_) RETURN_IF_ERROR(digest_->Advance(input_size_));
    if (same(done)) {
      sum_.already_consumed = done.name();
      return Status::Ok();
    }
  }
  if (digest_->position() != 0) {
    ASSIGN_OR_RETURN(digest_, PrefixDigest::Open(o_.input));
  }
  // The next crawl: it adds to what the store holds.
  pb::InputIdentity* cur = progress_.mutable_current();
  cur->Clear();
  cur->set_name(input_);
  progress_.set_records_committed(0);
  progress_.set_last_batch_first_record(0);
  progress_.clear_last_batch_routes();
  skip_ = 0;
  if (progress_.batches_committed() > 0) {
    spdlog::info("pipeline: {} is a new input for store {}, which holds {} batches", o_.input, dir_,
                 progress_.batches_committed());
  }
  return Status::Ok();
}

std::vector<std::vector<tier2::ShardPage>> Pipeline::HomePages(const Batch& b, const std::vector<Route>& routes) const {
  std::vector<std::vector<tier2::ShardPage>> pages(P());
  for (size_t i = 0; i < b.records.size(); ++i) {
    const Route r = routes[i];
    if (r != Route::kFastPath && r != Route::kTier2 && r != Route::kEmpty) continue;
    pages[map_->MachineOf(b.cell[i])].push_back({&b.signatures[i], true, /*validated=*/true});
  }
  return pages;
}

Status Pipeline::StageOnShards(const std::vector<std::vector<tier2::ShardPage>>& pages, const std::vector<bool>& only) {
  const auto t0 = SteadyClock::now();
  Status s = ForEachShard(*stage_pool_, [&](size_t m) -> Status {
    if (!only.empty() && !only[m]) return Status::Ok();
    return shards_->Stage(static_cast<uint32_t>(m), pages[m]);
  }, &sum_.shard_store_seconds);
  sum_.tier2_stage_seconds += Since(t0);
  return s;
}

Status Pipeline::ApplyToShards(uint64_t number, const google::protobuf::RepeatedPtrField<pb::Tier2Removal>& removals,
                               bool publish_only) {
  std::vector<std::vector<std::string>> removed(P());
  for (const auto& rm : removals) {
    if (rm.cell() < map_->cells()) removed[map_->MachineOf(rm.cell())].push_back(rm.url());
  }
  const auto t0 = SteadyClock::now();
  Status s = ForEachShard(*store_pool_, [&](size_t m) -> Status {
    const uint32_t shard = static_cast<uint32_t>(m);
    return publish_only ? shards_->Publish(shard, removed[m], number) : shards_->Apply(shard, removed[m], number);
  }, &sum_.shard_store_seconds);
  sum_.tier2_apply_seconds += Since(t0);
  return s;
}

Status Pipeline::Redo(Batch& b) {
  // Tier 1 committed this batch; some shards may not have, and its status lines may be lost. The
  // shards' writes are idempotent.
  RETURN_IF_ERROR(FinishShardWrites());
  std::vector<Route> routes(b.records.size(), Route::kTier2);
  const std::string& stored = progress_.last_batch_routes();
  if (stored.size() == b.records.size()) {
    for (size_t i = 0; i < routes.size(); ++i) routes[i] = static_cast<Route>(stored[i]);
  } else {
    std::unordered_map<std::string_view, size_t> last;
    for (size_t i = 0; i < b.records.size(); ++i) {
      if (b.records[i].is_redirect()) routes[i] = Route::kRedirect;
      else if (b.signatures[i].shingles_size() == 0) routes[i] = Route::kEmpty;
      auto [it, fresh] = last.emplace(b.records[i].url, i);
      if (!fresh) routes[it->second] = Route::kSuperseded, it->second = i;
    }
  }
  if (std::find(lagging_.begin(), lagging_.end(), true) != lagging_.end()) {
    RETURN_IF_ERROR(StageOnShards(HomePages(b, routes), lagging_));
    RETURN_IF_ERROR(ApplyToShards(b.number, progress_.last_batch_removals()));
    sum_.redone_shard_batches += static_cast<uint64_t>(std::count(lagging_.begin(), lagging_.end(), true));
    lagging_.assign(lagging_.size(), false);
  }
  if (status_file_ == nullptr) return Status::Ok();
  const uint64_t before = sum_.status_lines_rewritten;
  RETURN_IF_ERROR(WriteStatus(b, routes));
  for (Route r : routes) sum_.status_lines_rewritten += r != Route::kSuperseded;
  if (sum_.status_lines_rewritten > before) {
    spdlog::info("pipeline: wrote the status lines of batch {} again ({} lines)", b.number,
                 sum_.status_lines_rewritten - before);
  }
  return SyncStatusFile();
}

void Pipeline::StartShardWrites(std::unique_ptr<Batch> b, std::vector<Route> routes) {
  writing_ = std::move(b);
  writing_routes_ = std::move(routes);
  const Batch& w = *writing_;
  std::unordered_set<std::string_view> stored;
  for (size_t i = 0; i < w.records.size(); ++i) {
    const Route r = writing_routes_[i];
    if (r == Route::kFastPath || r == Route::kTier2) {
      source_->Overlay(w.records[i].url, w.cell[i], &w.signatures[i]);
      stored.insert(w.records[i].url);
    }
    if (r == Route::kEmpty) source_->Overlay(w.records[i].url, w.cell[i], nullptr);
  }
  writing_removals_ = progress_.last_batch_removals();
  for (const auto& rm : writing_removals_) {
    // A URL this batch stores again keeps its new home; the removal is of its old one.
    if (!stored.count(rm.url())) source_->Overlay(rm.url(), rm.cell(), nullptr);
  }
  {
    std::lock_guard lock(published_mu_);
    published_ = false;
    publish_status_ = Status::Ok();
  }
  writer_.Start([this, number = w.number]() -> Status {
    // The shards answer with the batch once they published it: the next batch may be compared.
    Status s = ApplyToShards(number, writing_removals_, /*publish_only=*/true);
    {
      std::lock_guard lock(published_mu_);
      published_ = true;
      publish_status_ = s;
    }
    published_cv_.notify_all();
    RETURN_IF_ERROR(s);
    // They commit it only once Tier 1's commit of it is durable (meanwhile the next batch is
    // compared; its Tier 1 commit comes after this one): a restart never finds a shard ahead of
    // Tier 1.
    RETURN_IF_ERROR(store_->rows().WaitForWrites());
    return ForEachShard(*store_pool_, [&](size_t m) { return shards_->Commit(static_cast<uint32_t>(m)); });
  });
}

Status Pipeline::AwaitShardsPublished() {
  if (!writer_.started()) return Status::Ok();
  const auto t0 = SteadyClock::now();
  Status s;
  {
    std::unique_lock lock(published_mu_);
    published_cv_.wait(lock, [&] { return published_; });
    s = publish_status_;
  }
  sum_.tier2_apply_wait_seconds += Since(t0);
  // The shards answer for the batch now: Tier 1 reads its signatures from them again.
  source_->ClearOverlay();
  Retire(std::move(writing_));
  return s;
}

Status Pipeline::FinishShardWrites() {
  if (!writer_.started()) return Status::Ok();
  const auto t0 = SteadyClock::now();
  Status s = writer_.Wait();
  sum_.tier2_apply_wait_seconds += Since(t0);
  source_->ClearOverlay();
  Retire(std::move(writing_));
  writing_routes_.clear();
  writing_removals_.Clear();
  return s;
}

Status Pipeline::Process(std::unique_ptr<Batch> batch) {
  Batch& b = *batch;
  const size_t n = b.records.size();
  std::vector<PageUpdate> updates(n);
  UrlSet pending;
  for (size_t i = 0; i < n; ++i) {
    const CrawlRecord& r = b.records[i];
    PageUpdate& u = updates[i];
    u.url = r.url;
    u.redirect_to = r.redirect_to;
    u.signature = r.is_redirect() ? nullptr : &b.signatures[i];
    u.home_cell = b.cell[i];
    u.popularity = r.popularity;
    u.market = r.market;
    u.fetched_at_ms = r.fetched_at_ms.value_or(0);
    pending.insert(r.url);
  }
  tier1_->SetPending(std::move(pending));
  auto t0 = SteadyClock::now();
  double cpu0 = ThreadCpuSeconds();
  std::vector<Route> routes;
  std::vector<bool> changed;
  RETURN_IF_ERROR(tier1_->Classify(updates, &routes, &changed));
  sum_.tier1_seconds += Since(t0);
  sum_.tier1_cpu_seconds += ThreadCpuSeconds() - cpu0;
  // Tier 2 compares against everything stored so far: the previous batch must be published.
  RETURN_IF_ERROR(AwaitShardsPublished());

  // Tier 2: each shard compares the pages routed to it.
  const size_t P = shards_->size();
  std::vector<std::vector<uint32_t>> index(P);
  std::vector<std::vector<tier2::ShardPage>> pages(P);
  for (size_t i = 0; i < n; ++i) {
    if (routes[i] != Route::kTier2) continue;
    ++sum_.tier2_pages;
    if (changed[i]) ++sum_.changed;
    else ++sum_.new_pages;
    for (uint32_t m : b.machines[i]) {
      index[m].push_back(static_cast<uint32_t>(i));
      pages[m].push_back({&b.signatures[i], m == map_->MachineOf(b.cell[i]), /*validated=*/true});
      ++sum_.tier2_sends;
    }
  }
  // Pages the fast path kept meet the batch's compared pages in their new versions (their
  // resident versions are stale for this batch), on the shards that compare some of them.
  for (size_t i = 0; i < n; ++i) {
    if (routes[i] != Route::kFastPath) continue;
    for (uint32_t m : b.machines[i]) {
      if (pages[m].empty() || pages[m].front().join_only) continue;
      index[m].push_back(static_cast<uint32_t>(i));
      pages[m].push_back({&b.signatures[i], false, /*validated=*/true, /*join_only=*/true});
    }
  }
  std::vector<tier2::CompareResult> results(P);
  t0 = SteadyClock::now();
  RETURN_IF_ERROR(ForEachShard(*compare_pool_, [&](size_t m) -> Status {
    if (pages[m].empty()) return Status::Ok();
    return shards_->Compare(static_cast<uint32_t>(m), pages[m], threshold_, &results[m]);
  }, &sum_.shard_compare_seconds));
  sum_.tier2_compare_seconds += Since(t0);
  Tier2Matches matches;
  std::set<std::pair<uint32_t, uint32_t>> seen_pairs;
  for (size_t m = 0; m < P; ++m) {
    const auto& res = results[m];
    sum_.tier2_candidates += res.stats.candidates;
    sum_.tier2_verifications += res.stats.verifications;
    for (const auto& r : res.resident) matches.resident.push_back({index[m][r.page], r.url, r.similarity});
    for (const auto& p : res.in_batch) {
      const uint32_t a = index[m][p.a], bb = index[m][p.b];
      if (seen_pairs.emplace(std::min(a, bb), std::max(a, bb)).second) {
        matches.in_batch.push_back({std::min(a, bb), std::max(a, bb), p.similarity});
      }
    }
  }
  sum_.tier2_pairs += matches.resident.size() + matches.in_batch.size();
  // Step 5's first half, while Tier 1 applies the batch: the shards prepare the pages they will
  // store. They store them only once Tier 1 committed the batch (a crash in between leaves the
  // shards as they were; the staged records past their logs' committed ends are cut at Open).
  // Tier 1 may commit this batch only once the shards committed the previous one (a restart
  // finds at most the last committed batch missing from a shard), and the shards stage it only
  // after that commit (which would wait for the staging): the commits followed Tier 1's of the
  // previous batch while this one was compared, so this is a short wait, as a rule.
  RETURN_IF_ERROR(FinishShardWrites());
  // The previous batch's status lines are durable before this batch commits: after a crash only
  // the last committed batch's can be missing, and a restart writes those again.
  RETURN_IF_ERROR(SyncStatusFile());
  stager_.Start([this, home = HomePages(b, routes)] { return StageOnShards(home, {}); });
  for (size_t i = 0; i < n; ++i) {
    switch (routes[i]) {
      case Route::kUnchanged: ++sum_.unchanged; break;
      case Route::kFastPath: ++sum_.fast_path, ++sum_.changed; break;
      case Route::kRedirect: ++sum_.redirects; break;
      case Route::kEmpty: ++sum_.empty; break;
      case Route::kSuperseded: ++sum_.superseded; break;
      case Route::kTier2: break;
    }
  }

  // Tier 1 commits the batch with the pipeline's progress.
  pb::Tier1Progress next = progress_;
  next.set_records_committed(b.first_record + n);
  next.set_batches_committed(b.number);
  next.set_last_batch_first_record(b.first_record);
  next.clear_last_batch_removals();
  next.mutable_current()->set_bytes(b.end_offset);
  next.mutable_current()->set_digest_lo(b.digest_lo);
  next.mutable_current()->set_digest_hi(b.digest_hi);
  next.mutable_current()->set_records(b.first_record + n);
  std::string route_bytes(n, '\0');
  for (size_t i = 0; i < n; ++i) route_bytes[i] = static_cast<char>(routes[i]);
  next.set_last_batch_routes(std::move(route_bytes));
  ApplyOutcome outcome;
  t0 = SteadyClock::now();
  cpu0 = ThreadCpuSeconds();
  Status applied = tier1_->Apply(updates, routes, matches, &next, &outcome);
  sum_.tier1_seconds += Since(t0);
  sum_.tier1_cpu_seconds += ThreadCpuSeconds() - cpu0;
  t0 = SteadyClock::now();
  Status staged = stager_.Wait();
  sum_.tier2_stage_wait_seconds += Since(t0);
  if (applied.ok()) applied = staged;
  if (!applied.ok()) {
    for (uint32_t m = 0; m < P; ++m) shards_->Drop(m);  // the shards cut their logs back
    return applied;
  }
  for (const auto& [url, cell] : outcome.tier2_removals) {
    auto* r = next.add_last_batch_removals();
    r->set_url(url);
    r->set_cell(cell);
  }
  progress_ = std::move(next);
  sum_.merges += outcome.merges;
  sum_.moves += outcome.moves;
  sum_.new_groups += outcome.new_groups;
  sum_.redirect_cycles += outcome.redirect_cycles;
  tier1_->SetPending({});

  StartShardWrites(std::move(batch), std::move(routes));
  return WriteStatus(*writing_, writing_routes_);
}

Status Pipeline::SyncStatusFile() {
  if (status_file_ == nullptr) return Status::Ok();
  if (std::fflush(status_file_) != 0 || ::fdatasync(fileno(status_file_)) != 0) {
    return IoError("pipeline: cannot sync " + o_.status_out + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

Status Pipeline::WriteStatus(const Batch& b, const std::vector<Route>& routes) {
  const auto t0 = SteadyClock::now();
  const double cpu0 = ThreadCpuSeconds();
  std::string out;
  StatusAnswer a;
  for (size_t i = 0; i < b.records.size(); ++i) {
    if (routes[i] == Route::kSuperseded) continue;
    RETURN_IF_ERROR(tier1_->QueryAndRecord(b.records[i].url, &a));
    if (status_file_ == nullptr) continue;
    out += "{\"url\":";
    AppendJsonString(&out, b.records[i].url);
    out += ",\"status\":\"";
    out += StatusName(a.status);
    out += "\",\"group\":" + std::to_string(a.group) + ",\"winner\":";
    AppendJsonString(&out, a.winner_url);
    if (a.verified && !a.redirect) AppendJsonField(&out, "similarity_to_winner", a.similarity_to_winner);
    out += a.verified ? ",\"verified\":true" : ",\"verified\":false";
    if (a.redirect) out += ",\"redirect\":true";
    out += ",\"route\":\"";
    out += RouteName(routes[i]);
    out += "\",\"batch\":" + std::to_string(b.number) + ",\"line\":" + std::to_string(b.records[i].line) + "}\n";
  }
  if (status_file_ != nullptr && !out.empty()) {
    RETURN_IF_ERROR(store_->rows().WaitForWrites());  // the lines acknowledge the batch's commit
    if (std::fwrite(out.data(), 1, out.size(), status_file_) != out.size() || std::fflush(status_file_) != 0) {
      return IoError("pipeline: cannot write " + o_.status_out);
    }
  }
  std::vector<RepairReport> repairs;
  RETURN_IF_ERROR(tier1_->Flush(&repairs));
  for (const RepairReport& r : repairs) {
    ++sum_.repairs;
    if (r.components > 1) sum_.repair_splits += r.components - 1;
  }
  sum_.query_seconds += Since(t0);
  sum_.query_cpu_seconds += ThreadCpuSeconds() - cpu0;
  return Status::Ok();
}

namespace {

// The "batch" of a status line; false when it has none.
bool StatusLineBatch(std::string_view line, uint64_t* batch) {
  const size_t at = line.find("\"batch\":");
  if (at == std::string_view::npos) return false;
  *batch = std::strtoull(line.data() + at + 8, nullptr, 10);
  return true;
}

// The length of the file's longest prefix of whole lines none of which belongs to batch `from` or
// a later one (a line without a batch number ends the search); a torn last line (no newline yet)
// is never kept. Reads backwards in pieces.
StatusOr<uint64_t> KeepBeforeBatch(std::FILE* f, uint64_t size, uint64_t from) {
  std::string tail;  // the file's bytes [tail_start, size)
  uint64_t tail_start = size;
  std::optional<uint64_t> keep;  // lines after *keep are torn or belong to batch >= from
  for (;;) {
    if (!keep) {
      if (const size_t nl = tail.rfind('\n'); nl != std::string::npos) keep = tail_start + nl + 1;
      else if (tail_start == 0) return 0;  // not one whole line
    }
    // Examine whole lines ending at *keep, last first; a line is whole when a newline precedes it.
    while (keep && *keep > tail_start) {
      const size_t end = static_cast<size_t>(*keep - tail_start);  // tail[end - 1] is '\n'
      const size_t nl = end >= 2 ? tail.rfind('\n', end - 2) : std::string::npos;
      if (nl == std::string::npos && tail_start > 0) break;  // its start is further back
      const size_t begin = nl == std::string::npos ? 0 : nl + 1;
      uint64_t batch = 0;
      if (!StatusLineBatch(std::string_view(tail).substr(begin, end - begin), &batch) || batch < from) return *keep;
      keep = tail_start + begin;
    }
    if (keep == 0) return 0;
    const uint64_t step = std::max<uint64_t>(1 << 20, tail.size());
    const uint64_t new_start = tail_start > step ? tail_start - step : 0;
    std::string piece(static_cast<size_t>(tail_start - new_start), '\0');
    if (std::fseek(f, static_cast<long>(new_start), SEEK_SET) != 0 ||
        std::fread(piece.data(), 1, piece.size(), f) != piece.size()) {
      return IoError("cannot read the status file");
    }
    tail.insert(0, piece);
    tail_start = new_start;
  }
}

}  // namespace

Status Pipeline::OpenStatusFile() {
  std::error_code ec;
  if (resuming_ && fs::exists(o_.status_out, ec)) {
    std::FILE* f = std::fopen(o_.status_out.c_str(), "rb");
    if (f == nullptr) return IoError("pipeline: cannot read " + o_.status_out);
    const uint64_t size = fs::file_size(o_.status_out, ec);
    // A line torn by a crash goes, and so do the last committed batch's lines, which Redo writes
    // again whole.
    StatusOr<uint64_t> keep = KeepBeforeBatch(f, size, progress_.batches_committed());
    std::fclose(f);
    RETURN_IF_ERROR(keep.status());
    if (*keep < size) {
      fs::resize_file(o_.status_out, *keep, ec);
      if (ec) return IoError("pipeline: cannot cut " + o_.status_out + ": " + ec.message());
      spdlog::info("pipeline: cut {} bytes (the last batch's status lines, or a torn line) from {}", size - *keep,
                   o_.status_out);
    }
  }
  status_file_ = std::fopen(o_.status_out.c_str(), resuming_ ? "ab" : "wb");
  if (status_file_ == nullptr) return IoError("pipeline: cannot write " + o_.status_out);
  return Status::Ok();
}

// Every page of the store as the run leaves it (every input's, not only this one's), from
// read-only queries: writing it changes nothing in the store.
Status Pipeline::WriteGroups() {
  std::FILE* f = std::fopen(o_.groups_out.c_str(), "wb");
  if (f == nullptr) return IoError("pipeline: cannot write --out " + o_.groups_out + ": " + std::strerror(errno));
  std::vector<std::string> urls;
  Status s = store_->rows().ScanFamily(store_->page_family(), [&](std::string_view url, std::string_view, std::string_view) {
    urls.emplace_back(url);
    return true;
  });
  std::string out;
  StatusAnswer a;
  for (size_t k = 0; k < urls.size() && s.ok(); ++k) {
    const std::string& url = urls[k];
    s = tier1_->Query(url, nullptr, &a);
    if (!s.ok()) break;
    out += "{\"url\":";
    AppendJsonString(&out, url);
    out += ",\"group\":" + std::to_string(a.group) + ",\"winner\":";
    AppendJsonString(&out, a.winner_url);
    out += ",\"status\":\"";
    out += StatusName(a.status);
    out += "\"";
    if (a.verified && !a.redirect) AppendJsonField(&out, "similarity_to_winner", a.similarity_to_winner);
    out += a.status == StatusAnswer::kUnknown ? ",\"crawled\":false}\n" : "}\n";
    if (out.size() > (1 << 20)) {
      if (std::fwrite(out.data(), 1, out.size(), f) != out.size()) s = IoError("pipeline: cannot write " + o_.groups_out);
      out.clear();
    }
  }
  if (s.ok() && std::fwrite(out.data(), 1, out.size(), f) != out.size()) s = IoError("pipeline: cannot write " + o_.groups_out);
  if (std::fclose(f) != 0 && s.ok()) s = IoError("pipeline: cannot write " + o_.groups_out);
  return s;
}

Status Pipeline::RecordInputConsumed() {
  RETURN_IF_ERROR(digest_->Advance(input_size_));
  pb::InputIdentity* done = progress_.add_consumed();
  *done = progress_.current();
  done->set_bytes(input_size_);
  uint64_t lo = 0, hi = 0;
  digest_->Get(&lo, &hi);
  done->set_digest_lo(lo);
  done->set_digest_hi(hi);
  done->set_records(progress_.records_committed());
  progress_.clear_current();
  progress_.set_records_committed(0);
  progress_.set_last_batch_first_record(0);
  progress_.clear_last_batch_routes();
  RowBatch b;
  b.Put(store_->meta_family(), "progress", "", progress_.SerializeAsString());
  RETURN_IF_ERROR(store_->rows().Write(b));
  return store_->rows().WaitForWrites();
}

StatusOr<PipelineSummary> Pipeline::Run() {
  const auto start = SteadyClock::now();
  RETURN_IF_ERROR(Setup());
  if (!sum_.already_consumed.empty()) {
    spdlog::warn("pipeline: {} was consumed whole already (as {}): nothing to do", o_.input, sum_.already_consumed);
    return Finish(start);
  }
  if (!o_.status_out.empty()) RETURN_IF_ERROR(OpenStatusFile());
  sum_.skipped_records = skip_;
  // The last committed batch of the interrupted input is read again when a shard missed it or
  // its status lines are to be written again.
  const bool lag = std::find(lagging_.begin(), lagging_.end(), true) != lagging_.end();
  redo_ = resuming_ && progress_.records_committed() > 0 && (lag || status_file_ != nullptr);

  // The tiers' thread: batches in order, as the reader hands them over. Two batches of room:
  // room for two signing rounds' worth (9 batches) was measured no faster (300k records, three
  // runs each: 21.8/21.9/20.4 s against 21.3/21.4/19.6 s), with the tiers' thread's CPU up
  // 5-13% at 1M records (signing running alongside it more often) and 50 MB more memory.
  BatchQueue queue(2);
  Status worker_status;
  std::thread worker([&] {
    NameThisThread("nd-tiers");
    for (;;) {
      auto waited = SteadyClock::now();
      auto b = queue.Pop();
      sum_.tiers_wait_seconds += Since(waited);
      const double cpu0 = ThreadCpuSeconds();
      const bool done = b == nullptr;
      Status s;
      if (done) {
        s = FinishShardWrites();  // the last batch's
      } else {
        s = b->redo ? Redo(*b) : Process(std::move(b));
      }
      sum_.tiers_cpu_seconds += ThreadCpuSeconds() - cpu0;
      if (!s.ok()) {
        (void)FinishShardWrites();  // joined either way; the first error is the one reported
        worker_status = s;
        queue.Close();
        return;
      }
      if (done) return;
      ++sum_.batches;
    }
  });

  CrawlSignerOptions so;
  so.signer = signer_;
  so.reader = o_.reader;
  so.threads = o_.threads;
  so.progress_label = o_.progress ? "run" : "";
  const uint64_t first = redo_ ? redo_from_ : skip_;
  uint64_t seen = 0;
  so.keep = [&](const CrawlRecord&) {
    const uint64_t i = seen++;
    // The redo batch is always read whole; max_records limits only records new to the store.
    return i >= first && (i < skip_ || o_.max_records == 0 || i < o_.max_records);
  };
  uint64_t next_record = first;
  uint64_t next_number = progress_.batches_committed() + 1;
  auto batch = std::make_unique<Batch>();
  auto start_batch = [&](uint64_t at) {
    DropRetired();
    batch = std::make_unique<Batch>();
    batch->first_record = at;
    batch->redo = redo_ && at < skip_;
    batch->number = batch->redo ? progress_.batches_committed() : next_number++;
  };
  start_batch(first);
  auto hand_off = [&]() -> Status {
    if (batch->records.empty()) return Status::Ok();
    if (!batch->redo) {
      sum_.records += batch->records.size();
      // What the batch's commit says of the input: how far it is consumed, and its digest so far.
      batch->end_offset = batch->records.back().end_offset;
      RETURN_IF_ERROR(digest_->Advance(batch->end_offset));
      digest_->Get(&batch->digest_lo, &batch->digest_hi);
    }
    if (!queue.Push(std::move(batch))) return worker_status.ok() ? Internal("pipeline: queue closed") : worker_status;
    start_batch(next_record);
    return Status::Ok();
  };
  // Signing runs ahead of the tiers on a thread of its own (and its workers), at a lower
  // priority, as do LevelDB's compactions: on a busy machine the tiers' thread gets the cores.
  const int nice = static_cast<int>(config_.pipeline().background_nice());
  LowerLevelDbBackgroundPriority(nice);
  NameLevelDbBackgroundThread();
  CrawlReaderStats reader_stats;
  Status read;
  std::thread signing([&] {
    NameThisThread("nd-sign");
    if (Status s = LowerThreadPriority(nice); !s.ok()) spdlog::debug("pipeline: {}", s.ToString());
    read = SignCrawl(o_.input, so, [&](CrawlRecord& r, PageFeatures& f) -> Status {
      Batch& b = *batch;
      b.cell.push_back(0);
      b.machines.emplace_back();
      if (!r.is_redirect()) {
        const auto v = map_->VectorOf(f);
        b.cell.back() = map_->Home(v);
        if (!f.shingles.empty()) map_->RouteMachines(v, &b.machines.back());
        b.signatures.push_back(ToProto(r.url, f, signer_));
      } else {
        b.signatures.emplace_back();
      }
      b.records.push_back(std::move(r));
      ++next_record;
      // The redo batch ends where the committed records end; the others hold batch_pages records.
      if ((b.redo && next_record == skip_) || (!b.redo && b.records.size() >= o_.batch_pages)) return hand_off();
      return Status::Ok();
    }, &reader_stats);
    if (read.ok()) read = hand_off();
    queue.Close();
  });
  signing.join();
  worker.join();
  RETURN_IF_ERROR(worker_status);
  RETURN_IF_ERROR(read);
  RETURN_IF_ERROR(SyncStatusFile());
  // Read to its end (not cut short by max_records): the input is consumed.
  if (o_.max_records == 0 || seen <= o_.max_records) {
    RETURN_IF_ERROR(RecordInputConsumed());
    sum_.input_complete = true;
  }
  return Finish(start);
}

StatusOr<PipelineSummary> Pipeline::Finish(SteadyClock::time_point start) {
  sum_.seconds = Since(start);
  sum_.peak_rss_bytes = PeakRssBytes();
  sum_.tier1_page_reads = tier1_->page_reads();
  sum_.tier1_group_reads = tier1_->group_reads();
  if (!o_.groups_out.empty()) {
    const auto t0 = SteadyClock::now();
    RETURN_IF_ERROR(WriteGroups());
    sum_.output_seconds = Since(t0);
  }

  const RowStore& rows = store_->rows();
  sum_.verifications = static_cast<uint64_t>(rows.Counter("verifications"));
  sum_.rejections = static_cast<uint64_t>(rows.Counter("rejections"));

  RETURN_IF_ERROR(rows.ScanFamily(store_->group_family(), [&](std::string_view, std::string_view, std::string_view v) {
    pb::Tier1Group g;
    if (g.ParseFromArray(v.data(), static_cast<int>(v.size()))) {
      ++sum_.groups;
      if (g.members() >= 2) ++sum_.multi_groups;
      sum_.pages += g.members();
    }
    return true;
  }));
  for (uint32_t m = 0; m < P(); ++m) {
    const tier2::ShardStats st = shards_->Stats(m);
    sum_.shard_pages += st.resident_pages;
    sum_.shard_resident_pages.push_back(st.resident_pages);
    sum_.shard_ram_bytes += st.index_bytes + st.page_table_bytes;
    sum_.shard_compactions += st.compactions;
    sum_.shard_rebuilds += st.rebuilds;
  }
  tier1_.reset();
  source_.reset();
  shards_.reset();
  store_.reset();
  if (temporary_) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  return sum_;
}

}  // namespace

StatusOr<PipelineSummary> RunPipeline(const PipelineOptions& options) {
  Pipeline p(options);
  return p.Run();
}

std::string FormatSummary(const PipelineSummary& s) {
  std::string o;
  if (!s.already_consumed.empty()) {
    o += fmt::format("input              consumed whole already, as {}: nothing to do\n", s.already_consumed);
  } else {
    o += fmt::format("input              {}\n", s.input_complete ? "read to its end: recorded as consumed"
                                                                  : "not read to its end: a later run continues it");
  }
  o += fmt::format("records            {} in {:.2f} s: {:.0f} records/s ({} skipped: committed by an earlier run); "
                   "--out written in {:.2f} s more\n",
                   s.records, s.seconds, s.pages_per_second(), s.skipped_records, s.output_seconds);
  o += fmt::format("batches            {} ({} shard batches redone after a crash, {} status lines written again)\n",
                   s.batches, s.redone_shard_batches, s.status_lines_rewritten);
  o += fmt::format("pages              {} new, {} unchanged, {} changed, {} redirects, {} empty, {} superseded in batch\n",
                   s.new_pages, s.unchanged, s.changed, s.redirects, s.empty, s.superseded);
  o += fmt::format("tier 1 fast path   {} of {} changed pages ({:.1f}%) kept without Tier 2\n", s.fast_path, s.changed,
                   100.0 * s.fast_path_share());
  o += fmt::format("tier 2             {} pages compared, {} page-shard sends over {} shards ({} cells), {} candidates, "
                   "{} verified, {} pairs\n",
                   s.tier2_pages, s.tier2_sends, s.shards, s.cells, s.tier2_candidates, s.tier2_verifications, s.tier2_pairs);
  o += fmt::format("groups             {} merges, {} moves (splits), {} new groups, {} redirect cycles\n", s.merges,
                   s.moves, s.new_groups, s.redirect_cycles);
  o += fmt::format("verification       {} checks, {} rejections ({:.2f}%), {} repairs, {} groups split off by repair\n",
                   s.verifications, s.rejections,
                   s.verifications > 0 ? 100.0 * static_cast<double>(s.rejections) / static_cast<double>(s.verifications) : 0.0,
                   s.repairs, s.repair_splits);
  o += fmt::format("store              {} pages in {} groups, {} with 2+ members\n", s.pages, s.groups, s.multi_groups);
  o += fmt::format("tier 1 lookups     pages: {} cached, {} read, {} known absent, {} groups of matches from memory; "
                   "groups: {} cached, {} read\n",
                   s.tier1_page_reads.hits, s.tier1_page_reads.reads, s.tier1_page_reads.skipped,
                   s.tier1_page_reads.indexed, s.tier1_group_reads.hits, s.tier1_group_reads.reads);
  o += fmt::format("time               tier1 {:.2f} s, tier2 compare {:.2f} s, tier2 apply {:.2f} s, status {:.2f} s; "
                   "peak RSS {:.0f} MiB\n",
                   s.tier1_seconds, s.tier2_compare_seconds, s.tier2_apply_seconds, s.query_seconds,
                   static_cast<double>(s.peak_rss_bytes) / 1048576.0);
  o += fmt::format("shards             {} resident pages, {:.0f} B/page of index and page tables in RAM, "
                   "{} index compactions, {} rebuilds\n",
                   s.shard_pages,
                   s.shard_pages > 0 ? static_cast<double>(s.shard_ram_bytes) / static_cast<double>(s.shard_pages) : 0.0,
                   s.shard_compactions, s.shard_rebuilds);
  if (!s.shard_resident_pages.empty()) {
    o += "per shard         ";
    for (size_t m = 0; m < s.shard_resident_pages.size(); ++m) {
      o += fmt::format(" [{}: {} pages, compare {:.2f} s, store {:.2f} s]", m, s.shard_resident_pages[m],
                       s.shard_compare_seconds[m], s.shard_store_seconds[m]);
    }
    o += "\n";
  }
  o += fmt::format("overlap            the shards staged each batch while Tier 1 applied it ({:.2f} s, {:.2f} s waited for) "
                   "and stored it while the tiers went on ({:.2f} s, {:.2f} s waited for)\n",
                   s.tier2_stage_seconds, s.tier2_stage_wait_seconds, s.tier2_apply_seconds, s.tier2_apply_wait_seconds);
  o += fmt::format("tiers' thread      {:.2f} s on CPU (tier1 {:.2f} s, status {:.2f} s; shard threads not counted), "
                   "{:.2f} s waiting for signed batches\n",
                   s.tiers_cpu_seconds, s.tier1_cpu_seconds, s.query_cpu_seconds, s.tiers_wait_seconds);
  return o;
}

}  // namespace neardup::pipeline
