// Tier1::Apply (tier1/tier1.h): a classified batch and Tier 2's matches applied to the groups, the
// gone pages removed and Cases 1-3 of the paper's Section 5.1, then one atomic commit; its steps
// are Tier1::BatchApply's (apply_records.cc), the matches' index BatchMatches. With it,
// the group edits Apply is made of, which Repair (repair.cc) uses too: a page leaving its group,
// moving pages with the pages redirecting to them, merging groups, and bringing the touched
// groups' winners up to date.
#include "tier1/tier1.h"

#include <algorithm>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tier1/tier1_internal.h"

namespace neardup::tier1 {
namespace {

Candidate CandidateOf(const std::string& url, const pb::Tier1Page& p) {
  return Candidate{url, p.popularity(), p.crawled() && p.redirect_to().empty()};
}

// The group's market winners as one comparable string (market and URL of each, in order).
std::string WinnersKey(const pb::Tier1Group& g) {
  std::string k;
  for (const auto& mw : g.market_winners()) {
    k += mw.market();
    k += '\0';
    k += MarketWinnerUrl(g, mw);
    k += '\0';
  }
  return k;
}

// The progress row committed with a batch: `progress` with the batch's Tier 2 removals.
std::string ProgressWithRemovals(const pb::Tier1Progress& progress, const ApplyOutcome& outcome) {
  pb::Tier1Progress p = progress;
  for (const auto& [url, cell] : outcome.tier2_removals) {
    auto* r = p.add_last_batch_removals();
    r->set_url(url);
    r->set_cell(cell);
  }
  return p.SerializeAsString();
}

}  // namespace

// ---- The group edits: leaving, moves, merges, winners -------------------------------------------

Status Tier1::RedirectClosure(GroupStore::Txn& txn, const std::string& url, std::vector<std::string>* out) {
  out->assign(1, url);
  std::vector<std::string> sources;
  RETURN_IF_ERROR(txn.Redirectors(url, &sources));
  if (sources.empty()) return Status::Ok();  // most pages: nobody redirects to them, no set to build
  std::unordered_set<std::string> seen{url};
  for (size_t k = 0;;) {
    for (std::string& s : sources) {
      if (seen.insert(s).second) out->push_back(std::move(s));
    }
    if (++k == out->size()) return Status::Ok();
    RETURN_IF_ERROR(txn.Redirectors((*out)[k], &sources));
  }
}

Status Tier1::LeaveGroup(GroupStore::Txn& txn, const std::string& url, const pb::Tier1Page& rec, Touched* touched) {
  const uint64_t from = rec.group();
  KeptWorkOf(from);  // its kept list is checked: a kept page leaving has its pointers decided again
  ASSIGN_OR_RETURN(pb::Tier1Group * src, txn.MutableGroup(from));
  txn.RemoveMember(from, url);
  src->set_members(src->members() > 0 ? src->members() - 1 : 0);
  if (rec.rejected()) src->set_rejections(src->rejections() > 0 ? src->rejections() - 1 : 0);
  if (src->members() == 0) {
    txn.DeleteGroup(from);
    touched->groups.erase(from);
  } else if (IsMarketWinner(*src, url)) {
    touched->groups[from].full = true;
  }
  return Status::Ok();
}

Status Tier1::MovePages(GroupStore::Txn& txn, const std::vector<std::string>& pages, uint64_t /*from*/,
                        uint64_t to, Touched* touched, bool keep_dropped) {
  ASSIGN_OR_RETURN(pb::Tier1Group * dest, txn.MutableGroup(to));
  for (const std::string& url : pages) {
    ASSIGN_OR_RETURN(pb::Tier1Page * rec, txn.MutablePage(url));
    const uint64_t from = rec->group();
    if (from == to) continue;
    if (from != 0) {
      RETURN_IF_ERROR(LeaveGroup(txn, url, *rec, touched));
      txn.AddCounter("moves", 1);
    }
    rec->set_rejected(false);
    rec->set_group(to);
    // Decided again in its new group, unless its kept page moves with it (a merge).
    if (!keep_dropped || rec->duplicate_of().empty()) KeptWorkOf(to).pages.push_back(url);
    txn.AddMember(to, url);
    dest->set_members(dest->members() + 1);
    touched->groups[to].added.push_back(url);
  }
  return Status::Ok();
}

Status Tier1::NoteWinnerContent(GroupStore::Txn& txn, const std::string& url, uint64_t group) {
  if (group == 0) return Status::Ok();
  ASSIGN_OR_RETURN(const pb::Tier1Group* g, txn.FindGroup(group));
  if (g != nullptr && IsMarketWinner(*g, url)) reverify_.push_back(group);
  return Status::Ok();
}

Status Tier1::MergeGroups(GroupStore::Txn& txn, uint64_t from, uint64_t into, Touched* touched) {
  if (from == into) return Status::Ok();
  std::vector<std::string> members;
  RETURN_IF_ERROR(txn.Members(from, &members));
  // With a kept set, its dropped pages keep pointing at their kept pages, which move along; only
  // the kept ones are decided again against the group they join.
  ASSIGN_OR_RETURN(const pb::Tier1Group* fg, txn.FindGroup(from));
  const bool keep_dropped = fg != nullptr && fg->kept_set();
  RETURN_IF_ERROR(MovePages(txn, members, from, into, touched, keep_dropped));
  reverify_.push_back(into);  // the pages moved were verified against their old group's winner
  txn.AddCounter("merges", 1);
  return Status::Ok();
}

Status Tier1::RecomputeWinners(GroupStore::Txn& txn, uint64_t group, std::vector<std::string> members) {
  if (members.empty()) RETURN_IF_ERROR(txn.Members(group, &members));
  ASSIGN_OR_RETURN(pb::Tier1Group * g, txn.MutableGroup(group));
  if (members.empty()) {
    txn.DeleteGroup(group);
    return Status::Ok();
  }
  static const pb::Tier1Page kNoRecord;
  std::vector<Candidate> cands;
  std::vector<std::string> markets;
  for (size_t i = 0; i < members.size(); ++i) {
    ASSIGN_OR_RETURN(const pb::Tier1Page* p, txn.FindPage(members[i]));
    const pb::Tier1Page& page = p != nullptr ? *p : kNoRecord;
    cands.push_back(CandidateOf(members[i], page));
    if (!page.market().empty()) markets.push_back(page.market());
  }
  std::sort(markets.begin(), markets.end());
  markets.erase(std::unique(markets.begin(), markets.end()), markets.end());
  // The best for a market, the incumbent (a member with content) raised by the hysteresis margin.
  auto best_of = [&](std::string_view market, const std::string& incumbent) -> const std::string& {
    size_t i = incumbent.empty() ? members.size() : 0;
    while (i < members.size() && members[i] != incumbent) ++i;
    if (i == members.size() || !cands[i].has_content) return members[BestOf(options_.rules, cands, market)];
    const Candidate plain = cands[i];
    cands[i] = Incumbent(options_.rules, plain);
    const size_t best = BestOf(options_.rules, cands, market);
    cands[i] = plain;
    return members[best];
  };
  std::vector<std::pair<std::string, std::string>> incumbents;  // market -> its winner
  for (const auto& mw : g->market_winners()) incumbents.emplace_back(mw.market(), MarketWinnerUrl(*g, mw));
  const std::string old = g->winner();
  const std::string old_markets = g->market_winners().empty() ? std::string() : WinnersKey(*g);
  g->set_winner(best_of("", old));
  g->set_members(members.size());
  g->clear_market_winners();
  for (const std::string& m : markets) {
    auto* mw = g->add_market_winners();
    mw->set_market(m);
    auto inc = std::find_if(incumbents.begin(), incumbents.end(), [&](const auto& e) { return e.first == m; });
    const std::string& best = best_of(m, inc == incumbents.end() ? std::string() : inc->second);
    if (best != g->winner()) mw->set_url(best);
  }
  if (!old.empty() && old != g->winner()) txn.AddCounter("winner_changes", 1);
  if (old != g->winner() || old_markets != (g->market_winners().empty() ? std::string() : WinnersKey(*g))) {
    reverify_.push_back(group);
  }
  return Status::Ok();
}

Status Tier1::UpdateWinners(GroupStore::Txn& txn, Touched* touched) {
  for (auto& [group_id, entry] : touched->groups) {
    const auto gid = group_id;  // a copy: clang 14 does not let a lambda capture a structured binding
    KeptWorkOf(gid);  // a new winner is kept
    ASSIGN_OR_RETURN(const pb::Tier1Group* found, txn.FindGroup(gid));
    if (found == nullptr) continue;
    bool full = entry.full || found->winner().empty();
    // A member bringing a market the group has no winner for needs every member ranked for it.
    std::vector<std::pair<std::string, const pb::Tier1Page*>> added;
    for (const std::string& url : entry.added) {
      ASSIGN_OR_RETURN(const pb::Tier1Page* p, txn.FindPage(url));
      if (p == nullptr || p->group() != gid) continue;
      added.emplace_back(url, p);
      if (!p->market().empty()) {
        bool known = false;
        for (const auto& mw : found->market_winners()) known = known || mw.market() == p->market();
        if (!known) full = true;
      }
    }
    if (full) {
      // Only a market new to the group: its winner is still a member, so when it and the pages
      // added are as many as the group's members, they are all of them (most often a page
      // joining a group of one), and the member list needs no scan of the store.
      std::vector<std::string> known;
      if (!entry.full && !found->winner().empty()) {
        known.push_back(found->winner());
        for (const auto& a : added) known.push_back(a.first);
        std::sort(known.begin(), known.end());
        known.erase(std::unique(known.begin(), known.end()), known.end());
        if (known.size() != found->members()) known.clear();
      }
      RETURN_IF_ERROR(RecomputeWinners(txn, gid, std::move(known)));
      continue;
    }
    if (added.empty()) continue;
    ASSIGN_OR_RETURN(pb::Tier1Group * g, txn.MutableGroup(gid));
    auto best = [&](const std::string& current, std::string_view market) -> StatusOr<std::string> {
      ASSIGN_OR_RETURN(const pb::Tier1Page* cp, txn.FindPage(current));
      std::string win = current;
      Candidate wc = cp != nullptr ? CandidateOf(current, *cp) : Candidate{current, 0, false};
      if (cp != nullptr && cp->group() == gid && wc.has_content) wc = Incumbent(options_.rules, wc);
      for (const auto& [url, p] : added) {
        const Candidate c = CandidateOf(url, *p);
        if (Better(options_.rules, c, wc, market)) {
          win = url;
          wc = Candidate{win, p->popularity(), c.has_content};
        }
      }
      return win;
    };
    const std::string old = g->winner();
    const std::string old_markets = g->market_winners().empty() ? std::string() : WinnersKey(*g);
    ASSIGN_OR_RETURN(std::string w, best(old, ""));
    if (w != old) {
      g->set_winner(w);
      txn.AddCounter("winner_changes", 1);
    }
    for (auto& mw : *g->mutable_market_winners()) {
      ASSIGN_OR_RETURN(std::string m, best(mw.url().empty() ? old : mw.url(), mw.market()));
      if (m == w) mw.clear_url();
      else mw.set_url(m);
    }
    if (w != old || old_markets != (g->market_winners().empty() ? std::string() : WinnersKey(*g))) {
      reverify_.push_back(gid);
    }
  }
  touched->groups.clear();
  return Status::Ok();
}

// ---- Gone pages ---------------------------------------------------------------------------------

Status Tier1::ApplyGone(GroupStore::Txn& txn, const std::string& url, Touched* touched, ApplyOutcome* outcome) {
  ASSIGN_OR_RETURN(const pb::Tier1Page* found, txn.FindPage(url));
  if (found == nullptr || !found->crawled()) {
    // Never seen, or a redirect target never crawled (already a placeholder): nothing to remove.
    ++outcome->gone_unknown;
    txn.AddCounter("gone_unknown", 1);
    return Status::Ok();
  }
  ++outcome->gone;
  txn.AddCounter("gone", 1);
  const pb::Tier1Page old = *found;
  if (old.has_signature()) outcome->tier2_removals.emplace_back(url, old.home_cell());
  if (!old.redirect_to().empty()) txn.RemoveRedirect(old.redirect_to(), url);
  std::vector<std::string> closure;
  RETURN_IF_ERROR(RedirectClosure(txn, url, &closure));
  if (closure.size() == 1) {  // nobody redirects to it: it leaves, record and all
    if (old.group() != 0) RETURN_IF_ERROR(LeaveGroup(txn, url, old, touched));
    return txn.DeletePage(url);
  }
  // Pages redirect to it: it stays for them, a placeholder as for a target never crawled, and they
  // stay with it (a redirecting page shares its target's group).
  const uint64_t gid = old.group();
  if (old.rejected() && gid != 0) {
    ASSIGN_OR_RETURN(pb::Tier1Group * g, txn.MutableGroup(gid));
    g->set_rejections(g->rejections() > 0 ? g->rejections() - 1 : 0);
  }
  ASSIGN_OR_RETURN(pb::Tier1Page * rec, txn.MutablePage(url));
  rec->Clear();
  rec->set_group(gid);
  ASSIGN_OR_RETURN(const pb::Tier1Group* g, txn.FindGroup(gid));
  if (g != nullptr && g->members() == closure.size()) {  // they are the whole group: it stays theirs
    touched->groups[gid].full = true;  // the page can no longer be its winner
    return Status::Ok();
  }
  // The rest of the group stays where it is (not recomputed, as Case 1 leaves it).
  const uint64_t into = txn.NewGroupId();
  ++outcome->new_groups;
  return MovePages(txn, closure, gid, into, touched);
}

// ---- Apply: the batch, in two steps ------------------------------------------------------------

Status Tier1::Apply(std::span<const PageUpdate> batch, std::span<const Classification> classes,
                    const Tier2Matches& matches, const pb::Tier1Progress* progress, ApplyOutcome* outcome) {
  *outcome = ApplyOutcome();
  if (classes.size() != batch.size()) return InvalidArgument("Tier1::Apply: classes and batch differ in size");
  RETURN_IF_ERROR(Flush());  // queries' cached records must not outlive this batch
  kept_work_.clear();        // what a failed Apply left
  // What Flush's repairs queued is this batch's Reverify's, with what this batch queues.
  flushed_ = false;
  reverify_.insert(reverify_.end(), deferred_reverify_.begin(), deferred_reverify_.end());
  deferred_reverify_.clear();
  ASSIGN_OR_RETURN(const BatchMatches indexed, BatchMatches::Build(batch, classes, matches));

  // A failed Apply must not leave half a batch in the working set.
  struct DiscardOnError {
    GroupStore::Txn* txn;
    bool armed = true;
    ~DiscardOnError() { if (armed) txn->Discard(); }
  } guard{&txn_};
  BatchApply step(this, batch, classes, &indexed, outcome);
  // 1. The records in input order, each as a batch of its own would apply it; then the winners of
  // the groups the batch touched, once.
  for (size_t i = 0; i < batch.size(); ++i) RETURN_IF_ERROR(step.Record(i));
  RETURN_IF_ERROR(step.UpdateGroups());
  // 2. Each page's route, and the kept sets.
  RETURN_IF_ERROR(step.UpdateRoutesAndKeptSets());
  if (progress != nullptr) txn_.PutMeta("progress", ProgressWithRemovals(*progress, *outcome));
  txn_.AddCounter("batches", 1);
  guard.armed = false;
  Status s = CommitWorkingSet(/*durable=*/true);
  batch_signatures_.clear();
  return s;
}

}  // namespace neardup::tier1
