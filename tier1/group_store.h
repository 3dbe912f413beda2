// GroupStore: Tier 1's records (proto/tier1.proto) on the generic RowStore, read and changed
// through a working set that is written back atomically.
//
// Families: page (url -> Tier1Page), group (id -> Tier1Group), member (id, url: the group's
// members), redirect (target, source: direct redirects, the redirect index), meta.
//
//   GroupStore::Txn txn(&store);
//   pb::Tier1Page* p = txn.MutablePage(url);        // loaded once, then cached in the Txn
//   txn.AddMember(gid, url);
//   RETURN_IF_ERROR(txn.Commit());                 // one atomic RowStore write
//
// A Txn reads through to the store, keeps every record it touched, and writes back only the ones
// marked changed. Reads inside a Txn see the Txn's own changes (members and redirect cells
// included). Nothing reaches the store before Commit; a Txn dropped without Commit changes nothing.
//
// Thread safety: one thread uses a GroupStore and its Txns at a time (Tier 1 runs one Txn at a
// time; two Txns committing changes to the same records would race, last writer wins). Const
// reads of committed records (GetPage, GetGroup, Members, rows()) may run from other threads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tier1/packed_records.h"
#include "common/config.h"
#include "common/status.h"
#include "common/url_hash_map.h"
#include "proto/tier1.pb.h"
#include "storage/row_store.h"

namespace neardup::tier1 {

class GroupStore {
 public:
  struct Options {
    std::string path;
    bool sync = ConfigDefaults().tier1().sync();
    uint64_t cache_bytes = uint64_t{ConfigDefaults().tier1().cache_mib()} << 20;
    bool compress = ConfigDefaults().tier1().compress();  // RowStoreOptions::compress (config tier1.compress)
    // RowStoreOptions::write_buffer_bytes (pipeline::GroupStoreOptionsFor sets it from config
    // tier1.write_buffer_mib, or for the store a run expects).
    uint64_t write_buffer_bytes = uint64_t{64} << 20;
    // RowStoreOptions::async_writes: Txn::Commit returns once its write is handed over; rows()
    // WaitForWrites() tells when it is durable.
    bool async_writes = false;
    const Clock* clock = nullptr;
    leveldb::Env* env = nullptr;
    // The URL hash of the in-memory page index (default UrlHash). Tests pass a weak one to make
    // URLs collide.
    uint64_t (*url_hash)(std::string_view) = nullptr;
    // RowStoreOptions::read_only: the store must exist; its files stay as they are; commits fail.
    bool read_only = false;
  };
  // Opens or creates the store (errors as RowStore::Open).
  static StatusOr<std::unique_ptr<GroupStore>> Open(const Options& options);

  RowStore& rows() { return *rows_; }
  const RowStore& rows() const { return *rows_; }
  RowStore::Family page_family() const { return page_; }
  RowStore::Family group_family() const { return group_; }
  RowStore::Family member_family() const { return member_; }
  RowStore::Family redirect_family() const { return redirect_; }
  RowStore::Family meta_family() const { return meta_; }

  // Reads committed records. NotFound when absent; Corruption when a record does not parse.
  Status GetPage(std::string_view url, pb::Tier1Page* out) const;
  Status GetGroup(uint64_t group, pb::Tier1Group* out) const;
  // Committed members of a group, in URL order.
  Status Members(uint64_t group, std::vector<std::string>* out) const;

  static std::string GroupKey(uint64_t group);   // 8 bytes big-endian
  static uint64_t GroupFromKey(std::string_view key);
  // A group record as the store keeps it: an entry of `kept` equal to the winner is written empty
  // (most groups are one page, whose URL the record would hold twice). EncodeGroup serializes
  // *rec (restored before it returns) into *bytes; DecodeGroup parses bytes written either way
  // (with the URL in full, too) and gives the entry its URL back: false when they do not
  // parse. Every reader of the group family goes through DecodeGroup.
  static void EncodeGroup(pb::Tier1Group* rec, std::string* bytes);
  static bool DecodeGroup(std::string_view bytes, pb::Tier1Group* rec);

  class Txn;

 private:
  GroupStore(std::unique_ptr<RowStore> rows, uint64_t (*url_hash)(std::string_view));
  Status LoadRedirectTargets();
  Status LoadKnownPages();

  std::unique_ptr<RowStore> rows_;
  uint64_t (*url_hash_)(std::string_view);
  // Pages that some page redirects to (the redirect family's rows), kept in memory so that the
  // common case, a page nobody redirects to, costs no scan. Loaded at Open, updated by Commit.
  UrlSet redirect_targets_;
  // 64-bit hashes of every URL with a page record, each with the page's group when it has a
  // signature (else 0), so that a Txn looking up a URL the store has never seen (most of a crawl)
  // costs no LevelDB read, nor does ContentGroupOf. Loaded at Open, updated by Commit; 32 bytes a
  // page at most. A page record deleted since Open keeps its hash, with group 0 (the table removes
  // nothing): a lookup of it reads the store, finds nothing and treats the hash as colliding.
  UrlHashMap<uint64_t> page_groups_;
  // Hashes two stored URLs share (found at Open, by a read the index sent to a URL that had no
  // record, or by a Commit storing a new URL whose hash was taken): their records are read.
  std::unordered_set<uint64_t> colliding_;
  RowStore::Family page_, group_, member_, redirect_, meta_;
};

class GroupStore::Txn {
 public:
  explicit Txn(GroupStore* store) : store_(store), page_memo_(kMemoSize), group_memo_(kMemoSize) {}

  // The page's record, or null when the URL has none (NotFound is not an error here). Errors:
  // Corruption / IoError from the store.
  StatusOr<const pb::Tier1Page*> FindPage(const std::string& url);
  // The page's record for change (created empty when missing; marked changed).
  StatusOr<pb::Tier1Page*> MutablePage(const std::string& url);
  // Deletes the page's record (nothing when it has none): FindPage answers null from then on, and
  // MutablePage creates it anew, empty. Its member and redirect cells are the caller's to remove.
  // Errors as FindPage.
  Status DeletePage(const std::string& url);

  StatusOr<const pb::Tier1Group*> FindGroup(uint64_t group);
  StatusOr<pb::Tier1Group*> MutableGroup(uint64_t group);  // created empty when missing
  void DeleteGroup(uint64_t group);

  // A new group id (from the store's "next_group" counter, reserved in this Txn).
  uint64_t NewGroupId();

  // The group of the page at `url` when it has a signature, else 0 (no record, no group, or no
  // content in Tier 2): what FindPage(url) would say, without reading the record when this Txn
  // does not hold it (the store keeps every URL's content group in memory, by URL hash, and reads
  // the records of URLs whose hashes it saw collide). Exact for a URL with a record (a Tier 2
  // match always has one); a URL never recorded whose 64-bit hash equals a recorded one's (about
  // pages / 2^64) gets that page's group. Errors as FindPage.
  StatusOr<uint64_t> ContentGroupOf(std::string_view url);

  // Members and the redirect index, as the store has them plus this Txn's changes, in URL order.
  // A group's committed member list is read once and kept with the read cache (Commit with
  // keep_cache applies the Txn's changes to it; Evict and Discard drop it like the records).
  Status Members(uint64_t group, std::vector<std::string>* out);
  void AddMember(uint64_t group, const std::string& url);
  void RemoveMember(uint64_t group, const std::string& url);
  Status Redirectors(const std::string& target, std::vector<std::string>* out);  // direct sources
  void AddRedirect(const std::string& target, const std::string& source);
  void RemoveRedirect(const std::string& target, const std::string& source);

  void AddCounter(std::string_view name, int64_t delta) { batch_.AddCounter(name, delta); }
  void PutMeta(std::string_view row, std::string_view value);

  // Writes every changed record atomically, then clears the Txn (it can be reused).
  // durable = false skips the fsync (for what can be recomputed: verification caches).
  // keep_cache = true keeps the records read or written as a read cache for the next use: valid
  // as long as every write to the store goes through this Txn (Tier 1's single writer).
  // IoError on failure (nothing written; the Txn is then cleared entirely).
  Status Commit(bool durable = true, bool keep_cache = false);
  // Forgets every change and every cached record (packed ones too): the next reads see the store
  // as it is, with what other writers changed in it.
  void Discard();
  // Shrinks the read cache Commit(keep_cache) leaves to at most `keep` decoded records, those
  // used least recently leaving first: by the Commit they were last read or changed before, all
  // of one Commit together (so it may keep fewer). Records read since the last Commit always stay,
  // and so do the pointers to them. The records that leave (and their groups' member lists) are
  // kept packed, serialized, up to `packed_bytes` in all (about a third of a decoded record's
  // size): a later lookup parses one instead of reading the store. Past `packed_bytes` the packed
  // records used least recently are dropped, down to half of it. 0: none are kept.
  // FailedPrecondition while the Txn holds uncommitted changes.
  Status Evict(size_t keep, size_t packed_bytes = 0);
  bool empty() const;
  // Records loaded or changed so far (the working set's size).
  size_t cached() const { return pages_.size() + groups_.size(); }
  // Packed records and member lists held (Evict), and their bytes as counted against its bound.
  size_t packed() const { return packed_pages_.size() + packed_groups_.size() + packed_members_.size(); }
  size_t packed_bytes() const { return packed_pages_.bytes() + packed_groups_.bytes() + packed_members_.bytes(); }

  // What FindPage and FindGroup (and the Mutable calls, through them) cost since the Txn was made:
  // records found in the Txn, read from the store, or known to be absent without a read (a URL the
  // store never recorded, a group id this Txn reserved). Members counts the same way: lists held
  // (decoded or packed), scanned from the store, or of a group this Txn reserved.
  struct ReadStats {
    uint64_t hits = 0, reads = 0, skipped = 0;
    uint64_t indexed = 0;  // pages: ContentGroupOf answered from the store's memory, no record
    uint64_t unpacked = 0;  // of hits: parsed from a packed record (Evict), not read from the store
  };
  const ReadStats& page_reads() const { return page_reads_; }
  const ReadStats& group_reads() const { return group_reads_; }
  const ReadStats& member_reads() const { return member_reads_; }

 private:
  // `used`: the epoch (Commits so far) of the record's last use, for Evict. `stored`: the store's
  // URL index holds the URL's hash as the URL's own (a record was read, or written by a Commit;
  // a record deleted since keeps it). A dirty slot that does not exist is a deletion.
  struct PageSlot {
    pb::Tier1Page rec;
    uint32_t used = 0;
    bool exists = false, dirty = false, stored = false;
  };
  struct GroupSlot { pb::Tier1Group rec; uint32_t used = 0; bool exists = false; bool dirty = false; bool deleted = false; };
  using Pages = std::unordered_map<std::string, PageSlot, UrlHasher, std::equal_to<>>;
  using PageEntry = Pages::value_type;  // the map's nodes stay put until erased
  // The page's entry, read from the store (or known absent) the first time: FindPage and
  // MutablePage in one lookup. Errors as FindPage.
  StatusOr<PageEntry*> LoadPage(const std::string& url);
  StatusOr<GroupSlot*> LoadGroup(uint64_t group);  // the same for a group
  // An id above the committed counter: reserved by this Txn, so the store has nothing of it.
  bool Reserved(uint64_t group) const;
  Status Merge(RowStore::Family family, const std::string& row,
               const std::map<std::string, bool, std::less<>>* changes, std::vector<std::string>* out) const;

  // Direct-mapped memos of recent lookups, by hash (pages: the store's URL hash; groups: the id),
  // in front of pages_ and groups_. A batch looks up most of its records several times (Classify,
  // Apply, the winners' update, the status answers): with a large working set each lookup in the
  // maps costs several cache misses (bucket, node, key), a memo hit about one. An entry is checked
  // against its record's key, so a collision only costs a map lookup. Cleared wherever a map's
  // nodes may be erased (Evict, Discard, a deleted group's Commit).
  static constexpr size_t kMemoSize = 4096;  // a power of two
  struct PageMemo { uint64_t hash = 0; PageEntry* entry = nullptr; };
  struct GroupMemo { uint64_t group = 0; GroupSlot* slot = nullptr; };
  // The Txn's entry for the URL (hash = the store's URL hash of url) or group, null when it holds
  // none; a map hit is memoised.
  PageEntry* Cached(uint64_t hash, std::string_view url);
  GroupSlot* CachedGroup(uint64_t group);
  void ClearMemos();
  // Forgets the changes not yet committed and the write batch (Commit after its write, Discard).
  void ClearPending();
  // Commit's steps. Stages the changed page and group records and member cells in batch_
  // (`bytes`: a buffer to serialize into).
  void StageRecords(std::string* bytes);
  // Stages the redirect cells in batch_, and sets *targets_after to each changed target with
  // whether sources redirect to it after the commit. Errors: the store's, reading a target's
  // sources.
  Status StageRedirects(std::vector<std::pair<std::string, bool>>* targets_after);
  // After the write: the store's in-memory URL hashes and redirect targets take the commit's
  // changes (moves the target names out of *targets_after).
  void UpdateStoreIndexes(std::vector<std::pair<std::string, bool>>* targets_after);
  // After the write, for Commit(keep_cache): the cached member lists take the changes, the
  // changed records stay as clean cache (deleted groups leave it), and the pending changes are
  // cleared. `committed_next_group`: the id counter before the write (ids above it were
  // reserved by this Txn).
  void KeepCommittedCache(uint64_t committed_next_group, std::string* bytes);

  GroupStore* store_;
  Pages pages_;
  std::unordered_map<uint64_t, GroupSlot> groups_;
  std::vector<PageMemo> page_memo_;    // kMemoSize entries
  std::vector<GroupMemo> group_memo_;  // kMemoSize entries
  std::vector<PageEntry*> dirty_pages_;  // each changed page once, in first-change order
  std::vector<uint64_t> dirty_groups_;
  // row -> (column -> present?) for the member and redirect families.
  std::unordered_map<uint64_t, std::map<std::string, bool, std::less<>>> members_;
  std::unordered_map<std::string, std::map<std::string, bool, std::less<>>> redirects_;
  // Committed member lists (sorted) of the groups Members read or a kept Commit wrote; `used` as
  // a record's. A read cache: valid under the same single-writer rule as the records.
  struct MemberList { std::vector<std::string> urls; uint32_t used = 0; };
  std::unordered_map<uint64_t, MemberList> member_lists_;
  // Records and member lists Evict took out of the decoded cache, serialized; every one is the
  // store's committed state (a load takes a record back out before it can change; a Commit
  // applies its changes to a packed member list, which stays packed). Pages by the store's
  // URL hash (the value starts with the URL: a hash two URLs share keeps one), groups and member
  // lists by id.
  // Past `bound` bytes in all, each drops its oldest records down to half of its share of it.
  void ShrinkPacked(size_t bound);
  PackedRecords packed_pages_, packed_groups_, packed_members_;
  std::string unpacked_;  // the record Take moved out, until it is parsed
  uint64_t groups_reserved_ = 0;
  uint32_t epoch_ = 0;
  ReadStats page_reads_, group_reads_, member_reads_;
  RowBatch batch_;
};

}  // namespace neardup::tier1
