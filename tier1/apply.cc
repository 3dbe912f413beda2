// Tier1::Apply (tier1/tier1.h): a classified batch and Tier 2's matches applied to the groups, the
// gone pages removed and Cases 1-3 of the paper's Section 5.1, then one atomic commit. With it,
// the group edits Apply is made of, which Repair (repair.cc) uses too: a page leaving its group,
// moving pages with the pages redirecting to them, merging groups, and bringing the touched
// groups' winners up to date.
#include "tier1/tier1.h"

#include <algorithm>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tier1/tier1_internal.h"

namespace neardup::tier1 {
namespace {

constexpr int kMaxRedirectHops = 100000;

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

bool IsMarketWinner(const pb::Tier1Group& g, const std::string& url) {
  if (g.winner() == url) return true;
  for (const auto& mw : g.market_winners()) {
    if (mw.url() == url) return true;
  }
  return false;
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
  const size_t n = batch.size();
  std::vector<std::vector<std::pair<std::string_view, double>>> resident(n);
  std::vector<std::vector<std::pair<uint32_t, double>>> partners(n);
  for (size_t i = 0; i < n; ++i) {
    if ((classes[i] == Classification::kGone) != (batch[i].gone && classes[i] != Classification::kSuperseded)) {
      return InvalidArgument("batch page " + std::to_string(i) + " (" + batch[i].url + ") is " +
                             (batch[i].gone ? "gone but not classified kGone" : "classified kGone but not gone"));
    }
  }
  for (const auto& r : matches.resident) {
    if (r.page >= n || classes[r.page] != Classification::kTier2) {
      return InvalidArgument("Tier 2 match for batch page " + std::to_string(r.page) + " that was not sent to Tier 2");
    }
    resident[r.page].emplace_back(r.url, r.similarity);
  }
  for (const auto& m : matches.in_batch) {
    const auto compared = [&](uint32_t k) {
      return classes[k] == Classification::kTier2 || classes[k] == Classification::kFastPath;
    };
    if (m.a >= n || m.b >= n || !compared(m.a) || !compared(m.b) ||
        (classes[m.a] != Classification::kTier2 && classes[m.b] != Classification::kTier2)) {
      return InvalidArgument("in-batch match (" + std::to_string(m.a) + ", " + std::to_string(m.b) +
                             ") not between a page sent to Tier 2 and another sent to it or kept by the fast path");
    }
    partners[m.a].emplace_back(m.b, m.similarity);
    partners[m.b].emplace_back(m.a, m.similarity);
  }
  // A batch is applied as its records would be one after another, so that where batches (and
  // inputs) are cut does not change the groups: each page meets every other URL as the crawl had
  // it at the page's own place. A URL whose record in this batch (re-compared, kept by the fast
  // path with new content, emptied, turned into a redirect or gone) comes before the page was
  // replaced by then: a match with its resident version is stale and does not count (the page
  // meets the new version in the in-batch join instead, or nothing when it has none). A URL whose
  // record comes after the page is still its resident version there: that match counts, and the
  // URL's own record is applied afterwards (it may leave the group the page joined through it).
  // replaced_at: each URL's record in the batch (its last: earlier ones are superseded).
  std::unordered_map<std::string_view, size_t> replaced_at;
  for (size_t i = 0; i < n; ++i) {
    if (classes[i] == Classification::kTier2 || classes[i] == Classification::kFastPath ||
        classes[i] == Classification::kEmpty || classes[i] == Classification::kRedirect ||
        classes[i] == Classification::kGone) {
      replaced_at[batch[i].url] = i;
    }
  }
  auto stale_for = [&](std::string_view url, size_t page) {
    const auto it = replaced_at.find(url);
    return it != replaced_at.end() && it->second < page;
  };

  GroupStore::Txn& txn = txn_;
  // A failed Apply must not leave half a batch in the working set.
  struct DiscardOnError {
    GroupStore::Txn* txn;
    bool armed = true;
    ~DiscardOnError() { if (armed) txn->Discard(); }
  } guard{&txn_};
  Touched touched;
  auto set_content = [&](pb::Tier1Page* rec, const PageUpdate& u, uint64_t* group_of_rejection) {
    if (rec->rejected() && rec->content_digest() != u.signature->content_digest()) {
      *group_of_rejection = rec->group();
      rec->set_rejected(false);
    }
    rec->set_crawled(true);
    rec->clear_redirect_to();
    rec->set_content_digest(u.signature->content_digest());
    rec->set_has_signature(u.signature->shingles_size() > 0);
    rec->set_home_cell(u.home_cell);
    rec->set_shingles(static_cast<uint32_t>(u.signature->shingles_size()));
    *rec->mutable_length_vector() = u.signature->length_vector();
    rec->set_popularity(u.popularity);
    rec->set_market(u.market);
    rec->set_fetched_at_ms(u.fetched_at_ms);
  };
  // The groups a page with content left (or stayed in without it): checked again after the batch.
  // Their losers are verified again (Reverify: a repair that kept the group whole may have counted
  // on the page that left, and started their verification afresh), and a group with rejections may
  // be due for a repair now that it counts fewer content members (the repair threshold falls with
  // them), though no new rejection queues it.
  std::vector<uint64_t> content_left;
  auto note_content_left = [&](const pb::Tier1Page& old) {
    if (old.has_signature() && old.group() != 0) content_left.push_back(old.group());
  };
  auto drop_rejection = [&](uint64_t gid) -> Status {
    if (gid == 0) return Status::Ok();
    ASSIGN_OR_RETURN(pb::Tier1Group * g, txn.MutableGroup(gid));
    g->set_rejections(g->rejections() > 0 ? g->rejections() - 1 : 0);
    return Status::Ok();
  };

  std::vector<bool> done(n, false);  // applied: an in-batch pair is linked by its later page
  std::vector<std::string> moving;
  // A page Tier 1 kept: its record refreshed; a changed rank may change the winner.
  auto apply_kept = [&](size_t i) -> Status {
    const PageUpdate& u = batch[i];
    ASSIGN_OR_RETURN(pb::Tier1Page * rec, txn.MutablePage(u.url));
    const bool rank_changed = rec->popularity() != u.popularity || rec->market() != u.market;
    // A fast-path page is stored again, in its cell: it leaves the old one. An unchanged page is
    // not stored again, so it is not removed either; its cell changes only when a move split the
    // cell it was in, whose parts stay on that shard until the move copies them
    // (pipeline/store_move.h).
    if (classes[i] == Classification::kFastPath && rec->has_signature() && rec->home_cell() != u.home_cell) {
      outcome->tier2_removals.emplace_back(u.url, rec->home_cell());
    }
    const bool content_changed = rec->content_digest() != u.signature->content_digest();
    uint64_t rejection_group = 0;
    set_content(rec, u, &rejection_group);
    RETURN_IF_ERROR(drop_rejection(rejection_group));
    if (content_changed) RETURN_IF_ERROR(NoteWinnerContent(txn, u.url, rec->group()));
    if (rank_changed) {
      ASSIGN_OR_RETURN(const pb::Tier1Group* g, txn.FindGroup(rec->group()));
      if (g != nullptr) {
        if (IsMarketWinner(*g, u.url)) touched.groups[rec->group()].full = true;
        else touched.groups[rec->group()].added.push_back(u.url);
      }
    }
    txn.AddCounter(classes[i] == Classification::kUnchanged ? "unchanged" : "fast_path", 1);
    return Status::Ok();
  };

  // A page Tier 2 decided (Cases 1 and 2). A page kept by the fast path is in its group already:
  // a kTier2 page after it that matches its new version joins that group (one before it met its
  // resident version).
  auto apply_decided = [&](size_t i) -> Status {
    const PageUpdate& u = batch[i];
    ASSIGN_OR_RETURN(const pb::Tier1Page* found, txn.FindPage(u.url));
    const bool existed = found != nullptr;
    const pb::Tier1Page old = existed ? *found : pb::Tier1Page();
    note_content_left(old);
    if (existed && !old.redirect_to().empty()) txn.RemoveRedirect(old.redirect_to(), u.url);
    if (existed && old.has_signature() && (classes[i] == Classification::kEmpty || old.home_cell() != u.home_cell)) {
      outcome->tier2_removals.emplace_back(u.url, old.home_cell());
    }
    // The groups of its duplicates, best match first.
    std::vector<std::pair<double, uint64_t>> targets;
    for (const auto& [url, sim] : resident[i]) {
      if (url == u.url || stale_for(url, i)) continue;
      // Only the group matters here: most matches are old pages the cache no longer holds.
      ASSIGN_OR_RETURN(const uint64_t gid, txn.ContentGroupOf(url));
      if (gid != 0) targets.emplace_back(sim, gid);
    }
    for (const auto& [j, sim] : partners[i]) {
      if (!done[j]) continue;  // the later page of the pair links them
      ASSIGN_OR_RETURN(const pb::Tier1Page* p, txn.FindPage(batch[j].url));
      if (p != nullptr && p->group() != 0) targets.emplace_back(sim, p->group());
    }
    if (existed && old.group() != 0 && old.content_digest() != u.signature->content_digest()) {
      RETURN_IF_ERROR(NoteWinnerContent(txn, u.url, old.group()));
    }
    ASSIGN_OR_RETURN(pb::Tier1Page * rec, txn.MutablePage(u.url));
    uint64_t rejection_group = 0;
    set_content(rec, u, &rejection_group);
    RETURN_IF_ERROR(drop_rejection(rejection_group));
    RETURN_IF_ERROR(RedirectClosure(txn, u.url, &moving));
    if (!targets.empty()) {
      // Transitive clustering: every group it matches becomes one; the biggest absorbs the rest.
      std::sort(targets.begin(), targets.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first > b.first : a.second < b.second;
      });
      uint64_t into = targets[0].second;
      uint64_t into_members = 0;
      std::vector<uint64_t> groups;
      for (const auto& [sim, gid] : targets) {
        if (std::find(groups.begin(), groups.end(), gid) != groups.end()) continue;
        groups.push_back(gid);
        ASSIGN_OR_RETURN(const pb::Tier1Group* g, txn.FindGroup(gid));
        const uint64_t m = g == nullptr ? 0 : g->members();
        if (m > into_members) into = gid, into_members = m;
      }
      for (uint64_t gid : groups) {
        if (gid == into) continue;
        RETURN_IF_ERROR(MergeGroups(txn, gid, into, &touched));
        ++outcome->merges;
      }
      ASSIGN_OR_RETURN(const pb::Tier1Page* now, txn.FindPage(u.url));
      if (existed && now->group() != into && now->group() != 0) ++outcome->moves;
      if (now->group() == into) {  // it stays (MovePages skips it), but its rank may have changed
        ASSIGN_OR_RETURN(const pb::Tier1Group* ig, txn.FindGroup(into));
        if (ig != nullptr && IsMarketWinner(*ig, u.url)) touched.groups[into].full = true;
        else touched.groups[into].added.push_back(u.url);
      }
      RETURN_IF_ERROR(MovePages(txn, moving, 0, into, &touched));
    } else {
      bool keep = false;
      if (existed && old.group() != 0) {
        ASSIGN_OR_RETURN(const pb::Tier1Group* g, txn.FindGroup(old.group()));
        keep = g != nullptr && g->members() == moving.size();
      }
      if (keep) {
        touched.groups[old.group()].added.push_back(u.url);
      } else {
        const uint64_t gid = txn.NewGroupId();
        ++outcome->new_groups;
        if (existed && old.group() != 0) ++outcome->moves;
        RETURN_IF_ERROR(MovePages(txn, moving, 0, gid, &touched));
      }
    }
    txn.AddCounter(classes[i] == Classification::kEmpty ? "empty" : "tier2", 1);
    return Status::Ok();
  };

  // A redirect (Case 3): q1 and its redirectors join the group its chain ends in.
  auto apply_redirect = [&](size_t i) -> Status {
    const PageUpdate& u = batch[i];
    ASSIGN_OR_RETURN(const pb::Tier1Page* found, txn.FindPage(u.url));
    const pb::Tier1Page old = found != nullptr ? *found : pb::Tier1Page();
    note_content_left(old);
    if (old.has_signature()) outcome->tier2_removals.emplace_back(u.url, old.home_cell());
    if (!old.redirect_to().empty() && old.redirect_to() != u.redirect_to) txn.RemoveRedirect(old.redirect_to(), u.url);
    txn.AddRedirect(u.redirect_to, u.url);
    {
      ASSIGN_OR_RETURN(pb::Tier1Page * rec, txn.MutablePage(u.url));
      if (rec->rejected()) RETURN_IF_ERROR(drop_rejection(rec->group()));
      const uint64_t gid = rec->group();
      rec->Clear();
      rec->set_group(gid);
      rec->set_crawled(true);
      rec->set_redirect_to(u.redirect_to);
      rec->set_popularity(u.popularity);
      rec->set_market(u.market);
      rec->set_fetched_at_ms(u.fetched_at_ms);
      if (gid != 0) touched.groups[gid].full = true;  // it can no longer be the winner
    }
    ASSIGN_OR_RETURN(const pb::Tier1Page* target, txn.FindPage(u.redirect_to));
    if (target == nullptr) {  // a target never crawled: a placeholder in a group of its own
      const uint64_t gid = txn.NewGroupId();
      ++outcome->new_groups;
      RETURN_IF_ERROR(MovePages(txn, {u.redirect_to}, 0, gid, &touched));
    }
    // Follow q1 -> q2 -> ... -> qt; a cycle stops at the last page before it closes.
    std::unordered_set<std::string> visited{u.url};
    std::string end = u.url, cur = u.redirect_to;
    for (int hop = 0; hop < kMaxRedirectHops; ++hop) {
      if (!visited.insert(cur).second) {
        ++outcome->redirect_cycles;
        txn.AddCounter("redirect_cycles", 1);
        break;
      }
      end = cur;
      ASSIGN_OR_RETURN(const pb::Tier1Page* p, txn.FindPage(cur));
      if (p == nullptr || p->redirect_to().empty()) break;
      cur = p->redirect_to();
    }
    ASSIGN_OR_RETURN(const pb::Tier1Page* endpoint, txn.FindPage(end));
    uint64_t into = endpoint->group();
    if (into == 0) {  // a new page whose chain closes on itself (a -> a): a group of its own
      into = txn.NewGroupId();
      ++outcome->new_groups;
    }
    RETURN_IF_ERROR(RedirectClosure(txn, u.url, &moving));
    ASSIGN_OR_RETURN(const pb::Tier1Page* now, txn.FindPage(u.url));
    if (now->group() != 0 && now->group() != into) ++outcome->moves;
    RETURN_IF_ERROR(MovePages(txn, moving, 0, into, &touched));
    txn.AddCounter("redirects", 1);
    return Status::Ok();
  };

  // 1. The records in input order, each as a batch of its own would apply it (gone, kept, decided
  // by Tier 2, or a redirect): the next record meets the groups as they stand at its place. The
  // winners of the groups the batch touched are brought up to date once, after it (a group made
  // in this batch gets the plain order: its pages have no incumbent among them).
  for (size_t i = 0; i < n; ++i) {
    switch (classes[i]) {
      case Classification::kUnchanged:
      case Classification::kFastPath:
        RETURN_IF_ERROR(apply_kept(i));
        break;
      case Classification::kGone: {
        // The pages before it met it (and may have joined its group), the pages after it find it
        // gone, and a redirect to it finds it gone, or a placeholder, as a target never crawled.
        ASSIGN_OR_RETURN(const pb::Tier1Page* gone, txn.FindPage(batch[i].url));
        if (gone != nullptr) note_content_left(*gone);
        RETURN_IF_ERROR(ApplyGone(txn, batch[i].url, &touched, outcome));
        break;
      }
      case Classification::kTier2:
      case Classification::kEmpty:
        RETURN_IF_ERROR(apply_decided(i));
        break;
      case Classification::kRedirect:
        RETURN_IF_ERROR(apply_redirect(i));
        break;
      case Classification::kSuperseded:
        break;
    }
    done[i] = true;
  }
  RETURN_IF_ERROR(UpdateWinners(txn, &touched));
  for (const uint64_t gid : content_left) {
    ASSIGN_OR_RETURN(const pb::Tier1Group* g, txn.FindGroup(gid));
    if (g == nullptr || g->members() <= 1) continue;
    reverify_.push_back(gid);
    if (g->rejections() > 0) repair_queue_.push_back(gid);
  }
  // 2. Each page's route: how its latest record was classified (status answers give it). Kept
  // sets: the batch's pages with new content (or none now) are decided again in their groups,
  // with their new signatures (the shards store them only after this commit).
  std::unordered_map<std::string, const pb::PageSignature*> signatures;
  for (size_t i = 0; i < n; ++i) {
    if (classes[i] == Classification::kSuperseded || classes[i] == Classification::kGone) continue;
    ASSIGN_OR_RETURN(const pb::Tier1Page* p, txn.FindPage(batch[i].url));
    if (p == nullptr) continue;
    if (const uint32_t route = static_cast<uint32_t>(classes[i]) + 1; p->route() != route) {
      ASSIGN_OR_RETURN(pb::Tier1Page * rec, txn.MutablePage(batch[i].url));
      rec->set_route(route);
    }
    if (classes[i] == Classification::kUnchanged || p->group() == 0) continue;
    KeptWorkOf(p->group()).pages.push_back(batch[i].url);
    if (batch[i].signature != nullptr && batch[i].signature->shingles_size() > 0) {
      signatures[batch[i].url] = batch[i].signature;
    }
  }
  RETURN_IF_ERROR(UpdateKeptSets(txn, &signatures));
  if (progress != nullptr) {
    pb::Tier1Progress p = *progress;
    for (const auto& [url, cell] : outcome->tier2_removals) {
      auto* r = p.add_last_batch_removals();
      r->set_url(url);
      r->set_cell(cell);
    }
    txn.PutMeta("progress", p.SerializeAsString());
  }
  txn.AddCounter("batches", 1);
  guard.armed = false;
  Status s = CommitWorkingSet(/*durable=*/true);
  batch_signatures_.clear();
  return s;
}

}  // namespace neardup::tier1
