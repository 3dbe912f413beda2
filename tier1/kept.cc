// Tier1's kept sets (tier1/tier1.h): inside each group, the pages the crawler keeps. Groups are
// transitive (v1 ~ v2 ~ v3 ~ v4 with v1 and v4 far apart), so their winner does not represent every
// member: a member below the threshold from the winner would be answered unique while it may be a
// near-duplicate of another member that is also kept. The kept set fixes the crawler's view:
//
//   - no two kept pages of a group are near-duplicates (Jaccard >= threshold): it is an
//     independent set of the group's similarity graph, and it always holds the winner (when the
//     winner has content);
//   - every other content member is dropped, answered duplicate of a kept member it is a
//     near-duplicate of (duplicate_of, the first such in the kept list).
//
// From scratch, the rule is the greedy in winner-rule order: the winner, then each member in
// rank order kept unless it is a near-duplicate of a page kept before it. A batch does not
// recompute a group from scratch: it decides again only the pages it joined to the group or whose
// content it changed (and the kept pages of a group merged in; the dropped ones keep pointing at
// their kept page, which moved with them), each compared with the kept list in order, the winner
// first. Kept pages invalidated (they left, changed, lost their content, or were displaced by a
// new winner near-duplicate of them) cost one scan of the member list: the pages that pointed at
// them are decided again the same way. So per group and batch: signatures fetched for the kept
// pages and the pages decided (at most the group's members), at most decided x kept Jaccards,
// and a member scan only when a kept page was lost. Groups over kept_max_members keep no kept set.
// The result depends on the order pages arrived (a page decided earlier stays kept when a
// better-ranked near-duplicate of it joins later, unless that one becomes the winner); a repair
// recomputes its groups from scratch.
//
// The decisions are written in the page and group records of the working set, with the batch (or
// the repair) that caused them: one atomic commit, crash-safe as the rest of the group store.
#include <algorithm>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tier1/tier1.h"
#include "tier1/tier1_internal.h"

namespace neardup::tier1 {
namespace {

bool IsContent(const pb::Tier1Page* p) {
  return p != nullptr && p->crawled() && p->redirect_to().empty() && p->has_signature();
}

// Sets a page's decision, changing the record only when it differs.
Status Decide(GroupStore::Txn& txn, const std::string& url, bool kept, const std::string& duplicate_of, double sim) {
  ASSIGN_OR_RETURN(const pb::Tier1Page* p, txn.FindPage(url));
  if (p != nullptr && p->kept() == kept && p->duplicate_of() == duplicate_of && p->similarity_to_kept() == sim) {
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(pb::Tier1Page * rec, txn.MutablePage(url));
  rec->set_kept(kept);
  rec->set_duplicate_of(duplicate_of);
  rec->set_similarity_to_kept(sim);
  return Status::Ok();
}

}  // namespace

// One UpdateKeptSets call: the signatures it fetched for the group at hand, its counters, and the
// group being updated (the pages to decide, the kept list as it is rebuilt, the kept pages lost).
class Tier1::KeptSetUpdate {
 public:
  KeptSetUpdate(Tier1* t1, GroupStore::Txn& txn, const std::unordered_map<std::string, const pb::PageSignature*>* batch)
      : t1_(*t1), txn_(txn), batch_(batch) {}

  // Brings group `gid`'s kept set up to date for the work `w`: dropped when the group is over
  // kept_max_members, else decided again where `w` says, and written in the group record.
  Status Group(uint64_t gid, const KeptWork& w);
  // Adds the counters (decisions, compares, fetches, scans, recomputations) to the working set.
  void Count();

 private:
  // A page's signature: the batch's version, else fetched from its shard (once per group).
  StatusOr<const pb::PageSignature*> Signature(const std::string& url, const pb::Tier1Page& page);
  // The group's members in members_, read once per group.
  Status Scan();
  // The pages to decide (dirty_): every member when the kept set is recomputed (full_), else the
  // pages of the work list; and the old kept pages still kept (kept_) or lost (lost_, changed_).
  Status ChoosePages(const pb::Tier1Group& group, const KeptWork& w);
  // The winner (with content) kept and first in the list; kept pages near-duplicates of it dropped
  // to it.
  Status KeepWinner();
  // Decides `pages` (members of the group with content; the others lose any decision) in
  // winner-rule order, each kept or dropped to the first kept page it is a near-duplicate of.
  Status DecideInOrder(std::vector<std::string> pages);
  // After the pages decided: the members that pointed at a page no longer kept (or changed), or
  // that were kept, decided again (they only become kept or point at a kept page: nothing
  // further is lost).
  Status RedecideLostPointers();
  // Writes the kept list in the group record.
  Status WriteKeptList();

  Tier1& t1_;
  GroupStore::Txn& txn_;
  const std::unordered_map<std::string, const pb::PageSignature*>* batch_;
  uint64_t decisions_ = 0, compares_ = 0, scans_ = 0, fulls_ = 0, fetches_ = 0;
  std::unordered_map<std::string, pb::PageSignature> sigs_;  // this group's, fetched once
  // The group at hand.
  uint64_t gid_ = 0;
  bool full_ = false;
  std::string winner_;
  std::set<std::string> dirty_;      // the pages to decide
  std::vector<std::string> members_;
  bool scanned_ = false;
  std::set<std::string> lost_;       // kept before, no longer
  std::set<std::string> changed_;    // lost or dirty before the decisions: their similarities are stale
  std::vector<std::string> kept_;    // the kept list, the winner first
  std::set<std::string> kept_index_;
};

Status Tier1::UpdateKeptSets(GroupStore::Txn& txn,
                             const std::unordered_map<std::string, const pb::PageSignature*>* batch) {
  std::map<uint64_t, KeptWork> work;
  work.swap(kept_work_);
  KeptSetUpdate update(this, txn, batch);
  for (const auto& [gid, w] : work) RETURN_IF_ERROR(update.Group(gid, w));
  update.Count();
  return Status::Ok();
}

StatusOr<const pb::PageSignature*> Tier1::KeptSetUpdate::Signature(const std::string& url, const pb::Tier1Page& page) {
  if (batch_ != nullptr) {
    if (auto it = batch_->find(url); it != batch_->end()) return it->second;
  }
  if (auto it = sigs_.find(url); it != sigs_.end()) return &it->second;
  ++fetches_;
  ASSIGN_OR_RETURN(pb::PageSignature s, t1_.FetchSignature(url, page));
  return &(sigs_[url] = std::move(s));
}

Status Tier1::KeptSetUpdate::Scan() {
  if (scanned_) return Status::Ok();
  scanned_ = true;
  ++scans_;
  return txn_.Members(gid_, &members_);
}

Status Tier1::KeptSetUpdate::Group(uint64_t gid, const KeptWork& w) {
  ASSIGN_OR_RETURN(const pb::Tier1Group* found, txn_.FindGroup(gid));
  if (found == nullptr) return Status::Ok();
  const uint32_t max_members = t1_.options_.kept_max_members;
  if (max_members == 0 || found->members() > max_members) {
    if (found->kept_set() || found->kept_size() > 0) {
      ASSIGN_OR_RETURN(pb::Tier1Group * g, txn_.MutableGroup(gid));
      g->set_kept_set(false);
      g->clear_kept();
      txn_.AddCounter("kept_sets_dropped", 1);
    }
    return Status::Ok();
  }
  sigs_.clear();
  gid_ = gid;
  full_ = w.full || !found->kept_set();
  winner_ = found->winner();
  dirty_.clear();
  members_.clear();
  scanned_ = false;
  lost_.clear();
  kept_.clear();
  RETURN_IF_ERROR(ChoosePages(*found, w));
  RETURN_IF_ERROR(KeepWinner());
  dirty_.erase(winner_);
  RETURN_IF_ERROR(DecideInOrder(std::vector<std::string>(dirty_.begin(), dirty_.end())));
  if (!lost_.empty() || !changed_.empty()) RETURN_IF_ERROR(RedecideLostPointers());
  return WriteKeptList();
}

Status Tier1::KeptSetUpdate::ChoosePages(const pb::Tier1Group& group, const KeptWork& w) {
  const std::vector<std::string> old_kept(group.kept().begin(), group.kept().end());
  if (full_) {
    // A new group (most often) has all its members in the work list: no scan, nothing to redo.
    std::set<std::string> listed;
    for (const std::string& url : w.pages) {
      ASSIGN_OR_RETURN(const pb::Tier1Page* p, txn_.FindPage(url));
      if (p != nullptr && p->group() == gid_) listed.insert(url);
    }
    if (!w.full && group.kept_size() == 0 && listed.size() == group.members()) {
      members_.assign(listed.begin(), listed.end());
      scanned_ = true;
    } else {
      ++fulls_;
      RETURN_IF_ERROR(Scan());
    }
    dirty_.insert(members_.begin(), members_.end());
  } else {
    dirty_.insert(w.pages.begin(), w.pages.end());
  }
  // Pages kept before that no longer are, or whose content changed: the pages dropped to them
  // are decided again.
  for (const std::string& k : old_kept) {
    ASSIGN_OR_RETURN(const pb::Tier1Page* p, txn_.FindPage(k));
    if (!full_ && dirty_.count(k) == 0 && IsContent(p) && p->group() == gid_ && p->kept()) kept_.push_back(k);
    else lost_.insert(k);
  }
  changed_ = lost_;
  kept_index_ = std::set<std::string>(kept_.begin(), kept_.end());
  return Status::Ok();
}

Status Tier1::KeptSetUpdate::KeepWinner() {
  ASSIGN_OR_RETURN(const pb::Tier1Page* wp, txn_.FindPage(winner_));
  if (!IsContent(wp) || wp->group() != gid_) return Status::Ok();
  if (kept_index_.count(winner_) > 0) {
    if (kept_.front() != winner_) {
      kept_.erase(std::find(kept_.begin(), kept_.end(), winner_));
      kept_.insert(kept_.begin(), winner_);
    }
    return Status::Ok();
  }
  const pb::Tier1Page wpage = *wp;
  ASSIGN_OR_RETURN(const pb::PageSignature* ws, Signature(winner_, wpage));
  std::vector<std::string> rest;
  for (const std::string& k : kept_) {
    ASSIGN_OR_RETURN(const pb::Tier1Page* kp, txn_.FindPage(k));
    const pb::Tier1Page kpage = *kp;
    ASSIGN_OR_RETURN(const pb::PageSignature* ks, Signature(k, kpage));
    double sim = 0;
    ++compares_;
    if (Similar(*ws, *ks, t1_.options_.threshold, &sim)) {
      RETURN_IF_ERROR(Decide(txn_, k, false, winner_, sim));
      lost_.insert(k);
    } else {
      rest.push_back(k);
    }
  }
  ++decisions_;
  RETURN_IF_ERROR(Decide(txn_, winner_, true, "", 0));
  kept_.assign(1, winner_);
  kept_.insert(kept_.end(), rest.begin(), rest.end());
  kept_index_ = std::set<std::string>(kept_.begin(), kept_.end());
  lost_.erase(winner_);
  return Status::Ok();
}

Status Tier1::KeptSetUpdate::DecideInOrder(std::vector<std::string> pages) {
  std::vector<std::pair<std::string, const pb::Tier1Page*>> cands;
  for (const std::string& url : pages) {
    ASSIGN_OR_RETURN(const pb::Tier1Page* p, txn_.FindPage(url));
    if (p == nullptr || p->group() != gid_ || url == winner_) continue;
    if (!IsContent(p)) {
      if (p->kept() || !p->duplicate_of().empty()) {
        if (p->kept()) lost_.insert(url);
        RETURN_IF_ERROR(Decide(txn_, url, false, "", 0));
      }
      continue;
    }
    cands.emplace_back(url, p);
  }
  const WinnerRules& rules = t1_.options_.rules;
  std::sort(cands.begin(), cands.end(), [&](const auto& a, const auto& b) {
    return Better(rules, Candidate{a.first, a.second->popularity(), true},
                  Candidate{b.first, b.second->popularity(), true}, "");
  });
  for (const auto& [url, p] : cands) {
    const bool was_kept = p->kept();
    const pb::Tier1Page page = *p;
    ASSIGN_OR_RETURN(const pb::PageSignature* s, Signature(url, page));
    std::string to;
    double sim = 0;
    for (const std::string& k : kept_) {
      ASSIGN_OR_RETURN(const pb::Tier1Page* kp, txn_.FindPage(k));
      const pb::Tier1Page kpage = *kp;
      ASSIGN_OR_RETURN(const pb::PageSignature* ks, Signature(k, kpage));
      ++compares_;
      if (Similar(*s, *ks, t1_.options_.threshold, &sim)) {
        to = k;
        break;
      }
    }
    ++decisions_;
    if (to.empty()) {
      RETURN_IF_ERROR(Decide(txn_, url, true, "", 0));
      kept_.push_back(url);
      kept_index_.insert(url);
    } else {
      RETURN_IF_ERROR(Decide(txn_, url, false, to, sim));
      if (was_kept) lost_.insert(url);
    }
  }
  return Status::Ok();
}

Status Tier1::KeptSetUpdate::RedecideLostPointers() {
  RETURN_IF_ERROR(Scan());
  std::vector<std::string> again;
  for (const std::string& url : members_) {
    if (dirty_.count(url) > 0 || kept_index_.count(url) > 0) continue;
    ASSIGN_OR_RETURN(const pb::Tier1Page* p, txn_.FindPage(url));
    if (!IsContent(p) || p->group() != gid_) continue;
    if (p->kept() || kept_index_.count(p->duplicate_of()) == 0 || changed_.count(p->duplicate_of()) > 0) {
      again.push_back(url);
    }
  }
  return DecideInOrder(std::move(again));
}

Status Tier1::KeptSetUpdate::WriteKeptList() {
  ASSIGN_OR_RETURN(pb::Tier1Group * g, txn_.MutableGroup(gid_));
  g->set_kept_set(true);
  if (!std::equal(kept_.begin(), kept_.end(), g->kept().begin(), g->kept().end())) {
    g->clear_kept();
    for (const std::string& k : kept_) g->add_kept(k);
  }
  return Status::Ok();
}

void Tier1::KeptSetUpdate::Count() {
  if (decisions_ > 0) txn_.AddCounter("kept_decisions", static_cast<int64_t>(decisions_));
  if (compares_ > 0) txn_.AddCounter("kept_compares", static_cast<int64_t>(compares_));
  if (fetches_ > 0) txn_.AddCounter("kept_fetches", static_cast<int64_t>(fetches_));
  if (scans_ > 0) txn_.AddCounter("kept_scans", static_cast<int64_t>(scans_));
  if (fulls_ > 0) txn_.AddCounter("kept_recomputed", static_cast<int64_t>(fulls_));
}

}  // namespace neardup::tier1
