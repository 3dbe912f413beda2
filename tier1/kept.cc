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

Status Tier1::UpdateKeptSets(GroupStore::Txn& txn,
                             const std::unordered_map<std::string, const pb::PageSignature*>* batch) {
  std::map<uint64_t, KeptWork> work;
  work.swap(kept_work_);
  uint64_t decisions = 0, compares = 0, scans = 0, fulls = 0, fetches = 0;
  std::unordered_map<std::string, pb::PageSignature> sigs;  // this group's, fetched once
  auto signature = [&](const std::string& url, const pb::Tier1Page& page) -> StatusOr<const pb::PageSignature*> {
    if (batch != nullptr) {
      if (auto it = batch->find(url); it != batch->end()) return it->second;
    }
    if (auto it = sigs.find(url); it != sigs.end()) return &it->second;
    ++fetches;
    ASSIGN_OR_RETURN(pb::PageSignature s, FetchSignature(url, page));
    return &(sigs[url] = std::move(s));
  };
  for (auto& [group_id, w] : work) {
    // A copy: clang 14 (the fuzz build's) does not let a lambda capture a structured binding.
    const auto gid = group_id;
    ASSIGN_OR_RETURN(const pb::Tier1Group* found, txn.FindGroup(gid));
    if (found == nullptr) continue;
    if (options_.kept_max_members == 0 || found->members() > options_.kept_max_members) {
      if (found->kept_set() || found->kept_size() > 0) {
        ASSIGN_OR_RETURN(pb::Tier1Group * g, txn.MutableGroup(gid));
        g->set_kept_set(false);
        g->clear_kept();
        txn.AddCounter("kept_sets_dropped", 1);
      }
      continue;
    }
    sigs.clear();
    const bool full = w.full || !found->kept_set();
    const std::string winner = found->winner();
    const std::vector<std::string> old_kept(found->kept().begin(), found->kept().end());
    // The pages to decide, and what was kept before them.
    std::set<std::string> dirty;
    std::vector<std::string> members;
    bool scanned = false;
    auto scan = [&]() -> Status {
      if (scanned) return Status::Ok();
      scanned = true;
      ++scans;
      return txn.Members(gid, &members);
    };
    if (full) {
      // A new group (most often) has all its members in the work list: no scan, nothing to redo.
      std::set<std::string> listed;
      for (const std::string& url : w.pages) {
        ASSIGN_OR_RETURN(const pb::Tier1Page* p, txn.FindPage(url));
        if (p != nullptr && p->group() == gid) listed.insert(url);
      }
      if (!w.full && found->kept_size() == 0 && listed.size() == found->members()) {
        members.assign(listed.begin(), listed.end());
        scanned = true;
      } else {
        ++fulls;
        RETURN_IF_ERROR(scan());
      }
      dirty.insert(members.begin(), members.end());
    } else {
      dirty.insert(w.pages.begin(), w.pages.end());
    }
    // Pages kept before that no longer are, or whose content changed: the pages dropped to them
    // are decided again.
    std::set<std::string> lost;
    std::vector<std::string> kept;
    for (const std::string& k : old_kept) {
      ASSIGN_OR_RETURN(const pb::Tier1Page* p, txn.FindPage(k));
      if (!full && dirty.count(k) == 0 && IsContent(p) && p->group() == gid && p->kept()) kept.push_back(k);
      else lost.insert(k);
    }
    const std::set<std::string> changed = lost;  // lost or dirty: their similarities are stale
    std::set<std::string> kept_index(kept.begin(), kept.end());
    // Orders pages by the winner rules (the best first).
    std::vector<std::string> order;
    auto decide_in_order = [&](std::vector<std::string> pages) -> Status {
      std::vector<std::pair<std::string, const pb::Tier1Page*>> cands;
      for (const std::string& url : pages) {
        ASSIGN_OR_RETURN(const pb::Tier1Page* p, txn.FindPage(url));
        if (p == nullptr || p->group() != gid || url == winner) continue;
        if (!IsContent(p)) {
          if (p->kept() || !p->duplicate_of().empty()) {
            if (p->kept()) lost.insert(url);
            RETURN_IF_ERROR(Decide(txn, url, false, "", 0));
          }
          continue;
        }
        cands.emplace_back(url, p);
      }
      std::sort(cands.begin(), cands.end(), [&](const auto& a, const auto& b) {
        return Better(options_.rules, Candidate{a.first, a.second->popularity(), true},
                      Candidate{b.first, b.second->popularity(), true}, "");
      });
      for (const auto& [url, p] : cands) {
        const bool was_kept = p->kept();
        const pb::Tier1Page page = *p;
        ASSIGN_OR_RETURN(const pb::PageSignature* s, signature(url, page));
        std::string to;
        double sim = 0;
        for (const std::string& k : kept) {
          ASSIGN_OR_RETURN(const pb::Tier1Page* kp, txn.FindPage(k));
          const pb::Tier1Page kpage = *kp;
          ASSIGN_OR_RETURN(const pb::PageSignature* ks, signature(k, kpage));
          ++compares;
          if (Similar(*s, *ks, options_.threshold, &sim)) {
            to = k;
            break;
          }
        }
        ++decisions;
        if (to.empty()) {
          RETURN_IF_ERROR(Decide(txn, url, true, "", 0));
          kept.push_back(url);
          kept_index.insert(url);
        } else {
          RETURN_IF_ERROR(Decide(txn, url, false, to, sim));
          if (was_kept) lost.insert(url);
        }
      }
      return Status::Ok();
    };
    // The winner is kept; kept pages that are near-duplicates of it are dropped to it.
    ASSIGN_OR_RETURN(const pb::Tier1Page* wp, txn.FindPage(winner));
    if (IsContent(wp) && wp->group() == gid) {
      if (kept_index.count(winner) == 0) {
        const pb::Tier1Page wpage = *wp;
        ASSIGN_OR_RETURN(const pb::PageSignature* ws, signature(winner, wpage));
        std::vector<std::string> rest;
        for (const std::string& k : kept) {
          ASSIGN_OR_RETURN(const pb::Tier1Page* kp, txn.FindPage(k));
          const pb::Tier1Page kpage = *kp;
          ASSIGN_OR_RETURN(const pb::PageSignature* ks, signature(k, kpage));
          double sim = 0;
          ++compares;
          if (Similar(*ws, *ks, options_.threshold, &sim)) {
            RETURN_IF_ERROR(Decide(txn, k, false, winner, sim));
            lost.insert(k);
          } else {
            rest.push_back(k);
          }
        }
        ++decisions;
        RETURN_IF_ERROR(Decide(txn, winner, true, "", 0));
        kept.assign(1, winner);
        kept.insert(kept.end(), rest.begin(), rest.end());
        kept_index = std::set<std::string>(kept.begin(), kept.end());
        lost.erase(winner);
      } else if (kept.front() != winner) {
        kept.erase(std::find(kept.begin(), kept.end(), winner));
        kept.insert(kept.begin(), winner);
      }
    }
    dirty.erase(winner);
    RETURN_IF_ERROR(decide_in_order(std::vector<std::string>(dirty.begin(), dirty.end())));
    // Pages that pointed at a page no longer kept are decided again (they only become kept or
    // point at a kept page: nothing further is lost).
    if (!lost.empty() || !changed.empty()) {
      RETURN_IF_ERROR(scan());
      std::vector<std::string> again;
      for (const std::string& url : members) {
        if (dirty.count(url) > 0 || kept_index.count(url) > 0) continue;
        ASSIGN_OR_RETURN(const pb::Tier1Page* p, txn.FindPage(url));
        if (!IsContent(p) || p->group() != gid) continue;
        if (p->kept() || kept_index.count(p->duplicate_of()) == 0 || changed.count(p->duplicate_of()) > 0) {
          again.push_back(url);
        }
      }
      RETURN_IF_ERROR(decide_in_order(std::move(again)));
    }
    ASSIGN_OR_RETURN(pb::Tier1Group * g, txn.MutableGroup(gid));
    g->set_kept_set(true);
    if (!std::equal(kept.begin(), kept.end(), g->kept().begin(), g->kept().end())) {
      g->clear_kept();
      for (const std::string& k : kept) g->add_kept(k);
    }
  }
  if (decisions > 0) txn.AddCounter("kept_decisions", static_cast<int64_t>(decisions));
  if (compares > 0) txn.AddCounter("kept_compares", static_cast<int64_t>(compares));
  if (fetches > 0) txn.AddCounter("kept_fetches", static_cast<int64_t>(fetches));
  if (scans > 0) txn.AddCounter("kept_scans", static_cast<int64_t>(scans));
  if (fulls > 0) txn.AddCounter("kept_recomputed", static_cast<int64_t>(fulls));
  return Status::Ok();
}

}  // namespace neardup::tier1
