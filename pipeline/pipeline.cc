// The run's order of steps: set up, the reading thread and the tiers' thread over the input, the
// move's end, the input recorded as consumed, and the summary (pipeline/pipeline_internal.h).
#include "pipeline/pipeline.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/progress.h"
#include "common/thread_priority.h"
#include "partitioner/map_builder.h"
#include "pipeline/pipeline_internal.h"
#include "pipeline/rebalance_store.h"
#include "storage/leveldb_threads.h"

namespace neardup::pipeline {
namespace internal {

StatusOr<PipelineSummary> Pipeline::Run() {
  const auto start = SteadyClock::now();
  RETURN_IF_ERROR(Setup());
  OpenFeed();
  if (!sum_.already_consumed.empty()) {
    spdlog::warn("pipeline: {} was consumed whole already (as {}): nothing to do", o_.input, sum_.already_consumed);
    if (move_ != nullptr && o_.feed == nullptr) RETURN_IF_ERROR(EndMove());
    return Finish(start);
  }
  if (!o_.status_out.empty()) {
    ASSIGN_OR_RETURN(status_file_, StatusFile::Open(o_.status_out, resuming_, progress_.batches_committed()));
  }
  sum_.skipped_records = skip_;
  // The last committed batch of the interrupted input is read again when a shard missed it or
  // its status lines are to be written again.
  const bool lag = std::find(lagging_.begin(), lagging_.end(), true) != lagging_.end();
  redo_ = resuming_ && progress_.records_committed() > 0 && (lag || status_file_ != nullptr);
  RETURN_IF_ERROR(RunBatches());
  RETURN_IF_ERROR(SyncStatusFile());
  // A finished file: the move ends with the run. A feed's run leaves the rest to the next run.
  if (move_ != nullptr && o_.feed == nullptr) RETURN_IF_ERROR(EndMove());
  // Read to its end (not cut short by max_records): the input is consumed. A feed's never is.
  if (o_.feed == nullptr && (o_.max_records == 0 || reading_.seen <= o_.max_records)) {
    RETURN_IF_ERROR(RecordInputConsumed());
    sum_.input_complete = true;
  }
  return Finish(start);
}

Status Pipeline::RunBatches() {
  // Two batches of room between the threads: room for two signing rounds' worth (9 batches) was
  // measured no faster (300k records, three runs each: 21.8/21.9/20.4 s against 21.3/21.4/19.6 s),
  // with the tiers' thread's CPU up 5-13% at 1M records (signing running alongside it more often)
  // and 50 MB more memory.
  BatchQueue queue(2);
  std::thread tiers([&] {
    NameThisThread("nd-tiers");
    TiersLoop(&queue);
  });
  // Signing runs ahead of the tiers on a thread of its own (and its workers), at a lower
  // priority, as do LevelDB's compactions: on a busy machine the tiers' thread gets the cores.
  const int nice = static_cast<int>(config_.pipeline().background_nice());
  LowerLevelDbBackgroundPriority(nice);
  NameLevelDbBackgroundThread();
  Status read;
  std::thread signing([&] {
    NameThisThread("nd-sign");
    if (Status s = LowerThreadPriority(nice); !s.ok()) spdlog::debug("pipeline: {}", s.ToString());
    read = ReadInput(&queue);
    queue.Close();
  });
  signing.join();
  tiers.join();
  RETURN_IF_ERROR(tiers_status_);
  return read;
}

void Pipeline::TiersLoop(BatchQueue* queue) {
  IngestFeed* const feed = o_.feed;
  // A feed's input with nothing uncommitted leaves all the time to a move (polled, so that a batch
  // is not kept waiting); a finished file is never idle: its move runs between batches, and at its
  // end.
  MovePacer pacer(config_.pipeline().move_min_batch_share());
  uint64_t fed_records = 0;  // records of the batches committed (sum_.records is the reader's)
  auto input_idle = [&] { return feed->ReadableBytes() <= progress_.current().bytes(); };
  for (;;) {
    auto waited = SteadyClock::now();
    std::unique_ptr<Batch> b;
    bool idle = false;
    if (moving() && feed != nullptr && o_.move_steps_per_batch == 0) {
      double wait = 0;
      b = queue->PopFor(std::chrono::duration<double>(move_->Due(&wait) ? 0.0 : std::min(wait, 0.1)), &idle);
    } else {
      b = queue->Pop();
    }
    if (idle && !input_idle()) {
      // Input is pending: the reader hands its batch over soon (no polling meanwhile).
      b = queue->Pop();
      idle = false;
    }
    sum_.tiers_wait_seconds += Since(waited);
    const double cpu0 = ThreadCpuSeconds();
    const bool done = b == nullptr && !idle;
    Status s = idle ? AdvanceMove(MoveTurn::kIdle, queue, &pacer)
               : done ? writes_->Finish()  // the last batch's
                      : DecideBatch(std::move(b), queue, &pacer, &fed_records);
    sum_.tiers_cpu_seconds += ThreadCpuSeconds() - cpu0;
    if (!s.ok()) {
      if (!idle) (void)writes_->Finish();  // joined either way; the first error is the one reported
      tiers_status_ = s;  // before the queue closes: the reader reports it
      queue->Close();
      return;
    }
    if (done) return;
    if (!idle) ++sum_.batches;
  }
}

Status Pipeline::DecideBatch(std::unique_ptr<Batch> b, BatchQueue* queue, MovePacer* pacer, uint64_t* fed_records) {
  const uint64_t records = b->redo ? 0 : b->records.size();
  const bool was_moving = moving();
  const auto t0 = SteadyClock::now();
  RETURN_IF_ERROR(b->redo ? Redo(*b) : Process(std::move(b)));
  *fed_records += records;
  if (was_moving) sum_.records_during_move += records;
  if (o_.feed != nullptr) {
    // The batch's pages are answered; what a status query reads of them is durable first.
    RETURN_IF_ERROR(store_->rows().WaitForWrites());
    o_.feed->BatchDone(progress_.batches_committed(), progress_.current().bytes(), FeedCountersNow(*fed_records));
  }
  if (!was_moving) return Status::Ok();
  if (o_.move_steps_per_batch > 0) return AdvanceMove(MoveTurn::kSteps, queue, pacer);
  if (pacer->BatchDone(records, Since(t0))) return AdvanceMove(MoveTurn::kCredit, queue, pacer);
  return Status::Ok();
}

Status Pipeline::ReadInput(BatchQueue* queue) {
  CrawlSignerOptions so = ReaderOptions(queue);
  reading_.first = redo_ ? redo_from_ : skip_;
  reading_.next_record = reading_.first;
  reading_.next_number = progress_.batches_committed() + 1;
  reading_.last_read = reading_.batch_started = SteadyClock::now();
  StartBatch(reading_.first);
  CrawlReaderStats reader_stats;
  Status read = SignCrawl(o_.input, so, [&](CrawlRecord& r, PageFeatures& f) { return AddRecord(r, f, queue); },
                          &reader_stats);
  // A stopped feed's partial batch stays in the input, uncommitted, for the next run.
  if (reading_.stopped) return Status::Ok();
  if (read.ok()) read = HandOff(queue);
  return read;
}

CrawlSignerOptions Pipeline::ReaderOptions(BatchQueue* queue) {
  CrawlSignerOptions so;
  so.signer = signer_;
  so.reader = o_.reader;
  // The input is read once here: past DropInputPages' bound its pages would only push the
  // stores' out of the page cache.
  so.reader.drop_read_pages = drop_input_pages_;
  so.threads = o_.threads;
  so.progress_label = o_.progress ? "run" : "";
  so.keep = [this](const CrawlRecord&) {
    reading_.last_read = SteadyClock::now();
    const uint64_t i = reading_.seen++;
    // The redo batch is always read whole; max_records limits only records new to the store.
    return i >= reading_.first && (i < skip_ || o_.max_records == 0 || i < o_.max_records);
  };
  if (o_.feed != nullptr) {
    // The reader pauses having read exactly up to the last limit it was given: what the idle wait
    // waits to grow (whether those bytes held records or lines it skipped).
    so.reader.readable = [this] { return reading_.limit = o_.feed->ReadableBytes(); };
    so.idle = [this, queue] { return WaitForFeed(queue); };
  }
  return so;
}

StatusOr<bool> Pipeline::WaitForFeed(BatchQueue* queue) {
  IngestFeed* const feed = o_.feed;
  for (;;) {
    // The service stops the run, or the tiers' thread failed (between batches: a move's step).
    if (feed->Stopping() || queue->Closed()) {
      reading_.stopped = true;
      return false;
    }
    if (feed->ReadableBytes() > reading_.limit) return true;
    const auto now = SteadyClock::now();
    if (reading_.batch->records.empty()) {
      feed->WaitReadable(reading_.limit, now + std::chrono::milliseconds(200));
      continue;
    }
    // Cut the batch held short once the input stayed idle for linger, or its first record waited
    // max_batch_delay.
    const auto cut = std::min(reading_.last_read + o_.linger, reading_.batch_started + o_.max_batch_delay);
    if (now >= cut) {
      RETURN_IF_ERROR(HandOff(queue));
      continue;
    }
    feed->WaitReadable(reading_.limit, cut);
  }
}

void Pipeline::StartBatch(uint64_t first_record) {
  writes_->DropRetired();
  reading_.batch = std::make_unique<Batch>();
  Batch& b = *reading_.batch;
  b.first_record = first_record;
  b.redo = redo_ && first_record < skip_;
  b.number = b.redo ? progress_.batches_committed() : reading_.next_number++;
}

Status Pipeline::HandOff(BatchQueue* queue) {
  std::unique_ptr<Batch>& batch = reading_.batch;
  if (batch->records.empty()) return Status::Ok();
  if (!batch->redo) {
    sum_.records += batch->records.size();
    // What the batch's commit says of the input: how far it is consumed, and its digest so far.
    batch->end_offset = batch->records.back().end_offset;
    RETURN_IF_ERROR(digest_->Advance(batch->end_offset));
    digest_->Get(&batch->digest_lo, &batch->digest_hi);
  }
  if (!queue->Push(std::move(batch))) return tiers_status_.ok() ? Internal("pipeline: queue closed") : tiers_status_;
  StartBatch(reading_.next_record);
  return Status::Ok();
}

Status Pipeline::AddRecord(CrawlRecord& r, PageFeatures& f, BatchQueue* queue) {
  if (o_.feed != nullptr && o_.feed->Stopping()) {
    reading_.stopped = true;
    return FailedPrecondition("pipeline: stopping");  // not an error of the run (ReadInput)
  }
  const Placement& placement = *placement_;
  Batch& b = *reading_.batch;
  if (b.records.empty()) {
    reading_.batch_started = SteadyClock::now();
    // Routed on the map served now; during a move the tiers' thread routes again past a flip.
    b.routed_flipped = placement.flipped();
  }
  b.cell.push_back(0);
  b.shards.emplace_back();
  if (r.has_content()) {
    const auto v = placement.map().VectorOf(f);
    b.cell.back() = placement.map().Home(v);
    if (placement.moving()) b.vectors.insert(b.vectors.end(), v.begin(), v.end());
    if (!f.shingles.empty()) placement.Route(b.routed_flipped, v, &b.shards.back());
    b.signatures.push_back(ToProto(r.url, f, signer_));
  } else {
    if (placement.moving()) b.vectors.insert(b.vectors.end(), placement.map().dims(), 0);
    b.signatures.emplace_back();
  }
  std::string().swap(r.body);  // signed: the tiers need only its signature (and the memory back)
  b.records.push_back(std::move(r));
  ++reading_.next_record;
  // The redo batch ends where the committed records end; the others hold batch_pages_ records.
  if ((b.redo && reading_.next_record == skip_) || (!b.redo && b.records.size() >= batch_pages_)) {
    return HandOff(queue);
  }
  return Status::Ok();
}

void Pipeline::OpenFeed() {
  if (o_.feed == nullptr || feed_open_) return;
  IngestFeed::View v;
  v.shards = shards_.get();
  v.placement = placement_.get();
  v.threshold = threshold_;
  v.signer = signer_;
  o_.feed->Opened(v);
  feed_open_ = true;
}

void Pipeline::CloseFeed() {
  if (!feed_open_) return;
  feed_open_ = false;
  o_.feed->Closing();
}

FeedCounters Pipeline::FeedCountersNow(uint64_t records) const {
  FeedCounters c;
  c.records = records;
  c.batches = sum_.batches + 1;
  c.new_pages = sum_.new_pages, c.unchanged = sum_.unchanged, c.changed = sum_.changed, c.fast_path = sum_.fast_path;
  c.tier2_pages = sum_.tier2_pages, c.tier2_sends = sum_.tier2_sends;
  c.redirects = sum_.redirects, c.merges = sum_.merges, c.repairs = sum_.repairs;
  c.verifications = static_cast<uint64_t>(store_->rows().Counter("verifications"));
  c.rejections = static_cast<uint64_t>(store_->rows().Counter("rejections"));
  return c;
}

StatusOr<PipelineSummary> Pipeline::Finish(SteadyClock::time_point start) {
  sum_.seconds = Since(start);
  sum_.peak_rss_bytes = PeakRssBytes();
  sum_.tier1_page_reads = tier1_->page_reads();
  sum_.tier1_group_reads = tier1_->group_reads();
  sum_.tier1_member_reads = tier1_->member_reads();
  sum_.tier1_tables = store_->rows().table_stats();
  const ShardWriteTimes& times = writes_->times();
  sum_.tier2_stage_seconds = times.stage_seconds;
  sum_.tier2_apply_seconds = times.apply_seconds;
  sum_.tier2_apply_wait_seconds = times.apply_wait_seconds;
  sum_.shard_store_seconds = times.shard_store_seconds;
  if (!o_.groups_out.empty()) {
    const auto t0 = SteadyClock::now();
    // Every page of the store as the run leaves it, from read-only queries.
    std::vector<std::string> urls;
    RETURN_IF_ERROR(store_->rows().ScanFamily(store_->page_family(), [&](std::string_view url, std::string_view,
                                                                         std::string_view) {
      urls.emplace_back(url);
      return true;
    }));
    RETURN_IF_ERROR(WriteGroupsFile(o_.groups_out, urls, [&](const std::string& url, tier1::StatusAnswer* a) {
      return tier1_->Query(url, nullptr, a);
    }));
    sum_.output_seconds = Since(t0);
  }
  RETURN_IF_ERROR(GatherStoreTotals());
  GatherShardTotals();
  CloseFeed();
  writes_.reset();
  tier1_.reset();
  source_.reset();
  shards_.reset();
  // A move this run ended left its drained shards to the run, which held them open.
  if (move_ended_here_ && !o_.open_shards) RETURN_IF_ERROR(RemoveDrainedShards(layout_, params_.shards()));
  owned_store_.reset();
  store_ = nullptr;
  return sum_;
}

Status Pipeline::GatherStoreTotals() {
  const RowStore& rows = store_->rows();
  sum_.verifications = static_cast<uint64_t>(rows.Counter("verifications"));
  sum_.reverifications = static_cast<uint64_t>(rows.Counter("reverifications"));
  sum_.rejections = static_cast<uint64_t>(rows.Counter("rejections"));
  sum_.kept_decisions = static_cast<uint64_t>(rows.Counter("kept_decisions"));
  sum_.kept_compares = static_cast<uint64_t>(rows.Counter("kept_compares"));
  sum_.kept_fetches = static_cast<uint64_t>(rows.Counter("kept_fetches"));
  sum_.kept_scans = static_cast<uint64_t>(rows.Counter("kept_scans"));
  sum_.kept_recomputed = static_cast<uint64_t>(rows.Counter("kept_recomputed"));
  return rows.ScanFamily(store_->group_family(), [&](std::string_view, std::string_view, std::string_view v) {
    pb::Tier1Group g;
    if (tier1::GroupStore::DecodeGroup(v, &g)) {
      ++sum_.groups;
      if (g.members() >= 2) ++sum_.multi_groups;
      sum_.pages += g.members();
      if (g.kept_set()) {
        ++sum_.kept_sets;
        sum_.kept_pages += static_cast<uint64_t>(g.kept_size());
      } else if (g.members() >= 2) {
        ++sum_.kept_sets_missing;
      }
    }
    return true;
  });
}

void Pipeline::GatherShardTotals() {
  // The shards of the map pages are placed in: the served map's, or a move's new map's (a move
  // opens both maps'; the other map's hold copies, or nothing).
  const partitioner::PartitionMap& served = placement_->map();
  for (uint32_t m = 0; m < shards_->size(); ++m) {
    const tier2::ShardStats st = shards_->Stats(m);
    if (m >= served.shards()) continue;
    sum_.shard_pages += st.resident_pages;
    sum_.shard_resident_pages.push_back(st.resident_pages);
    sum_.shard_ram_bytes += st.index_bytes + st.page_table_bytes;
    sum_.shard_index_bytes += st.index_bytes;
    sum_.shard_postings += st.index_postings;
    sum_.shard_compactions += st.compactions;
    sum_.shard_rebuilds += st.rebuilds;
    sum_.shard_order_refreshes += st.order_refreshes;
    sum_.shard_refreshed_pages += st.refreshed_pages;
  }
  std::vector<double> load(sum_.shard_resident_pages.begin(), sum_.shard_resident_pages.end());
  sum_.shard_imbalance = partitioner::Imbalance(load);
  sum_.planned_imbalance = PlannedImbalance(served);
  sum_.imbalance_drift = sum_.shard_imbalance - sum_.planned_imbalance;
  sum_.rebalance_imbalance = config_.pipeline().rebalance_imbalance();
  if (sum_.shard_imbalance > sum_.rebalance_imbalance) {
    // A temporary store goes with the run: a store kept with --store is what a rebalance takes.
    spdlog::warn("pipeline: shard imbalance {:.3f} is past {:.2f} (pipeline.rebalance_imbalance): a rebalance would "
                 "help ({})",
                 sum_.shard_imbalance, sum_.rebalance_imbalance,
                 temporary_dir_.path.empty() ? "neardup rebalance --store " + dir_
                                             : std::string("of a store kept with --store: this run's is removed"));
  }
}

Pipeline::TemporaryDir::~TemporaryDir() {
  if (path.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) spdlog::warn("pipeline: could not remove the run's temporary store {}: {}", path, ec.message());
}

}  // namespace internal

StatusOr<PipelineSummary> RunPipeline(const PipelineOptions& options) {
  internal::Pipeline p(options);
  return p.Run();
}

namespace {

// The summary's lines on what the run read and decided.
std::string SummaryDecisions(const PipelineSummary& s) {
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
  o += fmt::format("gone               {} pages removed, {} gone records for URLs the store did not hold\n", s.gone,
                   s.gone_unknown);
  o += fmt::format("tier 1 fast path   {} of {} changed pages ({:.1f}%) kept without Tier 2\n", s.fast_path, s.changed,
                   100.0 * s.fast_path_share());
  o += fmt::format("tier 2             {} pages compared, {} page-shard sends over {} shards ({} cells), {} candidates, "
                   "{} verified, {} pairs ({} sends answered through an identical page of their batch, {} at the cap "
                   "on matches)\n",
                   s.tier2_pages, s.tier2_sends, s.shards, s.cells, s.tier2_candidates, s.tier2_verifications, s.tier2_pairs,
                   s.tier2_copies, s.tier2_capped);
  o += fmt::format("groups             {} merges, {} moves (splits), {} new groups, {} redirect cycles\n", s.merges,
                   s.moves, s.new_groups, s.redirect_cycles);
  o += fmt::format("verification       {} checks ({} after a winner changed), {} rejections ({:.2f}%), {} repairs, {} "
                   "groups split off by repair\n",
                   s.verifications, s.reverifications, s.rejections,
                   s.verifications > 0 ? 100.0 * static_cast<double>(s.rejections) / static_cast<double>(s.verifications) : 0.0,
                   s.repairs, s.repair_splits);
  o += fmt::format("store              {} pages in {} groups, {} with 2+ members\n", s.pages, s.groups, s.multi_groups);
  return o;
}

// The summary's lines on Tier 1's costs: its tables, kept sets and lookups, and the time.
std::string SummaryTier1Costs(const PipelineSummary& s) {
  std::string o;
  if (s.tier1_tables.written_bytes > 0) {
    const auto gb = [](uint64_t b) { return static_cast<double>(b) / 1e9; };
    o += fmt::format("tier 1 tables      {:.2f} GB held; LevelDB wrote {:.2f} GB of tables in this run ({:.1f}x what it "
                     "holds: flushes and compactions) and read {:.2f} GB to compact\n",
                     gb(s.tier1_tables.held_bytes), gb(s.tier1_tables.written_bytes),
                     static_cast<double>(s.tier1_tables.written_bytes) /
                         static_cast<double>(std::max<uint64_t>(s.tier1_tables.held_bytes, 1)),
                     gb(s.tier1_tables.compaction_read_bytes));
  }
  o += fmt::format("kept sets          {} groups, {} content pages kept in them, {} groups of 2+ members without one "
                   "(over tier1.kept_max_members); {} decisions, {} comparisons, {} signatures fetched, {} member "
                   "scans, {} recomputed whole\n",
                   s.kept_sets, s.kept_pages, s.kept_sets_missing, s.kept_decisions, s.kept_compares, s.kept_fetches,
                   s.kept_scans, s.kept_recomputed);
  o += fmt::format("tier 1 lookups     pages: {} cached ({} packed), {} read, {} known absent, {} groups of matches "
                   "from memory; groups: {} cached ({} packed), {} read; member lists: {} cached ({} packed), {} "
                   "read\n",
                   s.tier1_page_reads.hits, s.tier1_page_reads.unpacked, s.tier1_page_reads.reads,
                   s.tier1_page_reads.skipped, s.tier1_page_reads.indexed, s.tier1_group_reads.hits,
                   s.tier1_group_reads.unpacked, s.tier1_group_reads.reads, s.tier1_member_reads.hits,
                   s.tier1_member_reads.unpacked, s.tier1_member_reads.reads);
  o += fmt::format("time               tier1 {:.2f} s, tier2 compare {:.2f} s, tier2 apply {:.2f} s, status {:.2f} s; "
                   "peak RSS {:.0f} MiB\n",
                   s.tier1_seconds, s.tier2_compare_seconds, s.tier2_apply_seconds, s.query_seconds,
                   static_cast<double>(s.peak_rss_bytes) / 1048576.0);
  return o;
}

// The summary's lines on the shards, the map and the threads.
std::string SummaryShardsAndThreads(const PipelineSummary& s) {
  std::string o;
  {
    const double pages = static_cast<double>(std::max<uint64_t>(s.shard_pages, 1));
    o += fmt::format("shards             {} resident pages, {:.0f} B/page of index and page tables in RAM "
                     "(index {:.0f} B: {:.1f} postings; page tables {:.0f} B), {} index compactions, {} rebuilds, "
                     "{} token order refreshes ({} pages re-indexed)\n",
                     s.shard_pages, static_cast<double>(s.shard_ram_bytes) / pages,
                     static_cast<double>(s.shard_index_bytes) / pages, static_cast<double>(s.shard_postings) / pages,
                     static_cast<double>(s.shard_ram_bytes - s.shard_index_bytes) / pages, s.shard_compactions,
                     s.shard_rebuilds, s.shard_order_refreshes, s.shard_refreshed_pages);
  }
  o += fmt::format("map                version {}{}; shard imbalance {:.3f} (map planned {:.3f}, drift {:+.3f}){}\n",
                   s.map_version,
                   s.finished_move ? fmt::format(" (a rebalance's move ended in this run: {} pages copied in {} steps, "
                                                 "{:.2f} s; {} records decided while it ran)",
                                                 s.move_pages, s.move_steps, s.move_seconds, s.records_during_move)
                                   : std::string(),
                   s.shard_imbalance, s.planned_imbalance, s.imbalance_drift,
                   s.rebalance_imbalance > 0 && s.shard_imbalance > s.rebalance_imbalance
                       ? fmt::format(": past {:.2f}, a rebalance would help", s.rebalance_imbalance)
                       : std::string());
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

}  // namespace

std::string FormatSummary(const PipelineSummary& s) {
  return SummaryDecisions(s) + SummaryTier1Costs(s) + SummaryShardsAndThreads(s);
}

}  // namespace neardup::pipeline
