// ClusterStore: the email clusters' rows, in the shared wide-row store (storage/row_store.h), laid
// out as the Crusher paper's Figure 4:
//
//   family    row            column                 value
//   template  cluster key    template id (BE64)     pb::EmailTemplate
//   email     cluster key    email id               pb::StoredEmail     (TTL: email_ttl_ms)
//   user      cluster key    recipient hash (BE64)  ""                  (TTL: email_ttl_ms)
//
// Rows are keyed by the 8-byte big-endian cluster key. A row keeps at most S emails
// (max_emails_per_row); template cells expire after template_ttl_ms.
//
// Hot in memory, per row (the paper pins the user family in memory): the live emails, the unique
// recipients (each with its expiry, so an expired recipient stops counting at once, before any
// purge), whether a template exists, when it was formed and from how many emails. The hot state
// lives in shards, one per key range of the partitioner's balanced ranges, each with its own lock;
// it is rebuilt from the cells when a store is opened again.
//
//   ClusterStoreOptions o;  o.path = dir;  o.clock = &clock;
//   ASSIGN_OR_RETURN(auto store, ClusterStore::Open(o));
//   ASSIGN_OR_RETURN(RowCounts c, store->AddEmail(key, stored));
//   if (c.users >= k && !c.has_template) ... form a template ...
//
// Expire() really deletes: every expired cell leaves LevelDB (RowStore::PurgeExpired) and the hot
// state, and a template whose row has none of its emails left is gone with its TTL.
//
// Thread safety: every method may be called from any thread; calls on rows of one shard take
// that shard's lock.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "partitioner/balanced_ranges.h"
#include "proto/email.pb.h"
#include "storage/row_store.h"

namespace leveldb {
class Env;
}

namespace neardup::email {

struct ClusterStoreOptions {
  std::string path;
  const Clock* clock = nullptr;  // null = SystemClock()
  uint32_t max_emails_per_row = 1000;
  int64_t email_ttl_ms = 30ll * 24 * 3600 * 1000;
  int64_t template_ttl_ms = 90ll * 24 * 3600 * 1000;
  // Shards of the hot state by cluster key (partitioner::BalanceRanges over sampled keys); empty =
  // one shard.
  std::vector<partitioner::ValueRange> ranges;
  bool sync = false;          // fsync every write (rows can be rebuilt from the stream: off)
  bool async_writes = false;  // RowStoreOptions::async_writes
  leveldb::Env* env = nullptr;
};

// A row's state after a change, from the hot copy (no I/O).
struct RowCounts {
  uint32_t emails = 0;             // live emails stored
  uint32_t users = 0;              // their live unique recipients
  bool has_template = false;
  int64_t template_created_ms = 0;
  uint32_t emails_at_formation = 0;  // emails the row held when its templates were last formed
  bool stored = false;             // AddEmail: this email was stored (false: the row was full)
};

class ClusterStore {
 public:
  // Opens or creates the store and rebuilds the hot state from its cells. InvalidArgument for a
  // bad option; RowStore's errors otherwise.
  static StatusOr<std::unique_ptr<ClusterStore>> Open(const ClusterStoreOptions& options);
  ~ClusterStore();

  // Stores `email` (its stored_ms set to now) in row `row`, with its recipient in the user family,
  // unless the row already holds S live emails; returns the row's counts after. The cell holds the
  // message as given: the caller decides what a row keeps of an email (Inducer: no text blocks
  // when no aggregator reads them). The shard's lock covers the hot state only, never the write.
  // IoError from the store (nothing changed then: the hot state takes the email back).
  StatusOr<RowCounts> AddEmail(uint64_t row, const pb::StoredEmail& email);
  // Many emails in one row-store write (one atomic batch): each stored as AddEmail does, in order,
  // (*counts)[i] the counts of emails[i]'s row after it. IoError from the store: nothing written,
  // nothing counted.
  struct NewEmail {
    uint64_t row;
    const pb::StoredEmail* email;
  };
  Status AddEmails(std::span<const NewEmail> emails, std::vector<RowCounts>* counts);
  RowCounts Counts(uint64_t row) const;

  // The row's live emails, in column (email id) order. Waits first for the row's emails that an
  // AddEmails on another thread has counted but not yet written, so that it reads every email
  // the counts saw. Store errors.
  Status ReadEmails(uint64_t row, std::vector<pb::StoredEmail>* out) const;
  // The row's live templates. Corruption for an unreadable cell.
  Status ReadTemplates(uint64_t row, std::vector<pb::EmailTemplate>* out) const;
  // Replaces the row's templates by `templates` (each expiring template_ttl_ms from now) in one
  // atomic batch and records the formation in the hot state.
  Status WriteTemplates(uint64_t row, const std::vector<pb::EmailTemplate>& templates, uint32_t emails_at_formation);
  // fn(row, template) for every live template, in row order, until fn returns false.
  Status ScanTemplates(const std::function<bool(uint64_t row, const pb::EmailTemplate&)>& fn) const;

  // Deletes every expired cell (LevelDB and hot state); returns how many cells left LevelDB.
  StatusOr<uint64_t> Expire();

  // Rows with hot state; templates formed (a persisted counter); emails stored.
  uint64_t Rows() const;
  int64_t TemplatesWritten() const;
  int64_t EmailsStored() const;
  size_t Shards() const;
  size_t ShardOf(uint64_t row) const;
  uint64_t DiskBytes() const;
  Status WaitForWrites() const;
  const ClusterStoreOptions& options() const { return options_; }

 private:
  struct Shard;
  explicit ClusterStore(const ClusterStoreOptions& options);
  Status Rebuild();
  int64_t Now() const { return clock_->NowMillis(); }

  ClusterStoreOptions options_;
  const Clock* clock_;
  std::unique_ptr<RowStore> store_;
  RowStore::Family template_ = 0, email_ = 0, user_ = 0;
  std::vector<std::unique_ptr<Shard>> shards_;
};

// The 8-byte big-endian row key and column of a 64-bit value.
std::string KeyBytes(uint64_t v);

}  // namespace neardup::email
