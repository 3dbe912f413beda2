// Private to Tier1's sources (classify.cc, apply.cc, apply_records.cc, repair.cc): the helpers more
// than one of them uses, and Apply's per-batch state. Not part of Tier1's contract (tier1/tier1.h):
// nothing outside tier1/*.cc includes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "document/shingle.h"
#include "proto/neardup.pb.h"
#include "proto/tier1.pb.h"
#include "tier1/batch_matches.h"
#include "tier1/group_store.h"
#include "tier1/tier1.h"

namespace neardup::tier1 {

// Groups whose winners must be brought up to date before a commit.
struct Tier1::Touched {
  struct Entry {
    bool full = false;                 // recompute over all members
    std::vector<std::string> added;    // members that joined or changed (compare with the winners)
  };
  std::map<uint64_t, Entry> groups;
};

// One batch being applied (Apply's steps, apply_records.cc): its records one after another, each
// as a batch of its own would apply it, so that the next record meets the groups as they stand at
// its place; then the touched groups' winners, and each page's route and kept-set decision. Every
// change goes to the Tier1's working set, uncommitted: Apply commits it, or discards it when a step
// fails. Holds views of the batch, its classes and matches (which must outlive it) and the outcome
// it adds to. Errors: the store's and the signature source's.
class Tier1::BatchApply {
 public:
  BatchApply(Tier1* t1, std::span<const PageUpdate> batch, std::span<const Classification> classes,
             const BatchMatches* matches, ApplyOutcome* outcome);

  // Step 1, for record i: gone, kept (unchanged or fast path), decided by Tier 2 (Cases 1 and 2,
  // empty pages), or a redirect (Case 3); a superseded record changes nothing. Call it for every
  // record, in input order, once.
  Status Record(size_t i);
  // After step 1: the winners of the groups the batch touched brought up to date (a group made in
  // this batch gets the plain order: its pages have no incumbent among them), and every group a
  // page with content left (or stayed in without it) queued for Reverify, and for a repair check
  // when it has rejections.
  Status UpdateGroups();
  // Step 2: each page's route (how its latest record was classified), and the kept sets: the
  // batch's pages with new content (or none now) decided again in their groups, with their new
  // signatures (the shards store them only after the commit).
  Status UpdateRoutesAndKeptSets();

 private:
  // A page Tier 1 kept (unchanged or fast path): its record refreshed; a changed rank may change
  // the winner.
  Status ApplyKept(size_t i);
  // A page Tier 2 decided, or an empty one: joins its matches' groups (merged), stays, or forms a
  // new group, with the pages redirecting to it.
  Status ApplyDecided(size_t i);
  // The groups of page i's matches that count at its place, as (similarity, group): its resident
  // matches not stale, then its in-batch partners already applied.
  StatusOr<std::vector<std::pair<double, uint64_t>>> MatchedGroups(size_t i);
  // Transitive clustering: every group in `targets` becomes one, the biggest (by members; on a
  // tie, the one of the best match) absorbing the rest. Returns it. Sorts `targets`.
  StatusOr<uint64_t> MergeMatchedGroups(std::vector<std::pair<double, uint64_t>>* targets);
  // A redirect record (Case 3): q1 and its redirectors join the group its chain ends in.
  Status ApplyRedirect(size_t i);
  // The redirect record's own page record: content cleared, the redirect kept, its rejection
  // dropped; its group is due for a winner recomputation (the page can no longer win it).
  Status RecordRedirect(const PageUpdate& u);
  // The page's record takes u's content (and rank); a rejection counted against an older version
  // is dropped from its group.
  Status SetContent(pb::Tier1Page* rec, const PageUpdate& u);
  // Takes one rejection off group `gid` (none for 0).
  Status DropRejection(uint64_t gid);
  // Notes that the page `old` (its record before this one) leaves its content's group.
  void NoteContentLeft(const pb::Tier1Page& old) {
    if (old.has_signature() && old.group() != 0) content_left_.push_back(old.group());
  }

  Tier1& t1_;
  GroupStore::Txn& txn_;
  std::span<const PageUpdate> batch_;
  std::span<const Classification> classes_;
  const BatchMatches& matches_;
  ApplyOutcome* outcome_;
  Touched touched_;
  std::vector<uint64_t> content_left_;  // with repeats
  std::vector<bool> done_;              // applied: an in-batch pair is linked by its later page
  std::vector<std::string> moving_;     // a page's redirect closure (reused)
};

// True when `url` is g's winner or a market's winner.
inline bool IsMarketWinner(const pb::Tier1Group& g, const std::string& url) {
  if (g.winner() == url) return true;
  for (const auto& mw : g.market_winners()) {
    if (mw.url() == url) return true;
  }
  return false;
}

// F(a, b): true when Jaccard(a, b) >= threshold; *sim is set to Jaccard(a, b).
inline bool Similar(const pb::PageSignature& a, const pb::PageSignature& b, double threshold, double* sim) {
  const std::span<const uint64_t> x(a.shingles().data(), static_cast<size_t>(a.shingles_size()));
  const std::span<const uint64_t> y(b.shingles().data(), static_cast<size_t>(b.shingles_size()));
  const size_t overlap = Overlap(x, y);
  const size_t uni = x.size() + y.size() - overlap;
  *sim = uni == 0 ? 0.0 : static_cast<double>(overlap) / static_cast<double>(uni);
  return JaccardAtLeast(overlap, x.size(), y.size(), threshold);
}

}  // namespace neardup::tier1
