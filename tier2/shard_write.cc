// The shard's one write path: Stage (the batch rules, the index entries, the page records
// appended past the committed end and synced) -> Publish (the removal records, the index and URL
// maps changed: readers see the batch) -> CommitPublished (the commit record: a restart keeps the
// batch). Apply is the three in a row.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tier2/shard_impl.h"

namespace neardup::tier2 {

StatusOr<std::unique_ptr<StagedBatch>> Shard::Impl::Stage(std::span<const ShardPage> batch) {
  if (options_.read_only) return FailedPrecondition("shard: " + options_.path + " is open read-only");
  auto staged = std::make_unique<StagedBatch::State>();
  Plan plan;
  RETURN_IF_ERROR(PlanBatch(batch, &plan));
  staged->stats.superseded = plan.superseded.size();
  std::lock_guard apply(apply_mu_);
  if (staged_) {
    return FailedPrecondition("shard: " + options_.path + " already has a staged batch; apply or drop it first");
  }
  // Compaction first, while nothing of this batch is in the index: the slots it frees are handed
  // out below, and the part of the work a caller waits for (Apply) stays short.
  if (index_.NeedsCompaction()) {
    std::unique_lock lock(mu_);
    index_.Compact(/*purge=*/false);
    ++compactions_;
  }
  // The token order refresh's next step, if one is due or under way (shard_impl.h: RefreshStep).
  // A refresh that fails leaves the order as it was, and is retried when the shard has doubled.
  if (Status r = RefreshStep(); !r.ok()) spdlog::warn("shard: refreshing the token order failed: {}", r.ToString());
  // Pages to store: home, not superseded. Empty pages only remove.
  std::vector<uint32_t> store;
  for (uint32_t i : plan.live) {
    if (batch[i].home) store.push_back(i);
    else ++staged->stats.not_home;
  }
  for (uint32_t i : plan.empty) {
    if (batch[i].home) staged->emptied.push_back(batch[i].signature->url());
  }
  staged->slots = index_.AllocateSlots(store.size());
  if (staged->slots.size() < store.size()) {
    return ResourceExhausted("shard: " + options_.path + " is full (" + std::to_string(PrefixIndex::kMaxSlots) +
                             " pages)");
  }
  std::vector<uint64_t> prefix;
  // Each signature is serialized straight into the log's write buffer (AppendFilled), sized here.
  std::vector<uint32_t> sizes(store.size());
  uint64_t append_bytes = 0;
  staged->urls.resize(store.size());
  staged->entries.resize(store.size());
  for (size_t k = 0; k < store.size(); ++k) {
    const pb::PageSignature& sig = *batch[store[k]].signature;
    staged->urls[k] = sig.url();
    const size_t bytes = 1 + sig.ByteSizeLong();  // kPageRecord, then the signature
    sizes[k] = static_cast<uint32_t>(std::min<size_t>(bytes, SignatureLog::kMaxPayload + size_t{1}));  // over: refused
    append_bytes += SignatureLog::kHeaderBytes + bytes;
    MakeIndexEntry(sig, &prefix, &staged->entries[k]);
    // Indexed in the current order: what its prefix gains in the refresh's order is added with
    // the rest when the refresh finishes.
    if (refresh_ != nullptr) NoteGain(staged->slots[k], Shingles(sig), prefix);
  }
  // The signatures go to the log past its committed end, which disturbs no reader (SignatureLog:
  // reads below the end); Apply's commit record takes the end past them.
  staged->log_end = log_->end();
  if (staged->log_end + append_bytes >= kMaxLogBytes) {
    return ResourceExhausted("shard: " + options_.path + ": the signature log would pass " +
                             std::to_string(kMaxLogBytes >> 40) + " TiB (" + std::to_string(staged->log_end) +
                             " bytes, " + std::to_string(log_live_bytes_) + " live); split the shard");
  }
  Status s = log_->AppendFilled(
      sizes,
      [&](size_t k, char* dst) {
        // ByteSizeLong above cached the sizes this writes by.
        dst[0] = kPageRecord;
        batch[store[k]].signature->SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(dst + 1));
      },
      &staged->refs);
  if (s.ok() && options_.sync) s = log_->Sync();
  if (!s.ok()) {
    TruncateLog(staged->log_end);
    return s;
  }
  staged->shard = this;
  staged_ = true;
  return std::unique_ptr<StagedBatch>(new StagedBatch(std::move(staged)));
}

void Shard::Impl::Unstage(StagedBatch::State& staged) {
  std::lock_guard apply(apply_mu_);
  TruncateLog(staged.log_end);
  staged_ = false;
}

// What Publish learns of a staged batch before it changes the memory.
struct Shard::Impl::Publishing {
  std::vector<uint32_t> freed;               // slots of the pages replaced or removed
  std::vector<UrlSlots::Place> places;       // where each staged page's URL goes in url_slots_
  std::unordered_map<std::string_view, bool> handled;  // URLs already changed in this batch
  std::vector<std::string_view> collided_removed;     // removed URLs kept by name (collisions)
  std::string record;                        // a buffer for LookupSlot
};

Status Shard::Impl::Publish(std::unique_ptr<StagedBatch> batch, std::span<const std::string> removed,
                            ApplyStats* stats, uint64_t sequence, bool* published) {
  if (published != nullptr) *published = false;
  if (options_.read_only) return FailedPrecondition("shard: " + options_.path + " is open read-only");
  ApplyStats local;
  ApplyStats& st = stats ? *stats : local;
  if (batch == nullptr || batch->state_ == nullptr || batch->state_->shard != this) {
    return InvalidArgument("shard: " + options_.path + ": Apply of a batch staged elsewhere (or none)");
  }
  // One Apply at a time. Readers go on until the memory changes below: CompareBatch until the
  // index changes, Get until the signature locations change.
  std::lock_guard apply(apply_mu_);
  if (published_) {
    // (The batch is dropped as it goes: its log records are cut off.)
    return FailedPrecondition("shard: " + options_.path + ": a published batch awaits its commit (CommitPublished)");
  }
  // From here the batch is this call's: applied, or its log records cut off again.
  std::unique_ptr<StagedBatch::State> staged = std::move(batch->state_);
  st = staged->stats;
  staged_ = false;
  auto undo = [&](Status s) {
    TruncateLog(staged->log_end);
    return s;
  };
  Publishing pub;
  if (Status s = LocateStaged(*staged, &pub, &st); !s.ok()) return undo(s);
  if (Status s = AppendRemovals(*staged, removed, &pub, &st); !s.ok()) return undo(s);
  // The commit record that will cover the batch (its page records synced by Stage, its removal
  // records above); CommitPublished writes it.
  const CommitFile::Record record_of_batch{log_generation_, log_->end(),
                                           sequence > 0 ? sequence : commits_->last().sequence};
  const Status result = ShowPublished(*staged, pub);
  published_ = record_of_batch;
  if (published != nullptr) *published = true;
  return result;
}

Status Shard::Impl::LocateStaged(const StagedBatch::State& staged, Publishing* pub, ApplyStats* st) {
  const std::vector<uint32_t>& slots = staged.slots;
  pub->places.resize(slots.size());
  pub->handled.reserve(slots.size());
  for (size_t k = 0; k < slots.size(); ++k) {
    const std::string& url = staged.urls[k];
    UrlSlots::Found found;
    RETURN_IF_ERROR(LookupSlot(url, &found, &pub->record));
    pub->places[k] = found.place;
    if (found.slot != UrlSlots::kNoSlot) {
      pub->freed.push_back(found.slot);
      ++st->replaced;
    } else {
      ++st->inserted;
    }
    pub->handled[url] = true;
  }
  return Status::Ok();
}

Status Shard::Impl::AppendRemovals(const StagedBatch::State& staged, std::span<const std::string> removed,
                                   Publishing* pub, ApplyStats* st) {
  std::vector<std::string> removal_payloads;
  auto remove = [&](const std::string& url) -> Status {
    if (pub->handled.count(url)) return Status::Ok();
    UrlSlots::Found found;
    RETURN_IF_ERROR(LookupSlot(url, &found, &pub->record));
    if (found.slot == UrlSlots::kNoSlot) return Status::Ok();
    removal_payloads.push_back(kRemovalRecord + url);
    if (found.place == UrlSlots::Place::kCollided) pub->collided_removed.push_back(url);
    pub->freed.push_back(found.slot);
    ++st->removed;
    pub->handled[url] = true;
    return Status::Ok();
  };
  for (const std::string& url : staged.emptied) RETURN_IF_ERROR(remove(url));
  for (const std::string& url : removed) RETURN_IF_ERROR(remove(url));
  if (removal_payloads.empty()) return Status::Ok();
  uint64_t bytes = 0;
  for (const std::string& p : removal_payloads) bytes += SignatureLog::kHeaderBytes + p.size();
  if (log_->end() + bytes >= kMaxLogBytes) {
    return ResourceExhausted("shard: " + options_.path + ": the signature log is full; split the shard");
  }
  std::vector<std::string_view> views(removal_payloads.begin(), removal_payloads.end());
  std::vector<SignatureLog::Ref> removal_refs;
  Status s = log_->Append(views, &removal_refs);
  if (s.ok() && options_.sync) s = log_->Sync();
  return s;
}

Status Shard::Impl::ShowPublished(const StagedBatch::State& staged, const Publishing& pub) {
  const std::vector<uint32_t>& slots = staged.slots;
  const std::vector<SignatureLog::Ref>& refs = staged.refs;
  // The store has it; now the index and page tables (CompareBatch waits)...
  std::unique_lock lock(mu_);
  for (uint32_t slot : pub.freed) {
    index_.Remove(slot, IndexedPostings(slot));
    if (refresh_ != nullptr) refresh_->gains.erase(slot);
  }
  // ...and the locations and URL maps (Get waits): every slot with a location is resident.
  {
    std::unique_lock loc(loc_mu_);
    for (uint32_t slot : pub.freed) {
      log_live_bytes_ -= Location(slot).bytes();
      ClearLocation(slot);
    }
    // Hashes this batch has placed in url_slots_: another URL of the batch with one of them
    // collides with it.
    std::unordered_set<uint64_t> placed;
    placed.reserve(slots.size());
    for (size_t k = 0; k < slots.size(); ++k) {
      SetLocation(slots[k], refs[k]);
      log_live_bytes_ += refs[k].bytes();
      url_slots_.Store(staged.urls[k], slots[k], pub.places[k], &placed);
    }
    for (std::string_view url : pub.collided_removed) url_slots_.RemoveCollided(url);
  }
  for (size_t k = 0; k < slots.size(); ++k) {
    const pb::ShardIndexEntry& e = staged.entries[k];
    SetPageTable(slots[k], e);
    index_.Add(slots[k], {e.prefix().data(), static_cast<size_t>(e.prefix_size())});
  }
  const uint64_t postings = index_.main_postings() + index_.overflow_postings();
  if (!order_derived_ && options_.order_sample_pages > 0 && index_.live_slots() >= options_.order_sample_pages) {
    // The batch is stored either way; a failed reorder leaves the order as it was (hash order, or
    // the initial one) and is retried next time.
    if (Status r = Reorder(); !r.ok()) spdlog::warn("shard: deriving the token order failed: {}", r.ToString());
  } else if (postings > (16ull << index_.bucket_bits()) && index_.bucket_bits() < PrefixIndex::kMaxBucketBits) {
    // Grown past the bucket table: rebuild from the log with a table sized for twice the size.
    return RebuildIndex(PrefixIndex::BucketBitsFor(postings * 2));
  }
  // (Index compaction waits for the next Stage, off the path a pipeline waits on.)
  return Status::Ok();
}

Status Shard::Impl::CommitPublished() {
  if (options_.read_only) return FailedPrecondition("shard: " + options_.path + " is open read-only");
  std::lock_guard apply(apply_mu_);
  if (!published_) return Status::Ok();
  RETURN_IF_ERROR(WriteCommit(*published_, options_.sync, "commit"));
  published_.reset();
  MaybeCompactLog();
  return Status::Ok();
}

Status Shard::Impl::Apply(std::span<const ShardPage> batch, std::span<const std::string> removed, ApplyStats* stats,
                          uint64_t sequence) {
  {
    std::lock_guard apply(apply_mu_);
    if (published_) {
      return FailedPrecondition("shard: " + options_.path + ": a published batch awaits its commit (CommitPublished)");
    }
  }
  ASSIGN_OR_RETURN(std::unique_ptr<StagedBatch> staged, Stage(batch));
  bool published = false;
  const Status s = Publish(std::move(staged), removed, stats, sequence, &published);
  if (!published) return s;  // nothing of it stored (or another batch awaits its commit)
  const Status committed = CommitPublished();
  return s.ok() ? committed : s;
}

StatusOr<uint64_t> Shard::Impl::AppliedSequence() const {
  std::lock_guard apply(apply_mu_);
  return commits_->last().sequence;
}

}  // namespace neardup::tier2
