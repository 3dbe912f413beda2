#include "tier2/shard.h"

#include <leveldb/cache.h>
#include <leveldb/db.h>
#include <leveldb/filter_policy.h>
#include <leveldb/write_batch.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "common/bucket_sort.h"
#include "common/coding.h"
#include "common/mapped_array.h"
#include "common/shingle.h"
#include "common/signature.h"
#include "common/run_on_threads.h"
#include "common/url_hash_map.h"
#include "proto/tier2.pb.h"
#include "tier2/prefix_filter.h"
#include "tier2/prefix_index.h"
#include "tier2/signature_log.h"
#include "tier2/token_order.h"

namespace neardup::tier2 {
namespace {

// 2: full signatures moved from "s" records to the signature log (tier2/signature_log.h).
// 3: no "x" records: the index is rebuilt from the signatures in the log.
constexpr uint32_t kFormatVersion = 3;
constexpr uint32_t kWide = 0xFFFF;  // a length-vector entry that did not fit 16 bits
// A slot's signature location in RAM: 40 bits of log offset, 24 bits of payload length.
constexpr int kLengthBits = 24;
constexpr uint32_t kLongLength = (1u << kLengthBits) - 1;  // this length or more: see long_length_
constexpr uint64_t kMaxLogBytes = 1ull << (64 - kLengthBits);  // offsets fit in 40 bits
constexpr uint64_t kNoRecord = UINT64_MAX;                     // a slot without a page

std::string SlotKey(char prefix, uint32_t slot) {
  std::string k(1, prefix);
  AppendBigEndian(&k, slot, 4);
  return k;
}
// A slot as 4 big-endian bytes at `p`.
uint32_t DecodeSlot(const char* data) { return static_cast<uint32_t>(ReadBigEndian(data, 4)); }
uint32_t SlotOfKey(const leveldb::Slice& k) { return DecodeSlot(k.data() + 1); }
std::string SlotValue(uint32_t slot) { return SlotKey('v', slot).substr(1); }
std::string UrlKey(const std::string& url) { return "u" + url; }

// "o" + slot: where the slot's signature is in the log (offset BE64, length BE32).
std::string LocationValue(const SignatureLog::Ref& r) {
  std::string v;
  AppendBigEndian(&v, r.offset, 8);
  AppendBigEndian(&v, r.length, 4);
  return v;
}
// "l": the log's generation (BE32) and committed end (BE64).
std::string LogValue(uint32_t generation, uint64_t end) {
  std::string v;
  AppendBigEndian(&v, generation, 4);
  AppendBigEndian(&v, end, 8);
  return v;
}
std::string LogFileName(uint32_t generation) { return "sigs-" + std::to_string(generation) + ".log"; }

Status FromLevelDb(const leveldb::Status& s, const std::string& what) {
  if (s.ok()) return Status::Ok();
  if (s.IsCorruption()) return Corruption(what + ": " + s.ToString());
  if (s.IsNotFound()) return NotFound(what + ": " + s.ToString());
  return IoError(what + ": " + s.ToString());
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
  o.cache_bytes = static_cast<uint64_t>(t.cache_mib()) << 20;
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

  Status Open();
  Status CompareBatch(std::span<const ShardPage> batch, double threshold, CompareResult* out) const;
  StatusOr<std::unique_ptr<StagedBatch>> Stage(std::span<const ShardPage> batch);
  Status ApplyStaged(std::unique_ptr<StagedBatch> batch, std::span<const std::string> removed, ApplyStats* stats,
                     uint64_t sequence);
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
  // The URL's current slot, or kNoSlot when it is not resident.
  static constexpr uint32_t kNoSlot = UINT32_MAX;
  Status LookupSlot(const std::string& url, uint32_t* slot) const;
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
  // The signature log: open the committed generation (Open), where each slot's record is, and
  // reading one back.
  Status OpenLog();
  Status LoadLocations();
  Status LoadUrlSlots();
  void SetLocation(uint32_t slot, const SignatureLog::Ref& ref);
  SignatureLog::Ref Location(uint32_t slot) const;
  bool HasLocation(uint32_t slot) const { return slot < loc_.size() && loc_[slot] != kNoRecord; }
  void ClearLocation(uint32_t slot);
  Status ReadSignature(uint32_t slot, std::string* buffer, pb::PageSignature* sig) const;
  // Rewrites the live records into the next generation of the log when dead records outweigh
  // them (replaced and removed pages leave theirs behind).
  bool LogNeedsCompaction() const;
  Status CompactLog();
  // Cuts the log back to `end` (an append that will not be committed); a failure is only logged:
  // Open cuts the log to its committed end anyway.
  void TruncateLog(uint64_t end);

  ShardOptions options_;
  std::unique_ptr<leveldb::Cache> cache_;
  std::unique_ptr<const leveldb::FilterPolicy> filter_;
  std::unique_ptr<leveldb::DB> db_;
  // Locks: apply_mu_ orders Apply calls (the only writer). mu_ guards the index, the page tables
  // and the token order: CompareBatch reads them shared, Apply changes them exclusive. loc_mu_
  // guards the signature locations and the log object: Get and CompareBatch read them shared,
  // Apply changes them exclusive. Order: apply_mu_, then mu_, then loc_mu_.
  std::mutex apply_mu_;
  bool staged_ = false;  // a StagedBatch is outstanding (guarded by apply_mu_)
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
  // Per slot: its signature record in log_, packed as offset << kLengthBits | length, kNoRecord
  // for none. A length of kLongLength or more is kept in long_length_ (a few huge pages at most).
  std::vector<uint64_t> loc_;
  std::unordered_map<uint32_t, uint32_t> long_length_;
  // Hashes of every URL stored since Open (and of those resident at Open), each with the slot it
  // was last stored in: LookupSlot answers most new URLs without a LevelDB read, and Get finds
  // most resident pages without one (the record read names its URL, so a stale or colliding hint
  // falls back to the read). Guarded like loc_ (Apply reads it without loc_mu_: it is the only
  // writer).
  UrlHashMap<uint32_t> url_slots_;
  // Slots an Apply has located but not committed yet: a hint naming one is not followed.
  std::unordered_set<uint32_t> uncommitted_;
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
  std::filesystem::create_directories(o.path, ec);
  if (ec) return IoError("shard: cannot create " + o.path + ": " + ec.message());
  cache_.reset(leveldb::NewLRUCache(o.cache_bytes));
  filter_.reset(leveldb::NewBloomFilterPolicy(10));
  leveldb::Options lo;
  lo.create_if_missing = true;
  lo.block_cache = cache_.get();
  lo.filter_policy = filter_.get();
  lo.compression = leveldb::kNoCompression;  // shingle hashes do not compress
  lo.write_buffer_size = 32 << 20;
  // LevelDB's default 2 MiB tables: with random keys, bigger ones make each compaction rewrite
  // more (64 MiB tables wrote 2.6 GB where 2 MiB ones wrote 1.8 GB over 4 shards of 1M pages,
  // and peaked 230 MiB higher).
  leveldb::DB* db = nullptr;
  RETURN_IF_ERROR(FromLevelDb(leveldb::DB::Open(lo, o.path, &db), "shard: open " + o.path));
  db_.reset(db);

  // Meta: write on first open, compare on later ones.
  pb::ShardMeta want;
  want.set_format_version(kFormatVersion);
  want.set_dims(o.dims);
  want.set_shingle_k(o.shingle_k);
  want.set_min_threshold(o.min_threshold);
  want.set_prefix_overlap(o.prefix_overlap);
  std::string v;
  leveldb::Status s = db_->Get(leveldb::ReadOptions(), "m", &v);
  if (s.IsNotFound()) {
    leveldb::WriteOptions wo;
    wo.sync = o.sync;
    RETURN_IF_ERROR(FromLevelDb(db_->Put(wo, "m", want.SerializeAsString()), "shard: write meta in " + o.path));
  } else {
    RETURN_IF_ERROR(FromLevelDb(s, "shard: read meta in " + o.path));
    pb::ShardMeta have;
    if (!have.ParseFromString(v)) return Corruption("shard: " + o.path + ": meta record is not a ShardMeta");
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
  }

  // The token order, once the shard has derived one.
  s = db_->Get(leveldb::ReadOptions(), "f", &v);
  if (!s.IsNotFound()) {
    RETURN_IF_ERROR(FromLevelDb(s, "shard: read token order in " + o.path));
    auto order = TokenOrder::Deserialize(v);
    if (!order.ok()) return Corruption("shard: " + o.path + ": " + order.status().message());
    order_ = std::move(*order);
  }

  RETURN_IF_ERROR(OpenLog());
  RETURN_IF_ERROR(LoadLocations());
  RETURN_IF_ERROR(LoadUrlSlots());

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
  std::string v;
  uint64_t end = 0;
  leveldb::Status s = db_->Get(leveldb::ReadOptions(), "l", &v);
  if (s.IsNotFound()) {
    log_generation_ = 1;
  } else {
    RETURN_IF_ERROR(FromLevelDb(s, "shard: read the signature log record in " + options_.path));
    if (v.size() != 12) return Corruption("shard: " + options_.path + ": signature log record is not 12 bytes");
    log_generation_ = static_cast<uint32_t>(ReadBigEndian(v.data(), 4));
    end = ReadBigEndian(v.data() + 4, 8);
  }
  // Other generations are left over from a log compaction that stopped before or after its commit.
  const std::string current = LogFileName(log_generation_);
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(options_.path, ec)) {
    const std::string name = e.path().filename().string();
    if (name != current && name.starts_with("sigs-") && name.ends_with(".log")) {
      std::filesystem::remove(e.path(), ec);
    }
  }
  ASSIGN_OR_RETURN(log_, SignatureLog::Open((std::filesystem::path(options_.path) / current).string(), end));
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

Status Shard::Impl::LoadLocations() {
  loc_.clear();
  long_length_.clear();
  log_live_bytes_ = 0;
  leveldb::ReadOptions ro;
  ro.fill_cache = false;
  std::unique_ptr<leveldb::Iterator> it(db_->NewIterator(ro));
  for (it->Seek("o"); it->Valid() && it->key()[0] == 'o'; it->Next()) {
    if (it->key().size() != 5 || it->value().size() != 12) {
      return Corruption("shard: " + options_.path + ": bad signature location record");
    }
    const SignatureLog::Ref ref{ReadBigEndian(it->value().data(), 8), static_cast<uint32_t>(ReadBigEndian(it->value().data() + 8, 4))};
    const uint32_t slot = SlotOfKey(it->key());
    if (ref.offset + ref.bytes() > log_->end()) {
      return Corruption("shard: " + options_.path + ": the signature of slot " + std::to_string(slot) +
                        " lies beyond the end of " + log_->path());
    }
    SetLocation(slot, ref);
    log_live_bytes_ += ref.bytes();
  }
  return FromLevelDb(it->status(), "shard: scan " + options_.path);
}

Status Shard::Impl::LoadUrlSlots() {
  leveldb::ReadOptions ro;
  ro.fill_cache = false;
  std::unique_ptr<leveldb::Iterator> it(db_->NewIterator(ro));
  for (it->Seek("u"); it->Valid() && it->key()[0] == 'u'; it->Next()) {
    const uint32_t slot = it->value().size() == 4 ? DecodeSlot(it->value().data()) : kNoSlot;
    url_slots_.Insert(UrlHash(std::string_view(it->key().data() + 1, it->key().size() - 1)), slot);
  }
  return FromLevelDb(it->status(), "shard: scan the URLs of " + options_.path);
}

Status Shard::Impl::ReadSignature(uint32_t slot, std::string* buffer, pb::PageSignature* sig) const {
  if (!HasLocation(slot)) {
    return Corruption("shard: " + options_.path + ": slot " + std::to_string(slot) + " has no signature record");
  }
  RETURN_IF_ERROR(log_->Read(Location(slot), buffer));
  if (!sig->ParseFromString(*buffer)) {
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
  leveldb::WriteBatch wb;
  for (size_t i = 0; i < slots.size(); ++i) wb.Put(SlotKey('o', slots[i]), LocationValue(moved[i]));
  wb.Put("l", LogValue(generation, next->end()));
  leveldb::WriteOptions wo;
  wo.sync = true;
  if (Status s = FromLevelDb(db_->Write(wo, &wb), "shard: " + options_.path + ": commit the compacted log");
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
  leveldb::WriteOptions wo;
  wo.sync = options_.sync;
  RETURN_IF_ERROR(FromLevelDb(db_->Put(wo, "f", order.Serialize()), "shard: " + options_.path + ": write token order"));
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
    const size_t bytes = sig.ByteSizeLong();
    sizes[k] = static_cast<uint32_t>(std::min<size_t>(bytes, SignatureLog::kMaxPayload + size_t{1}));  // over: refused
    append_bytes += SignatureLog::kHeaderBytes + bytes;
    MakeIndexEntry(sig, &prefix, &staged->entries[k]);
  }
  // The signatures go to the log past its committed end, which disturbs no reader (SignatureLog:
  // reads below the end); Apply's LevelDB batch commits them.
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
        batch[store[k]].signature->SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(dst));
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
                                ApplyStats* stats, uint64_t sequence) {
  ApplyStats local;
  ApplyStats& st = stats ? *stats : local;
  if (batch == nullptr || batch->state_ == nullptr || batch->state_->shard != this) {
    return InvalidArgument("shard: " + options_.path + ": Apply of a batch staged elsewhere (or none)");
  }
  // From here the batch is this call's: applied, or its log records cut off again.
  std::unique_ptr<StagedBatch::State> staged = std::move(batch->state_);
  st = staged->stats;
  // One Apply at a time. Readers go on until the memory changes below: CompareBatch until the
  // index changes, Get until the signature locations change.
  std::lock_guard apply(apply_mu_);
  staged_ = false;
  const std::vector<uint32_t>& slots = staged->slots;
  const std::vector<SignatureLog::Ref>& refs = staged->refs;
  auto undo = [&](Status s) {
    {
      std::unique_lock loc(loc_mu_);
      for (uint32_t slot : slots) ClearLocation(slot);
      uncommitted_.clear();
    }
    TruncateLog(staged->log_end);
    return s;
  };

  leveldb::WriteBatch wb;
  std::vector<uint32_t> freed;                 // slots whose page goes away
  std::unordered_map<std::string_view, bool> handled;  // URLs already changed in this batch
  for (size_t k = 0; k < slots.size(); ++k) {
    const std::string& url = staged->urls[k];
    uint32_t old;
    if (Status s = LookupSlot(url, &old); !s.ok()) return undo(s);
    if (old != kNoSlot) {
      wb.Delete(SlotKey('o', old));
      freed.push_back(old);
      ++st.replaced;
    } else {
      ++st.inserted;
    }
    wb.Put(UrlKey(url), SlotValue(slots[k]));
    handled[url] = true;
  }
  // Removals: explicit ones, and home pages that became empty.
  auto remove = [&](const std::string& url) -> Status {
    if (handled.count(url)) return Status::Ok();
    uint32_t old;
    RETURN_IF_ERROR(LookupSlot(url, &old));
    if (old == kNoSlot) return Status::Ok();
    wb.Delete(SlotKey('o', old));
    wb.Delete(UrlKey(url));
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
  if (sequence > 0) {
    std::string seq;
    AppendBigEndian(&seq, sequence, 8);
    wb.Put("q", seq);
  }
  // The new slots' locations go in before the store names the slots: a Get that finds a new slot
  // finds its location too. Nothing reaches these slots yet, so readers are not disturbed.
  {
    std::unique_lock loc(loc_mu_);
    for (size_t k = 0; k < slots.size(); ++k) {
      SetLocation(slots[k], refs[k]);
      url_slots_.Insert(UrlHash(staged->urls[k]), slots[k]);
      uncommitted_.insert(slots[k]);
    }
  }
  for (size_t k = 0; k < slots.size(); ++k) wb.Put(SlotKey('o', slots[k]), LocationValue(refs[k]));
  wb.Put("l", LogValue(log_generation_, log_->end()));
  leveldb::WriteOptions wo;
  wo.sync = options_.sync;
  if (Status s = FromLevelDb(db_->Write(wo, &wb), "shard: " + options_.path + ": write batch"); !s.ok()) {
    return undo(s);
  }

  // The store has it; now the index and page tables (CompareBatch waits)...
  Status result;
  {
    std::unique_lock lock(mu_);
    for (uint32_t slot : freed) index_.Remove(slot, IndexedPostings(slot));
    // ...and the replaced pages' locations (Get waits), once no probe can reach them: every slot
    // with a location is resident again before the index is rebuilt from them below.
    {
      std::unique_lock loc(loc_mu_);
      for (uint32_t slot : freed) {
        log_live_bytes_ -= Location(slot).bytes();
        ClearLocation(slot);
      }
      uncommitted_.clear();  // the store names them now
      for (const SignatureLog::Ref& r : refs) log_live_bytes_ += r.bytes();
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
  {
    std::unique_lock loc(loc_mu_);
    if (LogNeedsCompaction()) {
      // The batch is stored either way; a failed compaction leaves the old log and is retried.
      if (Status r = CompactLog(); !r.ok()) spdlog::warn("shard: compacting the signature log failed: {}", r.ToString());
    }
  }
  return result;
}

Status Shard::Impl::LookupSlot(const std::string& url, uint32_t* slot) const {
  if (!url_slots_.Contains(UrlHash(url))) {  // never stored: no read
    *slot = kNoSlot;
    return Status::Ok();
  }
  std::string v;
  leveldb::Status s = db_->Get(leveldb::ReadOptions(), UrlKey(url), &v);
  if (s.IsNotFound()) {
    *slot = kNoSlot;
    return Status::Ok();
  }
  RETURN_IF_ERROR(FromLevelDb(s, "shard: " + options_.path + ": look up " + url));
  if (v.size() != 4) return Corruption("shard: " + options_.path + ": bad slot record for " + url);
  *slot = DecodeSlot(v.data());
  return Status::Ok();
}

StatusOr<pb::PageSignature> Shard::Impl::Get(const std::string& url) const {
  // Not mu_: a Get does not wait for an Apply's index work, only for its location changes.
  std::shared_lock loc(loc_mu_);
  std::string buffer;
  pb::PageSignature sig;
  // The slot the URL was last stored in, when the store has committed it: its record names the
  // URL, or the hint was stale (the page left, its slot went to another) and the store decides.
  uint32_t slot;
  if (url_slots_.Find(UrlHash(url), &slot) && HasLocation(slot) && uncommitted_.count(slot) == 0) {
    RETURN_IF_ERROR(ReadSignature(slot, &buffer, &sig));
    if (sig.url() == url) return sig;
  }
  RETURN_IF_ERROR(LookupSlot(url, &slot));
  if (slot == kNoSlot) return NotFound("shard: " + url + " is not resident in " + options_.path);
  RETURN_IF_ERROR(ReadSignature(slot, &buffer, &sig));
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
                       long_length_.size() * (sizeof(uint32_t) * 2 + 2 * sizeof(void*)) + url_slots_.MemoryBytes();
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
  return impl_->ApplyStaged(std::move(staged), removed_urls, stats, sequence);
}
StatusOr<std::unique_ptr<StagedBatch>> Shard::Stage(std::span<const ShardPage> batch) { return impl_->Stage(batch); }
Status Shard::ApplyStaged(std::unique_ptr<StagedBatch> batch, std::span<const std::string> removed_urls,
                          ApplyStats* stats, uint64_t sequence) {
  return impl_->ApplyStaged(std::move(batch), removed_urls, stats, sequence);
}

StagedBatch::StagedBatch(std::unique_ptr<State> state) : state_(std::move(state)) {}
StagedBatch::~StagedBatch() {
  if (state_ != nullptr) state_->shard->Unstage(*state_);
}
StatusOr<uint64_t> Shard::AppliedSequence() const { return impl_->AppliedSequence(); }

StatusOr<uint64_t> Shard::Impl::AppliedSequence() const {
  std::string v;
  leveldb::Status s = db_->Get(leveldb::ReadOptions(), "q", &v);
  if (s.IsNotFound()) return uint64_t{0};
  RETURN_IF_ERROR(FromLevelDb(s, "shard: read sequence in " + options_.path));
  if (v.size() != 8) return Corruption("shard: " + options_.path + ": sequence record is not 8 bytes");
  return ReadBigEndian(v.data(), 8);
}
StatusOr<pb::PageSignature> Shard::Get(const std::string& url) const { return impl_->Get(url); }
ShardStats Shard::Stats() const { return impl_->Stats(); }
uint64_t Shard::DiskBytes() const { return impl_->DiskBytes(); }
const ShardOptions& Shard::options() const { return impl_->options(); }

}  // namespace neardup::tier2
