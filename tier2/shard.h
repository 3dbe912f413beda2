// Shard: one Tier 2 comparison shard (the paper's Section 5.1, Tier 2).
//
// A shard holds the signatures of the pages whose home cells it owns, durably in its own
// directory, and answers many-to-all comparisons of batches of new or changed pages against them:
// every pair at or above a threshold, exactly (no false negatives against brute force within the
// shard). How it finds them, and its files, are in tier2/README.md.
//
//   ShardOptions o;  o.path = "/data/shard-07";  o.dims = 3;  o.min_threshold = 0.8;
//   ASSIGN_OR_RETURN(std::unique_ptr<Shard> shard, Shard::Open(o));
//   std::vector<ShardPage> batch = ...;               // pages routed here, `home` where they live here
//   CompareResult r;
//   RETURN_IF_ERROR(shard->CompareBatch(batch, 0.9, &r));  // every pair >= 0.9, exact
//   RETURN_IF_ERROR(shard->Apply(batch, removed_urls));    // the next batch sees them
//
// One write path: Stage (the batch's records appended past the committed end and synced; nothing
// visible) -> Publish (readers see the batch; a restart would not) -> CommitPublished (the commit
// record: a restart keeps it). Apply is the three in a row. A batch that Apply acknowledged (Ok)
// survives a crash; one it refused does not (a batch whose commit record failed stays published
// until a CommitPublished succeeds, and a restart drops it).
//
// Batch rules, shared by CompareBatch and the write path:
//  - at most options.max_batch_pages pages, else InvalidArgument and nothing is done;
//  - every signature must pass ValidateSignature() and have options.dims dimensions, else
//    InvalidArgument naming the page's index and URL, and nothing is done;
//  - a URL given twice: the last version wins; earlier ones are listed in `superseded` and ignored;
//  - a page with no shingles is never similar to anything (listed in `empty`); storing it stores
//    nothing and removes the URL's previous version.
//
// Thread safety: every method may be called from any thread. The write steps (Stage, Publish,
// CommitPublished, Apply) run one at a time. CompareBatch and Get run concurrently with each
// other and with most of a write: Publish holds CompareBatch back only while it changes the index
// and page tables, and Get only while it changes signature locations and URL maps. Each reader
// sees the shard before or after a batch, never a mix. The Shard owns its files; one Shard opens a
// store at a time (a lock on its LOCK file: IoError otherwise). Its file I/O goes through
// options.env (storage/file_env.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/config.h"
#include "common/status.h"
#include "storage/file_env.h"
#include "proto/config.pb.h"
#include "proto/neardup.pb.h"

namespace neardup::tier2 {

struct ShardOptions {
  std::string path;               // the store's directory; created when missing
  uint32_t dims = ConfigDefaults().shingle().dims();  // length dimensions of every signature
  uint32_t shingle_k = 0;         // 0 = accept any; else signatures must carry this k
  // Lowest threshold CompareBatch accepts; prefixes are cut for it.
  double min_threshold = ConfigDefaults().tier2().min_threshold();
  uint32_t prefix_overlap = ConfigDefaults().tier2().prefix_overlap();  // c of the l-prefix scheme; see prefix_filter.h
  uint32_t max_batch_pages = ConfigDefaults().tier2().max_batch_pages();
  bool sync = ConfigDefaults().tier2().sync();  // fsync each Apply
  uint64_t expected_pages = 65536;     // sizes the index; it is rebuilt as the shard grows past it
  // Prefix postings the shard is expected to index (when known, e.g. from a sample of the crawl):
  // sizes the index instead of expected_pages, so that a shard filled as expected is never
  // rebuilt to grow. 0: expected_pages pages of 200 shingles.
  uint64_t expected_postings = 0;
  int threads = 1;                // CompareBatch workers (pages of a batch are split among them)
  // When the shard first holds this many pages it derives its token order from them (tokens in at
  // least frequent_min_pages of them go last; tier2/token_order.h) and re-indexes them.
  // 0 keeps plain hash order.
  uint64_t order_sample_pages = ConfigDefaults().tier2().order_sample_pages();
  uint32_t frequent_min_pages = ConfigDefaults().tier2().frequent_min_pages();
  // After that, each time the shard has doubled its pages since the order last changed, it marks
  // frequent the prefix tokens at least this many pages share, with what a sample of those pages
  // has in common, and re-indexes the pages that had one in their prefix (the order only ever
  // gains marked tokens, so no other page's prefix moves). 0: the derived order stays.
  uint32_t crowded_token_pages = ConfigDefaults().tier2().crowded_token_pages();
  // That re-indexing is spread over the writes that follow: each Stage reads at most this many of
  // the pages it concerns, and the new order takes effect in the Stage that reads the last of them.
  uint32_t refresh_pages_per_stage = 512;
  // A shard that has not derived its order yet indexes in this one (TokenOrder::Serialize(), e.g.
  // from a sample of the collection) instead of hash order, until it derives its own. Any order
  // is exact, so it is not stored: a shard opened again without it rebuilds its index in hash
  // order. Empty: hash order. Open fails with InvalidArgument when it does not deserialize.
  std::string initial_order;
  // CompareBatch hints the reads of its verifications to the log before making them
  // (SignatureLog::WillNeed).
  bool read_ahead = ConfigDefaults().tier2().read_ahead();
  // A probe counts its postings per slot in an array of one counter a slot (4 bytes each, per
  // CompareBatch worker) while the shard's slots number at most this, so that the array stays in
  // a core's cache; past it, it sorts them.
  uint64_t dense_count_slots = uint64_t{1} << 16;
  // The signature log is compacted when its dead bytes exceed both its live bytes and this.
  uint64_t log_compact_min_bytes = 64ull << 20;
  // K: CompareBatch answers what transitive groups need rather than every pair: at most K
  // resident matches a page, in-batch pairs past K a page only where they connect, and a page
  // identical to an earlier one of its batch through the pair with it (CompareBatch says how).
  // 0: every pair, as brute force finds them.
  uint32_t max_matches_per_page = ConfigDefaults().tier2().max_matches_per_page();
  // Open for reading only (Get, CompareBatch, Stats): the store must exist and its files stay as
  // they are (an uncommitted tail is ignored, not cut; nothing is created or removed); a shared
  // lock lets other readers in and keeps a writer out. Every write returns FailedPrecondition.
  bool read_only = false;
  // The file system the shard's files are read and written through (not owned; must outlive the
  // shard). nullptr: FileEnv::Default(). Tests inject failures with storage/fault_file_env.h.
  FileEnv* env = nullptr;
  // Tests only: replaces UrlHash (common/url_hash_map.h) for the URL -> slot map, e.g. to make
  // URLs collide. Must never return 0.
  uint64_t (*url_hash)(std::string_view url) = nullptr;
};

// Shard options from the configuration's tier2 and shingle sections, for the store at `path`.
ShardOptions ShardOptionsFromConfig(const pb::NeardupConfig& config, const std::string& path);

// One page of a batch: its signature (not owned; must outlive the call) and whether this shard is
// its home (Apply stores only home pages; CompareBatch compares every page).
struct ShardPage {
  const pb::PageSignature* signature = nullptr;
  bool home = false;
  // The caller vouches for the signature: it passed ValidateSignature, or a Signer made it (as in
  // the embedded pipeline, where a page goes to two shards on average, and is compared, then
  // staged). The shard then skips that check, a pass over every hash; it still checks the
  // dimensions and k against its own.
  bool validated = false;
  // CompareBatch meets this page with the batch's other pages only, not with the resident ones,
  // and reports no pair of two such pages: a page whose place the caller has decided already (a
  // changed page Tier 1 kept in its group), whose new version the batch's other pages must still
  // be compared with.
  bool join_only = false;
};

struct ResidentMatch {
  uint32_t page;       // index in the batch
  std::string url;     // the resident page
  double similarity;   // exact Jaccard
};

struct BatchMatch {
  uint32_t a, b;       // indices in the batch, a < b
  double similarity;
};

struct CompareStats {
  uint64_t pages = 0;             // pages compared (not superseded, not empty)
  uint64_t copies = 0;            // of those, answered through an identical earlier page of the batch
  uint64_t capped_pages = 0;      // pages whose resident matches stopped at max_matches_per_page
  uint64_t postings_scanned = 0;  // postings whose fingerprint matched a probe token
  uint64_t candidates = 0;        // resident pages that passed the prefix-count and size filters
  uint64_t positional_passed = 0; // of those, passed the positional bound
  uint64_t verifications = 0;     // of those, passed the length-vector filter: fetched and merged
  uint64_t resident_pairs = 0;
  uint64_t batch_candidates = 0;  // in-batch pairs that share a prefix token and pass the size filter
  uint64_t batch_merged = 0;      // of those, passed the positional, length-vector and bitmap filters: merged
  uint64_t batch_connected = 0;   // of the candidates, not merged: past the cap, their pages were connected already
  uint64_t batch_pairs = 0;
  uint64_t fetched_bytes = 0;     // signature bytes read from the log for verification
};

// What a caller adds to a CompareBatch.
struct CompareOptions {
  // UrlHash (common/url_hash_map.h) of URLs whose resident versions must not be matched: the
  // caller replaces or removes them with this batch (in the pipeline: every URL of the batch
  // that Tier 1 re-compared, kept with new content, emptied, redirected or found gone), so a
  // match with one would be thrown away, and must not take the place of one that counts under
  // max_matches_per_page. Any order; duplicates are fine. Not owned.
  std::span<const uint64_t> stale_url_hashes;
  // The compare stops here: it checks the time between pages (and every few verifications or
  // in-batch merges) and returns DeadlineExceeded, its partial answer dropped. max(): none.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

struct CompareResult {
  std::vector<ResidentMatch> resident;  // sorted by (page, url)
  std::vector<BatchMatch> in_batch;     // sorted by (a, b)
  std::vector<uint32_t> superseded;     // indices dropped: a later page of the batch has the URL
  std::vector<uint32_t> empty;          // indices of pages with no shingles
  CompareStats stats;
};

struct ApplyStats {
  uint64_t inserted = 0;   // URLs new to the shard
  uint64_t replaced = 0;   // URLs whose previous version was replaced
  uint64_t removed = 0;    // URLs removed (by removed_urls or by an empty page)
  uint64_t not_home = 0;   // pages skipped because this shard is not their home
  uint64_t superseded = 0;
};

struct ShardStats {
  uint64_t resident_pages = 0;
  uint64_t index_postings = 0;      // main + overflow, live and not yet compacted
  uint64_t index_bytes = 0;         // PrefixIndex arrays
  uint64_t index_buckets = 0;       // of its bucket table
  uint64_t page_table_bytes = 0;    // sizes, length vectors, prefix cuts, bitmaps, log locations, URL hashes
  uint64_t compactions = 0;
  uint64_t rebuilds = 0;            // index rebuilt from the signature log (growth, token order)
  uint64_t token_order_bits = 0;    // bits of the derived order's bitmap; 0: no bitmap
  uint64_t frequent_tokens = 0;     // tokens marked frequent (when derived by this process)
  uint64_t order_refreshes = 0;     // times this process marked crowded tokens (crowded_token_pages)
  uint64_t refreshed_pages = 0;     // pages those re-indexed
  uint64_t log_bytes = 0;           // the signature log's size
  uint64_t log_live_bytes = 0;      // of which records of resident pages
  uint64_t log_compactions = 0;     // by this process
  double open_seconds = 0;          // time Open() took to rebuild the index
  // (index_bytes + page_table_bytes) / resident_pages; the OS page cache is not included.
  double ram_bytes_per_page() const;
};

// A batch Shard::Stage prepared for Shard::Publish: its pages' index entries computed and their
// signatures appended to the log past the committed end, nothing visible yet. Owned by the caller;
// dropped unpublished, it gives the shard its log space back. It must not outlive its shard.
class StagedBatch {
 public:
  ~StagedBatch();
  StagedBatch(const StagedBatch&) = delete;
  StagedBatch& operator=(const StagedBatch&) = delete;
  struct State;  // defined by the shard

 private:
  friend class Shard;
  explicit StagedBatch(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

class Shard {
 public:
  // Opens (or creates) the store at options.path and rebuilds the in-memory index from it.
  // Errors: InvalidArgument for bad options (named); FailedPrecondition when the store was built
  // with another format version, dims, shingle k, threshold or prefix overlap (the message gives
  // both values), or by format 3 or earlier (LevelDB records; rebuild it); Corruption for a
  // damaged commit file, meta or token order (named), a log shorter than its committed end, or a
  // damaged log record (the log and offset); IoError when the directory or a file cannot be
  // opened, or when another Shard has the store open.
  static StatusOr<std::unique_ptr<Shard>> Open(const ShardOptions& options);
  ~Shard();
  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;

  // Every pair (batch page, resident page) and (batch page, batch page) with Jaccard >= threshold,
  // with exact similarities. A page is never paired with the resident version of its own URL, nor
  // of a URL in compare.stale_url_hashes.
  //
  // With options.max_matches_per_page = K > 0 (the configuration's default) it answers what
  // transitive grouping needs instead of every pair (tier2/README.md, "Copies"; the pipeline's
  // Tier 1 joins a page to the groups of its matches):
  //  - resident pages under a URL of the batch are not matched either (the batch replaces them);
  //  - a live page whose shingles equal those of an earlier live page of the batch (neither
  //    join-only) is paired with the first such page (similarity 1) and with nothing else: it
  //    meets what that page meets, through it (CompareStats::copies);
  //  - a page keeps at most K resident matches: past K the verifications stop
  //    (CompareStats::capped_pages). Candidates are verified one of each distinct size and parity
  //    bitmap first (identical pages have the same), then the others, in slot order. The probe
  //    reads 16 K postings of each prefix token at most (the pages indexed longest first), and
  //    again all of them only when those give fewer than K matches: a page with at most K
  //    matches gets them all;
  //  - in-batch pairs are counted for the later page of each (join-only pages come before every
  //    other: they are in their groups already); a page keeps all its pairs up to K, and past K
  //    only those with a page it is not connected to yet through the pairs kept so far: the
  //    pairs kept connect exactly the pages all pairs connect (CompareStats::batch_connected).
  // Errors: InvalidArgument for a threshold outside [options.min_threshold, 1] or a bad batch (see
  // the batch rules); IoError or Corruption when a resident signature cannot be read;
  // DeadlineExceeded when compare.deadline passes before the answer is complete (the work stops
  // there). *out is overwritten (left empty on an error).
  Status CompareBatch(std::span<const ShardPage> batch, double threshold, CompareResult* out,
                      const CompareOptions& compare = {}) const;

  // Stores the batch's home pages (insert, or replace the URL's previous version) and removes
  // `removed_urls` (pages that disappeared or turned into redirects; unknown URLs are ignored), in
  // one atomic commit: Stage, Publish and CommitPublished in a row. A URL both stored and removed in
  // one call is stored. Pages that are not home here are not stored, and do not touch a resident
  // version of their URL: when a page's home moves to another shard, the caller removes it here
  // with removed_urls. `sequence` > 0 is stored with the commit (AppliedSequence), so a caller that
  // logs its batches elsewhere can tell after a crash whether this one reached the shard.
  // Errors: Stage's and Publish's (nothing of the batch stored), then CommitPublished's (the batch
  // stays published, uncommitted).
  Status Apply(std::span<const ShardPage> batch, std::span<const std::string> removed_urls,
               ApplyStats* stats = nullptr, uint64_t sequence = 0);

  // Step 1: the batch rules, the index compaction that is due, the index entries and the log
  // append (and its fsync when options.sync): most of a write's work, done while the caller may
  // not yet store the batch (the pipeline stages a batch while Tier 1 commits it). Readers see
  // nothing of a staged batch; dropping the StagedBatch gives the log space back. One batch may be
  // staged at a time. Errors: FailedPrecondition while another batch is staged or the shard is
  // read-only; InvalidArgument for a bad batch; ResourceExhausted when the shard would exceed 2^24
  // pages or its log 1 TiB; IoError when the append or its sync fails (nothing of it kept).
  StatusOr<std::unique_ptr<StagedBatch>> Stage(std::span<const ShardPage> batch);

  // Step 2: looks up the URLs' previous versions, appends the removal records (synced when
  // options.sync) and changes the index, page tables and URL maps: readers see the batch as
  // Publish returns. A restart does not, until CommitPublished. One batch may be published and
  // uncommitted at a time; Stage may run meanwhile. Errors: InvalidArgument for a null batch or
  // one staged by another shard; FailedPrecondition while another batch awaits its commit (this
  // one is dropped); IoError when the lookups or the removal records fail (the batch is dropped,
  // the shard unchanged); ResourceExhausted when the log would pass 1 TiB.
  Status Publish(std::unique_ptr<StagedBatch> batch, std::span<const std::string> removed_urls,
                 ApplyStats* stats = nullptr, uint64_t sequence = 0);
  // Step 3: writes the published batch's commit record (fdatasync'ed when options.sync); Ok at
  // once when none is published. A log compaction that fell due runs after it. IoError when the
  // commit record cannot be written: the batch stays published and uncommitted (call again, or
  // reopen the shard, which drops it).
  Status CommitPublished();

  // The `sequence` of the last commit that gave one (0 if none); read from the commit
  // file at Open, so it never fails after it.
  StatusOr<uint64_t> AppliedSequence() const;

  // Reads a resident page's signature by URL. NotFound when the URL is not resident.
  StatusOr<pb::PageSignature> Get(const std::string& url) const;
  // Hints that Get will soon be asked for `urls`: their records' reads start together
  // (SignatureLog::WillNeed) instead of one after another. Nothing without read_ahead; a URL not
  // resident costs nothing. Never fails. Thread safety: as Get.
  void WillNeed(std::span<const std::string_view> urls) const;

  ShardStats Stats() const;
  // Checks the invariant every answer's exactness rests on: each resident page has a posting for
  // every token of its prefix in the current token order, and a prefix cut no higher than that
  // prefix's. Reads every resident page's signature: O(resident pages x prefix). Corruption
  // naming the first page that breaks it; the log's read errors.
  Status CheckIndex() const;
  // Bytes the store's files take (the signature log, the commit, meta and token order files).
  uint64_t DiskBytes() const;
  const ShardOptions& options() const;

 private:
  friend class StagedBatch;
  class Impl;
  explicit Shard(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace neardup::tier2
