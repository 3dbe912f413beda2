// Setting a run up: the store opened and its parameters checked, its placement (a new store's
// map and first commit), the shards and the tiers, and where the input starts (a restart).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/progress.h"
#include "partitioner/crawl_sample.h"
#include "partitioner/map_builder.h"
#include "pipeline/pipeline_internal.h"
#include "pipeline/rebalance_store.h"
#include "pipeline/redo.h"
#include "tier2/prefix_filter.h"
#include "tier2/token_order.h"

namespace neardup::pipeline::internal {

namespace fs = std::filesystem;

Status Pipeline::Setup() {
  RETURN_IF_ERROR(CheckInputAndOutputs());
  uint64_t expected_records = 0;
  RETURN_IF_ERROR(OpenGroupStore(&expected_records));
  std::string bytes;
  Status s = store_->rows().Get(store_->meta_family(), "progress", "", &bytes);
  if (s.ok()) {
    if (!progress_.ParseFromString(bytes)) return Corruption("pipeline: " + layout_.tier1() + ": unreadable progress record");
  } else if (s.code() != StatusCode::kNotFound) {
    return s;
  }
  const pb::StoreParams requested = ParamsFromConfig(config_, threshold_);
  auto stored = ReadStoreParams(*store_);
  if (stored.ok()) {
    RETURN_IF_ERROR(OpenStoredPlacement(*stored, requested));
  } else if (stored.status().code() == StatusCode::kNotFound) {
    RETURN_IF_ERROR(CreatePlacement(requested));
  } else {
    return stored.status();
  }
  RETURN_IF_ERROR(OpenShardsAndTier1(expected_records));
  return Resume();
}

Status Pipeline::CheckInputAndOutputs() {
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
    temporary_dir_.path = dir_;
    // Nothing resumes a store removed with its run: its batches need not be durable.
    config_.mutable_tier1()->set_sync(false);
    config_.mutable_tier2()->set_sync(false);
  }
  layout_.dir = dir_;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return IoError("pipeline: cannot create store directory " + dir_ + ": " + ec.message());
  return Status::Ok();
}

Status Pipeline::OpenGroupStore(uint64_t* expected_records) {
  // The input's size decides a file's batches and (tier1.write_buffer_mib 0) the memtable.
  batch_pages_ = o_.batch_pages;
  const bool sizes_memtable = o_.groups == nullptr && config_.tier1().write_buffer_mib() == 0;
  if (o_.feed == nullptr || sizes_memtable) {
    ASSIGN_OR_RETURN(*expected_records, EstimateRecordCount(o_.input, o_.reader));
    if (o_.max_records > 0) *expected_records = std::min(*expected_records, o_.max_records);
  }
  if (o_.feed == nullptr) {
    // A file: known in size. (A feed's batches close by size and by time as its input comes.)
    batch_pages_ = SmallInputBatchPages(o_.batch_pages, *expected_records);
    if (batch_pages_ < o_.batch_pages) {
      spdlog::info("pipeline: batches of {} records (about {} records to read, in at least {} batches; batch_pages {})",
                   batch_pages_, *expected_records, kMinBatchesPerFile, o_.batch_pages);
    }
  }
  if (o_.groups != nullptr) {
    store_ = o_.groups;
    return Status::Ok();
  }
  const tier1::GroupStore::Options go = GroupStoreOptionsFor(layout_, config_, *expected_records);
  ASSIGN_OR_RETURN(owned_store_, tier1::GroupStore::Open(go));
  store_ = owned_store_.get();
  if (config_.tier1().write_buffer_mib() == 0) {
    spdlog::info("pipeline: group store memtable {} MiB (for about {} records to read; tier1.write_buffer_mib 0)",
                 go.write_buffer_bytes >> 20, *expected_records);
  }
  return Status::Ok();
}

Status Pipeline::OpenStoredPlacement(const pb::StoreParams& stored, const pb::StoreParams& requested) {
  // The store's parameters rule; an explicit value that disagrees is refused.
  params_ = stored;
  RETURN_IF_ERROR(CheckGivenParams(params_, requested, o_.given, dir_));
  ApplyParams(params_, &config_, &threshold_, &signer_);
  // The served map, and a rebalance's move (started for this run, or interrupted by a crash),
  // which runs between the batches (pipeline/store_move.h). While a move is open, pages are
  // placed in the new map's cells (which are the old map's, or refine them).
  ASSIGN_OR_RETURN(placement_, Placement::Load(StorePlacementState(layout_, store_), params_));
  if (placement_->moving()) {
    StoreMoveOptions mo;
    mo.step_pages = o_.batch_pages;
    mo.max_mb_per_s = config_.pipeline().move_max_mb_per_s();
    mo.remove_drained = false;  // the run holds them open: Finish removes them
    mo.on_step = o_.move_on_step;
    ASSIGN_OR_RETURN(move_, StoreMove::Open(layout_, store_, placement_.get(), std::move(mo)));
    const pb::MoveJournal& j = placement_->journal();
    spdlog::info("pipeline: store {} moves from map generation {} to {} ({} -> {} shards) between its batches{}", dir_,
                 j.generation_before(), j.generation_after(), j.shards_before(), j.shards_after(),
                 placement_->flipped() ? ": flipped, dropping from the old shards" : "");
  } else {
    // No move: what an ended or never-journaled one left behind goes.
    bool none = false;
    RETURN_IF_ERROR(FinishInterruptedMove(layout_, store_, config_, o_.open_shards, &none));
  }
  if (!o_.map.empty()) {
    ASSIGN_OR_RETURN(partitioner::PartitionMap given, partitioner::PartitionMap::Load(o_.map));
    if (MapDigest(given) != params_.map_digest()) {
      return FailedPrecondition(fmt::format("pipeline: store {} serves its own partition map (generation {}); --map {} "
                                            "is another map, and a store's map changes only by a rebalance",
                                            dir_, params_.map_generation(), o_.map));
    }
  }
  return Status::Ok();
}

Status Pipeline::CreatePlacement(const pb::StoreParams& requested) {
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
  config_.mutable_tier2()->set_min_threshold(params_.min_threshold());
  ASSIGN_OR_RETURN(partitioner::PartitionMap map, OpenMap());
  // The first commit: the map file (atomically), then the parameters naming it. A crash in
  // between leaves a map with no parameters, which the next start checks or rebuilds.
  StorePlacementState state(layout_, store_);
  ASSIGN_OR_RETURN(placement_, Placement::Create(&state, std::move(map), &params_, config_.tier1().sync()));
  config_.mutable_pipeline()->set_shards(params_.shards());
  return Status::Ok();
}

StatusOr<partitioner::PartitionMap> Pipeline::OpenMap() {
  auto fits = [&](const partitioner::PartitionMap& m, const std::string& what) -> Status {
    RETURN_IF_ERROR(CheckMapFits(m, params_, what));
    if (o_.given.count("shards") && m.shards() != params_.shards()) {
      return FailedPrecondition(fmt::format("partition map {} has {} shards, but {} asks for {}", what, m.shards(),
                                            o_.given.at("shards"), params_.shards()));
    }
    return Status::Ok();
  };
  std::optional<partitioner::PartitionMap> map;
  if (!o_.map.empty()) {
    ASSIGN_OR_RETURN(map, partitioner::PartitionMap::Load(o_.map));
    RETURN_IF_ERROR(fits(*map, o_.map));
  } else {
    // Left by a start that committed nothing: used if it fits this run's parameters.
    const StorePlacementState state(layout_, static_cast<const tier1::GroupStore*>(store_));
    ASSIGN_OR_RETURN(map, Placement::LeftoverMap(state));
    if (map && (!fits(*map, state.MapName(MapFile::kServed)).ok() || map->shards() != params_.shards())) {
      spdlog::info("pipeline: {} was left by a start that committed nothing and fits other parameters: built anew",
                   state.MapName(MapFile::kServed));
      map.reset();
    }
  }
  if (!map) return BuildMap();
  const SignerOptions want = map->signer_options();
  if (want.dims != signer_.dims || want.k != signer_.k) {
    return FailedPrecondition(fmt::format("pipeline: the partition map expects dims {} and k {}, the signer has {} and {}",
                                          want.dims, want.k, signer_.dims, signer_.k));
  }
  return std::move(*map);
}

StatusOr<partitioner::PartitionMap> Pipeline::BuildMap() {
  const pb::PipelineConfig& pc = config_.pipeline();
  partitioner::CrawlSampleOptions so;
  so.signer.signer = signer_;
  so.signer.reader = o_.reader;
  so.signer.reader.quiet_bad_lines = true;  // the run reports them, once
  so.signer.threads = o_.threads;
  so.sample_rate = pc.map_sample_rate();
  so.max_pages = pc.map_sample_max_pages();
  so.keep_sets = config_.tier2().initial_order_pages();
  if (o_.feed != nullptr) {
    // A growing input (a Tier 1 server's ingest log): the sample is of what it holds now, to the
    // end of its readable records.
    const uint64_t readable = o_.feed->ReadableBytes();
    so.signer.reader.readable = [readable] { return readable; };
    so.signer.idle = []() -> StatusOr<bool> { return false; };
  }
  ASSIGN_OR_RETURN(partitioner::CrawlSample sample, partitioner::SampleCrawl(o_.input, so));
  // The new shards index in the order of the tokens frequent in the sample (a site's header and
  // footer last) from their first page, until each derives its own (tier2.initial_order_pages).
  if (const std::vector<uint64_t> frequent = tier2::FrequentTokens(sample.sets, 2); !frequent.empty()) {
    initial_order_ = tier2::TokenOrder::FromFrequent(frequent).Serialize();
  }
  sample.sets = {};
  // The share of the input the sample stands for (the part read when it stopped early).
  const double input_share =
      sample.whole_input || input_size_ == 0
          ? 1.0
          : std::clamp(static_cast<double>(sample.reader.bytes) / static_cast<double>(input_size_), 1e-9, 1.0);
  partitioner::MapBuildOptions mo;
  mo.dims = static_cast<uint32_t>(signer_.dims);
  mo.shards = pc.shards();
  mo.threshold = threshold_;
  mo.routing = pc.routing() == "rho" ? pb::PartitionMap::RHO_BOX : pb::PartitionMap::EXACT_L1;
  mo.rho = pc.rho();
  mo.cells_per_shard = pc.cells_per_shard();
  mo.shingle_k = static_cast<uint32_t>(signer_.k);
  mo.contiguous_shards = true;  // fewer shards per page
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
  ASSIGN_OR_RETURN(partitioner::PartitionMap map, partitioner::BuildPartitionMap(sample.sample, mo, page_load));
  // Each shard's index is sized for the prefix postings its sampled pages predict, so that it
  // does not rebuild itself larger and larger as the crawl fills it.
  expected_postings_.assign(map.shards(), 0);
  const double min_t = config_.tier2().min_threshold();
  const uint32_t overlap = config_.tier2().prefix_overlap();
  for (size_t i = 0; i < sample.sample.size(); ++i) {
    const uint32_t shard = map.ShardOf(map.Home(sample.sample.Vector(i, map.proto().feature())));
    expected_postings_[shard] += tier2::PrefixLength(sample.sample.shingle_count(i), min_t, overlap);
  }
  for (uint64_t& p : expected_postings_) {
    p = static_cast<uint64_t>(static_cast<double>(p) / so.sample_rate / input_share);
  }
  spdlog::info("pipeline: partition map from {} sampled pages (of {:.1f}% of the input): {} cells on {} shards",
               sample.sample.size(), 100 * input_share, map.cells(), map.shards());
  return map;
}

Status Pipeline::OpenShardsAndTier1(uint64_t expected_records) {
  // Shards open in parallel: each rebuilds its index from its signature log.
  ShardSetOptions so;
  so.layout = layout_;
  so.config = config_;
  so.shards = placement_->shard_count();
  so.config.mutable_pipeline()->set_shards(so.shards);
  so.expected_postings = expected_postings_;
  so.initial_order = initial_order_;
  ASSIGN_OR_RETURN(shards_, o_.open_shards ? o_.open_shards(so) : OpenLocalShardSet(so));
  if (shards_ == nullptr || shards_->size() != so.shards) {
    return FailedPrecondition("the shard set opened for " + dir_ + " has " +
                              std::to_string(shards_ == nullptr ? 0 : shards_->size()) + " shards, the map " +
                              std::to_string(so.shards));
  }
  sum_.shards = placement_->map().shards();
  sum_.shard_compare_seconds.assign(shards_->size(), 0);
  sum_.shard_store_seconds.assign(shards_->size(), 0);
  sum_.cells = placement_->map().cells();
  sum_.map_version = params_.map_generation();
  source_ = std::make_unique<ShardSignatures>(*placement_, *shards_);
  writes_ = std::make_unique<ShardWrites>(shards_.get(), placement_.get(), source_.get(),
                                          [store = store_] { return store->rows().WaitForWrites(); });
  tier1::Tier1Options t1 = tier1::Tier1OptionsFromConfig(config_.tier1(), threshold_);
  const uint64_t store_bytes = FileBytesUnder(dir_) + expected_records * kStoreBytesPerRecord;
  const uint64_t memory = MemoryBytes();
  // A feed's input grows without end: it is always dropped.
  drop_input_pages_ = o_.feed != nullptr || DropInputPages(input_size_, store_bytes, memory);
  if (drop_input_pages_ && o_.feed == nullptr) {
    spdlog::info("pipeline: the input's pages leave the page cache as they are read (input {:.1f} GB and a store of "
                 "about {:.1f} GB expected, past half of the {:.1f} GB of memory)",
                 static_cast<double>(input_size_) / 1e9, static_cast<double>(store_bytes) / 1e9,
                 static_cast<double>(memory) / 1e9);
  }
  if (config_.tier1().packed_cache_mib() == 0 && config_.tier1().packed_cache_auto()) {
    t1.packed_cache_bytes = AutoPackedCacheBytes(store_bytes, memory);
    if (t1.packed_cache_bytes > 0) {
      spdlog::info("pipeline: Tier 1 keeps up to {} MiB of records packed (a store of about {:.1f} GB expected, "
                   "past the {:.1f} GB of memory; tier1.packed_cache_mib 0)",
                   t1.packed_cache_bytes >> 20, static_cast<double>(store_bytes) / 1e9, static_cast<double>(memory) / 1e9);
    }
  }
  tier1_ = std::make_unique<tier1::Tier1>(store_, source_.get(), std::move(t1));
  return Status::Ok();
}

Status Pipeline::Resume() {
  ASSIGN_OR_RETURN(lagging_, ShardsBehind(*shards_, *placement_, progress_.batches_committed()));
  InputStartOptions io;
  io.input = o_.input;
  io.input_name = input_;
  io.input_size = input_size_;
  io.store = dir_;
  io.lagging = std::find(lagging_.begin(), lagging_.end(), true) != lagging_.end();
  io.followed = o_.feed != nullptr;
  io.abandon_interrupted = o_.abandon_interrupted;
  ASSIGN_OR_RETURN(InputStart start, FindInputStart(&progress_, io));
  resuming_ = start.resuming;
  skip_ = start.skip;
  redo_from_ = start.redo_from;
  sum_.already_consumed = start.already_consumed;
  digest_ = std::move(start.digest);
  return Status::Ok();
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
  progress_.clear_last_batch_classes();
  RowBatch b;
  b.Put(store_->meta_family(), "progress", "", progress_.SerializeAsString());
  RETURN_IF_ERROR(store_->rows().Write(b));
  return store_->rows().WaitForWrites();
}

}  // namespace neardup::pipeline::internal
