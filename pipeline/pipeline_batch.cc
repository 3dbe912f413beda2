// One batch through the tiers (steps 2-6 of pipeline/pipeline.h), and the last committed batch
// redone after a crash.
#include <set>

#include <spdlog/spdlog.h>

#include "common/url_hash_map.h"
#include "pipeline/pipeline_internal.h"
#include "pipeline/redo.h"

namespace neardup::pipeline::internal {

using tier1::Classification;

namespace {

// What Tier 1 is told of each record of the batch.
std::vector<tier1::PageUpdate> UpdatesOf(const Batch& b) {
  std::vector<tier1::PageUpdate> updates(b.records.size());
  for (size_t i = 0; i < b.records.size(); ++i) {
    const CrawlRecord& r = b.records[i];
    tier1::PageUpdate& u = updates[i];
    u.url = r.url;
    u.redirect_to = r.redirect_to;
    u.signature = r.has_content() ? &b.signatures[i] : nullptr;
    u.gone = r.gone;
    u.home_cell = b.cell[i];
    u.popularity = r.popularity;
    u.market = r.market;
    u.fetched_at_ms = r.fetched_at_ms.value_or(0);
  }
  return updates;
}

// The URLs whose resident versions Tier 1 will take as stale (tier1::Tier1::Apply): a shard does
// not let a match with one of them take the place of one that counts (its cap on matches per
// page, tier2/README.md: Copies).
std::vector<uint64_t> StaleUrlHashes(const Batch& b, const std::vector<Classification>& classes) {
  std::vector<uint64_t> stale;
  for (size_t i = 0; i < b.records.size(); ++i) {
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
  return stale;
}

// The progress Tier 1 commits with batch `b`: how far the input is consumed (its digest so far),
// and the batch's classifications (its removals are added once Tier 1 applied it).
pb::Tier1Progress ProgressAfter(const pb::Tier1Progress& progress, const Batch& b,
                                const std::vector<Classification>& classes) {
  const size_t n = b.records.size();
  pb::Tier1Progress next = progress;
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
  return next;
}

}  // namespace

Status Pipeline::Process(std::unique_ptr<Batch> batch) {
  Batch& b = *batch;
  const std::vector<tier1::PageUpdate> updates = UpdatesOf(b);
  UrlSet pending;
  for (const CrawlRecord& r : b.records) pending.insert(r.url);
  tier1_->SetPending(std::move(pending));
  std::vector<Classification> classes;
  std::vector<bool> changed;
  RETURN_IF_ERROR(Classify(updates, &classes, &changed));
  // Tier 2 compares against everything stored so far: the previous batch must be published.
  RETURN_IF_ERROR(writes_->AwaitPublished());
  tier1::Tier2Matches matches;
  RETURN_IF_ERROR(Compare(b, classes, changed, &matches));
  RETURN_IF_ERROR(Commit(b, updates, classes, matches));
  tier1_->SetPending({});
  // Step 5 in the background, and step 6 meanwhile.
  google::protobuf::RepeatedPtrField<pb::Tier2Removal> removals = progress_.last_batch_removals();
  AddMoveRemovals(*placement_, b, classes, &removals);
  writes_->Start(std::move(batch), std::move(classes), std::move(removals));
  return WriteStatus(writes_->writing(), writes_->writing_classes());
}

Status Pipeline::Classify(const std::vector<tier1::PageUpdate>& updates, std::vector<Classification>* classes,
                          std::vector<bool>* changed) {
  const auto t0 = SteadyClock::now();
  const double cpu0 = ThreadCpuSeconds();
  Status s = tier1_->Classify(updates, classes, changed);
  sum_.tier1_seconds += Since(t0);
  sum_.tier1_cpu_seconds += ThreadCpuSeconds() - cpu0;
  return s;
}

Status Pipeline::Compare(Batch& b, const std::vector<Classification>& classes, const std::vector<bool>& changed,
                         tier1::Tier2Matches* matches) {
  RouteAgain(*placement_, b);
  // Tier 2: each shard compares the pages routed to it.
  const size_t n = b.records.size(), P = shards_->size();
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
  const std::vector<uint64_t> stale = StaleUrlHashes(b, classes);
  tier2::CompareOptions compare;
  compare.stale_url_hashes = stale;  // a span: the vector outlives the compare
  std::vector<tier2::CompareResult> results(P);
  const auto t0 = SteadyClock::now();
  std::vector<Status> compared(P);
  Status all_compared = ForEachShard(writes_->compare_pool(), [&](size_t m) -> Status {
    if (pages[m].empty()) return Status::Ok();
    compared[m] = shards_->Compare(static_cast<uint32_t>(m), pages[m], threshold_, compare, &results[m]);
    return compared[m];
  }, &sum_.shard_compare_seconds);
  if (!all_compared.ok()) {
    ReportIncomplete(b, index, compared);
    return all_compared;
  }
  sum_.tier2_compare_seconds += Since(t0);
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
      matches->resident.push_back({index[m][r.page], r.url, r.similarity});
    }
    for (const auto& p : res.in_batch) {
      const uint32_t a = index[m][p.a], bb = index[m][p.b];
      if (seen_pairs.emplace(std::min(a, bb), std::max(a, bb)).second) {
        matches->in_batch.push_back({std::min(a, bb), std::max(a, bb), p.similarity});
      }
    }
  }
  sum_.tier2_pairs += matches->resident.size() + matches->in_batch.size();
  return Status::Ok();
}

Status Pipeline::Commit(const Batch& b, const std::vector<tier1::PageUpdate>& updates,
                        const std::vector<Classification>& classes, const tier1::Tier2Matches& matches) {
  // Step 5's first half, while Tier 1 applies the batch: the shards prepare the pages they will
  // store. They store them only once Tier 1 committed the batch (a crash in between leaves the
  // shards as they were; the staged records past their logs' committed ends are cut at Open).
  // Tier 1 may commit this batch only once the shards committed the previous one (a restart
  // finds at most the last committed batch missing from a shard), and the shards stage it only
  // after that commit (which would wait for the staging): the commits followed Tier 1's of the
  // previous batch while this one was compared, so this is a short wait, as a rule.
  RETURN_IF_ERROR(writes_->Finish());
  // The previous batch's status lines are durable before this batch commits: after a crash only
  // the last committed batch's can be missing, and a restart writes those again.
  RETURN_IF_ERROR(SyncStatusFile());
  writes_->StartStage(writes_->HomePages(b, classes));
  for (Classification c : classes) {
    switch (c) {
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
  pb::Tier1Progress next = ProgressAfter(progress_, b, classes);
  tier1::ApplyOutcome outcome;
  auto t0 = SteadyClock::now();
  const double cpu0 = ThreadCpuSeconds();
  Status applied = tier1_->Apply(updates, classes, matches, &next, &outcome);
  sum_.tier1_seconds += Since(t0);
  sum_.tier1_cpu_seconds += ThreadCpuSeconds() - cpu0;
  t0 = SteadyClock::now();
  Status staged = writes_->WaitStaged();
  sum_.tier2_stage_wait_seconds += Since(t0);
  if (applied.ok()) applied = staged;
  if (!applied.ok()) {
    for (uint32_t m = 0; m < shards_->size(); ++m) shards_->Drop(m);  // the shards cut their logs back
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
  return Status::Ok();
}

Status Pipeline::Redo(Batch& b) {
  // Tier 1 committed this batch; some shards may not have, and its status lines may be lost. The
  // shards' writes are idempotent.
  RETURN_IF_ERROR(writes_->Finish());
  const std::vector<Classification> classes = RedoClasses(b.records, b.signatures, progress_.last_batch_classes());
  if (std::find(lagging_.begin(), lagging_.end(), true) != lagging_.end()) {
    RETURN_IF_ERROR(writes_->Stage(writes_->HomePages(b, classes), lagging_));
    google::protobuf::RepeatedPtrField<pb::Tier2Removal> removals = progress_.last_batch_removals();
    AddMoveRemovals(*placement_, b, classes, &removals);
    RETURN_IF_ERROR(writes_->Apply(b.number, removals));
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

Status Pipeline::WriteStatus(const Batch& b, const std::vector<Classification>& classes) {
  const auto t0 = SteadyClock::now();
  const double cpu0 = ThreadCpuSeconds();
  std::string out;
  tier1::StatusAnswer a;
  for (size_t i = 0; i < b.records.size(); ++i) {
    if (classes[i] == Classification::kSuperseded) continue;
    RETURN_IF_ERROR(tier1_->QueryAndRecord(b.records[i].url, &a));
    if (status_file_ == nullptr) continue;
    AppendStatusLine(&out, b.records[i].url, a, classes[i], b.number, b.records[i].line, sum_.map_version);
  }
  if (status_file_ != nullptr && !out.empty()) {
    RETURN_IF_ERROR(store_->rows().WaitForWrites());  // the lines acknowledge the batch's commit
    RETURN_IF_ERROR(status_file_->Append(out));
  }
  // Losers of groups whose winner changed: verified now, so that status queries find them current.
  RETURN_IF_ERROR(tier1_->Reverify());
  std::vector<tier1::RepairReport> repairs;
  RETURN_IF_ERROR(tier1_->Flush(&repairs));
  for (const tier1::RepairReport& r : repairs) {
    ++sum_.repairs;
    if (r.components > 1) sum_.repair_splits += r.components - 1;
  }
  sum_.query_seconds += Since(t0);
  sum_.query_cpu_seconds += ThreadCpuSeconds() - cpu0;
  return Status::Ok();
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

}  // namespace neardup::pipeline::internal
