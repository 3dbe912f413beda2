#include "tier2/shard.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "common/bucket_sort.h"
#include "common/mapped_array.h"
#include "common/run_on_threads.h"
#include "common/url_hash_map.h"
#include "document/shingle.h"
#include "document/signature.h"
#include "proto/tier2.pb.h"
#include "tier2/commit_file.h"
#include "tier2/prefix_filter.h"
#include "tier2/prefix_index.h"
#include "tier2/signature_log.h"
#include "tier2/token_order.h"

namespace neardup::tier2 {
namespace {

// 2: full signatures moved from "s" records to the signature log (tier2/signature_log.h).
// 3: no "x" records: the index is rebuilt from the signatures in the log.
// 4: no LevelDB: the log holds page and removal records and is replayed at Open; a commit file
//    gives its committed end (tier2/commit_file.h); meta and token order are files.
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

std::string LogFileName(uint32_t generation) { return "sigs-" + std::to_string(generation) + ".log"; }

// The URL a page record's payload names (field 1 of its PageSignature, which serializes first; an
// empty URL is never stored), without parsing the rest. False for anything else.
bool PageRecordUrl(std::string_view payload, std::string_view* url) {
  if (payload.size() < 2 || payload[0] != kPageRecord) return false;
  const std::string_view sig = payload.substr(1);
  if (static_cast<uint8_t>(sig[0]) != 0x0A) return false;
  uint64_t n = 0;
  size_t i = 1;
  for (int shift = 0; i < sig.size() && shift < 35; shift += 7) {
    const auto b = static_cast<uint8_t>(sig[i++]);
    n |= static_cast<uint64_t>(b & 0x7F) << shift;
    if ((b & 0x80) == 0) {
      if (n == 0 || n > sig.size() - i) return false;
      *url = sig.substr(i, n);
      return true;
    }
  }
  return false;
}

// The signature of a page record's payload. False for anything else.
bool ParsePageRecord(std::string_view payload, pb::PageSignature* sig) {
  return !payload.empty() && payload[0] == kPageRecord &&
         sig->ParseFromArray(payload.data() + 1, static_cast<int>(payload.size() - 1));
}

std::span<const uint64_t> Shingles(const pb::PageSignature& s) {
  return {s.shingles().data(), static_cast<size_t>(s.shingles_size())};
}

template <typename F>
void ParallelFor(int threads, size_t n, F&& f) {
  if (threads <= 1 || n < 2) {
    for (size_t i = 0; i < n; ++i) f(0, i);
    return;
  }
  std::atomic<size_t> next{0};
  auto work = [&](int w) {
    for (size_t i; (i = next.fetch_add(1)) < n;) f(w, i);
  };
  RunOnThreads(threads, "nd-shard-work", work);
}

}  // namespace

ShardOptions ShardOptionsFromConfig(const pb::NeardupConfig& config, const std::string& path) {
  const pb::Tier2Config& t = config.tier2();
  ShardOptions o;
  o.path = path;
  o.dims = config.shingle().dims();
  o.shingle_k = config.shingle().k();
  o.min_threshold = t.min_threshold();
  o.prefix_overlap = t.prefix_overlap();
  o.max_batch_pages = t.max_batch_pages();
  o.sync = t.sync();
  o.order_sample_pages = t.order_sample_pages();
  o.frequent_min_pages = t.frequent_min_pages();
  return o;
}

double ShardStats::ram_bytes_per_page() const {
  return resident_pages == 0 ? 0 : static_cast<double>(index_bytes + page_table_bytes) / resident_pages;
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
  explicit Impl(const ShardOptions& o) : options_(o), index_(PrefixIndex::kMinBucketBits) {}
  ~Impl() {
    if (lock_fd_ >= 0) ::close(lock_fd_);
  }
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  Status Open();
  Status CompareBatch(std::span<const ShardPage> batch, double threshold, CompareResult* out) const;
  StatusOr<std::unique_ptr<StagedBatch>> Stage(std::span<const ShardPage> batch);
  // ApplyStaged (publish_only false) and Publish (true).
  Status ApplyStaged(std::unique_ptr<StagedBatch> batch, std::span<const std::string> removed, ApplyStats* stats,
                     uint64_t sequence, bool publish_only);
  Status CommitPublished();
  // Drops a staged batch that was never applied (StagedBatch's destructor).
  void Unstage(StagedBatch::State& staged);
  StatusOr<uint64_t> AppliedSequence() const;
  StatusOr<pb::PageSignature> Get(const std::string& url) const;
  ShardStats Stats() const;
  uint64_t DiskBytes() const;
  const ShardOptions& options() const { return options_; }

 private:
  // The batch after the batch rules: which pages take part.
  struct Plan {
    std::vector<uint32_t> live;        // not superseded, not empty
    std::vector<uint32_t> superseded;
    std::vector<uint32_t> empty;
  };
  Status PlanBatch(std::span<const ShardPage> batch, Plan* plan) const;
  // Resident matches of one page (appended to *out).
  struct Scratch {
    std::vector<uint32_t> touched;                     // matching postings' slots
    std::vector<uint32_t> touched_scratch;             // for sorting them
    std::vector<std::pair<uint32_t, uint32_t>> hits;   // (slot, matches) past the count and size filters
    std::vector<uint64_t> prefix;  // the probe's prefix in token order
    std::vector<uint64_t> keys;    // and its keys
    ParityBitmap bitmap;           // the probe's
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
  // The URL's current slot, or kNoSlot when it is not resident, and how the URL maps are placed
  // for it (*where). A URL whose hash leads to a resident page is confirmed by reading that
  // page's record (into *record when given: its payload). Called by the writer (no lock: it alone
  // changes the maps) and by Get (loc_mu_ shared).
  static constexpr uint32_t kNoSlot = UINT32_MAX;
  enum class UrlPlace {
    kFree,      // its hash leads to no resident page: the URL may take the hash's entry
    kOwner,     // the hash's entry is this URL's
    kTaken,     // the hash's entry belongs to another resident URL with the same hash
    kCollided,  // the URL is in collided_
  };
  Status LookupSlot(std::string_view url, uint32_t* slot, UrlPlace* where, std::string* record = nullptr) const;
  uint64_t HashUrl(std::string_view url) const { return options_.url_hash ? options_.url_hash(url) : UrlHash(url); }
  Status ProbeResident(uint32_t page, const pb::PageSignature& x, double t, Scratch* s,
                       std::vector<ResidentMatch>* out) const;
  void JoinBatch(std::span<const ShardPage> batch, const std::vector<uint32_t>& live, double t,
                 CompareResult* out) const;
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
  // The slot's page-table row from its entry (shingle vector validated).
  void SetPageTable(uint32_t slot, const pb::ShardIndexEntry& e);
  uint32_t IndexedPostings(uint32_t slot) const {
    return PrefixLength(size_[slot], options_.min_threshold, options_.prefix_overlap);
  }
  // The signature log: open the committed generation (Open), replay it into slots, where each
  // slot's record is, and reading one back.
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
  int lock_fd_ = -1;  // LOCK, flock'ed while open
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
  std::unique_ptr<SignatureLog> log_;
  uint32_t log_generation_ = 0;
  std::unique_ptr<CommitFile> commits_;  // the last commit (guarded by apply_mu_ after Open)
  // Per slot: its signature record in log_, packed as offset << kLengthBits | length, kNoRecord
  // for none. A length of kLongLength or more is kept in long_length_ (a few huge pages at most).
  std::vector<uint64_t> loc_;
  std::unordered_map<uint32_t, uint32_t> long_length_;
  // URL -> slot, exactly, with a few bytes a page: url_slots_ maps the hash of every URL stored
  // since Open (and of those resident at Open) to the slot it was last stored in; the record in
  // that slot names its URL, so a hash entry whose page has gone (or whose slot went to another
  // page) is recognised by one read. A resident URL whose hash another resident URL already holds
  // (a 64-bit collision) is kept, with its slot, in collided_ instead. Guarded like loc_ (Apply
  // reads them without loc_mu_: it is the only writer).
  UrlHashMap<uint32_t> url_slots_;
  std::unordered_map<std::string, uint32_t, UrlHasher, std::equal_to<>> collided_;
  uint64_t log_live_bytes_ = 0;       // bytes of the records live slots refer to
  uint64_t log_compactions_ = 0;
  uint64_t compactions_ = 0;
  uint64_t frequent_tokens_ = 0;  // marked by Reorder() in this process
  uint64_t rebuilds_ = 0;
  double open_seconds_ = 0;
};

Status Shard::Impl::Open() {
  const ShardOptions& o = options_;
  if (o.path.empty()) return InvalidArgument("shard: path is empty");
  if (o.dims < 1 || o.dims > 16) return InvalidArgument("shard: dims must be in 1..16, got " + std::to_string(o.dims));
  if (!(o.min_threshold > 0 && o.min_threshold <= 1)) {
    return InvalidArgument("shard: min_threshold must be in (0, 1], got " + std::to_string(o.min_threshold));
  }
  if (o.prefix_overlap < 1 || o.prefix_overlap > 64) {
    return InvalidArgument("shard: prefix_overlap must be in 1..64, got " + std::to_string(o.prefix_overlap));
  }
  if (o.max_batch_pages < 1) return InvalidArgument("shard: max_batch_pages must be >= 1");
  if (o.threads < 1) return InvalidArgument("shard: threads must be >= 1");
  const auto t0 = std::chrono::steady_clock::now();

  std::error_code ec;
  if (o.read_only) {
    if (!std::filesystem::exists(File(kMetaFile), ec)) return NotFound("shard: " + o.path + " holds no shard store");
  } else {
    std::filesystem::create_directories(o.path, ec);
    if (ec) return IoError("shard: cannot create " + o.path + ": " + ec.message());
  }
  lock_fd_ = o.read_only ? ::open(File("LOCK").c_str(), O_RDONLY | O_CLOEXEC)
                         : ::open(File("LOCK").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) return IoError("shard: open " + File("LOCK") + ": " + std::strerror(errno));
  if (::flock(lock_fd_, (o.read_only ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
    return IoError("shard: " + o.path + " is open elsewhere (lock " + File("LOCK") + ": " + std::strerror(errno) + ")");
  }

  // Meta: written when the store is made (after its first commit, so a store with meta has a
  // commit file), compared on every later open.
  pb::ShardMeta want;
  want.set_format_version(kFormatVersion);
  want.set_dims(o.dims);
  want.set_shingle_k(o.shingle_k);
  want.set_min_threshold(o.min_threshold);
  want.set_prefix_overlap(o.prefix_overlap);
  std::string v;
  Status meta = ReadWholeFile(File(kMetaFile), &v);
  if (meta.code() == StatusCode::kNotFound) {
    if (o.read_only) return NotFound("shard: " + o.path + " holds no shard store");
    if (std::filesystem::exists(File("CURRENT"), ec)) {
      return FailedPrecondition("shard: " + o.path +
                                " was built with format version 3 or earlier (records in LevelDB), opened with " +
                                std::to_string(kFormatVersion) + "; build a new store");
    }
    ASSIGN_OR_RETURN(commits_, CommitFile::Create(File(kCommitFile), CommitFile::Record{}, o.sync));
    RETURN_IF_ERROR(WriteFileAtomically(File(kMetaFile), want.SerializeAsString(), o.sync));
  } else {
    if (!meta.ok()) return IoError("shard: read meta: " + meta.message());
    pb::ShardMeta have;
    if (!have.ParseFromString(v)) return Corruption("shard: " + File(kMetaFile) + " is not a ShardMeta");
    auto mismatch = [&](const char* what, const std::string& stored, const std::string& asked) {
      return FailedPrecondition("shard: " + o.path + " was built with " + what + " " + stored + ", opened with " +
                                asked + "; use the same value or a new store");
    };
    if (have.format_version() != kFormatVersion) {
      return mismatch("format version", std::to_string(have.format_version()), std::to_string(kFormatVersion));
    }
    if (have.dims() != o.dims) return mismatch("dims", std::to_string(have.dims()), std::to_string(o.dims));
    if (have.shingle_k() != o.shingle_k) {
      return mismatch("shingle k", std::to_string(have.shingle_k()), std::to_string(o.shingle_k));
    }
    if (have.min_threshold() != o.min_threshold) {
      return mismatch("min_threshold", std::to_string(have.min_threshold()), std::to_string(o.min_threshold));
    }
    if (have.prefix_overlap() != o.prefix_overlap) {
      return mismatch("prefix_overlap", std::to_string(have.prefix_overlap()), std::to_string(o.prefix_overlap));
    }
    auto commits = CommitFile::Open(File(kCommitFile));
    if (commits.status().code() == StatusCode::kNotFound) {
      return Corruption("shard: " + o.path + " has its meta file but no commit file");
    }
    if (!commits.ok()) return Status(commits.status().code(), "shard: " + commits.status().message());
    commits_ = std::move(*commits);
  }

  // The token order, once the shard has derived one.
  Status order = ReadWholeFile(File(kOrderFile), &v);
  if (order.ok()) {
    auto parsed = TokenOrder::Deserialize(v);
    if (!parsed.ok()) return Corruption("shard: " + File(kOrderFile) + ": " + parsed.status().message());
    order_ = std::move(*parsed);
  } else if (order.code() != StatusCode::kNotFound) {
    return IoError("shard: read the token order: " + order.message());
  }

  RETURN_IF_ERROR(OpenLog());
  RETURN_IF_ERROR(ReplayLog());

  // Size the bucket table for the resident pages (a signature record holds ~8 bytes a shingle)
  // or for what is expected, whichever is more.
  uint64_t resident_postings = 0;
  for (uint32_t slot = 0; slot < loc_.size(); ++slot) {
    if (HasLocation(slot)) {
      resident_postings += PrefixLength(Location(slot).length / 8, o.min_threshold, o.prefix_overlap);
    }
  }
  const uint64_t expected = std::max<uint64_t>(
      resident_postings, o.expected_postings > 0
                      ? o.expected_postings
                      : static_cast<uint64_t>(o.expected_pages) * PrefixLength(200, o.min_threshold, o.prefix_overlap));
  RETURN_IF_ERROR(RebuildIndex(PrefixIndex::BucketBitsFor(expected)));
  rebuilds_ = 0;
  open_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Status::Ok();
}

// Grows `v` to `n` elements with capacity n (resize alone may double it).
template <typename T>
void GrowTo(std::vector<T>* v, size_t n, T fill) {
  v->reserve(n);
  v->resize(n, fill);
}

// The per-slot tables grow by an eighth: at most 12.5% of them is slack, for about eight copies of
// each entry over the table's life (a few bytes per page, next to a multi-KB signature write).
size_t GrownSize(size_t have, size_t need) { return std::max<size_t>(need, have + std::max<size_t>(have / 8, 1024)); }

void Shard::Impl::SetPageTable(uint32_t slot, const pb::ShardIndexEntry& e) {
  const size_t d = options_.dims;
  if (slot >= size_.size()) {
    const size_t n = GrownSize(size_.size(), size_t{slot} + 1);
    GrowTo<uint32_t>(&size_, n, 0);
    GrowTo<uint16_t>(&vec_, n * d, 0);
    GrowTo<uint32_t>(&cut_, n, 0);
    GrowTo<uint64_t>(&bits_, n * kBitmapWords, 0);
  }
  size_[slot] = e.size();
  cut_[slot] = static_cast<uint32_t>((e.prefix_size() == 0 ? 0 : order_.Key(e.prefix(e.prefix_size() - 1))) >> 32);
  for (size_t i = 0; i < d; ++i) {
    vec_[slot * d + i] = static_cast<uint16_t>(std::min<uint32_t>(e.shingle_vector(static_cast<int>(i)), kWide));
  }
  std::copy(e.bitmap().begin(), e.bitmap().end(), bits_.begin() + static_cast<ptrdiff_t>(slot * kBitmapWords));
}

void Shard::Impl::MakeIndexEntry(const pb::PageSignature& sig, std::vector<uint64_t>* prefix,
                                 pb::ShardIndexEntry* e) const {
  e->Clear();
  e->set_size(static_cast<uint32_t>(sig.shingles_size()));
  *e->mutable_shingle_vector() = sig.shingle_vector();
  const ParityBitmap bitmap = MakeParityBitmap(Shingles(sig));
  e->mutable_bitmap()->Add(bitmap.begin(), bitmap.end());
  IndexPrefix(sig, prefix);
  e->mutable_prefix()->Add(prefix->begin(), prefix->end());
}

Status Shard::Impl::OpenLog() {
  log_generation_ = commits_->last().generation;
  const uint64_t end = commits_->last().end;
  // Other generations are left over from a log compaction that stopped before or after its commit.
  const std::string current = LogFileName(log_generation_);
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(options_.path, ec)) {
    if (options_.read_only) break;
    const std::string name = e.path().filename().string();
    // (and temporary files of an atomic write that stopped before its rename)
    if ((name != current && name.starts_with("sigs-") && name.ends_with(".log")) || name.ends_with(".tmp")) {
      std::filesystem::remove(e.path(), ec);
    }
  }
  ASSIGN_OR_RETURN(log_, SignatureLog::Open((std::filesystem::path(options_.path) / current).string(), end,
                                            options_.read_only));
  return Status::Ok();
}

void Shard::Impl::SetLocation(uint32_t slot, const SignatureLog::Ref& ref) {
  if (slot >= loc_.size()) GrowTo<uint64_t>(&loc_, GrownSize(loc_.size(), size_t{slot} + 1), kNoRecord);
  if (ref.length >= kLongLength) {
    long_length_[slot] = ref.length;
  } else {
    long_length_.erase(slot);
  }
  loc_[slot] = ref.offset << kLengthBits | std::min<uint32_t>(ref.length, kLongLength);
}

SignatureLog::Ref Shard::Impl::Location(uint32_t slot) const {
  const uint64_t v = loc_[slot];
  uint32_t length = static_cast<uint32_t>(v & kLongLength);
  if (length == kLongLength) length = long_length_.at(slot);
  return {v >> kLengthBits, length};
}

void Shard::Impl::ClearLocation(uint32_t slot) {
  if (slot < loc_.size()) loc_[slot] = kNoRecord;  // an Apply that failed may not have set it
  long_length_.erase(slot);
}

Status Shard::Impl::ReplayLog() {
  loc_.clear();
  long_length_.clear();
  log_live_bytes_ = 0;
  url_slots_ = UrlHashMap<uint32_t>();
  collided_.clear();
  // Each URL's last page record, unless a removal record came after it.
  std::unordered_map<std::string, SignatureLog::Ref, UrlHasher, std::equal_to<>> live;
  RETURN_IF_ERROR(log_->Scan([&](SignatureLog::Ref ref, std::string_view payload) -> Status {
    std::string_view url;
    if (PageRecordUrl(payload, &url)) {
      live.insert_or_assign(std::string(url), ref);
    } else if (payload.size() > 1 && payload[0] == kRemovalRecord) {
      if (auto it = live.find(payload.substr(1)); it != live.end()) live.erase(it);
    } else {
      return Corruption("shard: " + log_->path() + ": the record at offset " + std::to_string(ref.offset) +
                        " is neither a page nor a removal");
    }
    return Status::Ok();
  }));
  // Slots in log order: the rebuild then reads the log front to back.
  std::vector<const std::pair<const std::string, SignatureLog::Ref>*> pages;
  pages.reserve(live.size());
  for (const auto& e : live) pages.push_back(&e);
  std::sort(pages.begin(), pages.end(), [](auto* a, auto* b) { return a->second.offset < b->second.offset; });
  for (uint32_t slot = 0; slot < pages.size(); ++slot) {
    const auto& [url, ref] = *pages[slot];
    SetLocation(slot, ref);
    log_live_bytes_ += ref.bytes();
    const uint64_t h = HashUrl(url);
    if (url_slots_.Contains(h)) {
      collided_.emplace(url, slot);
    } else {
      url_slots_.Insert(h, slot);
    }
  }
  return Status::Ok();
}

Status Shard::Impl::ReadSignature(uint32_t slot, std::string* buffer, pb::PageSignature* sig) const {
  if (!HasLocation(slot)) {
    return Corruption("shard: " + options_.path + ": slot " + std::to_string(slot) + " has no signature record");
  }
  RETURN_IF_ERROR(log_->Read(Location(slot), buffer));
  return ParseSlotRecord(slot, *buffer, sig);
}

Status Shard::Impl::ParseSlotRecord(uint32_t slot, std::string_view payload, pb::PageSignature* sig) const {
  if (!ParsePageRecord(payload, sig)) {
    return Corruption("shard: " + options_.path + ": bad signature record for slot " + std::to_string(slot));
  }
  return Status::Ok();
}

bool Shard::Impl::LogNeedsCompaction() const {
  const uint64_t dead = log_->end() - log_live_bytes_;
  return dead >= options_.log_compact_min_bytes && dead >= log_live_bytes_;
}

Status Shard::Impl::CompactLog() {
  const uint32_t generation = log_generation_ + 1;
  const std::string path = (std::filesystem::path(options_.path) / LogFileName(generation)).string();
  ASSIGN_OR_RETURN(std::unique_ptr<SignatureLog> next, SignatureLog::Open(path, 0));
  auto abandon = [&](Status s) {
    next.reset();
    std::error_code ec;
    std::filesystem::remove(path, ec);
    return s;
  };
  // Copy the live records in slot order, a few MB at a time.
  std::vector<uint32_t> slots;
  std::vector<SignatureLog::Ref> moved, refs;
  std::vector<std::string> chunk;
  std::vector<std::string_view> views;
  size_t chunk_bytes = 0;
  auto flush = [&]() -> Status {
    views.assign(chunk.begin(), chunk.end());
    RETURN_IF_ERROR(next->Append(views, &refs));
    moved.insert(moved.end(), refs.begin(), refs.end());
    chunk.clear();
    chunk_bytes = 0;
    return Status::Ok();
  };
  for (uint32_t slot = 0; slot < loc_.size(); ++slot) {
    if (!HasLocation(slot)) continue;
    chunk.emplace_back();
    if (Status s = log_->Read(Location(slot), &chunk.back()); !s.ok()) return abandon(s);
    slots.push_back(slot);
    chunk_bytes += chunk.back().size();
    if (chunk_bytes >= (8u << 20)) {
      if (Status s = flush(); !s.ok()) return abandon(s);
    }
  }
  if (Status s = flush(); !s.ok()) return abandon(s);
  // The new generation is durable before the store points at it, whatever options_.sync says:
  // after the commit the old one is deleted.
  if (Status s = next->Sync(); !s.ok()) return abandon(s);
  // The new generation holds only page records: the replaced and removed pages are gone.
  if (Status s = WriteCommit({generation, next->end(), commits_->last().sequence}, /*sync=*/true,
                             "commit the compacted log");
      !s.ok()) {
    return abandon(s);
  }
  const std::string old = log_->path();
  log_ = std::move(next);
  log_generation_ = generation;
  for (size_t i = 0; i < slots.size(); ++i) SetLocation(slots[i], moved[i]);
  log_live_bytes_ = log_->end();
  ++log_compactions_;
  std::error_code ec;
  std::filesystem::remove(old, ec);  // a failure leaves a file the next Open removes
  return Status::Ok();
}

Status Shard::Impl::RebuildIndex(int bucket_bits) {
  Status error;
  std::vector<uint32_t> new_size, new_cut;
  std::vector<uint16_t> new_vec;
  std::vector<uint64_t> new_bits;
  size_.swap(new_size);
  vec_.swap(new_vec);
  cut_.swap(new_cut);
  bits_.swap(new_bits);
  bool first_pass = true;
  // Every slot with a signature is a resident page (Apply clears the locations of the pages it
  // replaces or removes before it rebuilds). Build scans twice: the first pass reads the
  // signatures, fills the page tables and keeps each page's prefix (8 bytes a posting, for the
  // rebuild only), which the second replays. Kept in their own mappings, so that the memory goes
  // back to the system when the rebuild ends, whatever the allocator does.
  MappedArray<uint32_t> kept_slots;
  MappedArray<uint64_t> kept_ends;  // kept_tokens[kept_ends[i-1], kept_ends[i]) is kept_slots[i]'s prefix
  MappedArray<uint64_t> kept_tokens;
  auto scan = [&](const PrefixIndex::BulkVisitor& visit) {
    if (!error.ok()) return;
    if (!first_pass) {
      for (size_t i = 0, begin = 0; i < kept_slots.size(); begin = kept_ends[i++]) {
        visit(kept_slots[i], std::span<const uint64_t>(kept_tokens.data() + begin, kept_ends[i] - begin));
      }
      return;
    }
    first_pass = false;
    std::string buffer;
    pb::PageSignature sig;
    pb::ShardIndexEntry e;
    std::vector<uint64_t> prefix;
    for (uint32_t slot = 0; slot < loc_.size(); ++slot) {
      if (!HasLocation(slot)) continue;
      if (Status s = ReadSignature(slot, &buffer, &sig); !s.ok()) {
        error = s;
        return;
      }
      if (static_cast<uint32_t>(sig.shingle_vector_size()) != options_.dims) {
        error = Corruption("shard: " + options_.path + ": the signature of slot " + std::to_string(slot) + " has " +
                           std::to_string(sig.shingle_vector_size()) + " length dimensions, not " +
                           std::to_string(options_.dims));
        return;
      }
      MakeIndexEntry(sig, &prefix, &e);
      SetPageTable(slot, e);
      const uint64_t end = kept_tokens.size() + prefix.size();
      kept_slots.append(&slot, 1);
      kept_tokens.append(prefix.data(), prefix.size());
      kept_ends.append(&end, 1);
      visit(slot, prefix);
    }
  };
  PrefixIndex built = PrefixIndex::Build(bucket_bits, scan);
  if (!error.ok()) {
    size_.swap(new_size);
    vec_.swap(new_vec);
    cut_.swap(new_cut);
    bits_.swap(new_bits);
    return error;
  }
  index_ = std::move(built);
  ++rebuilds_;
  return Status::Ok();
}

Status Shard::Impl::Reorder() {
  // Every resident page's full set (the sample is the first order_sample_pages pages).
  std::vector<std::vector<uint64_t>> sets;
  {
    std::string buffer;
    pb::PageSignature sig;
    for (uint32_t slot = 0; slot < loc_.size(); ++slot) {
      if (!HasLocation(slot)) continue;
      RETURN_IF_ERROR(ReadSignature(slot, &buffer, &sig));
      sets.emplace_back(sig.shingles().begin(), sig.shingles().end());
    }
  }
  const std::vector<uint64_t> frequent = FrequentTokens(sets, options_.frequent_min_pages);
  const TokenOrder order = TokenOrder::FromFrequent(frequent);
  // The order is stored; the index is rebuilt in it (from the signatures, on every restart too).
  if (Status s = WriteFileAtomically(File(kOrderFile), order.Serialize(), options_.sync); !s.ok()) {
    return Status(s.code(), "shard: write the token order: " + s.message());
  }
  order_ = order;
  frequent_tokens_ = frequent.size();
  return RebuildIndex(index_.bucket_bits());
}

Status Shard::Impl::PlanBatch(std::span<const ShardPage> batch, Plan* plan) const {
  if (batch.size() > options_.max_batch_pages) {
    return InvalidArgument("batch of " + std::to_string(batch.size()) + " pages exceeds max_batch_pages " +
                           std::to_string(options_.max_batch_pages));
  }
  std::unordered_map<std::string_view, uint32_t> last;
  last.reserve(batch.size());
  for (uint32_t i = 0; i < batch.size(); ++i) {
    const pb::PageSignature* sig = batch[i].signature;
    if (sig == nullptr) return InvalidArgument("batch page " + std::to_string(i) + ": no signature");
    if (sig->url().empty()) return InvalidArgument("batch page " + std::to_string(i) + ": empty url");
    if (Status s = batch[i].validated ? Status::Ok() : ValidateSignature(*sig); !s.ok()) {
      return InvalidArgument("batch page " + std::to_string(i) + " (" + sig->url() + "): " + s.message());
    }
    if (static_cast<uint32_t>(sig->shingle_vector_size()) != options_.dims) {
      return InvalidArgument("batch page " + std::to_string(i) + " (" + sig->url() + "): " +
                             std::to_string(sig->shingle_vector_size()) + " dimensions, the shard has " +
                             std::to_string(options_.dims));
    }
    if (options_.shingle_k != 0 && sig->shingle_k() != options_.shingle_k) {
      return InvalidArgument("batch page " + std::to_string(i) + " (" + sig->url() + "): shingle k " +
                             std::to_string(sig->shingle_k()) + ", the shard has " +
                             std::to_string(options_.shingle_k));
    }
    last[sig->url()] = i;
  }
  for (uint32_t i = 0; i < batch.size(); ++i) {
    if (last[batch[i].signature->url()] != i) plan->superseded.push_back(i);
    else if (batch[i].signature->shingles_size() == 0) plan->empty.push_back(i);
    else plan->live.push_back(i);
  }
  return Status::Ok();
}

Status Shard::Impl::ProbeResident(uint32_t page, const pb::PageSignature& x, double t, Scratch* s,
                                  std::vector<ResidentMatch>* out) const {
  const auto xs = Shingles(x);
  const uint32_t n = static_cast<uint32_t>(xs.size());
  const uint32_t c = options_.prefix_overlap;
  const uint32_t p = PrefixLength(n, t, c);
  const uint32_t need = RequiredPrefixMatches(n, t, c);
  const SizeRange sizes = PartnerSizes(n, t);
  const size_t d = options_.dims;
  order_.Prefix(xs, p, &s->prefix);
  s->bitmap = MakeParityBitmap(xs);
  s->keys.resize(s->prefix.size());
  for (size_t k = 0; k < s->prefix.size(); ++k) s->keys[k] = order_.Key(s->prefix[k]);
  // Every posting that matches a prefix token, then counted per slot by sorting: only the few
  // slots with enough matches are looked up in the page table.
  s->touched.clear();
  index_.Collect(s->prefix, &s->touched);
  s->stats.postings_scanned += s->touched.size();
  {
    // Slots spread about evenly below the highest: their leading bits sort them in one pass.
    uint32_t highest = 0;
    for (uint32_t slot : s->touched) highest = std::max(highest, slot);
    SortByLeadingBits(&s->touched, std::max(1, static_cast<int>(std::bit_width(highest))), [](uint32_t slot) { return slot; },
                      &s->touched_scratch);
  }
  s->hits.clear();
  for (size_t i = 0; i < s->touched.size();) {
    size_t j = i + 1;
    while (j < s->touched.size() && s->touched[j] == s->touched[i]) ++j;
    const uint32_t slot = s->touched[i];
    if (j - i >= need && index_.IsLive(slot) && size_[slot] >= sizes.lo && size_[slot] <= sizes.hi) {
      s->hits.emplace_back(slot, static_cast<uint32_t>(j - i));
    }
    i = j;
  }
  Status st;
  for (const auto& [slot, cnt] : s->hits) {
    if (!st.ok()) break;
    ++s->stats.candidates;
    // Positional bound in key space (prefix_filter.h): the probe's prefix tokens whose key is
    // below the candidate's cut lie in both prefixes, so at most cnt of them are shared; every
    // other token of the probe may be.
    {
      const size_t below = std::lower_bound(s->keys.begin(), s->keys.end(), static_cast<uint64_t>(cut_[slot]) << 32) -
                           s->keys.begin();
      if (cnt + (n - below) < MinOverlap(n, size_[slot], t)) continue;
    }
    ++s->stats.positional_passed;
    const uint16_t* v = &vec_[slot * d];
    if (std::find(v, v + d, kWide) == v + d &&
        !LengthVectorsAllow(std::span<const uint16_t>(v, d), size_[slot],
                            std::span<const uint32_t>(x.shingle_vector().data(), d), n, t)) {
      continue;
    }
    if (!BitmapsAllow(s->bitmap.data(), n, &bits_[size_t{slot} * kBitmapWords], size_[slot], t)) continue;
    ++s->stats.verifications;
    st = ReadSignature(slot, &s->value, &s->other);
    if (!st.ok()) continue;
    s->stats.fetched_bytes += s->value.size();
    if (s->other.url() == x.url()) continue;  // the previous version of this very page
    const auto ys = Shingles(s->other);
    const size_t o = Overlap(xs, ys);
    if (JaccardAtLeast(o, n, ys.size(), t)) {
      ++s->stats.resident_pairs;
      out->push_back(ResidentMatch{page, s->other.url(),
                                   static_cast<double>(o) / static_cast<double>(n + ys.size() - o)});
    }
  }
  return st;
}

void Shard::Impl::JoinBatch(std::span<const ShardPage> batch, const std::vector<uint32_t>& live, double t,
                            CompareResult* out) const {
  // Prefix join (c = 1, the shard's token order) of the batch's own pages: every (token, page) of
  // every prefix, sorted by token; pages that share a token are candidate pairs.
  std::vector<std::pair<uint64_t, uint32_t>> entries;
  std::vector<uint64_t> prefix;
  for (uint32_t li = 0; li < live.size(); ++li) {
    const pb::PageSignature& x = *batch[live[li]].signature;
    order_.Prefix(Shingles(x), PrefixLength(static_cast<uint32_t>(x.shingles_size()), t, 1), &prefix);
    for (uint64_t h : prefix) entries.emplace_back(h, li);
  }
  std::vector<std::pair<uint64_t, uint32_t>> scratch;
  SortByLeadingBits(&entries, 64, [](const std::pair<uint64_t, uint32_t>& e) { return e.first; }, &scratch);
  // Runs of equal tokens are the pages sharing that token, in page order. Each page walks the
  // runs of its own tokens for the later pages in them: a pair of near-duplicates shares dozens
  // of prefix tokens, so it is met once per token, but kept once (seen[] holds the page that
  // last kept each partner) and needs no sort to remove the repeats.
  std::vector<uint32_t> run_start, runs_of_page_start(live.size() + 1, 0), runs_of_page(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i == 0 || entries[i].first != entries[i - 1].first) run_start.push_back(static_cast<uint32_t>(i));
    ++runs_of_page_start[entries[i].second + 1];
  }
  run_start.push_back(static_cast<uint32_t>(entries.size()));
  for (size_t p = 1; p < runs_of_page_start.size(); ++p) runs_of_page_start[p] += runs_of_page_start[p - 1];
  {
    std::vector<uint32_t> fill(runs_of_page_start.begin(), runs_of_page_start.end() - 1);
    for (uint32_t r = 0; r + 1 < run_start.size(); ++r) {
      for (uint32_t e = run_start[r]; e < run_start[r + 1]; ++e) runs_of_page[fill[entries[e].second]++] = r;
    }
  }
  std::vector<std::pair<uint32_t, uint32_t>> cand;
  std::vector<uint32_t> seen(live.size(), 0);  // page + 1 that last kept this partner
  for (uint32_t la = 0; la < live.size(); ++la) {
    const SizeRange sizes = PartnerSizes(static_cast<uint32_t>(batch[live[la]].signature->shingles_size()), t);
    for (uint32_t k = runs_of_page_start[la]; k < runs_of_page_start[la + 1]; ++k) {
      const uint32_t r = runs_of_page[k];
      for (uint32_t e = run_start[r + 1]; e-- > run_start[r];) {
        const uint32_t lb = entries[e].second;
        if (lb <= la) break;  // a run is in page order: the rest come before la
        if (seen[lb] == la + 1) continue;
        seen[lb] = la + 1;
        if (batch[live[la]].join_only && batch[live[lb]].join_only) continue;  // nobody asked
        const uint32_t sb = static_cast<uint32_t>(batch[live[lb]].signature->shingles_size());
        if (sb >= sizes.lo && sb <= sizes.hi) cand.emplace_back(la, lb);
      }
    }
  }
  for (const auto& [la, lb] : cand) {
    const pb::PageSignature& x = *batch[live[la]].signature;
    const pb::PageSignature& y = *batch[live[lb]].signature;
    ++out->stats.batch_candidates;
    const size_t o = Overlap(Shingles(x), Shingles(y));
    if (JaccardAtLeast(o, x.shingles_size(), y.shingles_size(), t)) {
      const uint32_t a = live[la], b = live[lb];
      out->in_batch.push_back(BatchMatch{std::min(a, b), std::max(a, b),
                                         static_cast<double>(o) /
                                             static_cast<double>(x.shingles_size() + y.shingles_size() - o)});
    }
  }
  out->stats.batch_pairs = out->in_batch.size();
}

Status Shard::Impl::CompareBatch(std::span<const ShardPage> batch, double threshold, CompareResult* out) const {
  *out = CompareResult{};
  if (!(threshold >= options_.min_threshold && threshold <= 1)) {
    return InvalidArgument("threshold " + std::to_string(threshold) + " is outside [" +
                           std::to_string(options_.min_threshold) + ", 1]: the shard's index is cut for " +
                           std::to_string(options_.min_threshold));
  }
  Plan plan;
  RETURN_IF_ERROR(PlanBatch(batch, &plan));
  out->superseded = plan.superseded;
  out->empty = plan.empty;
  out->stats.pages = plan.live.size();
  std::shared_lock lock(mu_);
  std::shared_lock loc(loc_mu_);
  const int workers = static_cast<int>(std::min<size_t>(options_.threads, std::max<size_t>(plan.live.size(), 1)));
  std::vector<std::unique_ptr<Scratch>> scratch = TakeScratch(workers);
  std::vector<std::vector<ResidentMatch>> found(workers);
  std::vector<Status> errors(workers);
  ParallelFor(workers, plan.live.size(), [&](int w, size_t i) {
    if (!errors[w].ok()) return;
    const uint32_t page = plan.live[i];
    if (batch[page].join_only) return;
    errors[w] = ProbeResident(page, *batch[page].signature, threshold, scratch[w].get(), &found[w]);
  });
  for (int w = 0; w < workers; ++w) {
    if (!errors[w].ok()) {
      ReturnScratch(std::move(scratch));
      return errors[w];
    }
    const CompareStats& s = scratch[w]->stats;
    out->stats.postings_scanned += s.postings_scanned;
    out->stats.candidates += s.candidates;
    out->stats.positional_passed += s.positional_passed;
    out->stats.verifications += s.verifications;
    out->stats.resident_pairs += s.resident_pairs;
    out->stats.fetched_bytes += s.fetched_bytes;
    out->resident.insert(out->resident.end(), std::make_move_iterator(found[w].begin()),
                         std::make_move_iterator(found[w].end()));
  }
  ReturnScratch(std::move(scratch));
  std::sort(out->resident.begin(), out->resident.end(), [](const ResidentMatch& a, const ResidentMatch& b) {
    return a.page != b.page ? a.page < b.page : a.url < b.url;
  });
  JoinBatch(batch, plan.live, threshold, out);
  std::sort(out->in_batch.begin(), out->in_batch.end(),
            [](const BatchMatch& a, const BatchMatch& b) { return a.a != b.a ? a.a < b.a : a.b < b.b; });
  return Status::Ok();
}

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

void Shard::Impl::TruncateLog(uint64_t end) {
  if (Status t = log_->Truncate(end); !t.ok()) spdlog::warn("shard: {}", t.ToString());  // Open cuts it
}

void Shard::Impl::Unstage(StagedBatch::State& staged) {
  std::lock_guard apply(apply_mu_);
  TruncateLog(staged.log_end);
  staged_ = false;
}

Status Shard::Impl::ApplyStaged(std::unique_ptr<StagedBatch> batch, std::span<const std::string> removed,
                                ApplyStats* stats, uint64_t sequence, bool publish_only) {
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
  const std::vector<uint32_t>& slots = staged->slots;
  const std::vector<SignatureLog::Ref>& refs = staged->refs;
  auto undo = [&](Status s) {
    TruncateLog(staged->log_end);
    return s;
  };

  // Where each URL is now. The pages replaced or removed free their slots.
  std::vector<uint32_t> freed;
  std::vector<UrlPlace> places(slots.size());
  std::unordered_map<std::string_view, bool> handled;  // URLs already changed in this batch
  handled.reserve(slots.size());
  std::string record;
  for (size_t k = 0; k < slots.size(); ++k) {
    const std::string& url = staged->urls[k];
    uint32_t old;
    if (Status s = LookupSlot(url, &old, &places[k], &record); !s.ok()) return undo(s);
    if (old != kNoSlot) {
      freed.push_back(old);
      ++st.replaced;
    } else {
      ++st.inserted;
    }
    handled[url] = true;
  }
  // Removals: explicit ones, and home pages that became empty. Each resident one gets a removal
  // record (a replaced page needs none: its URL's later page record replaces it on replay).
  std::vector<std::string> removal_payloads;
  std::vector<std::string_view> collided_removed;
  auto remove = [&](const std::string& url) -> Status {
    if (handled.count(url)) return Status::Ok();
    uint32_t old;
    UrlPlace where;
    RETURN_IF_ERROR(LookupSlot(url, &old, &where, &record));
    if (old == kNoSlot) return Status::Ok();
    removal_payloads.push_back(kRemovalRecord + url);
    if (where == UrlPlace::kCollided) collided_removed.push_back(url);
    freed.push_back(old);
    ++st.removed;
    handled[url] = true;
    return Status::Ok();
  };
  for (const std::string& url : staged->emptied) {
    if (Status s = remove(url); !s.ok()) return undo(s);
  }
  for (const std::string& url : removed) {
    if (Status s = remove(url); !s.ok()) return undo(s);
  }
  if (!removal_payloads.empty()) {
    uint64_t bytes = 0;
    for (const std::string& p : removal_payloads) bytes += SignatureLog::kHeaderBytes + p.size();
    if (log_->end() + bytes >= kMaxLogBytes) {
      return undo(ResourceExhausted("shard: " + options_.path + ": the signature log is full; split the shard"));
    }
    std::vector<std::string_view> views(removal_payloads.begin(), removal_payloads.end());
    std::vector<SignatureLog::Ref> removal_refs;
    Status s = log_->Append(views, &removal_refs);
    if (s.ok() && options_.sync) s = log_->Sync();
    if (!s.ok()) return undo(s);
  }
  // The commit: the log's end now covers the batch (its page records synced by Stage). A
  // published batch gets it from CommitPublished, after the memory below has changed.
  const CommitFile::Record record_of_batch{log_generation_, log_->end(),
                                           sequence > 0 ? sequence : commits_->last().sequence};
  if (!publish_only) {
    if (Status s = WriteCommit(record_of_batch, options_.sync, "commit"); !s.ok()) return undo(s);
  }

  // The store has it; now the index and page tables (CompareBatch waits)...
  Status result;
  {
    std::unique_lock lock(mu_);
    for (uint32_t slot : freed) index_.Remove(slot, IndexedPostings(slot));
    // ...and the locations and URL maps (Get waits): every slot with a location is resident.
    {
      std::unique_lock loc(loc_mu_);
      for (uint32_t slot : freed) {
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
        const std::string& url = staged->urls[k];
        const uint64_t h = HashUrl(url);
        const UrlPlace where = places[k];
        if (where == UrlPlace::kCollided || where == UrlPlace::kTaken ||
            (where == UrlPlace::kFree && placed.count(h))) {
          collided_[url] = slots[k];
        } else {
          url_slots_.Insert(h, slots[k]);
          placed.insert(h);
        }
      }
      for (std::string_view url : collided_removed) {
        if (auto it = collided_.find(url); it != collided_.end()) collided_.erase(it);
      }
    }
    for (size_t k = 0; k < slots.size(); ++k) {
      const pb::ShardIndexEntry& e = staged->entries[k];
      SetPageTable(slots[k], e);
      index_.Add(slots[k], {e.prefix().data(), static_cast<size_t>(e.prefix_size())});
    }
    const uint64_t postings = index_.main_postings() + index_.overflow_postings();
    if (order_.empty() && options_.order_sample_pages > 0 && index_.live_slots() >= options_.order_sample_pages) {
      // The batch is stored either way; a failed reorder leaves hash order and is retried next time.
      if (Status r = Reorder(); !r.ok()) spdlog::warn("shard: deriving the token order failed: {}", r.ToString());
    } else if (postings > (16ull << index_.bucket_bits()) && index_.bucket_bits() < PrefixIndex::kMaxBucketBits) {
      // Grown past the bucket table: rebuild from the log with a table sized for twice the size.
      result = RebuildIndex(PrefixIndex::BucketBitsFor(postings * 2));
    }
    // (Index compaction waits for the next Stage, off the path a pipeline waits on.)
  }
  if (publish_only) {
    published_ = record_of_batch;
    return result;
  }
  MaybeCompactLog();
  return result;
}

Status Shard::Impl::WriteCommit(const CommitFile::Record& record, bool sync, const char* what) {
  const CommitFile::Record committed = commits_->last();
  if (Status s = commits_->Write(record, sync); !s.ok()) {
    // The slot written may hold the new commit: put the last one back.
    if (Status back = commits_->Write(committed, sync); !back.ok()) {
      spdlog::warn("shard: {}", back.ToString());
    }
    return Status(s.code(), "shard: " + options_.path + ": " + what + ": " + s.message());
  }
  return Status::Ok();
}

void Shard::Impl::MaybeCompactLog() {
  // Not with a batch staged (its records past the end would not be copied) or published (the
  // new generation's commit would commit it).
  if (staged_ || published_) return;
  std::unique_lock loc(loc_mu_);
  if (LogNeedsCompaction()) {
    // The batch is stored either way; a failed compaction leaves the old log and is retried.
    if (Status r = CompactLog(); !r.ok()) spdlog::warn("shard: compacting the signature log failed: {}", r.ToString());
  }
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

Status Shard::Impl::LookupSlot(std::string_view url, uint32_t* slot, UrlPlace* where, std::string* record) const {
  *slot = kNoSlot;
  if (!collided_.empty()) {
    if (auto it = collided_.find(url); it != collided_.end()) {
      *where = UrlPlace::kCollided;
      *slot = it->second;
      if (record != nullptr) RETURN_IF_ERROR(log_->Read(Location(*slot), record));
      return Status::Ok();
    }
  }
  *where = UrlPlace::kFree;
  const uint64_t h = HashUrl(url);
  uint32_t s;
  if (!url_slots_.Find(h, &s) || !HasLocation(s)) return Status::Ok();  // never stored, or gone
  std::string buffer;
  std::string* payload = record != nullptr ? record : &buffer;
  RETURN_IF_ERROR(log_->Read(Location(s), payload));
  std::string_view other;
  if (!PageRecordUrl(*payload, &other)) {
    return Corruption("shard: " + log_->path() + ": the record of slot " + std::to_string(s) + " is not a page");
  }
  if (other == url) {
    *where = UrlPlace::kOwner;
    *slot = s;
  } else if (HashUrl(other) == h) {
    *where = UrlPlace::kTaken;  // a resident page with the same hash holds the entry
  }
  return Status::Ok();
}

StatusOr<pb::PageSignature> Shard::Impl::Get(const std::string& url) const {
  // Not mu_: a Get does not wait for an Apply's index work, only for its location changes.
  std::shared_lock loc(loc_mu_);
  std::string buffer;
  uint32_t slot;
  UrlPlace where;
  RETURN_IF_ERROR(LookupSlot(url, &slot, &where, &buffer));
  if (slot == kNoSlot) return NotFound("shard: " + url + " is not resident in " + options_.path);
  pb::PageSignature sig;
  RETURN_IF_ERROR(ParseSlotRecord(slot, buffer, &sig));
  return sig;
}

ShardStats Shard::Impl::Stats() const {
  std::shared_lock lock(mu_);
  std::shared_lock loc(loc_mu_);
  ShardStats s;
  s.resident_pages = index_.live_slots();
  s.index_postings = index_.main_postings() + index_.overflow_postings();
  s.index_bytes = index_.MemoryBytes();
  s.index_buckets = uint64_t{1} << index_.bucket_bits();
  s.page_table_bytes = (size_.capacity() + cut_.capacity()) * sizeof(uint32_t) + vec_.capacity() * sizeof(uint16_t) +
                       (loc_.capacity() + bits_.capacity()) * sizeof(uint64_t) +
                       long_length_.size() * (sizeof(uint32_t) * 2 + 2 * sizeof(void*)) + url_slots_.MemoryBytes() +
                       collided_.size() * 96;  // a few at most
  s.log_bytes = log_->end();
  s.log_live_bytes = log_live_bytes_;
  s.log_compactions = log_compactions_;
  s.compactions = compactions_;
  s.token_order_bits = order_.bitmap_bits();
  s.frequent_tokens = frequent_tokens_;
  s.rebuilds = rebuilds_;
  s.open_seconds = open_seconds_;
  return s;
}

uint64_t Shard::Impl::DiskBytes() const {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(options_.path, ec)) {
    if (e.is_regular_file(ec)) total += e.file_size(ec);
  }
  return total;
}

Shard::Shard(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Shard::~Shard() = default;

StatusOr<std::unique_ptr<Shard>> Shard::Open(const ShardOptions& options) {
  auto impl = std::make_unique<Impl>(options);
  RETURN_IF_ERROR(impl->Open());
  return std::unique_ptr<Shard>(new Shard(std::move(impl)));
}
Status Shard::CompareBatch(std::span<const ShardPage> batch, double threshold, CompareResult* out) const {
  return impl_->CompareBatch(batch, threshold, out);
}
Status Shard::Apply(std::span<const ShardPage> batch, std::span<const std::string> removed_urls, ApplyStats* stats,
                    uint64_t sequence) {
  ASSIGN_OR_RETURN(std::unique_ptr<StagedBatch> staged, impl_->Stage(batch));
  return impl_->ApplyStaged(std::move(staged), removed_urls, stats, sequence, /*publish_only=*/false);
}
StatusOr<std::unique_ptr<StagedBatch>> Shard::Stage(std::span<const ShardPage> batch) { return impl_->Stage(batch); }
Status Shard::ApplyStaged(std::unique_ptr<StagedBatch> batch, std::span<const std::string> removed_urls,
                          ApplyStats* stats, uint64_t sequence) {
  return impl_->ApplyStaged(std::move(batch), removed_urls, stats, sequence, /*publish_only=*/false);
}
Status Shard::Publish(std::unique_ptr<StagedBatch> batch, std::span<const std::string> removed_urls,
                      ApplyStats* stats, uint64_t sequence) {
  return impl_->ApplyStaged(std::move(batch), removed_urls, stats, sequence, /*publish_only=*/true);
}
Status Shard::CommitPublished() { return impl_->CommitPublished(); }

StagedBatch::StagedBatch(std::unique_ptr<State> state) : state_(std::move(state)) {}
StagedBatch::~StagedBatch() {
  if (state_ != nullptr) state_->shard->Unstage(*state_);
}
StatusOr<uint64_t> Shard::AppliedSequence() const { return impl_->AppliedSequence(); }

StatusOr<uint64_t> Shard::Impl::AppliedSequence() const {
  std::lock_guard apply(apply_mu_);
  return commits_->last().sequence;
}
StatusOr<pb::PageSignature> Shard::Get(const std::string& url) const { return impl_->Get(url); }
ShardStats Shard::Stats() const { return impl_->Stats(); }
uint64_t Shard::DiskBytes() const { return impl_->DiskBytes(); }
const ShardOptions& Shard::options() const { return impl_->options(); }

}  // namespace neardup::tier2
