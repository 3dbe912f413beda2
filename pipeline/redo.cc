#include "pipeline/redo.h"

#include <string_view>
#include <unordered_map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace neardup::pipeline::internal {

using tier1::Classification;

StatusOr<std::vector<bool>> ShardsBehind(const ShardSet& shards, const Placement& placement,
                                         uint64_t batches_committed) {
  std::vector<bool> behind(shards.size(), false);
  for (uint32_t s = 0; s < shards.size() && batches_committed > 0; ++s) {
    ASSIGN_OR_RETURN(uint64_t seq, shards.CommittedBatch(s));
    const bool added = placement.moving() && s >= placement.journal().shards_before() && seq == 0;
    if (seq < batches_committed && !added) behind[s] = true;
  }
  return behind;
}

std::vector<Classification> RedoClasses(const std::vector<CrawlRecord>& records,
                                        const std::vector<pb::PageSignature>& signatures,
                                        const std::string& stored) {
  std::vector<Classification> classes(records.size(), Classification::kTier2);
  if (stored.size() == records.size()) {
    for (size_t i = 0; i < classes.size(); ++i) classes[i] = static_cast<Classification>(stored[i]);
    return classes;
  }
  std::unordered_map<std::string_view, size_t> last;
  for (size_t i = 0; i < records.size(); ++i) {
    if (records[i].gone) classes[i] = Classification::kGone;
    else if (records[i].is_redirect()) classes[i] = Classification::kRedirect;
    else if (signatures[i].shingles_size() == 0) classes[i] = Classification::kEmpty;
    auto [it, fresh] = last.emplace(records[i].url, i);
    if (!fresh) classes[it->second] = Classification::kSuperseded, it->second = i;
  }
  return classes;
}

namespace {

// Whether the digest, where it stands, is that of input `id`.
bool SameInput(const PrefixDigest& digest, const pb::InputIdentity& id) {
  uint64_t lo = 0, hi = 0;
  digest.Get(&lo, &hi);
  return digest.position() == id.bytes() && lo == id.digest_lo() && hi == id.digest_hi();
}

// The store's interrupted input (progress->current()) is not this one: refused, or (abandoned)
// left unread, with the digest started over.
Status LeaveInterrupted(const pb::Tier1Progress& progress, const InputStartOptions& o, InputStart* start) {
  const pb::InputIdentity& cur = progress.current();
  if (o.lagging) {
    return FailedPrecondition(fmt::format(
        "pipeline: store {}'s last batch, from {}, is not on every shard yet; run neardup run --input {} --store {} "
        "again first (it redoes that batch from that input)",
        o.store, cur.name(), cur.name(), o.store));
  }
  if (!o.abandon_interrupted) {
    return FailedPrecondition(fmt::format(
        "pipeline: store {} stopped in the middle of {} ({} of its records committed; {} is not that file); run it "
        "again to finish it, or pass --abandon-interrupted to leave its rest unread and take {} as the next crawl",
        o.store, cur.name(), progress.records_committed(), o.input, o.input));
  }
  spdlog::warn("pipeline: the rest of {} after its {} committed records is left unread", cur.name(),
               progress.records_committed());
  ASSIGN_OR_RETURN(start->digest, PrefixDigest::Open(o.input));
  return Status::Ok();
}

}  // namespace

StatusOr<InputStart> FindInputStart(pb::Tier1Progress* progress, const InputStartOptions& o) {
  InputStart start;
  ASSIGN_OR_RETURN(start.digest, PrefixDigest::Open(o.input));
  if (progress->has_current()) {
    const pb::InputIdentity& cur = progress->current();
    if (o.input_size >= cur.bytes()) RETURN_IF_ERROR(start.digest->Advance(cur.bytes()));
    if (o.input_size >= cur.bytes() && SameInput(*start.digest, cur)) {
      // The interrupted input again: go on after its last committed batch.
      start.resuming = true;
      start.skip = progress->records_committed();
      start.redo_from = progress->last_batch_first_record();
      spdlog::info("pipeline: resuming {} after {} committed records of {} ({} batches in the store){}", o.store,
                   start.skip, o.input, progress->batches_committed(),
                   o.lagging ? "; redoing the last batch's shard writes" : "");
      return start;
    }
    RETURN_IF_ERROR(LeaveInterrupted(*progress, o, &start));
  }
  for (const pb::InputIdentity& done : progress->consumed()) {
    if (done.bytes() != o.input_size) continue;
    if (start.digest->position() != o.input_size) RETURN_IF_ERROR(start.digest->Advance(o.input_size));
    if (!SameInput(*start.digest, done)) continue;
    if (o.followed) {
      // A growing input recorded as consumed was read by a run that did not follow it: what is
      // appended next would make it another input, read again from its start.
      return FailedPrecondition(fmt::format(
          "pipeline: store {} recorded {} as consumed whole (a run outside the server read it); a followed "
          "input must not be: serve a copy of the store taken before that run",
          o.store, o.input));
    }
    start.already_consumed = done.name();
    return start;
  }
  if (start.digest->position() != 0) {
    ASSIGN_OR_RETURN(start.digest, PrefixDigest::Open(o.input));
  }
  // The next crawl: it adds to what the store holds.
  pb::InputIdentity* cur = progress->mutable_current();
  cur->Clear();
  cur->set_name(o.input_name);
  progress->set_records_committed(0);
  progress->set_last_batch_first_record(0);
  progress->clear_last_batch_classes();
  if (progress->batches_committed() > 0) {
    spdlog::info("pipeline: {} is a new input for store {}, which holds {} batches", o.input, o.store,
                 progress->batches_committed());
  }
  return start;
}

}  // namespace neardup::pipeline::internal
