// Tier1: duplicate groups with winners, the crawler's status queries, verification and repair
// (the paper's Section 5). Its rules are the paper's:
//
//  - Every page belongs to exactly one group; a group's winner (tier1/winner.h) represents it, and
//    the winner's signature is the group's representative R.
//  - Fast path: a recrawled page whose content is unchanged, or whose new content is still
//    similar to R (Jaccard >= threshold), stays in its group without Tier 2.
//  - Otherwise (and for new pages) Tier 2 decides, and Apply() follows Section 5.1:
//    Case 1 (changed page q1 in group g1): if Tier 2 finds duplicates, q1 leaves g1 and joins the
//      group of its best match (the groups of all its matches merge: transitive clustering),
//      taking the pages that redirect to it (directly or through chains) along; if not, q1 forms a
//      new group with its redirecting pages. g1 is not recomputed (the paper's split
//      approximation: q1's old neighbours stay together).
//    Case 2 (new page): joins its best match's group (merging the others), or forms a new one.
//    Case 3 (q1 -> q2 -> ... -> qt): q1 and its redirecting pages join qt's group; a target never
//      crawled gets a placeholder page; a cycle is counted and the walk stops where it closes.
//    Gone (the crawler got 404 or 410: PageUpdate::gone), where its record stands in the batch: the
//      page leaves its group (a winner, or a market's winner, leaving is replaced by the winner
//      rules over the members left; a group left without members is deleted; a rejection counted
//      against it goes with it), its signature leaves Tier 2 (ApplyOutcome::tier2_removals), and
//      its record is deleted: it answers kUnknown, as a URL never seen. A gone page that other
//      pages redirect to keeps a record instead, a placeholder like a redirect target never
//      crawled (Case 3; no content, answers kUnknown): it and the pages redirecting to it, through
//      chains, stay together as the store's invariants require (every redirecting page shares
//      its target's group, and its target has a record), in a new group of their own unless they
//      were all of their group (Case 1 without a match). A gone record for a URL without a
//      crawled record (never seen, or a placeholder) changes nothing and is counted.
//  - Kept sets (beyond the paper; tier1/kept.cc): inside each group, the pages the crawler keeps
//    are chosen greedily in winner-rule order, the winner first, so that no two kept pages are
//    near-duplicates and every other content member is dropped as a near-duplicate of a kept one
//    (StatusAnswer::duplicate_of). Apply and repairs update them incrementally (the pages a batch
//    joins or changes, compared with the kept pages), for groups of up to kept_max_members.
//  - Status queries verify a loser against its winner before calling it a duplicate; a loser
//    below the threshold is reported unique and counted as a rejection against its group; a group
//    whose rejections reach the repair threshold (Flush) is repaired: its membership is recomputed
//    exactly (all pairs inside the group) and it splits into the connected components.
//
// Signatures are not kept in Tier 1: a page record references the partition cell whose Tier 2
// shard stores it, and Tier1 reads them through a SignatureSource.
//
//   Tier1 t1(store, source, options);
//   t1.Classify(batch, &classes);                // fast path or Tier 2, per page
//   ... Tier 2 compares the kTier2 pages ...
//   t1.Apply(batch, classes, matches, progress, &outcome);  // cases 1-3, one atomic commit
//   t1.QueryAndRecord(url, &answer);             // each page's acknowledgement (records rejections)
//   t1.Flush();                                  // verification results, repairs
//   t1.Query(url, nullptr, &answer);             // the crawler's question: read-only
//
// Thread safety: none; one thread drives a Tier1 (the pipeline's). Errors: IoError/Corruption
// from the store or the signature source, InvalidArgument for a bad batch (named).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/config.h"
#include "common/status.h"
#include "common/url_hash_map.h"
#include "proto/neardup.pb.h"
#include "proto/tier1.pb.h"
#include "tier1/group_store.h"
#include "tier1/winner.h"

namespace neardup::tier1 {

// A page's signature to fetch: its URL (not owned) and home cell.
struct SignatureRef {
  std::string_view url;
  uint32_t home_cell = 0;
};

// Where Tier 1 reads full signatures (the Tier 2 shards, in the embedded pipeline).
class SignatureSource {
 public:
  virtual ~SignatureSource() = default;
  // The current signature of `url`, stored in the shard owning partition cell `home_cell`.
  // NotFound when that shard does not hold it.
  virtual StatusOr<pb::PageSignature> Fetch(const std::string& url, uint32_t home_cell) = 0;
  // Hints that Fetch will soon be asked for `refs`, so that a source whose reads may wait for a
  // disk starts them together. Never fails; the default does nothing.
  virtual void WillFetch(std::span<const SignatureRef> /*refs*/) {}
};

struct Tier1Options {
  double threshold = ConfigDefaults().baseline().threshold();  // F(a, b): Jaccard >= threshold
  WinnerRules rules;
  bool fast_path = ConfigDefaults().tier1().fast_path();
  double repair_rejection_share = ConfigDefaults().tier1().repair_rejection_share();
  uint32_t repair_min_rejections = ConfigDefaults().tier1().repair_min_rejections();
  uint32_t repair_max_members = ConfigDefaults().tier1().repair_max_members();
  uint64_t cache_records = ConfigDefaults().tier1().cache_records();  // see Tier1Config.cache_records
  uint64_t packed_cache_bytes = uint64_t{ConfigDefaults().tier1().packed_cache_mib()} << 20;  // Tier1Config
  uint32_t reverify_max_members = ConfigDefaults().tier1().reverify_max_members();  // see Tier1Config
  uint32_t kept_max_members = ConfigDefaults().tier1().kept_max_members();  // see Tier1Config
};

// Options from the configuration's tier1 section and the service threshold.
Tier1Options Tier1OptionsFromConfig(const pb::Tier1Config& config, double threshold);

// One crawled record, after signing: content (signature), a redirect (redirect_to), or gone.
struct PageUpdate {
  std::string url;
  std::string redirect_to;                     // non-empty: a redirect record (no content)
  const pb::PageSignature* signature = nullptr;  // content records (not owned); may have no shingles
  bool gone = false;                           // the URL answered 404/410: no signature, no redirect
  uint32_t home_cell = 0;                      // the partition cell that stores it (content pages)
  double popularity = 0;
  std::string market;
  int64_t fetched_at_ms = 0;
};

enum class Classification : uint8_t {
  kUnchanged,   // same content digest as the stored version: stays in its group
  kFastPath,    // changed, still similar to its group's representative: stays
  kTier2,       // new or changed beyond the representative: Tier 2 decides
  kEmpty,       // content without shingles: similar to nothing, forms its own group
  kRedirect,    // Case 3
  kSuperseded,  // a later record of the batch has the same URL; ignored
  kGone,        // the URL is gone (404/410): it leaves its group, Tier 2 and the store
};
const char* ClassificationName(Classification c);

// The URL of a market's winner in group g: mw.url(), or g's winner when that is empty.
inline const std::string& MarketWinnerUrl(const pb::Tier1Group& g, const pb::MarketWinner& mw) {
  return mw.url().empty() ? g.winner() : mw.url();
}

// Tier 2's answer for the kTier2 pages of a batch. In-batch pairs join a kTier2 page with another
// kTier2 page or with a kFastPath page (whose new version the batch's pages after it must meet: it
// stays in its group, and its resident, older version is stale for them). Apply takes a pair from
// its later page, as the records would meet one after another.
struct Tier2Matches {
  struct Resident { uint32_t page; std::string url; double similarity; };
  struct InBatch { uint32_t a, b; double similarity; };   // batch indices
  std::vector<Resident> resident;
  std::vector<InBatch> in_batch;
};

struct ApplyOutcome {
  // Tier 2 housekeeping the caller owes: signatures to drop (the page turned into a redirect, lost
  // its words, is gone, or its home cell moved), as (url, cell that held it).
  std::vector<std::pair<std::string, uint32_t>> tier2_removals;
  uint64_t merges = 0;        // groups merged into another
  uint64_t moves = 0;         // pages that left a group for another (Case 1, Case 3)
  uint64_t new_groups = 0;
  uint64_t redirect_cycles = 0;
  uint64_t gone = 0;          // gone records that removed a crawled page (or left its placeholder)
  uint64_t gone_unknown = 0;  // gone records for a URL without a crawled record: nothing done
};

struct StatusAnswer {
  enum Kind { kUnknown, kPending, kUnique, kWinner, kDuplicate };
  Kind status = kUnknown;
  uint64_t group = 0;
  std::string winner_url;
  double similarity_to_winner = 0;  // meaningful when verified
  bool verified = false;            // the similarity was computed between the current versions
  bool redirect = false;            // the page redirects (duplicate by redirection)
  uint64_t group_members = 0;
  // kDuplicate: the page the crawler keeps instead (a kept member of the group, tier1/kept.cc;
  // the winner for a redirect, for a group without a kept set, or for content given to Query),
  // and their similarity (1 for a redirect; similarity_to_winner when it is the winner).
  std::string duplicate_of;
  double similarity_to_duplicate_of = 0;
  // How the page's latest record was classified; unset when the store did not record it.
  std::optional<Classification> route;
};
const char* StatusName(StatusAnswer::Kind k);

struct RepairReport {
  uint64_t group = 0;
  uint64_t members = 0;
  uint64_t components = 0;   // groups it split into (1: confirmed)
  uint64_t skipped = 0;      // 1 when the group was over repair_max_members
};

struct ReverifyReport {
  uint64_t groups = 0;     // groups whose members were verified again
  uint64_t verified = 0;   // member verifications computed (signatures fetched)
  uint64_t skipped = 0;    // groups over reverify_max_members, left to be verified when asked
};

struct CheckReport {
  uint64_t pages = 0, groups = 0, members = 0, redirects = 0, redirect_cycles = 0;
  uint64_t multi_groups = 0;   // groups with >= 2 members
  uint64_t kept_sets = 0;      // groups whose kept set is maintained
  uint64_t kept = 0, dropped = 0;  // their content members kept, and dropped (duplicate_of)
  std::vector<std::string> violations;  // empty when every invariant holds (at most 100 listed)
  uint64_t violation_count = 0;
};

class Tier1 {
 public:
  Tier1(GroupStore* store, SignatureSource* source, Tier1Options options);

  // Decides, per page of the batch, whether Tier 1 keeps it (classes[i]) without Tier 2. Reads the
  // store and the representatives' signatures; changes nothing. A representative whose record is
  // in the batch before the page is compared in its batch version, one whose record comes after it
  // in its stored version (the groups are as the batch starts). InvalidArgument for a page without
  // a URL, one with neither content nor a redirect nor gone, or one gone with content or a redirect.
  // `changed`, when given, is set per page: true for a recrawl whose content changed (kFastPath,
  // or kTier2 for a page that had content before), the denominator of the fast path's share.
  Status Classify(std::span<const PageUpdate> batch, std::vector<Classification>* classes,
                  std::vector<bool>* changed = nullptr);

  // Applies a classified batch and Tier 2's matches for its kTier2 pages (gone pages, cases 1-3,
  // merges, winners) as its records one after another (a page meets each other URL as it stands at
  // the page's place in the batch, so that where batches are cut does not change the groups; within
  // a batch the last record of a URL wins) and commits it, with `progress` (may be empty) in the
  // meta row "progress", in one atomic write. InvalidArgument when classes or matches do not fit
  // the batch.
  // `progress` (may be null) is stored with the outcome's Tier 2 removals added.
  Status Apply(std::span<const PageUpdate> batch, std::span<const Classification> classes,
               const Tier2Matches& matches, const pb::Tier1Progress* progress, ApplyOutcome* outcome);

  // The crawler's question for a URL, read-only: the answer comes from the store as it is and
  // changes nothing in it (a verification computed here is not kept, a loser below the threshold
  // answers kUnique and is not counted against its group). `current`, when given, is the page's
  // current content: the answer verifies it (not the stored version) against the winner.
  // `pending` URLs answer kPending.
  Status Query(const std::string& url, const pb::PageSignature* current, StatusAnswer* out);
  // The ingest path's acknowledgement of a stored page: Query, and records what it learnt: the
  // verification result cached in the page record, the rejection counted in its group once per
  // version, and the group queued as a repair candidate. Written by Flush() (which also repairs
  // the candidates that are due), or by the next Apply.
  Status QueryAndRecord(const std::string& url, StatusAnswer* out);
  // QueryAndRecord for the other members of every group whose winner (or a market's winner)
  // changed in the applied batches since the last call, or whose winner's content changed, or
  // that took in another group's pages: their cached verifications name the old winner, and a
  // status query would otherwise verify them again (two signature fetches) every time it is asked
  // until they are crawled again. Also every group that a page with content left (or stayed in
  // without it): a repair that kept the group whole started its members' verification afresh,
  // perhaps counting on that page, so the rejections Flush weighs must be counted again. Members
  // whose verification is current cost no fetch, nor does a group of them. Groups over
  // reverify_max_members members are left to be verified when asked. The pipeline calls it after
  // the batch's acknowledgements, before Flush. Errors: the store's, and the signature source's.
  Status Reverify(ReverifyReport* report = nullptr);
  // Writes what queries learnt, and repairs the groups whose rejections (loser versions rejected
  // by verification) reach min(max(repair_min_rejections, repair_rejection_share * c),
  // max(c - 1, 1)), c being the group's content members (pages with a signature; redirects and
  // never-crawled targets do not count): c - 1 losers at most can be rejected. It checks the
  // groups of the rejections counted since the last Flush, and the groups with rejections that
  // the batches applied since left with fewer content members (their threshold fell).
  Status Flush(std::vector<RepairReport>* repairs = nullptr);

  // Recomputes a group's membership exactly and splits it into connected components (the largest
  // keeps the id). NotFound for an unknown group.
  Status Repair(uint64_t group, RepairReport* report);

  // Drops the records kept between batches (the working set's read cache), for a caller that
  // changed page records beside Tier 1 (a move relabelling pages' cells, pipeline/store_move.h).
  // FailedPrecondition while changes are uncommitted.
  Status ForgetCachedRecords();

  // URLs accepted but not yet decided (the pipeline's in-flight batch).
  void SetPending(UrlSet urls) { pending_ = std::move(urls); }

  const Tier1Options& options() const { return options_; }
  GroupStore* store() { return store_; }
  // What the working set's lookups cost so far (its cache's hits against store reads).
  const GroupStore::Txn::ReadStats& page_reads() const { return txn_.page_reads(); }
  const GroupStore::Txn::ReadStats& group_reads() const { return txn_.group_reads(); }
  const GroupStore::Txn::ReadStats& member_reads() const { return txn_.member_reads(); }

 private:
  // Where they are: the group edits (LeaveGroup to RecomputeWinners) in apply.cc, Answer in
  // query.cc, RepairDue and RepairIn in repair.cc, FetchSignature and CommitWorkingSet in tier1.cc;
  // Touched and BatchApply (Apply's steps for one batch, apply_records.cc) are defined in
  // tier1_internal.h.
  struct Touched;
  class BatchApply;
  // Takes the page `url` (its record `rec`, in group rec.group() != 0) out of its group: member
  // cell, count and rejection; a group left empty is deleted, one whose winner left is due for a
  // recomputation. The record itself is the caller's to change.
  Status LeaveGroup(GroupStore::Txn& txn, const std::string& url, const pb::Tier1Page& rec, Touched* touched);
  // A gone record (see the rules above).
  Status ApplyGone(GroupStore::Txn& txn, const std::string& url, Touched* touched, ApplyOutcome* outcome);
  // keep_dropped: the pages' dropped decisions stay (their kept pages move with them: a merge).
  Status MovePages(GroupStore::Txn& txn, const std::vector<std::string>& pages, uint64_t from, uint64_t to,
                   Touched* touched, bool keep_dropped = false);
  Status RedirectClosure(GroupStore::Txn& txn, const std::string& url, std::vector<std::string>* out);
  Status MergeGroups(GroupStore::Txn& txn, uint64_t from, uint64_t into, Touched* touched);
  // Queues `group` for Reverify when `url`, whose content changed, is its winner or a market's.
  Status NoteWinnerContent(GroupStore::Txn& txn, const std::string& url, uint64_t group);
  Status UpdateWinners(GroupStore::Txn& txn, Touched* touched);
  // `members`, when given, is the group's whole member list (spares the store scan).
  Status RecomputeWinners(GroupStore::Txn& txn, uint64_t group, std::vector<std::string> members = {});
  StatusOr<pb::PageSignature> FetchSignature(const std::string& url, const pb::Tier1Page& page);
  // Query (record false) and QueryAndRecord (record true).
  Status Answer(const std::string& url, const pb::PageSignature* current, bool record, StatusAnswer* out);
  // Commits the working set and keeps it as a cache, evicting the records least recently used
  // when it holds more than cache_records.
  Status CommitWorkingSet(bool durable);
  // txn_.Commit with the meta row "todo" (pb::Tier1Todo: reverify_ and repair_queue_) when it
  // changed, so that a restart does the verifications and repairs a crash interrupted. Every
  // commit of txn_ goes through here.
  Status CommitWithTodo(bool durable, bool keep_cache);
  // Adds the stored "todo" row to reverify_ and repair_queue_, once (the first call; a no-op after).
  // Errors: the store's (Corruption when the row does not parse).
  Status LoadTodo();
  // The todo row as the next commit would write it (sorts and dedupes reverify_ and repair_queue_).
  std::string TodoBytes();
  Status RepairIn(GroupStore::Txn& txn, uint64_t group, RepairReport* report);
  // Kept sets (kept.cc): what a batch or a repair changed, per group, for UpdateKeptSets.
  struct KeptWork {
    std::vector<std::string> pages;  // members joined or changed: decided again
    bool full = false;               // decide every content member afresh
  };
  KeptWork& KeptWorkOf(uint64_t group) { return kept_work_[group]; }
  // Brings the kept sets of the groups in kept_work_ up to date (and clears it). `batch`, when
  // given, holds the signatures of the batch being applied (its pages' new versions, which the
  // shards do not hold yet). Errors: the store's and the signature source's.
  Status UpdateKeptSets(GroupStore::Txn& txn,
                        const std::unordered_map<std::string, const pb::PageSignature*>* batch);
  // One UpdateKeptSets call's state and steps (kept.cc).
  class KeptSetUpdate;
  // True when the group's rejections reach the repair threshold, counted over its content members
  // (Tier1Config.repair_rejection_share); false for a group that no longer exists.
  StatusOr<bool> RepairDue(GroupStore::Txn& txn, uint64_t group);

  GroupStore* store_;
  SignatureSource* source_;
  Tier1Options options_;
  UrlSet pending_;
  // The one working set: Classify and Query read through it, Apply and Flush write through it and
  // keep what they read as a cache (Tier 1 is the store's only writer), bounded by
  // options.cache_records (the records least recently used go first).
  GroupStore::Txn txn_;
  std::vector<uint64_t> repair_queue_;
  std::vector<uint64_t> reverify_;  // groups for Reverify (with repeats)
  bool todo_loaded_ = false;
  std::string todo_stored_;  // the "todo" row as last committed
  // Flush ran since the last Apply: the groups in reverify_ were queued by its repairs, for the
  // next batch's Reverify. A restart finds them in deferred_reverify_, which the next Apply adds
  // to reverify_ (a Reverify before it, the restart's redo of the last batch, leaves them).
  bool flushed_ = false;
  std::vector<uint64_t> deferred_reverify_;
  std::map<uint64_t, KeptWork> kept_work_;
  // The winners' signatures during Reverify, fetched once per group.
  std::unordered_map<std::string, pb::PageSignature> reverify_signatures_;
  // Signatures of the batch being classified/applied, by URL (representatives in the batch).
  std::unordered_map<std::string, const pb::PageSignature*> batch_signatures_;
};

// The crawler's question answered from the store's committed records alone (what Tier1::Query
// would answer with an empty working set, but no pending URLs): for a server's status queries,
// from any thread while Tier 1 commits (GroupStore's const reads). Nothing is recorded. A loser
// whose cached verification is stale is verified through `source` (thread-safe; may be null);
// when the signatures cannot be had (no source, a shard that does not answer, a page whose shard
// has not stored it yet) the answer is Tier 1's grouping with verified false. Errors:
// IoError/Corruption from the store.
Status AnswerCommitted(const GroupStore& store, SignatureSource* source, double threshold, const std::string& url,
                       const pb::PageSignature* current, StatusAnswer* out);

// Checks every invariant of the store: each page in exactly one group and listed there; member
// lists, member counts and page records agree; each group's winner is a member; in a group with a
// kept set, the winner (with content) is kept, every content member is kept or dropped, a dropped
// one names a kept member of the same group with similarity_to_kept >= threshold, the group's
// kept list is its kept members; with `source` and `threshold` (else these are not compared), the
// similarities are recomputed from the signatures and no two kept pages of a group are
// near-duplicates; the redirect
// index matches the pages' redirect targets; every redirecting page's target has a record in the
// same group; every redirect chain ends or closes a cycle (counted).
Status CheckStore(const GroupStore& store, CheckReport* report, SignatureSource* source = nullptr,
                  double threshold = 0);

}  // namespace neardup::tier1
