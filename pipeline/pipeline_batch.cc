// One batch through the tiers (steps 2-5 of pipeline/pipeline.h), the shards' background writes,
// and the last committed batch redone after a crash.
#include "pipeline/pipeline_internal.h"

namespace neardup::pipeline::internal {

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


std::vector<std::vector<tier2::ShardPage>> Pipeline::HomePages(const Batch& b,
                                                                const std::vector<Classification>& classes) const {
  std::vector<std::vector<tier2::ShardPage>> pages(P());
  for (size_t i = 0; i < b.records.size(); ++i) {
    const Classification c = classes[i];
    if (c != Classification::kFastPath && c != Classification::kTier2 && c != Classification::kEmpty) continue;
    uint32_t to[2];
    for (int k = 0, n = placement_->StoreShards(b.cell[i], to); k < n; ++k) {
      pages[to[k]].push_back({&b.signatures[i], true, /*validated=*/true});
    }
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
    if (rm.cell() >= placement_->map().cells()) continue;
    uint32_t from[2];
    for (int k = 0, n = placement_->RemovalShards(rm.cell(), from); k < n; ++k) removed[from[k]].push_back(rm.url());
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
  std::vector<Classification> classes(b.records.size(), Classification::kTier2);
  const std::string& stored = progress_.last_batch_classes();
  if (stored.size() == b.records.size()) {
    for (size_t i = 0; i < classes.size(); ++i) classes[i] = static_cast<Classification>(stored[i]);
  } else {
    std::unordered_map<std::string_view, size_t> last;
    for (size_t i = 0; i < b.records.size(); ++i) {
      if (b.records[i].gone) classes[i] = Classification::kGone;
      else if (b.records[i].is_redirect()) classes[i] = Classification::kRedirect;
      else if (b.signatures[i].shingles_size() == 0) classes[i] = Classification::kEmpty;
      auto [it, fresh] = last.emplace(b.records[i].url, i);
      if (!fresh) classes[it->second] = Classification::kSuperseded, it->second = i;
    }
  }
  if (std::find(lagging_.begin(), lagging_.end(), true) != lagging_.end()) {
    RETURN_IF_ERROR(StageOnShards(HomePages(b, classes), lagging_));
    google::protobuf::RepeatedPtrField<pb::Tier2Removal> removals = progress_.last_batch_removals();
    AddMoveRemovals(b, classes, &removals);
    RETURN_IF_ERROR(ApplyToShards(b.number, removals));
    sum_.redone_shard_batches += static_cast<uint64_t>(std::count(lagging_.begin(), lagging_.end(), true));
    lagging_.assign(lagging_.size(), false);
  }
  if (status_file_ == nullptr) return Status::Ok();
  const uint64_t before = sum_.status_lines_rewritten;
  RETURN_IF_ERROR(WriteStatus(b, classes));
  for (Classification c : classes) sum_.status_lines_rewritten += c != Classification::kSuperseded;
  if (sum_.status_lines_rewritten > before) {
    spdlog::info("pipeline: wrote the status lines of batch {} again ({} lines)", b.number,
                 sum_.status_lines_rewritten - before);
  }
  return SyncStatusFile();
}

void Pipeline::StartShardWrites(std::unique_ptr<Batch> b, std::vector<Classification> classes) {
  writing_ = std::move(b);
  writing_classes_ = std::move(classes);
  const Batch& w = *writing_;
  std::unordered_set<std::string_view> stored;
  for (size_t i = 0; i < w.records.size(); ++i) {
    const Classification c = writing_classes_[i];
    if (c == Classification::kFastPath || c == Classification::kTier2) {
      source_->Overlay(w.records[i].url, w.cell[i], &w.signatures[i]);
      stored.insert(w.records[i].url);
    }
    if (c == Classification::kEmpty) source_->Overlay(w.records[i].url, w.cell[i], nullptr);
  }
  writing_removals_ = progress_.last_batch_removals();
  AddMoveRemovals(w, writing_classes_, &writing_removals_);
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
  writing_classes_.clear();
  writing_removals_.Clear();
  return s;
}

void Pipeline::ReportIncomplete(const Batch& b, const std::vector<std::vector<uint32_t>>& index,
                                const std::vector<Status>& compared) {
  if (o_.feed == nullptr) return;
  const size_t n = b.records.size(), P = compared.size();
  // Each shard's weight: the pages it holds, as it says (a shard that did not answer is asked
  // too; one that cannot say weighs as the others' mean).
  std::vector<double> weight(P, -1);
  double known = 0;
  size_t known_count = 0;
  for (size_t m = 0; m < P; ++m) {
    if (index[m].empty()) continue;
    const tier2::ShardStats st = shards_->Stats(static_cast<uint32_t>(m));
    if (st.resident_pages > 0 || compared[m].ok()) {
      weight[m] = static_cast<double>(st.resident_pages);
      known += weight[m];
      ++known_count;
    }
  }
  const double mean = known_count > 0 ? known / static_cast<double>(known_count) : 1;
  std::vector<double> total(n, 0), answered(n, 0);
  for (size_t m = 0; m < P; ++m) {
    const double w = std::max(weight[m] < 0 ? mean : weight[m], 1e-9);  // an empty shard still counts
    for (uint32_t i : index[m]) {
      total[i] += w;
      if (compared[m].ok()) answered[i] += w;
    }
  }
  std::vector<std::string> urls(n);
  std::vector<double> completeness(n, 1);
  for (size_t i = 0; i < n; ++i) {
    urls[i] = b.records[i].url;
    if (total[i] > 0) completeness[i] = answered[i] / total[i];
  }
  o_.feed->CompareIncomplete(b.number, urls, completeness);
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
    u.signature = r.has_content() ? &b.signatures[i] : nullptr;
    u.gone = r.gone;
    u.home_cell = b.cell[i];
    u.popularity = r.popularity;
    u.market = r.market;
    u.fetched_at_ms = r.fetched_at_ms.value_or(0);
    pending.insert(r.url);
  }
  tier1_->SetPending(std::move(pending));
  auto t0 = SteadyClock::now();
  double cpu0 = ThreadCpuSeconds();
  std::vector<Classification> classes;
  std::vector<bool> changed;
  RETURN_IF_ERROR(tier1_->Classify(updates, &classes, &changed));
  sum_.tier1_seconds += Since(t0);
  sum_.tier1_cpu_seconds += ThreadCpuSeconds() - cpu0;
  // Tier 2 compares against everything stored so far: the previous batch must be published.
  RETURN_IF_ERROR(AwaitShardsPublished());

  RouteForMove(b);
  // Tier 2: each shard compares the pages routed to it.
  const size_t P = shards_->size();
  std::vector<std::vector<uint32_t>> index(P);
  std::vector<std::vector<tier2::ShardPage>> pages(P);
  for (size_t i = 0; i < n; ++i) {
    if (classes[i] != Classification::kTier2) continue;
    ++sum_.tier2_pages;
    if (changed[i]) ++sum_.changed;
    else ++sum_.new_pages;
    for (uint32_t m : b.shards[i]) {
      index[m].push_back(static_cast<uint32_t>(i));
      pages[m].push_back({&b.signatures[i], m == placement_->ShardOf(b.cell[i]), /*validated=*/true});
      ++sum_.tier2_sends;
    }
  }
  // Pages the fast path kept meet the batch's compared pages in their new versions, on the shards
  // that compare some of them (Tier 1 takes such a pair only when the kept page comes first: the
  // pages before it meet its resident version).
  for (size_t i = 0; i < n; ++i) {
    if (classes[i] != Classification::kFastPath) continue;
    for (uint32_t m : b.shards[i]) {
      if (pages[m].empty() || pages[m].front().join_only) continue;
      index[m].push_back(static_cast<uint32_t>(i));
      pages[m].push_back({&b.signatures[i], false, /*validated=*/true, /*join_only=*/true});
    }
  }
  // The URLs whose resident versions Tier 1 will take as stale (tier1::Tier1::Apply): a shard
  // does not let a match with one of them take the place of one that counts (its cap on matches
  // per page, tier2/README.md: Copies).
  std::vector<uint64_t> stale;
  for (size_t i = 0; i < n; ++i) {
    switch (classes[i]) {
      case Classification::kTier2:
      case Classification::kFastPath:
      case Classification::kEmpty:
      case Classification::kRedirect:
      case Classification::kGone:
        stale.push_back(UrlHash(b.records[i].url));
        break;
      default:
        break;
    }
  }
  tier2::CompareOptions compare;
  compare.stale_url_hashes = stale;
  std::vector<tier2::CompareResult> results(P);
  t0 = SteadyClock::now();
  std::vector<Status> compared(P);
  Status all_compared = ForEachShard(*compare_pool_, [&](size_t m) -> Status {
    if (pages[m].empty()) return Status::Ok();
    compared[m] = shards_->Compare(static_cast<uint32_t>(m), pages[m], threshold_, compare, &results[m]);
    return compared[m];
  }, &sum_.shard_compare_seconds);
  if (!all_compared.ok()) {
    ReportIncomplete(b, index, compared);
    return all_compared;
  }
  sum_.tier2_compare_seconds += Since(t0);
  Tier2Matches matches;
  std::set<std::pair<uint32_t, uint32_t>> seen_pairs;
  // During a move's copy a destination holds copies of the pages it takes in: a page routed to it
  // for another cell meets them there as well as on their source. Each pair once.
  std::set<std::pair<uint32_t, std::string_view>> seen_resident;
  for (size_t m = 0; m < P; ++m) {
    const auto& res = results[m];
    sum_.tier2_candidates += res.stats.candidates + res.stats.batch_candidates;
    sum_.tier2_verifications += res.stats.verifications + res.stats.batch_merged;
    sum_.tier2_copies += res.stats.copies;
    sum_.tier2_capped += res.stats.capped_pages;
    for (const auto& r : res.resident) {
      if (placement_->moving() && !seen_resident.emplace(index[m][r.page], r.url).second) continue;
      matches.resident.push_back({index[m][r.page], r.url, r.similarity});
    }
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
  stager_.Start([this, home = HomePages(b, classes)] { return StageOnShards(home, {}); });
  for (size_t i = 0; i < n; ++i) {
    switch (classes[i]) {
      case Classification::kUnchanged: ++sum_.unchanged; break;
      case Classification::kFastPath: ++sum_.fast_path, ++sum_.changed; break;
      case Classification::kRedirect: ++sum_.redirects; break;
      case Classification::kEmpty: ++sum_.empty; break;
      case Classification::kSuperseded: ++sum_.superseded; break;
      case Classification::kTier2: break;
      case Classification::kGone: break;  // counted by Tier 1 (ApplyOutcome): removed, or unknown
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
  std::string class_bytes(n, '\0');
  for (size_t i = 0; i < n; ++i) class_bytes[i] = static_cast<char>(classes[i]);
  next.set_last_batch_classes(std::move(class_bytes));
  ApplyOutcome outcome;
  t0 = SteadyClock::now();
  cpu0 = ThreadCpuSeconds();
  Status applied = tier1_->Apply(updates, classes, matches, &next, &outcome);
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
  sum_.gone += outcome.gone;
  sum_.gone_unknown += outcome.gone_unknown;
  tier1_->SetPending({});

  StartShardWrites(std::move(batch), std::move(classes));
  return WriteStatus(*writing_, writing_classes_);
}

Status Pipeline::AdvanceMove(MoveTurn turn, BatchQueue* queue) {
  if (move_ == nullptr || move_->done()) return Status::Ok();
  double wait = 0;
  auto more = [&](uint32_t taken) {
    if (!move_->Due(&wait)) return false;
    switch (turn) {
      case MoveTurn::kSteps: return taken < o_.move_steps_per_batch;
      case MoveTurn::kCredit: return move_credit_ > 0 && !queue->Waiting();
      case MoveTurn::kIdle: return !queue->Waiting();
    }
    return false;
  };
  if (!more(0)) return Status::Ok();
  // The shards hold every batch Tier 1 committed, and none is being written.
  RETURN_IF_ERROR(FinishShardWrites());
  uint32_t taken = 0;
  do {
    const auto t0 = SteadyClock::now();
    const uint64_t relabelled = move_->counts().pages_relabelled;
    RETURN_IF_ERROR(move_->Step(shards_.get(), progress_.batches_committed()));
    // Records the step changed beside Tier 1 are read again.
    if (move_->counts().pages_relabelled != relabelled) RETURN_IF_ERROR(tier1_->ForgetCachedRecords());
    ++taken;
    // Idle time is the move's; a step taken while batches wait is charged to its credit.
    if (turn == MoveTurn::kCredit) move_credit_ -= Since(t0);
    if (move_->done()) return MoveEnded();
  } while (more(taken));
  return Status::Ok();
}

void Pipeline::AddMoveRemovals(const Batch& b, const std::vector<Classification>& classes,
                               google::protobuf::RepeatedPtrField<pb::Tier2Removal>* removals) const {
  if (!placement_->moving()) return;
  for (size_t i = 0; i < b.records.size(); ++i) {
    const Classification c = classes[i];
    if (c != Classification::kFastPath && c != Classification::kTier2 && c != Classification::kEmpty) continue;
    if (!placement_->ClearsOldShard(b.cell[i])) continue;
    pb::Tier2Removal* r = removals->Add();
    r->set_url(b.records[i].url);
    r->set_cell(b.cell[i]);
  }
}

void Pipeline::RouteForMove(Batch& b) const {
  if (!placement_->moving() || b.routed_flipped == placement_->flipped()) return;
  b.routed_flipped = placement_->flipped();
  const size_t dims = placement_->map().dims();
  for (size_t i = 0; i < b.records.size(); ++i) {
    if (b.shards[i].empty()) continue;  // no content, or no shingles: compared nowhere
    placement_->Route(b.routed_flipped, std::span<const uint32_t>(b.vectors.data() + i * dims, dims), &b.shards[i]);
  }
}

Status Pipeline::EndMove() {
  if (move_->done()) return Status::Ok();
  RETURN_IF_ERROR(FinishShardWrites());
  const uint64_t relabelled = move_->counts().pages_relabelled;
  RETURN_IF_ERROR(move_->Finish(shards_.get(), progress_.batches_committed()));
  if (move_->counts().pages_relabelled != relabelled) RETURN_IF_ERROR(tier1_->ForgetCachedRecords());
  return MoveEnded();
}

Status Pipeline::MoveEnded() {
  ASSIGN_OR_RETURN(params_, ReadStoreParams(*store_));
  move_ended_here_ = true;
  sum_.finished_move = true;
  sum_.map_version = params_.map_generation();
  sum_.shards = params_.shards();
  sum_.move_pages = move_->counts().pages_moved;
  sum_.move_bytes = move_->counts().bytes_moved;
  sum_.move_steps = move_->counts().steps;
  sum_.move_seconds = move_->counts().seconds;
  spdlog::info("pipeline: store {} serves map generation {} over {} shards: {} pages moved in {:.1f} s of steps, {} "
               "records decided meanwhile",
               dir_, params_.map_generation(), params_.shards(), sum_.move_pages, sum_.move_seconds,
               sum_.records_during_move);
  if (o_.feed != nullptr) {
    MoveOutcome m;
    m.generation = params_.map_generation();
    m.shards = params_.shards();
    m.pages = sum_.move_pages, m.bytes = sum_.move_bytes, m.steps = sum_.move_steps;
    m.seconds = sum_.move_seconds;
    m.records = sum_.records_during_move;
    o_.feed->MoveEnded(m);
  }
  return Status::Ok();
}

}  // namespace neardup::pipeline::internal
