#include "cluster/tier1_server/tier1_service.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>

#include <spdlog/spdlog.h>

#include "cluster/http/http_request.h"
#include "common/json_write.h"
#include "common/thread_priority.h"
#include "document/crawl_reader.h"
#include "document/crawl_signer.h"
#include "document/html_text.h"
#include "document/shingle.h"
#include "document/signature.h"
#include "pipeline/placement.h"
#include "pipeline/store.h"

namespace neardup::cluster {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

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
  s->rebalancer_ = std::make_unique<ShardRebalancer>(ShardRebalancerOptions{.layout = s->layout_,
                                                                             .groups = s->groups_.get(),
                                                                             .run = &s->run_,
                                                                             .health = s->health_.get(),
                                                                             .server = c,
                                                                             .on_step = options.rebalance_on_step},
                                                     static_cast<RebalanceLoop*>(s.get()));
  RETURN_IF_ERROR(s->rebalancer_->PlaceShards(std::vector<std::string>(c.tier2().begin(), c.tier2().end())));
  s->loop_ = std::thread([p = s.get()] {
    NameThisThread("nd-t1-loop");
    p->Loop();
  });
  return s;
}

Status Tier1Service::StartRebalance(ClusterRebalanceRequest request) {
  if (stopping_) return FailedPrecondition("tier1-server: stopping");
  RETURN_IF_ERROR(CheckRebalanceRequest(request));
  if (building_map_) {
    return FailedPrecondition("tier1-server: the store has no partition map yet (it is built from the first records "
                              "ingested): nothing to rebalance");
  }
  return rebalancer_->Start(std::move(request));
}

ClusterRebalanceState Tier1Service::RebalanceState() { return rebalancer_->State(); }

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

void Tier1Service::MoveEnded(const pipeline::MoveOutcome& move) {
  {
    std::unique_lock lock(view_mu_);
    map_generation_ = move.generation;
  }
  rebalancer_->MoveEnded(move);
}

uint64_t Tier1Service::DecidedRecords() {
  std::lock_guard lock(stats_mu_);
  return stats_.totals.records;
}

double Tier1Service::DecidedPerSecondBetween(Clock::time_point from, Clock::time_point to, uint64_t decided_before) {
  // Over the time batches were decided from `from`: to the last batch by `to` (an input idle after
  // it is not counted against the batches).
  std::lock_guard lock(stats_mu_);
  for (auto it = decided_.rbegin(); it != decided_.rend(); ++it) {
    if (it->first > to) continue;
    const double span = std::chrono::duration<double>(it->first - from).count();
    if (it->first >= from && span > 0 && it->second > decided_before) {
      return static_cast<double>(it->second - decided_before) / span;
    }
    break;
  }
  return 0;
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
  rebalancer_->Join();
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
    rebalancer_->ApplyEndedMove();  // a move the last run ended: the new map's servers from now on
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
  thread_local std::unique_ptr<HtmlToText> extractor;
  if (extractor == nullptr) {
    ASSIGN_OR_RETURN(extractor, HtmlToText::Create());
  }
  PageStatus out;
  std::shared_lock lock(view_mu_);
  out.map_generation = map_generation_;
  if (view_.shards == nullptr) {
    out.completeness = 0;  // no shard to ask while the loop is down: Tier 1's knowledge only
  }
  const SignerOptions& so = view_.shards != nullptr ? view_.signer : o_.signer;
  // Signed as the batch loop signs its records (document/crawl_signer.h).
  PageFeatures f;
  std::string text;
  RETURN_IF_ERROR(SignRecord(r, Signer(so), extractor.get(), &text, &f));
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
