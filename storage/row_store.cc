#include "storage/row_store.h"

#include <leveldb/cache.h>
#include <leveldb/db.h>
#include <leveldb/env.h>
#include <leveldb/filter_policy.h>
#include <leveldb/iterator.h>
#include <leveldb/options.h>
#include <leveldb/write_batch.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <condition_variable>
#include <deque>
#include <limits>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <sstream>
#include <thread>
#include <unordered_set>
#include <utility>

#include "common/coding.h"
#include "common/thread_priority.h"
#include "common/url_hash_map.h"
#include "storage/read_only_env.h"

namespace neardup {
namespace {

constexpr size_t kMaxFamilies = 250;
constexpr char kFamiliesKey = '\xFE';
constexpr char kCounterPrefix = '\xFF';
constexpr char kTagPlain = 0;
constexpr char kTagExpiring = 1;
constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
constexpr size_t kPurgeDeletesPerBatch = 10'000;
constexpr size_t kEmptyWriteBatchBytes = 12;  // leveldb::WriteBatch's header: sequence and count
constexpr size_t kPurgeVisitsPerBatch = 100'000;  // bounds how long one purge step blocks writers

leveldb::Slice ToSlice(std::string_view s) { return leveldb::Slice(s.data(), s.size()); }
std::string_view ToView(const leveldb::Slice& s) { return std::string_view(s.data(), s.size()); }

Status FromLevelDb(const leveldb::Status& s, std::string_view what, const std::string& path) {
  if (s.ok()) return Status::Ok();
  std::string m = "leveldb " + std::string(what) + " " + path + ": " + s.ToString();
  if (s.IsNotFound()) return NotFound(std::move(m));
  if (s.IsCorruption()) return Corruption(std::move(m));
  return IoError(std::move(m));
}

void PutVarint32(std::string* dst, uint32_t v) {
  while (v >= 0x80) {
    dst->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  dst->push_back(static_cast<char>(v));
}

bool GetVarint32(std::string_view* in, uint32_t* v) {
  uint32_t result = 0;
  for (int shift = 0; shift <= 28 && !in->empty(); shift += 7) {
    const auto byte = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    result |= static_cast<uint32_t>(byte & 0x7F) << shift;
    if (byte < 0x80) {
      *v = result;
      return true;
    }
  }
  return false;
}

void PutBigEndian64(std::string* dst, int64_t value) { AppendBigEndian(dst, static_cast<uint64_t>(value), 8); }

int64_t GetBigEndian64(std::string_view in) { return static_cast<int64_t>(ReadBigEndian(in.data(), 8)); }

int64_t WrappingAdd(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

// family id + varint32(row length) + row: the common prefix of the row's cell keys.
void AppendRowPrefix(std::string* key, uint8_t family, std::string_view row) {
  key->push_back(static_cast<char>(family));
  PutVarint32(key, static_cast<uint32_t>(row.size()));
  key->append(row);
}

// Splits a stored value into its expiry (kNever when it has none) and the cell's bytes.
bool DecodeValue(std::string_view raw, int64_t* expiry, std::string_view* data) {
  if (raw.empty()) return false;
  if (raw[0] == kTagPlain) {
    *expiry = kNever;
    *data = raw.substr(1);
    return true;
  }
  if (raw[0] != kTagExpiring || raw.size() < 9) return false;
  *expiry = GetBigEndian64(raw.substr(1, 8));
  *data = raw.substr(9);
  return true;
}

// The row and column of a cell key, family byte included.
bool DecodeKey(std::string_view key, std::string_view* row, std::string_view* column) {
  key.remove_prefix(1);
  uint32_t len = 0;
  if (!GetVarint32(&key, &len) || len > key.size()) return false;
  *row = key.substr(0, len);
  *column = key.substr(len);
  return true;
}

std::string EncodeFamilies(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) {
    PutVarint32(&out, static_cast<uint32_t>(n.size()));
    out += n;
  }
  return out;
}

bool DecodeFamilies(std::string_view in, std::vector<std::string>* names) {
  while (!in.empty()) {
    uint32_t len = 0;
    if (!GetVarint32(&in, &len) || len == 0 || len > in.size()) return false;
    names->emplace_back(in.substr(0, len));
    in.remove_prefix(len);
  }
  return true;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out + "]";
}

Status ValidateOptions(const RowStoreOptions& o) {
  if (o.path.empty()) return InvalidArgument("RowStore: empty path");
  if (o.families.empty()) return InvalidArgument("RowStore " + o.path + ": no families");
  if (o.families.size() > kMaxFamilies) {
    return InvalidArgument("RowStore " + o.path + ": " + std::to_string(o.families.size()) +
                           " families, at most 250 allowed");
  }
  std::set<std::string_view> seen;
  for (const std::string& f : o.families) {
    if (f.empty()) return InvalidArgument("RowStore " + o.path + ": empty family name");
    if (!seen.insert(f).second) return InvalidArgument("RowStore " + o.path + ": duplicate family \"" + f + "\"");
  }
  return Status::Ok();
}

// Syncs each LevelDB log file before closing or deleting it. LevelDB deletes a log without syncing
// it when it switches memtables (google/leveldb#193): the writes in that log that were not fsync'ed stay
// unsynced until the memtable is flushed to a table, so a later synced write in the new log would
// not make them durable. With this, a synced write covers every write before it.
class SyncLogsOnCloseEnv final : public leveldb::EnvWrapper {
 public:
  explicit SyncLogsOnCloseEnv(leveldb::Env* base) : leveldb::EnvWrapper(base) {}
  leveldb::Status NewWritableFile(const std::string& f, leveldb::WritableFile** r) override {
    return Wrap(f, target()->NewWritableFile(f, r), r);
  }
  leveldb::Status NewAppendableFile(const std::string& f, leveldb::WritableFile** r) override {
    return Wrap(f, target()->NewAppendableFile(f, r), r);
  }

 private:
  class File final : public leveldb::WritableFile {
   public:
    explicit File(leveldb::WritableFile* base) : base_(base) {}
    // LevelDB deletes a log it switches away from without calling Close().
    ~File() override {
      if (!closed_) (void)base_->Sync();
    }
    leveldb::Status Append(const leveldb::Slice& data) override { return base_->Append(data); }
    leveldb::Status Flush() override { return base_->Flush(); }
    leveldb::Status Sync() override { return base_->Sync(); }
    leveldb::Status Close() override {
      closed_ = true;
      leveldb::Status s = base_->Sync();
      leveldb::Status c = base_->Close();
      return s.ok() ? c : s;
    }

   private:
    std::unique_ptr<leveldb::WritableFile> base_;
    bool closed_ = false;
  };
  static leveldb::Status Wrap(const std::string& name, leveldb::Status s, leveldb::WritableFile** r) {
    if (s.ok() && name.size() > 4 && name.compare(name.size() - 4, 4, ".log") == 0) *r = new File(*r);
    return s;
  }
};

// Reads table files with pread into the block cache instead of mapping them. LevelDB's default
// Env maps up to 1,000 table files; every page a read or a compaction touches then stays mapped in
// the process until the table closes, so its resident set grows with the store (about the whole
// group store at 1M pages, 300 MB). Read through pread, the kernel's page cache keeps what is hot
// and the process holds only the block cache. Used over the default Env only: an Env a caller
// passes (tests inject faults) reads as it does.
class PreadTablesEnv final : public leveldb::EnvWrapper {
 public:
  PreadTablesEnv() : leveldb::EnvWrapper(leveldb::Env::Default()) {}
  leveldb::Status NewRandomAccessFile(const std::string& name, leveldb::RandomAccessFile** result) override {
    *result = nullptr;
    const int fd = ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Error(name, errno);
    if (!Fds().Acquire()) {  // past the share of descriptors kept open: opened again per read
      ::close(fd);
      *result = new File(name, -1);
    } else {
      *result = new File(name, fd);
    }
    return leveldb::Status::OK();
  }

 private:
  static leveldb::Status Error(const std::string& name, int err) {
    return err == ENOENT ? leveldb::Status::NotFound(name, std::strerror(err))
                         : leveldb::Status::IOError(name, std::strerror(err));
  }
  // Descriptors kept open by every store in the process: at most a quarter of RLIMIT_NOFILE.
  class FdLimit {
   public:
    FdLimit() {
      rlimit r{};
      const uint64_t cur = ::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur != RLIM_INFINITY ? r.rlim_cur : 4096;
      left_.store(static_cast<int64_t>(cur / 4));
    }
    bool Acquire() {
      if (left_.fetch_sub(1) > 0) return true;
      left_.fetch_add(1);
      return false;
    }
    void Release() { left_.fetch_add(1); }

   private:
    std::atomic<int64_t> left_{0};
  };
  static FdLimit& Fds() {
    static FdLimit limit;
    return limit;
  }
  class File final : public leveldb::RandomAccessFile {
   public:
    File(std::string name, int fd) : name_(std::move(name)), fd_(fd) {}
    ~File() override {
      if (fd_ >= 0) {
        ::close(fd_);
        Fds().Release();
      }
    }
    leveldb::Status Read(uint64_t offset, size_t n, leveldb::Slice* result, char* scratch) const override {
      int fd = fd_;
      if (fd < 0 && (fd = ::open(name_.c_str(), O_RDONLY | O_CLOEXEC)) < 0) return Error(name_, errno);
      size_t got = 0;
      int err = 0;
      while (got < n) {
        const ssize_t r = ::pread(fd, scratch + got, n - got, static_cast<off_t>(offset + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) err = errno;
        if (r <= 0) break;
        got += static_cast<size_t>(r);
      }
      if (fd != fd_) ::close(fd);
      *result = leveldb::Slice(scratch, got);
      return err == 0 ? leveldb::Status::OK() : Error(name_, err);
    }

   private:
    const std::string name_;
    const int fd_;  // -1: opened per read
  };
};

}  // namespace

// ---- RowBatch ----

void RowBatch::Put(uint8_t family, std::string_view row, std::string_view column, std::string_view value,
                   int64_t ttl_millis) {
  ops_.push_back(Op{false, family, std::string(row), std::string(column), std::string(value), ttl_millis});
}

void RowBatch::Delete(uint8_t family, std::string_view row, std::string_view column) {
  ops_.push_back(Op{true, family, std::string(row), std::string(column), std::string(), 0});
}

void RowBatch::AddCounter(std::string_view name, int64_t delta) {
  auto it = counters_.find(name);
  if (it == counters_.end()) {
    counters_.emplace(std::string(name), delta);
  } else {
    it->second = WrappingAdd(it->second, delta);
  }
}

void RowBatch::Clear() {
  ops_.clear();
  counters_.clear();
}

namespace {

// Copies `in` into *out (cleared first) with its operations in key order; operations on one key
// keep their order, so applying *out leaves the store as applying `in` would. LevelDB inserts each
// operation into its memtable, a skip list searched from the top: in key order each search walks
// the nodes the previous one just visited (in cache) for most of its way down, where random order
// misses the cache at nearly every node (a 3000-key batch into a 64 MiB memtable: about 30% less
// time). Corruption when `in` cannot be read back.
Status CopyInKeyOrder(const leveldb::WriteBatch& in, leveldb::WriteBatch* out) {
  struct Op {
    leveldb::Slice key, value;
    bool is_delete;
  };
  struct Collect : leveldb::WriteBatch::Handler {
    std::vector<Op> ops;
    void Put(const leveldb::Slice& key, const leveldb::Slice& value) override { ops.push_back({key, value, false}); }
    void Delete(const leveldb::Slice& key) override { ops.push_back({key, {}, true}); }
  } collect;
  out->Clear();
  RETURN_IF_ERROR(FromLevelDb(in.Iterate(&collect), "read back", "a write batch"));
  std::stable_sort(collect.ops.begin(), collect.ops.end(), [](const Op& a, const Op& b) { return a.key.compare(b.key) < 0; });
  for (const Op& op : collect.ops) {
    if (op.is_delete) out->Delete(op.key);
    else out->Put(op.key, op.value);
  }
  return Status::Ok();
}

}  // namespace

// ---- RowStore::Impl ----

class RowStore::Impl {
 public:
  using CounterMap = std::map<std::string, int64_t, std::less<>>;

  explicit Impl(const RowStoreOptions& o)
      : options(o),
        clock(o.clock ? o.clock : SystemClock()),
        cache(leveldb::NewLRUCache(o.cache_bytes)),
        filter(leveldb::NewBloomFilterPolicy(10)) {}
  ~Impl();

  // options.async_writes: waits until no write is in flight; the first failed write's error.
  Status Barrier() const;
  // Barrier for a read of one row (its key prefix): waits only when the write in flight changes it.
  Status WaitForRow(std::string_view row_prefix) const;

  Status Open();
  Status CheckFamily(uint8_t family) const;
  // snapshot: read at it (no waiting for writes: NewSnapshot did); null: the current state.
  Status Get(uint8_t family, std::string_view row, std::string_view column, std::string* value,
             const leveldb::Snapshot* snapshot = nullptr) const;
  // Calls fn(key, data) for every live cell whose key starts with prefix, until fn returns false.
  template <typename Fn>
  Status ScanPrefix(std::string_view prefix, bool whole_row, bool fill_cache, Fn&& fn,
                    const leveldb::Snapshot* snapshot = nullptr) const;
  // RowBatch's operations into *wb; the hashes of their row prefixes into *rows (async_writes).
  Status Encode(const RowBatch& batch, leveldb::WriteBatch* wb, std::vector<uint64_t>* rows) const;
  StatusOr<bool> PutIfAbsent(uint8_t family, std::string_view row, std::string_view column, std::string_view value,
                             std::string* current, const RowBatch& also);
  Status Sync();
  // *flushed: the lazy counters' flush before it (their values at the snapshot need it). With
  // `capture` (lazy_counters), no flush: those counters' values go to *captured instead.
  const leveldb::Snapshot* NewSnapshot(Status* flushed, const std::vector<std::string>* capture = nullptr,
                                       std::map<std::string, int64_t, std::less<>>* captured = nullptr) const;
  void ReleaseSnapshot(const leveldb::Snapshot* s) const { db->ReleaseSnapshot(s); }
  StatusOr<int64_t> CounterAt(std::string_view name, const leveldb::Snapshot* snapshot) const;
  void ScanCounters(std::string_view prefix, const std::function<bool(std::string_view, int64_t)>& fn) const;
  int64_t Counter(std::string_view name) const;
  // Adds the counter deltas to wb and commits it; updates the in-memory counters on success only.
  // `rows`: hashes of the row prefixes wb changes (async_writes only; reads of them wait for it).
  // wb goes back to the spare batches once written.
  Status Commit(std::unique_ptr<leveldb::WriteBatch> wb, std::vector<uint64_t> rows, const CounterMap& deltas,
                bool durable);
  // Commit with write_mu_ held by the caller.
  Status CommitLocked(std::unique_ptr<leveldb::WriteBatch> wb, std::vector<uint64_t> rows, const CounterMap& deltas,
                      bool durable);
  // An empty WriteBatch, a written one reused when there is one: its buffer keeps the capacity a
  // batch of the same size needs (a fresh one grows by doubling, its pages faulted in anew).
  std::unique_ptr<leveldb::WriteBatch> TakeBatch();
  void ReturnBatch(std::unique_ptr<leveldb::WriteBatch> wb);
  StatusOr<uint64_t> PurgeExpired();
  uint64_t DiskBytes() const;
  RowStore::TableStats Tables() const;

  const RowStoreOptions options;
  const Clock* const clock;
  std::map<std::string, uint8_t, std::less<>> family_ids;

 private:
  Status SyncFamilies();
  Status LoadCounters();
  // options.lazy_counters: writes the counters changed since the last flush, in one batch
  // (fsync'ed when `sync`). write_mu_ held by the caller.
  Status FlushCountersLocked(bool sync) const;
  // Deletes expired cells from *resume on, at most one WriteBatch's worth; *resume is cleared at the end.
  Status PurgeStep(int64_t now, std::string* resume, uint64_t* deleted);
  leveldb::WriteOptions WriteOptions() const {
    leveldb::WriteOptions wo;
    wo.sync = options.sync;
    return wo;
  }
  leveldb::Env* Env() const { return options.env ? options.env : pread_env.get(); }

  std::unique_ptr<leveldb::Cache> cache;
  std::unique_ptr<const leveldb::FilterPolicy> filter;
  // Without options.env: the default Env, tables read by pread.
  const std::unique_ptr<PreadTablesEnv> pread_env = std::make_unique<PreadTablesEnv>();
  std::unique_ptr<ReadOnlyEnv> read_only_env;  // options.read_only: over Env()
  std::unique_ptr<SyncLogsOnCloseEnv> sync_logs_env;  // writable stores: over Env()
  std::unique_ptr<leveldb::DB> db;  // declared after cache and filter: closed before they are freed

  // The writer thread (options.async_writes) and the writes it has been handed, in order; the
  // front one is being applied.
  void WriterLoop();
  struct PendingWrite {
    // A pointer: leveldb::WriteBatch has no move constructor, and copying one copies its buffer.
    std::unique_ptr<leveldb::WriteBatch> batch;
    leveldb::WriteOptions options;
    std::vector<uint64_t> rows;  // sorted hashes of the row prefixes it changes
  };
  static constexpr size_t kMaxPendingWrites = 2;
  mutable std::mutex async_mu_;
  mutable std::condition_variable async_cv_;
  std::deque<PendingWrite> async_queue_;  // push_back keeps references to the others valid
  std::vector<std::unique_ptr<leveldb::WriteBatch>> spare_batches_;  // under async_mu_
  // The batch being written, in key order (CopyInKeyOrder); kept for its buffer's capacity. Used by
  // the writer thread alone (async_writes), else by Commit under write_mu_.
  leveldb::WriteBatch sorted_;
  bool async_stop_ = false;
  Status async_error_;  // sticky
  std::thread async_writer_;

  mutable std::mutex write_mu_;  // serialises Commit, PutIfAbsent, Sync, NewSnapshot and PurgeExpired
  // Written under write_mu_ and counters_mu_; read under either.
  mutable std::shared_mutex counters_mu_;
  CounterMap counters_;
  // options.lazy_counters: counters changed in memory since their last flush (under write_mu_).
  mutable std::unordered_set<std::string> dirty_counters_;
};

Status RowStore::Impl::Open() {
  for (size_t i = 0; i < options.families.size(); ++i) {
    family_ids.emplace(options.families[i], static_cast<uint8_t>(i + 1));
  }
  leveldb::Options o;
  o.create_if_missing = true;
  o.compression = options.compress ? leveldb::kSnappyCompression : leveldb::kNoCompression;
  o.block_cache = cache.get();
  o.filter_policy = filter.get();
  o.write_buffer_size = options.write_buffer_bytes;
  o.max_file_size = options.table_file_bytes;
  o.max_open_files = options.open_tables;
  if (options.read_only) {
    o.create_if_missing = false;
    read_only_env = std::make_unique<ReadOnlyEnv>(Env());
    o.env = read_only_env.get();
  } else {
    sync_logs_env = std::make_unique<SyncLogsOnCloseEnv>(Env());
    o.env = sync_logs_env.get();
  }
  leveldb::DB* raw = nullptr;
  RETURN_IF_ERROR(FromLevelDb(leveldb::DB::Open(o, options.path, &raw), "open", options.path));
  db.reset(raw);
  RETURN_IF_ERROR(SyncFamilies());
  RETURN_IF_ERROR(LoadCounters());
  if (options.async_writes) {
    async_writer_ = std::thread([this] {
      NameThisThread("nd-row-writer");
      WriterLoop();
    });
  }
  return Status::Ok();
}

RowStore::Impl::~Impl() {
  if (async_writer_.joinable()) {
    {
      std::lock_guard lock(async_mu_);
      async_stop_ = true;
    }
    async_cv_.notify_all();
    async_writer_.join();  // after the write in flight, if any
  }
  if (db != nullptr && !dirty_counters_.empty()) {
    std::lock_guard write_lock(write_mu_);
    (void)FlushCountersLocked(/*sync=*/false);  // closing: as a write of the store's own
  }
}

Status RowStore::Impl::FlushCountersLocked(bool sync) const {
  if (dirty_counters_.empty()) return Status::Ok();
  RETURN_IF_ERROR(Barrier());
  leveldb::WriteBatch wb;
  std::string key, value;
  {
    std::shared_lock lock(counters_mu_);
    for (const std::string& name : dirty_counters_) {
      const auto it = counters_.find(name);
      key.assign(1, kCounterPrefix).append(name);
      value.clear();
      PutBigEndian64(&value, it == counters_.end() ? 0 : it->second);
      wb.Put(key, value);
    }
  }
  leveldb::WriteOptions wo;
  wo.sync = sync;
  RETURN_IF_ERROR(FromLevelDb(db->Write(wo, &wb), "write counters of", options.path));
  dirty_counters_.clear();
  return Status::Ok();
}

void RowStore::Impl::WriterLoop() {
  std::unique_lock lock(async_mu_);
  for (;;) {
    async_cv_.wait(lock, [&] { return !async_queue_.empty() || async_stop_; });
    if (async_queue_.empty()) return;  // stopping, nothing left
    PendingWrite& w = async_queue_.front();
    Status s;
    if (async_error_.ok()) {  // after a failed write, the later ones are dropped
      lock.unlock();
      // Not under write_mu_: Commit holds it while it waits for room in the queue.
      s = CopyInKeyOrder(*w.batch, &sorted_);
      if (s.ok()) s = FromLevelDb(db->Write(w.options, &sorted_), "write", options.path);
      lock.lock();
    }
    if (!s.ok() && async_error_.ok()) async_error_ = s;
    std::unique_ptr<leveldb::WriteBatch> done = std::move(w.batch);
    async_queue_.pop_front();
    lock.unlock();
    ReturnBatch(std::move(done));
    lock.lock();
    async_cv_.notify_all();
  }
}

Status RowStore::Impl::Barrier() const {
  if (!options.async_writes) return Status::Ok();
  std::unique_lock lock(async_mu_);
  async_cv_.wait(lock, [&] { return async_queue_.empty(); });
  return async_error_;
}

Status RowStore::Impl::WaitForRow(std::string_view row_prefix) const {
  if (!options.async_writes) return Status::Ok();
  const uint64_t h = UrlHash(row_prefix);
  std::unique_lock lock(async_mu_);
  async_cv_.wait(lock, [&] {
    for (const PendingWrite& w : async_queue_) {
      if (std::binary_search(w.rows.begin(), w.rows.end(), h)) return false;
    }
    return true;
  });
  return async_error_;
}

Status RowStore::Impl::SyncFamilies() {
  const leveldb::Slice key(&kFamiliesKey, 1);
  std::string raw;
  std::vector<std::string> stored;
  const leveldb::Status s = db->Get(leveldb::ReadOptions(), key, &raw);
  if (s.ok()) {
    if (!DecodeFamilies(raw, &stored)) return Corruption("RowStore " + options.path + ": unreadable family list");
  } else if (!s.IsNotFound()) {
    return FromLevelDb(s, "read family list of", options.path);
  }
  const std::vector<std::string>& wanted = options.families;
  if (stored.size() > wanted.size() || !std::equal(stored.begin(), stored.end(), wanted.begin())) {
    return FailedPrecondition("RowStore " + options.path + " holds families " + JoinNames(stored) +
                              ", which are not a prefix of the requested " + JoinNames(wanted));
  }
  if (stored.size() == wanted.size()) return Status::Ok();
  return FromLevelDb(db->Put(WriteOptions(), key, EncodeFamilies(wanted)), "write family list of", options.path);
}

Status RowStore::Impl::LoadCounters() {
  const leveldb::Slice prefix(&kCounterPrefix, 1);
  std::unique_ptr<leveldb::Iterator> it(db->NewIterator(leveldb::ReadOptions()));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    const std::string_view name = ToView(it->key()).substr(1);
    if (it->value().size() != 8) {
      return Corruption("RowStore " + options.path + ": counter \"" + std::string(name) + "\" holds " +
                        std::to_string(it->value().size()) + " bytes, not 8");
    }
    counters_.emplace(std::string(name), GetBigEndian64(ToView(it->value())));
  }
  return FromLevelDb(it->status(), "read counters of", options.path);
}

Status RowStore::Impl::CheckFamily(uint8_t family) const {
  if (family == 0 || family > options.families.size()) {
    return InvalidArgument("RowStore " + options.path + ": unknown family id " + std::to_string(family));
  }
  return Status::Ok();
}

Status RowStore::Impl::Get(uint8_t family, std::string_view row, std::string_view column, std::string* value,
                           const leveldb::Snapshot* snapshot) const {
  RETURN_IF_ERROR(CheckFamily(family));
  thread_local std::string key;
  thread_local std::string raw;
  key.clear();
  AppendRowPrefix(&key, family, row);
  if (snapshot == nullptr) RETURN_IF_ERROR(WaitForRow(key));
  key.append(column);
  leveldb::ReadOptions ro;
  ro.snapshot = snapshot;
  const leveldb::Status s = db->Get(ro, key, &raw);
  // Short message: NotFound is a hot path and stays within the small-string buffer.
  if (s.IsNotFound()) return NotFound("no such cell");
  RETURN_IF_ERROR(FromLevelDb(s, "get from", options.path));
  int64_t expiry = 0;
  std::string_view data;
  if (!DecodeValue(raw, &expiry, &data)) return Corruption("RowStore " + options.path + ": malformed cell value");
  if (clock->NowMillis() >= expiry) return NotFound("no such cell");
  value->assign(data);
  return Status::Ok();
}

template <typename Fn>
Status RowStore::Impl::ScanPrefix(std::string_view prefix, bool whole_row, bool fill_cache, Fn&& fn,
                                  const leveldb::Snapshot* snapshot) const {
  if (snapshot == nullptr) RETURN_IF_ERROR(whole_row ? WaitForRow(prefix) : Barrier());
  leveldb::ReadOptions ro;
  ro.fill_cache = fill_cache;
  ro.snapshot = snapshot;
  std::unique_ptr<leveldb::Iterator> it(db->NewIterator(ro));
  const int64_t now = clock->NowMillis();
  const leveldb::Slice p = ToSlice(prefix);
  for (it->Seek(p); it->Valid() && it->key().starts_with(p); it->Next()) {
    int64_t expiry = 0;
    std::string_view data;
    if (!DecodeValue(ToView(it->value()), &expiry, &data)) {
      return Corruption("RowStore " + options.path + ": malformed cell value");
    }
    if (now >= expiry) continue;
    if (!fn(ToView(it->key()), data)) return Status::Ok();
  }
  return FromLevelDb(it->status(), "scan", options.path);
}

int64_t RowStore::Impl::Counter(std::string_view name) const {
  std::shared_lock lock(counters_mu_);
  const auto it = counters_.find(name);
  return it == counters_.end() ? 0 : it->second;
}

std::unique_ptr<leveldb::WriteBatch> RowStore::Impl::TakeBatch() {
  {
    std::lock_guard lock(async_mu_);
    if (!spare_batches_.empty()) {
      std::unique_ptr<leveldb::WriteBatch> wb = std::move(spare_batches_.back());
      spare_batches_.pop_back();
      return wb;
    }
  }
  return std::make_unique<leveldb::WriteBatch>();
}

void RowStore::Impl::ReturnBatch(std::unique_ptr<leveldb::WriteBatch> wb) {
  constexpr size_t kMaxSpare = kMaxPendingWrites + 1;  // the ones in flight and the one being built
  wb->Clear();  // keeps the buffer's capacity
  std::lock_guard lock(async_mu_);
  if (spare_batches_.size() < kMaxSpare) spare_batches_.push_back(std::move(wb));
}

Status RowStore::Impl::Commit(std::unique_ptr<leveldb::WriteBatch> wb, std::vector<uint64_t> rows,
                              const CounterMap& deltas, bool durable) {
  std::lock_guard write_lock(write_mu_);
  return CommitLocked(std::move(wb), std::move(rows), deltas, durable);
}

Status RowStore::Impl::CommitLocked(std::unique_ptr<leveldb::WriteBatch> wb, std::vector<uint64_t> rows,
                                    const CounterMap& deltas, bool durable) {
  std::vector<std::pair<const std::string*, int64_t>> updated;
  updated.reserve(deltas.size());
  std::string key, value;
  for (const auto& [name, delta] : deltas) {
    const auto it = counters_.find(name);  // no lock needed: only writers change counters_
    const int64_t v = WrappingAdd(it == counters_.end() ? 0 : it->second, delta);
    updated.emplace_back(&name, v);
    if (options.lazy_counters) continue;  // written by the next flush
    key.assign(1, kCounterPrefix).append(name);
    value.clear();
    PutBigEndian64(&value, v);
    wb->Put(key, value);
  }
  // Only counters, kept in memory: nothing for LevelDB now.
  const bool nothing = options.lazy_counters && wb->ApproximateSize() <= kEmptyWriteBatchBytes;
  leveldb::WriteOptions wo = WriteOptions();
  wo.sync = wo.sync && durable;
  if (nothing) {
    ReturnBatch(std::move(wb));
  } else if (options.async_writes) {
    // The rows it changes, for the reads that must wait for it (WaitForRow). Counters are read
    // from memory.
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    // Under write_mu_, so handed over in the order the counters were counted in.
    std::unique_lock lock(async_mu_);
    async_cv_.wait(lock, [&] { return async_queue_.size() < kMaxPendingWrites; });
    RETURN_IF_ERROR(async_error_);
    async_queue_.push_back(PendingWrite{std::move(wb), wo, std::move(rows)});
    async_cv_.notify_all();
  } else {
    Status s = CopyInKeyOrder(*wb, &sorted_);
    if (s.ok()) s = FromLevelDb(db->Write(wo, &sorted_), "write", options.path);
    ReturnBatch(std::move(wb));
    RETURN_IF_ERROR(s);
  }
  if (updated.empty()) return Status::Ok();
  if (options.lazy_counters) {
    for (const auto& [name, v] : updated) {
      if (!dirty_counters_.count(*name)) dirty_counters_.emplace(*name);
    }
  }
  std::unique_lock counters_lock(counters_mu_);
  for (const auto& [name, v] : updated) counters_.insert_or_assign(*name, v);
  return Status::Ok();
}

Status RowStore::Impl::Encode(const RowBatch& batch, leveldb::WriteBatch* wb, std::vector<uint64_t>* rows) const {
  const int64_t now = clock->NowMillis();
  std::string key, value;
  for (const RowBatch::Op& op : batch.ops_) {
    RETURN_IF_ERROR(CheckFamily(op.family));
    if (op.row.size() > std::numeric_limits<uint32_t>::max()) {
      return InvalidArgument("RowStore " + options.path + ": row longer than 4 GiB");
    }
    key.clear();
    AppendRowPrefix(&key, op.family, op.row);
    if (options.async_writes) rows->push_back(UrlHash(key));
    key += op.column;
    if (op.is_delete) {
      wb->Delete(key);
      continue;
    }
    value.clear();
    if (op.ttl_millis > 0) {
      value.push_back(kTagExpiring);
      int64_t expiry = 0;
      if (__builtin_add_overflow(now, op.ttl_millis, &expiry)) expiry = kNever;
      PutBigEndian64(&value, expiry);
    } else {
      value.push_back(kTagPlain);
    }
    value += op.value;
    wb->Put(key, value);
  }
  return Status::Ok();
}

StatusOr<bool> RowStore::Impl::PutIfAbsent(uint8_t family, std::string_view row, std::string_view column,
                                           std::string_view value, std::string* current, const RowBatch& also) {
  RETURN_IF_ERROR(CheckFamily(family));
  if (row.size() > std::numeric_limits<uint32_t>::max()) {
    return InvalidArgument("RowStore " + options.path + ": row longer than 4 GiB");
  }
  std::lock_guard write_lock(write_mu_);
  // Under write_mu_ no other write can begin, so what Get sees stays true until the write below.
  Status s = Get(family, row, column, current);
  if (s.ok()) return false;
  if (s.code() != StatusCode::kNotFound) return s;
  std::unique_ptr<leveldb::WriteBatch> wb = TakeBatch();
  std::vector<uint64_t> rows;
  s = Encode(also, wb.get(), &rows);
  if (!s.ok()) {
    ReturnBatch(std::move(wb));
    return s;
  }
  RowBatch cell;
  cell.Put(family, row, column, value);
  RETURN_IF_ERROR(Encode(cell, wb.get(), &rows));  // after `also`: the cell is what it says
  RETURN_IF_ERROR(CommitLocked(std::move(wb), std::move(rows), also.counters_, also.durable()));
  current->assign(value);
  return true;
}

Status RowStore::Impl::Sync() {
  std::lock_guard write_lock(write_mu_);
  RETURN_IF_ERROR(Barrier());
  if (!dirty_counters_.empty()) return FlushCountersLocked(/*sync=*/true);  // the flush is the fsync'ed write
  leveldb::WriteOptions wo;
  wo.sync = true;
  leveldb::WriteBatch empty;  // an empty record in the log, and the log fsync'ed
  return FromLevelDb(db->Write(wo, &empty), "sync", options.path);
}

const leveldb::Snapshot* RowStore::Impl::NewSnapshot(Status* flushed, const std::vector<std::string>* capture,
                                                     std::map<std::string, int64_t, std::less<>>* captured) const {
  // Under write_mu_ with nothing in flight: the snapshot holds every write handed over before it,
  // as the in-memory counters count them.
  std::lock_guard write_lock(write_mu_);
  (void)Barrier();  // a failed write is reported by the next write; the snapshot is of what landed
  if (capture != nullptr && options.lazy_counters) {
    std::shared_lock lock(counters_mu_);
    for (const std::string& name : *capture) {
      const auto it = counters_.find(name);
      captured->insert_or_assign(name, it == counters_.end() ? 0 : it->second);
    }
  } else {
    *flushed = FlushCountersLocked(/*sync=*/false);
  }
  return db->GetSnapshot();
}

StatusOr<int64_t> RowStore::Impl::CounterAt(std::string_view name, const leveldb::Snapshot* snapshot) const {
  std::string key(1, kCounterPrefix);
  key.append(name);
  leveldb::ReadOptions ro;
  ro.snapshot = snapshot;
  std::string raw;
  const leveldb::Status s = db->Get(ro, key, &raw);
  if (s.IsNotFound()) return int64_t{0};
  RETURN_IF_ERROR(FromLevelDb(s, "read counter of", options.path));
  if (raw.size() != 8) {
    return Corruption("RowStore " + options.path + ": counter \"" + std::string(name) + "\" holds " +
                      std::to_string(raw.size()) + " bytes, not 8");
  }
  return GetBigEndian64(raw);
}

void RowStore::Impl::ScanCounters(std::string_view prefix,
                                  const std::function<bool(std::string_view, int64_t)>& fn) const {
  std::shared_lock lock(counters_mu_);
  for (auto it = counters_.lower_bound(prefix); it != counters_.end() && it->first.starts_with(prefix); ++it) {
    if (!fn(it->first, it->second)) return;
  }
}

Status RowStore::Impl::PurgeStep(int64_t now, std::string* resume, uint64_t* deleted) {
  // Holding write_mu_ (with no write in flight) keeps the iterator's view current, so a cell
  // rewritten since it expired is never deleted.
  std::lock_guard write_lock(write_mu_);
  RETURN_IF_ERROR(Barrier());
  leveldb::ReadOptions ro;
  ro.fill_cache = false;
  std::unique_ptr<leveldb::Iterator> it(db->NewIterator(ro));
  leveldb::WriteBatch wb;
  size_t deletes = 0;
  size_t visits = 0;
  for (it->Seek(*resume); ; it->Next()) {
    if (!it->Valid() || static_cast<uint8_t>(it->key()[0]) > options.families.size()) {
      resume->clear();
      break;
    }
    if (deletes == kPurgeDeletesPerBatch || visits == kPurgeVisitsPerBatch) {
      resume->assign(it->key().data(), it->key().size());
      break;
    }
    ++visits;
    int64_t expiry = 0;
    std::string_view data;
    if (!DecodeValue(ToView(it->value()), &expiry, &data)) {
      return Corruption("RowStore " + options.path + ": malformed cell value");
    }
    if (now >= expiry) {
      wb.Delete(it->key());
      ++deletes;
    }
  }
  RETURN_IF_ERROR(FromLevelDb(it->status(), "scan", options.path));
  if (deletes == 0) return Status::Ok();
  RETURN_IF_ERROR(FromLevelDb(db->Write(WriteOptions(), &wb), "write", options.path));
  *deleted += deletes;
  return Status::Ok();
}

StatusOr<uint64_t> RowStore::Impl::PurgeExpired() {
  const int64_t now = clock->NowMillis();
  uint64_t deleted = 0;
  std::string resume(1, '\x01');  // the first family's first key
  while (!resume.empty()) RETURN_IF_ERROR(PurgeStep(now, &resume, &deleted));
  return deleted;
}

uint64_t RowStore::Impl::DiskBytes() const {
  // Through the Env rather than std::filesystem, so an injected (e.g. in-memory) Env is measured too.
  std::vector<std::string> children;
  if (!Env()->GetChildren(options.path, &children).ok()) return 0;
  uint64_t total = 0;
  for (const std::string& child : children) {
    if (child == "." || child == "..") continue;
    uint64_t size = 0;
    if (Env()->GetFileSize(options.path + "/" + child, &size).ok()) total += size;
  }
  return total;
}

RowStore::TableStats RowStore::Impl::Tables() const {
  // LevelDB prints, after a three-line header, one row a level that has tables or compactions:
  // "level files size(MB) time(sec) read(MB) write(MB)".
  TableStats t;
  std::string text;
  if (!db->GetProperty("leveldb.stats", &text)) return t;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    int level = 0, files = 0;
    double size_mb = 0, seconds = 0, read_mb = 0, write_mb = 0;
    if (std::sscanf(line.c_str(), "%d %d %lf %lf %lf %lf", &level, &files, &size_mb, &seconds, &read_mb, &write_mb) !=
        6) {
      continue;  // the header
    }
    constexpr double kMiB = 1048576.0;
    t.held_bytes += static_cast<uint64_t>(size_mb * kMiB);
    t.compaction_read_bytes += static_cast<uint64_t>(read_mb * kMiB);
    t.written_bytes += static_cast<uint64_t>(write_mb * kMiB);
  }
  return t;
}

// ---- RowStore ----

RowStore::RowStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RowStore::~RowStore() = default;

StatusOr<std::unique_ptr<RowStore>> RowStore::Open(const RowStoreOptions& options) {
  RETURN_IF_ERROR(ValidateOptions(options));
  auto impl = std::make_unique<Impl>(options);
  RETURN_IF_ERROR(impl->Open());
  return std::unique_ptr<RowStore>(new RowStore(std::move(impl)));
}

RowStore::Family RowStore::family(std::string_view name) const {
  const auto it = impl_->family_ids.find(name);
  assert(it != impl_->family_ids.end() && "RowStore::family: unknown family name");
  return it == impl_->family_ids.end() ? 0 : it->second;  // 0 is refused by every operation
}

Status RowStore::Get(Family family, std::string_view row, std::string_view column, std::string* value) const {
  return impl_->Get(family, row, column, value);
}

Status RowStore::ScanRow(Family family, std::string_view row,
                         const std::function<bool(std::string_view column, std::string_view value)>& fn) const {
  RETURN_IF_ERROR(impl_->CheckFamily(family));
  std::string prefix;
  AppendRowPrefix(&prefix, family, row);
  return impl_->ScanPrefix(prefix, /*whole_row=*/true, /*fill_cache=*/true, [&](std::string_view key, std::string_view data) {
    return fn(key.substr(prefix.size()), data);
  });
}

Status RowStore::ScanFamily(
    Family family,
    const std::function<bool(std::string_view row, std::string_view column, std::string_view value)>& fn) const {
  RETURN_IF_ERROR(impl_->CheckFamily(family));
  const char prefix = static_cast<char>(family);
  Status bad_key;
  RETURN_IF_ERROR(impl_->ScanPrefix(std::string_view(&prefix, 1), /*whole_row=*/false, /*fill_cache=*/false,
                                    [&](std::string_view key, std::string_view data) {
                                      std::string_view row, column;
                                      if (!DecodeKey(key, &row, &column)) {
                                        bad_key = Corruption("RowStore " + impl_->options.path + ": malformed key");
                                        return false;
                                      }
                                      return fn(row, column, data);
                                    }));
  return bad_key;
}

int64_t RowStore::Counter(std::string_view name) const { return impl_->Counter(name); }

Status RowStore::Write(const RowBatch& batch) {
  if (batch.empty()) return Status::Ok();
  if (impl_->options.read_only) return FailedPrecondition("RowStore " + impl_->options.path + " is open read-only");
  std::unique_ptr<leveldb::WriteBatch> wb = impl_->TakeBatch();
  std::vector<uint64_t> rows;
  if (Status s = impl_->Encode(batch, wb.get(), &rows); !s.ok()) {
    impl_->ReturnBatch(std::move(wb));
    return s;
  }
  return impl_->Commit(std::move(wb), std::move(rows), batch.counters_, batch.durable_);
}

StatusOr<uint64_t> RowStore::PurgeExpired() {
  if (impl_->options.read_only) return FailedPrecondition("RowStore " + impl_->options.path + " is open read-only");
  return impl_->PurgeExpired();
}

Status RowStore::WaitForWrites() const { return impl_->Barrier(); }

StatusOr<bool> RowStore::PutIfAbsent(Family family, std::string_view row, std::string_view column,
                                     std::string_view value, std::string* current, const RowBatch& also) {
  if (impl_->options.read_only) return FailedPrecondition("RowStore " + impl_->options.path + " is open read-only");
  return impl_->PutIfAbsent(family, row, column, value, current, also);
}

Status RowStore::Sync() {
  if (impl_->options.read_only) return FailedPrecondition("RowStore " + impl_->options.path + " is open read-only");
  return impl_->Sync();
}

std::unique_ptr<RowSnapshot> RowStore::NewSnapshot(const std::vector<std::string>& counters) const {
  Status flushed;
  std::map<std::string, int64_t, std::less<>> captured;
  const leveldb::Snapshot* s = impl_->NewSnapshot(&flushed, &counters, &captured);
  std::unique_ptr<RowSnapshot> snap(new RowSnapshot(impl_.get(), s, std::move(flushed)));
  snap->captured_ = impl_->options.lazy_counters;
  snap->counters_ = std::move(captured);
  return snap;
}

std::unique_ptr<RowSnapshot> RowStore::NewSnapshot() const {
  Status flushed;
  const leveldb::Snapshot* s = impl_->NewSnapshot(&flushed);
  return std::unique_ptr<RowSnapshot>(new RowSnapshot(impl_.get(), s, std::move(flushed)));
}

void RowStore::ScanCounters(std::string_view prefix,
                            const std::function<bool(std::string_view name, int64_t value)>& fn) const {
  impl_->ScanCounters(prefix, fn);
}

// ---- RowSnapshot ----

namespace {
const leveldb::Snapshot* AsSnapshot(const void* p) { return static_cast<const leveldb::Snapshot*>(p); }
}  // namespace

RowSnapshot::~RowSnapshot() { impl_->ReleaseSnapshot(AsSnapshot(snapshot_)); }

Status RowSnapshot::Get(RowStore::Family family, std::string_view row, std::string_view column,
                        std::string* value) const {
  return impl_->Get(family, row, column, value, AsSnapshot(snapshot_));
}

Status RowSnapshot::ScanRow(RowStore::Family family, std::string_view row,
                            const std::function<bool(std::string_view column, std::string_view value)>& fn) const {
  RETURN_IF_ERROR(impl_->CheckFamily(family));
  std::string prefix;
  AppendRowPrefix(&prefix, family, row);
  return impl_->ScanPrefix(
      prefix, /*whole_row=*/true, /*fill_cache=*/true,
      [&](std::string_view key, std::string_view data) { return fn(key.substr(prefix.size()), data); },
      AsSnapshot(snapshot_));
}

StatusOr<int64_t> RowSnapshot::Counter(std::string_view name) const {
  if (captured_) {
    const auto it = counters_.find(name);
    if (it == counters_.end()) {
      return FailedPrecondition("RowSnapshot: counter \"" + std::string(name) + "\" was not taken at the snapshot");
    }
    return it->second;
  }
  RETURN_IF_ERROR(counters_flushed_);
  return impl_->CounterAt(name, AsSnapshot(snapshot_));
}

uint64_t RowStore::DiskBytes() const { return impl_->DiskBytes(); }

RowStore::TableStats RowStore::table_stats() const { return impl_->Tables(); }

const RowStoreOptions& RowStore::options() const { return impl_->options; }

}  // namespace neardup
