// RowStore: a small wide-row store on LevelDB, shared by Tier 1's duplicate groups and the email
// module's clusters and unified threads.
//
// Data is addressed by (family, row, column): families are a fixed, named set given at open
// (e.g. "page", "member", "meta"); rows and columns are arbitrary bytes. Each cell holds bytes
// and may carry a time to live, measured with an injected Clock. Named 64-bit counters are kept
// hot in memory and persisted with the writes that change them (or, with lazy_counters, by the
// next Sync, snapshot or close). A RowBatch collects puts,
// deletes and counter increments over any rows and families and is applied atomically.
//
//   RowStoreOptions o;  o.path = "/data/groups";  o.families = {"page", "member", "meta"};
//   ASSIGN_OR_RETURN(std::unique_ptr<RowStore> store, RowStore::Open(o));
//   const RowStore::Family page = store->family("page");
//   RowBatch b;
//   b.Put(page, "http://a/", "", record_bytes);
//   b.Put(page, "http://a/", "lease", "x", /*ttl_millis=*/60'000);
//   b.AddCounter("pages", 1);
//   RETURN_IF_ERROR(store->Write(&b));
//   std::string v;  Status s = store->Get(page, "http://a/", "", &v);
//
// On-disk layout (one LevelDB database): key = family id (1 byte, 1..250) + varint32(row length) +
// row + column; so the cells of a row are contiguous and sorted by column, and the rows of a family
// are contiguous. Value = 1 tag byte (0: no expiry, 1: 8-byte big-endian expiry in ms follows) +
// the cell's bytes. Counters live under family id 0xFF; the family names under 0xFE, and a store
// opened with a different family list is refused (families may only be appended).
//
// Expired cells read as absent (Get returns NotFound, scans skip them); PurgeExpired() deletes them.
//
// Conditional write (Bigtable's check-and-mutate, Scylla's INSERT ... IF NOT EXISTS): PutIfAbsent
// sets a cell only when it has no live value and returns what is there either way; it may carry a
// RowBatch applied with it, atomically, only when the cell was set. Healing a counter from the rows
// it summarises: NewSnapshot() reads rows and counters as of one moment, and the difference goes
// back as one AddCounter (a relative increment, so writes landing meanwhile are kept).
//
// Thread safety: Get, Scan*, Counter may run concurrently with each other and with Write. Writes
// (Write, PutIfAbsent, Sync) are serialised internally, so a PutIfAbsent's check and its write are
// one step against every other writer of the process; a reader sees each RowBatch entirely or not at all (counters included;
// with async_writes a counter reads the value of a write handed over, not yet applied).
// The RowStore owns its LevelDB handle; one process opens a store at a time (IoError otherwise).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace leveldb {
class Env;
}

namespace neardup {

struct RowStoreOptions {
  std::string path;                   // LevelDB directory; created when missing
  std::vector<std::string> families;  // 1..250 distinct non-empty names; their order fixes their ids
  bool sync = true;                   // fsync every Write
  uint64_t cache_bytes = 32ull << 20; // LevelDB block cache
  // LevelDB memtable. Larger means fewer, bigger level-0 tables and less compaction (Tier 1's
  // store takes it from tier1.write_buffer_mib).
  uint64_t write_buffer_bytes = 64ull << 20;
  // Size of each table file LevelDB writes, and how many tables it keeps open (their index and
  // Bloom filter blocks in memory). A read of a table that is not open first reads its footer,
  // index and filter again, so every table a store has should fit: Tier 1's store at 10M crawled
  // pages (about 3.4 GB) is about 200 tables.
  uint64_t table_file_bytes = 16ull << 20;
  int open_tables = 2000;
  // Snappy-compress table blocks: less disk, more CPU (every compaction compresses, every block
  // read from disk decompresses). Only new tables follow it; a store may mix both.
  bool compress = true;
  // Write() hands the batch to a writer thread of the store's own and returns at once, so that the
  // caller goes on while LevelDB inserts and syncs it; the writer applies the writes in order, and
  // a Write waits while two are still pending. A read of a row a pending write changes (Get,
  // ScanRow: by a hash of the row, so rarely one it does not) first waits for that write, so it
  // reads its own writes; a read of another row goes on at once (it reads the same either way);
  // ScanFamily and WaitForWrites() wait for every pending write. A write that failed is returned
  // by the next call, and by every call after it, and the writes pending behind it are dropped:
  // the store is then unusable (the in-memory counters already count the failed batches).
  bool async_writes = false;
  // Counters are kept in memory only: a Write changes them there (atomically with its cells, as
  // readers see them), and the counters changed since are written to LevelDB, in one batch, by the
  // next Sync() (that batch is its fsync'ed write), NewSnapshot() (so that a snapshot's counters
  // are those of its moment) or close. A counter that many writes change costs one put per flush,
  // not one per write. After a crash the counters are as the last flush left them, the cells may
  // be newer: a store of counters that summarise its rows heals them (email/domains/domain_counts.h).
  bool lazy_counters = false;
  const Clock* clock = nullptr;       // null = SystemClock()
  leveldb::Env* env = nullptr;        // null = LevelDB's default Env (tests inject a memory or faulty one)
  // Reads only: the store must exist, its files stay byte for byte as they are (LevelDB's own
  // writes at open go to memory: storage/read_only_env.h), and Write and PurgeExpired return
  // FailedPrecondition. For the crawler's status queries against a stopped run's store.
  bool read_only = false;
};

class RowStore;
class RowSnapshot;

// A set of changes applied atomically by RowStore::Write. Not thread-safe; cheap to reuse (Clear).
class RowBatch {
 public:
  // Sets a cell. ttl_millis > 0: the cell expires ttl_millis after the Write (by the store's clock).
  void Put(uint8_t family, std::string_view row, std::string_view column, std::string_view value,
           int64_t ttl_millis = 0);
  void Delete(uint8_t family, std::string_view row, std::string_view column);
  // Adds delta to a named counter (created at 0).
  void AddCounter(std::string_view name, int64_t delta);

  // false: this batch is not fsync'ed even when the store syncs (for data that can be recomputed,
  // such as caches). It is still atomic. Default true.
  void set_durable(bool durable) { durable_ = durable; }

  bool durable() const { return durable_; }
  size_t operations() const { return ops_.size() + counters_.size(); }
  bool empty() const { return operations() == 0; }
  void Clear();

 private:
  friend class RowStore;
  struct Op {
    bool is_delete;
    uint8_t family;
    std::string row, column, value;
    int64_t ttl_millis;
  };
  std::vector<Op> ops_;
  std::map<std::string, int64_t, std::less<>> counters_;
  bool durable_ = true;
};

class RowStore {
 public:
  using Family = uint8_t;

  // Opens or creates the store. Errors: InvalidArgument for bad options (empty path, no families,
  // more than 250, duplicate or empty names); FailedPrecondition when the stored family list is not
  // a prefix of options.families (names both lists); Corruption for an unreadable meta record;
  // IoError when LevelDB cannot open the directory (e.g. another process holds it).
  static StatusOr<std::unique_ptr<RowStore>> Open(const RowStoreOptions& options);
  ~RowStore();
  RowStore(const RowStore&) = delete;
  RowStore& operator=(const RowStore&) = delete;

  // The id of a family named at Open. Asserts (a bug) for an unknown name.
  Family family(std::string_view name) const;

  // Reads one cell. NotFound when the cell is absent or expired (*value is then unchanged);
  // IoError/Corruption when LevelDB fails.
  Status Get(Family family, std::string_view row, std::string_view column, std::string* value) const;

  // Calls fn(column, value) for every live cell of the row, in column order, until fn returns false.
  Status ScanRow(Family family, std::string_view row,
                 const std::function<bool(std::string_view column, std::string_view value)>& fn) const;
  // Calls fn(row, column, value) for every live cell of the family, in (row, column) order, until
  // fn returns false.
  Status ScanFamily(Family family,
                    const std::function<bool(std::string_view row, std::string_view column, std::string_view value)>&
                        fn) const;

  // A counter's value (0 if never written). Reads the in-memory copy: no I/O.
  int64_t Counter(std::string_view name) const;

  // Applies every change of *batch atomically (one LevelDB WriteBatch, fsync'ed when options.sync)
  // and updates the in-memory counters; the batch is left unchanged. On error (IoError) nothing is
  // applied, in memory or on disk. With options.async_writes the write is handed over and goes on
  // after the return (see there); the return is then an earlier write's error, if any.
  Status Write(const RowBatch& batch);

  // The conditional write. When the cell (family, row, column) has no live value, sets it to
  // `value` and applies `also` with it, in one atomic LevelDB write (fsync'ed as `also.durable()`
  // and options.sync say; a default RowBatch is durable), and returns true with *current = value.
  // When it has one, changes nothing (`also` is dropped) and returns false with *current = that
  // value. The check and the write are one step against every other writer of the store in this
  // process. Errors as Write's (nothing is applied then); FailedPrecondition when read-only.
  StatusOr<bool> PutIfAbsent(Family family, std::string_view row, std::string_view column, std::string_view value,
                             std::string* current, const RowBatch& also = RowBatch());

  // Makes every write before it durable (one fsync of LevelDB's log, also when options.sync is
  // off): writes made with set_durable(false) are acknowledged in groups by one Sync. LevelDB
  // itself does not sync a log it closes when it switches memtables (google/leveldb#193), so a
  // later sync would not cover the older log's tail; the store syncs every log it closes.
  Status Sync();

  // A consistent read-only view: every write before the call, none after (counters included, read
  // from the same LevelDB snapshot as the cells). Must not outlive the store.
  std::unique_ptr<RowSnapshot> NewSnapshot() const;
  // The same, but with lazy_counters nothing is flushed: the named counters' values are taken
  // from memory at the snapshot's moment (reading another one from it is FailedPrecondition).
  // Without lazy_counters, as NewSnapshot().
  std::unique_ptr<RowSnapshot> NewSnapshot(const std::vector<std::string>& counters) const;

  // Calls fn(name, value) for every counter whose name starts with `prefix`, in name order, until
  // fn returns false. Reads the in-memory copies: no I/O; fn must not call into the store.
  void ScanCounters(std::string_view prefix, const std::function<bool(std::string_view name, int64_t value)>& fn) const;

  // Waits until every Write handed over has reached LevelDB (fsync'ed when it was to be) and returns
  // the first error of one. Immediate without options.async_writes.
  Status WaitForWrites() const;

  // Deletes every expired cell. Returns how many were deleted, or the LevelDB error.
  StatusOr<uint64_t> PurgeExpired();

  // Bytes LevelDB keeps on disk for the store (sum of its files).
  uint64_t DiskBytes() const;
  // LevelDB's table traffic since the store was opened, from its "leveldb.stats" (whole MiB):
  // tables held now, tables written (memtable flushes and compactions), and tables read by
  // compactions. written / held is the store's write amplification: with keys spread over the
  // whole key space, every level a byte passes through rewrites it with about ten times its size
  // of the next level's tables.
  struct TableStats {
    uint64_t held_bytes = 0, written_bytes = 0, compaction_read_bytes = 0;
  };
  TableStats table_stats() const;
  const RowStoreOptions& options() const;

 private:
  friend class RowSnapshot;
  class Impl;
  explicit RowStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A point-in-time view of a RowStore (RowStore::NewSnapshot). Reads as RowStore's, with the same
// errors. Thread safety: its methods may run concurrently with each other and with the store's.
class RowSnapshot {
 public:
  ~RowSnapshot();
  RowSnapshot(const RowSnapshot&) = delete;
  RowSnapshot& operator=(const RowSnapshot&) = delete;

  Status Get(RowStore::Family family, std::string_view row, std::string_view column, std::string* value) const;
  Status ScanRow(RowStore::Family family, std::string_view row,
                 const std::function<bool(std::string_view column, std::string_view value)>& fn) const;
  // The counter's value at the snapshot (0 if not yet written then); Corruption for a malformed one;
  // with lazy_counters, the error of the flush that preceded the snapshot, if it failed.
  StatusOr<int64_t> Counter(std::string_view name) const;

 private:
  friend class RowStore;
  RowSnapshot(const RowStore::Impl* impl, const void* snapshot, Status counters_flushed)
      : impl_(impl), snapshot_(snapshot), counters_flushed_(std::move(counters_flushed)) {}
  const RowStore::Impl* impl_;
  const void* snapshot_;  // a leveldb::Snapshot
  Status counters_flushed_;  // lazy_counters: the flush before the snapshot (Counter returns its error)
  bool captured_ = false;    // lazy_counters without a flush: only these counters can be read
  std::map<std::string, int64_t, std::less<>> counters_;
};

}  // namespace neardup
