// Shard::Impl: the shard's state and the declarations its source files share. Internal to tier2/:
// nothing outside the shard's files includes it.
//
// The implementation is split by responsibility (tier2/README.md has the algorithm and the file
// format):
//   shard.cc          the public facade, stats, Get
//   shard_open.cc     Open: options, lock, meta, token order, the log replayed into slots
//   shard_log.cc      the signature log: slot locations, reads, the commit record, compaction
//   shard_index.cc    the prefix index, the page tables and the token order; rebuilds
//   shard_compare.cc  CompareBatch: the batch rules, probes of resident pages, the in-batch join
//   shard_write.cc    the write path: Stage -> Publish -> CommitPublished
//   url_slots.h       the URL -> slot map
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "proto/tier2.pb.h"
#include "storage/file_env.h"
#include "tier2/commit_file.h"
#include "tier2/prefix_filter.h"
#include "tier2/prefix_index.h"
#include "tier2/shard.h"
#include "tier2/signature_log.h"
#include "tier2/token_order.h"
#include "tier2/url_slots.h"

namespace neardup::tier2 {

// Only the shard's source files include this header: these names are theirs.

// The store's format, recorded in its meta (tier2/README.md: the files).
constexpr uint32_t kFormatVersion = 4;
constexpr uint32_t kWide = 0xFFFF;  // a length-vector entry that did not fit 16 bits
// A slot's signature location in RAM: 40 bits of log offset, 24 bits of payload length.
constexpr int kLengthBits = 24;
constexpr uint32_t kLongLength = (1u << kLengthBits) - 1;  // this length or more: see long_length_
constexpr uint64_t kMaxLogBytes = 1ull << (64 - kLengthBits);  // offsets fit in 40 bits
constexpr uint64_t kNoRecord = UINT64_MAX;                     // a slot without a page

// The first byte of a log record's payload says what it is:
constexpr char kPageRecord = 'P';     // + a serialized PageSignature: the URL's page (replaces any before)
constexpr char kRemovalRecord = 'R';  // + a URL: the URL's page is gone

// The files of a shard's directory.
constexpr char kMetaFile[] = "meta";      // ShardMeta, written once
constexpr char kOrderFile[] = "order";    // the token order, once derived
constexpr char kCommitFile[] = "commit";  // the log's generation, committed end and sequence
constexpr char kLockFile[] = "LOCK";      // flock'ed while a Shard has the store open

inline std::string LogFileName(uint32_t generation) { return "sigs-" + std::to_string(generation) + ".log"; }

// The URL a page record's payload names (field 1 of its PageSignature, which serializes first; an
// empty URL is never stored), without parsing the rest. False for anything else.
bool PageRecordUrl(std::string_view payload, std::string_view* url);
// The signature of a page record's payload. False for anything else.
bool ParsePageRecord(std::string_view payload, pb::PageSignature* sig);

inline std::span<const uint64_t> Shingles(const pb::PageSignature& s) {
  return {s.shingles().data(), static_cast<size_t>(s.shingles_size())};
}

// Grows `v` to `n` elements with capacity n (resize alone may double it).
template <typename T>
void GrowTo(std::vector<T>* v, size_t n, T fill) {
  v->reserve(n);
  v->resize(n, fill);
}
// The per-slot tables grow by an eighth: at most 12.5% of them is slack, for about eight copies of
// each entry over the table's life (a few bytes per page, next to a multi-KB signature write).
inline size_t GrownSize(size_t have, size_t need) {
  return std::max<size_t>(need, have + std::max<size_t>(have / 8, 1024));
}

// What Stage prepared: the pages' slots, index entries and log records (appended past the log's
// committed end), for Apply to commit.
struct StagedBatch::State {
  Shard::Impl* shard = nullptr;
  ApplyStats stats;                            // superseded and not_home counted
  std::vector<std::string> urls;               // pages to store...
  std::vector<uint32_t> slots;                 // ...their new slots,
  std::vector<pb::ShardIndexEntry> entries;    // index entries,
  std::vector<SignatureLog::Ref> refs;         // and log records
  std::vector<std::string> emptied;            // home pages that became empty: removed
  uint64_t log_end = 0;                        // the log's end before the append
};

class Shard::Impl {
 public:
  explicit Impl(const ShardOptions& o)
      : options_(o),
        env_(o.env != nullptr ? o.env : FileEnv::Default()),
        index_(PrefixIndex::kMinBucketBits),
        url_slots_(o.url_hash) {}
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  Status Open();
  Status CompareBatch(std::span<const ShardPage> batch, double threshold, CompareResult* out,
                      const CompareOptions& compare) const;
  StatusOr<std::unique_ptr<StagedBatch>> Stage(std::span<const ShardPage> batch);
  // *published (when given): whether the batch was stored and awaits CommitPublished.
  Status Publish(std::unique_ptr<StagedBatch> batch, std::span<const std::string> removed, ApplyStats* stats,
                 uint64_t sequence, bool* published);
  Status CommitPublished();
  // Stage -> Publish -> CommitPublished.
  Status Apply(std::span<const ShardPage> batch, std::span<const std::string> removed, ApplyStats* stats,
               uint64_t sequence);
  // Publish's steps (shard_write.cc), under apply_mu_. Publishing: what they share.
  struct Publishing;
  // Where each staged page's URL is now; the slots of the pages it replaces freed.
  Status LocateStaged(const StagedBatch::State& staged, Publishing* pub, ApplyStats* st);
  // The removals (the staged batch's emptied pages, then `removed`; URLs the batch already
  // changed or the shard does not hold are skipped): their slots freed and their removal
  // records appended to the log (synced with options.sync). ResourceExhausted when the log
  // would pass its size limit; the log's errors.
  Status AppendRemovals(const StagedBatch::State& staged, std::span<const std::string> removed, Publishing* pub,
                        ApplyStats* st);
  // The batch shown to readers: the index and page tables (under mu_), the locations and URL
  // maps (under loc_mu_); then the token order derived, or the index rebuilt when it outgrew its
  // bucket table (whose error it returns: the batch is shown either way).
  Status ShowPublished(const StagedBatch::State& staged, const Publishing& pub);
  // Drops a staged batch that was never applied (StagedBatch's destructor).
  void Unstage(StagedBatch::State& staged);
  StatusOr<uint64_t> AppliedSequence() const;
  StatusOr<pb::PageSignature> Get(const std::string& url) const;
  void WillNeed(std::span<const std::string_view> urls) const;
  ShardStats Stats() const;
  Status CheckIndex() const;
  uint64_t DiskBytes() const;
  const ShardOptions& options() const { return options_; }

 private:
  // The batch after the batch rules: which pages take part.
  struct Plan {
    std::vector<uint32_t> live;        // not superseded, not empty
    std::vector<uint32_t> superseded;
    std::vector<uint32_t> empty;
    std::unordered_map<std::string_view, uint32_t> last;  // each URL of the batch: its last page
  };
  // What the steps of one CompareBatch share.
  struct CompareCall {
    double t = 0;           // the threshold
    uint32_t cap = 0;       // options_.max_matches_per_page (0: every pair)
    std::vector<uint64_t> stale;  // CompareOptions::stale_url_hashes, sorted
    const Plan* plan = nullptr;   // with a cap, its URLs' resident versions are stale too
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
    mutable std::atomic<bool> late{false};
    // Whether the deadline has passed (it stays passed once seen).
    bool Late() const {
      if (deadline == std::chrono::steady_clock::time_point::max()) return false;
      if (late.load(std::memory_order_relaxed)) return true;
      if (std::chrono::steady_clock::now() < deadline) return false;
      late.store(true, std::memory_order_relaxed);
      return true;
    }
    // Whether the resident page under `url` must not be matched with the batch page `own`.
    bool Excluded(std::string_view url, std::string_view own) const;
  };
  Status PlanBatch(std::span<const ShardPage> batch, Plan* plan) const;
  // Resident matches of one page (appended to *out).
  struct Scratch {
    std::vector<uint32_t> touched;                     // matching postings' slots
    std::vector<uint32_t> touched_scratch;             // for sorting them
    std::vector<uint32_t> count;                       // per slot, zero between probes (dense counting)
    std::vector<uint32_t> distinct;                    // the slots counted, each once
    std::vector<std::pair<uint32_t, uint32_t>> hits;   // (slot, matches) past the count and size filters
    std::vector<uint64_t> prefix;  // the probe's prefix in token order
    std::vector<uint64_t> keys;    // and its keys
    ParityBitmap bitmap;           // the probe's
    std::vector<uint64_t> seen;    // the content keys met (ResidentCandidates' order under a cap)
    std::vector<uint32_t> later;   // candidates whose content key was met before
    std::vector<uint32_t> rest;      // a capped page's whole candidate list, when its first part fell short
    std::vector<uint32_t> verified;  // the slots of that first part
    std::string value;
    pb::PageSignature other;
    CompareStats stats;
  };
  // Scratch space outlives a call, so the buffers keep their capacity (a pool: calls may overlap).
  std::vector<std::unique_ptr<Scratch>> TakeScratch(int n) const {
    std::vector<std::unique_ptr<Scratch>> out;
    std::lock_guard lock(scratch_mu_);
    while (static_cast<int>(out.size()) < n && !scratch_pool_.empty()) {
      out.push_back(std::move(scratch_pool_.back()));
      scratch_pool_.pop_back();
    }
    while (static_cast<int>(out.size()) < n) out.push_back(std::make_unique<Scratch>());
    for (auto& s : out) s->stats = CompareStats{};
    return out;
  }
  void ReturnScratch(std::vector<std::unique_ptr<Scratch>> s) const {
    std::lock_guard lock(scratch_mu_);
    for (auto& x : s) scratch_pool_.push_back(std::move(x));
  }
  // Where `url` is (UrlSlots::Lookup over this shard's log); the record of the slot found is left
  // in *record when given. Called by the writer (no lock: it alone changes the maps) and by Get
  // (loc_mu_ shared).
  Status LookupSlot(std::string_view url, UrlSlots::Found* found, std::string* record = nullptr) const;
  // A page against the resident pages, in two steps: the candidates past every filter that needs
  // no signature (the slots to verify, in *verify), then their verification by merge (matches
  // appended to *out). Between them CompareBatch hints the whole batch's reads to the log.
  // Under a cap the candidates come one of each content key first (ContentKey), then the others;
  // with `more` given, the probe reads a window of each prefix token's postings and keeps the
  // first kVerifyAhead caps of the candidates (shard_compare.cc), and *more says whether it left
  // any out: VerifyResident probes in full (more null) only if those gave fewer than the cap.
  void ResidentCandidates(const pb::PageSignature& x, const CompareCall& call, Scratch* s,
                          std::vector<uint32_t>* verify, bool* more) const;
  // ResidentCandidates' count filter: the slots of s->touched (the postings collected) met at
  // least `need` times, live and of a size in `sizes`, into s->hits as (slot, matches), by slot.
  void CountHits(uint32_t need, SizeRange sizes, Scratch* s) const;
  // Reorders *verify: one slot of each content key first (ContentKey), then the others, each part
  // in the order it had.
  void DistinctContentFirst(Scratch* s, std::vector<uint32_t>* verify) const;
  // CompareBatch's resident part, under mu_ and loc_mu_ (shared): every live page that probes
  // (not join-only, not a copy) against the resident pages, on options_.threads workers: the
  // candidates, their reads hinted to the log, then verified. The matches go to out->resident,
  // sorted by page and URL, the counts to out->stats. On an error (DeadlineExceeded once
  // call.Late(), or a log read's) *where names the step it stopped in.
  Status CompareResident(std::span<const ShardPage> batch, const Plan& plan, const CompareCall& call,
                         const std::vector<uint32_t>& copy_of, CompareResult* out, const char** where) const;
  // DeadlineExceeded (its message left to the caller) once call.Late().
  Status VerifyResident(uint32_t page, const pb::PageSignature& x, const CompareCall& call,
                        std::span<const uint32_t> verify, bool more, Scratch* s,
                        std::vector<ResidentMatch>* out) const;
  // The in-batch pairs of the live pages; copy_of[l]: the live index of the first live page with
  // live[l]'s shingles (l itself when it is the first, and for every page without a cap).
  // DeadlineExceeded once call.Late().
  Status JoinBatch(std::span<const ShardPage> batch, const std::vector<uint32_t>& live,
                   const std::vector<uint32_t>& copy_of, const CompareCall& call, CompareResult* out) const;
  // Slot's size and parity bitmap mixed into 64 bits, never 0: identical pages have the same key.
  uint64_t ContentKey(uint32_t slot) const;
  // Rebuilds the index and page tables from the resident pages' signatures in the log (restart,
  // a new token order, or growth past the bucket table).
  Status RebuildIndex(int bucket_bits);
  // What the index and page tables keep of a page: size, shingle vector, parity bitmap and
  // indexed prefix.
  void MakeIndexEntry(const pb::PageSignature& sig, std::vector<uint64_t>* prefix, pb::ShardIndexEntry* e) const;
  // The indexed prefix of a page, in token order.
  void IndexPrefix(const pb::PageSignature& sig, std::vector<uint64_t>* out) const {
    order_.Prefix(Shingles(sig),
                  PrefixLength(static_cast<uint32_t>(sig.shingles_size()), options_.min_threshold,
                               options_.prefix_overlap),
                  out);
  }
  // Derives the token order from the resident pages' document frequencies and re-indexes them.
  Status Reorder();
  // The crowded-token refresh (ShardOptions::crowded_token_pages), spread over the Stage calls
  // after it falls due, so that no write waits for all of it:
  //   StartRefresh: the crowded lists, the tokens to mark and the pages whose prefix holds one
  //     (the affected pages); nothing changes yet, and refresh_ stays empty when nothing is marked.
  //   StepRefresh: reads up to refresh_pages_per_stage affected pages and notes what their prefix
  //     gains in the next order. Pages staged meanwhile are indexed in the current order and
  //     Stage notes theirs (NoteGain); Publish drops the note of every slot it frees.
  //   FinishRefresh: stores the next order, adds the noted postings (mu_ exclusive) and switches.
  // All run in Stage, under apply_mu_ (the only writer): their reads need no other lock. On an
  // error nothing has changed and the refresh is dropped; it falls due again when the shard has
  // doubled.
  Status RefreshStep();
  Status StartRefresh();
  Status StepRefresh(size_t pages);
  Status FinishRefresh();
  // What slot's page, whose prefix in the current order is `prefix`, gains in the next order.
  void NoteGain(uint32_t slot, std::span<const uint64_t> shingles, std::span<const uint64_t> prefix);
  // RefreshStep falls due once the shard has doubled from what it holds now.
  void ScheduleRefresh() { next_refresh_ = 2 * std::max<uint64_t>(index_.live_slots(), 1); }
  // The slot's page-table row from its entry (shingle vector validated).
  void SetPageTable(uint32_t slot, const pb::ShardIndexEntry& e);
  uint32_t IndexedPostings(uint32_t slot) const {
    return PrefixLength(size_[slot], options_.min_threshold, options_.prefix_overlap);
  }
  // The signature log: open the committed generation (Open), replay it into slots, where each
  // slot's record is, and reading one back.
  // Open's steps (shard_open.cc). Makes the directory (unless read-only) and locks the store
  // (shared when read-only): IoError when it is open elsewhere; NotFound for a read-only open of
  // a directory without a store.
  Status LockStore();
  // Writes the meta and commit files of a new store, or compares the meta of an existing one
  // with the options (FailedPrecondition on a difference) and opens its commit file.
  Status OpenMeta();
  // The token order the shard derived (its file), else options.initial_order, else hash order.
  Status ReadTokenOrder();
  // The index built over the resident pages, its bucket table sized for them or for what is
  // expected (options.expected_postings or expected_pages), whichever is more.
  Status BuildIndexForResident();
  Status OpenLog();
  Status ReplayLog();
  void SetLocation(uint32_t slot, const SignatureLog::Ref& ref);
  SignatureLog::Ref Location(uint32_t slot) const;
  bool HasLocation(uint32_t slot) const { return slot < loc_.size() && loc_[slot] != kNoRecord; }
  void ClearLocation(uint32_t slot);
  Status ReadSignature(uint32_t slot, std::string* buffer, pb::PageSignature* sig) const;
  // The signature in the payload of slot's record; Corruption naming the slot when it is not one.
  Status ParseSlotRecord(uint32_t slot, std::string_view payload, pb::PageSignature* sig) const;
  // Rewrites the live records into the next generation of the log when dead records outweigh
  // them (replaced and removed pages leave theirs behind).
  bool LogNeedsCompaction() const;
  Status CompactLog();
  // Compacts the log when it is due and nothing is staged or published (apply_mu_ held).
  void MaybeCompactLog();
  // Writes the commit record (fdatasync'ed when `sync`); on failure puts the previous one back
  // and names the shard and `what` was committed.
  Status WriteCommit(const CommitFile::Record& record, bool sync, const char* what);
  // Cuts the log back to `end` (an append that will not be committed); a failure is only logged:
  // Open cuts the log to its committed end anyway.
  void TruncateLog(uint64_t end);

  ShardOptions options_;
  std::string File(const char* name) const { return (std::filesystem::path(options_.path) / name).string(); }
  FileEnv* const env_;                // options_.env, or the default
  std::unique_ptr<FileLock> lock_;    // on LOCK while open
  // Locks: apply_mu_ orders Apply calls (the only writer). mu_ guards the index, the page tables
  // and the token order: CompareBatch reads them shared, Apply changes them exclusive. loc_mu_
  // guards the signature locations and the log object: Get and CompareBatch read them shared,
  // Apply changes them exclusive. Order: apply_mu_, then mu_, then loc_mu_.
  mutable std::mutex apply_mu_;
  bool staged_ = false;  // a StagedBatch is outstanding (guarded by apply_mu_)
  // The commit record a published batch waits for (guarded by apply_mu_).
  std::optional<CommitFile::Record> published_;
  mutable std::shared_mutex mu_;
  mutable std::shared_mutex loc_mu_;
  mutable std::mutex scratch_mu_;
  mutable std::vector<std::unique_ptr<Scratch>> scratch_pool_;
  PrefixIndex index_;
  std::vector<uint32_t> size_;  // per slot: shingles
  std::vector<uint16_t> vec_;   // per slot: dims entries of the shingle vector, kWide if too large
  std::vector<uint32_t> cut_;   // per slot: top 32 bits of the key of its last indexed prefix token
  std::vector<uint64_t> bits_;  // per slot: kBitmapWords words of its parity bitmap (prefix_filter.h)
  TokenOrder order_;            // the global token order (empty: hash order)
  bool order_derived_ = false;  // order_ is the shard's own (Reorder, or its order file)
  std::unique_ptr<SignatureLog> log_;
  uint32_t log_generation_ = 0;
  std::unique_ptr<CommitFile> commits_;  // the last commit (guarded by apply_mu_ after Open)
  // Per slot: its signature record in log_, packed as offset << kLengthBits | length, kNoRecord
  // for none. A length of kLongLength or more is kept in long_length_ (a few huge pages at most).
  std::vector<uint64_t> loc_;
  std::unordered_map<uint32_t, uint32_t> long_length_;
  // URL -> slot (tier2/url_slots.h). Guarded like loc_ (Apply reads it without loc_mu_: it is the
  // only writer).
  UrlSlots url_slots_;
  uint64_t log_live_bytes_ = 0;       // bytes of the records live slots refer to
  uint64_t log_compactions_ = 0;
  uint64_t compactions_ = 0;
  uint64_t frequent_tokens_ = 0;  // marked by Reorder() and refreshes in this process
  // A refresh falls due when the index holds this many live pages (0: not yet due).
  uint64_t next_refresh_ = 0;
  // The refresh under way (guarded by apply_mu_; null: none).
  struct Refresh {
    TokenOrder next;
    std::vector<uint64_t> marked;    // the tokens `next` marks that the current order does not
    std::vector<uint64_t> lists;     // the crowded lists behind them (for demoted_lists_)
    std::vector<uint32_t> affected;  // slots whose prefix held a marked token when it started
    size_t read = 0;                 // affected[0, read) are noted
    struct Gain {
      uint32_t cut = 0;              // the page's prefix cut in `next`
      std::vector<uint64_t> added;   // tokens its prefix in `next` holds and its indexed one lacks
    };
    std::unordered_map<uint32_t, Gain> gains;  // per slot whose prefix moves
    std::vector<uint64_t> after, before;       // NoteGain's scratch
  };
  std::unique_ptr<Refresh> refresh_;
  uint64_t order_refreshes_ = 0;
  uint64_t refreshed_pages_ = 0;
  // Posting lists (bucket << 8 | fingerprint) whose token a refresh marked: the pages keep their
  // postings there until the next rebuild, so the list stays crowded without being the order's
  // fault. Cleared by RebuildIndex.
  std::unordered_set<uint64_t> demoted_lists_;
  uint64_t rebuilds_ = 0;
  double open_seconds_ = 0;
};

}  // namespace neardup::tier2
