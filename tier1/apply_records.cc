// Tier1::BatchApply (tier1/tier1_internal.h): Apply's steps for one batch, its records one after
// another (kept, decided by Tier 2, redirects; gone pages are Tier1::ApplyGone, apply.cc), then
// the winners, the routes and the kept sets.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tier1/tier1_internal.h"

namespace neardup::tier1 {
namespace {

constexpr int kMaxRedirectHops = 100000;

// The end of the chain u.url -> u.redirect_to -> ...: its last page, or the last before a cycle
// closes (*cycle set then).
StatusOr<std::string> RedirectChainEnd(GroupStore::Txn& txn, const PageUpdate& u, bool* cycle) {
  *cycle = false;
  std::unordered_set<std::string> visited{u.url};
  std::string end = u.url, cur = u.redirect_to;
  for (int hop = 0; hop < kMaxRedirectHops; ++hop) {
    if (!visited.insert(cur).second) {
      *cycle = true;
      break;
    }
    end = cur;
    ASSIGN_OR_RETURN(const pb::Tier1Page* p, txn.FindPage(cur));
    if (p == nullptr || p->redirect_to().empty()) break;
    cur = p->redirect_to();
  }
  return end;
}

}  // namespace

Tier1::BatchApply::BatchApply(Tier1* t1, std::span<const PageUpdate> batch, std::span<const Classification> classes,
                              const BatchMatches* matches, ApplyOutcome* outcome)
    : t1_(*t1), txn_(t1->txn_), batch_(batch), classes_(classes), matches_(*matches), outcome_(outcome),
      done_(batch.size(), false) {}

Status Tier1::BatchApply::Record(size_t i) {
  switch (classes_[i]) {
    case Classification::kUnchanged:
    case Classification::kFastPath:
      RETURN_IF_ERROR(ApplyKept(i));
      break;
    case Classification::kGone: {
      // The pages before it met it (and may have joined its group), the pages after it find it
      // gone, and a redirect to it finds it gone, or a placeholder, as a target never crawled.
      ASSIGN_OR_RETURN(const pb::Tier1Page* gone, txn_.FindPage(batch_[i].url));
      if (gone != nullptr) NoteContentLeft(*gone);
      RETURN_IF_ERROR(t1_.ApplyGone(txn_, batch_[i].url, &touched_, outcome_));
      break;
    }
    case Classification::kTier2:
    case Classification::kEmpty:
      RETURN_IF_ERROR(ApplyDecided(i));
      break;
    case Classification::kRedirect:
      RETURN_IF_ERROR(ApplyRedirect(i));
      break;
    case Classification::kSuperseded:
      break;
  }
  done_[i] = true;
  return Status::Ok();
}

Status Tier1::BatchApply::SetContent(pb::Tier1Page* rec, const PageUpdate& u) {
  uint64_t rejection_group = 0;
  if (rec->rejected() && rec->content_digest() != u.signature->content_digest()) {
    rejection_group = rec->group();
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
  return DropRejection(rejection_group);
}

Status Tier1::BatchApply::DropRejection(uint64_t gid) {
  if (gid == 0) return Status::Ok();
  ASSIGN_OR_RETURN(pb::Tier1Group * g, txn_.MutableGroup(gid));
  g->set_rejections(g->rejections() > 0 ? g->rejections() - 1 : 0);
  return Status::Ok();
}

// ---- Kept pages ----------------------------------------------------------------------------------

Status Tier1::BatchApply::ApplyKept(size_t i) {
  const PageUpdate& u = batch_[i];
  ASSIGN_OR_RETURN(pb::Tier1Page * rec, txn_.MutablePage(u.url));
  const bool rank_changed = rec->popularity() != u.popularity || rec->market() != u.market;
  // A fast-path page is stored again, in its cell: it leaves the old one. An unchanged page is
  // not stored again, so it is not removed either; its cell changes only when a move split the
  // cell it was in, whose parts stay on that shard until the move copies them
  // (pipeline/store_move.h).
  if (classes_[i] == Classification::kFastPath && rec->has_signature() && rec->home_cell() != u.home_cell) {
    outcome_->tier2_removals.emplace_back(u.url, rec->home_cell());
  }
  const bool content_changed = rec->content_digest() != u.signature->content_digest();
  RETURN_IF_ERROR(SetContent(rec, u));
  if (content_changed) RETURN_IF_ERROR(t1_.NoteWinnerContent(txn_, u.url, rec->group()));
  if (rank_changed) {
    ASSIGN_OR_RETURN(const pb::Tier1Group* g, txn_.FindGroup(rec->group()));
    if (g != nullptr) {
      if (IsMarketWinner(*g, u.url)) touched_.groups[rec->group()].full = true;
      else touched_.groups[rec->group()].added.push_back(u.url);
    }
  }
  txn_.AddCounter(classes_[i] == Classification::kUnchanged ? "unchanged" : "fast_path", 1);
  return Status::Ok();
}

// ---- Pages Tier 2 decided (Cases 1 and 2) ---------------------------------------------------------

// A page kept by the fast path is in its group already: a kTier2 page after it that matches its
// new version joins that group (one before it met its resident version).
Status Tier1::BatchApply::ApplyDecided(size_t i) {
  const PageUpdate& u = batch_[i];
  ASSIGN_OR_RETURN(const pb::Tier1Page* found, txn_.FindPage(u.url));
  const bool existed = found != nullptr;
  const pb::Tier1Page old = existed ? *found : pb::Tier1Page();
  NoteContentLeft(old);
  if (existed && !old.redirect_to().empty()) txn_.RemoveRedirect(old.redirect_to(), u.url);
  if (existed && old.has_signature() && (classes_[i] == Classification::kEmpty || old.home_cell() != u.home_cell)) {
    outcome_->tier2_removals.emplace_back(u.url, old.home_cell());
  }
  ASSIGN_OR_RETURN(auto targets, MatchedGroups(i));
  if (existed && old.group() != 0 && old.content_digest() != u.signature->content_digest()) {
    RETURN_IF_ERROR(t1_.NoteWinnerContent(txn_, u.url, old.group()));
  }
  ASSIGN_OR_RETURN(pb::Tier1Page * rec, txn_.MutablePage(u.url));
  RETURN_IF_ERROR(SetContent(rec, u));
  RETURN_IF_ERROR(t1_.RedirectClosure(txn_, u.url, &moving_));
  if (!targets.empty()) {
    ASSIGN_OR_RETURN(const uint64_t into, MergeMatchedGroups(&targets));
    ASSIGN_OR_RETURN(const pb::Tier1Page* now, txn_.FindPage(u.url));
    if (existed && now->group() != into && now->group() != 0) ++outcome_->moves;
    if (now->group() == into) {  // it stays (MovePages skips it), but its rank may have changed
      ASSIGN_OR_RETURN(const pb::Tier1Group* ig, txn_.FindGroup(into));
      if (ig != nullptr && IsMarketWinner(*ig, u.url)) touched_.groups[into].full = true;
      else touched_.groups[into].added.push_back(u.url);
    }
    RETURN_IF_ERROR(t1_.MovePages(txn_, moving_, 0, into, &touched_));
  } else {
    // No match: it stays when its group holds only it and its redirectors, else it forms a new one.
    bool keep = false;
    if (existed && old.group() != 0) {
      ASSIGN_OR_RETURN(const pb::Tier1Group* g, txn_.FindGroup(old.group()));
      keep = g != nullptr && g->members() == moving_.size();
    }
    if (keep) {
      touched_.groups[old.group()].added.push_back(u.url);
    } else {
      const uint64_t gid = txn_.NewGroupId();
      ++outcome_->new_groups;
      if (existed && old.group() != 0) ++outcome_->moves;
      RETURN_IF_ERROR(t1_.MovePages(txn_, moving_, 0, gid, &touched_));
    }
  }
  txn_.AddCounter(classes_[i] == Classification::kEmpty ? "empty" : "tier2", 1);
  return Status::Ok();
}

StatusOr<std::vector<std::pair<double, uint64_t>>> Tier1::BatchApply::MatchedGroups(size_t i) {
  const PageUpdate& u = batch_[i];
  std::vector<std::pair<double, uint64_t>> targets;
  for (const auto& [url, sim] : matches_.resident(i)) {
    if (url == u.url || matches_.Stale(url, i)) continue;
    // Only the group matters here: most matches are old pages the cache no longer holds.
    ASSIGN_OR_RETURN(const uint64_t gid, txn_.ContentGroupOf(url));
    if (gid != 0) targets.emplace_back(sim, gid);
  }
  for (const auto& [j, sim] : matches_.partners(i)) {
    if (!done_[j]) continue;  // the later page of the pair links them
    ASSIGN_OR_RETURN(const pb::Tier1Page* p, txn_.FindPage(batch_[j].url));
    if (p != nullptr && p->group() != 0) targets.emplace_back(sim, p->group());
  }
  return targets;
}

StatusOr<uint64_t> Tier1::BatchApply::MergeMatchedGroups(std::vector<std::pair<double, uint64_t>>* targets) {
  // Best match first; the first of the biggest groups absorbs the others.
  std::sort(targets->begin(), targets->end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  uint64_t into = (*targets)[0].second;
  uint64_t into_members = 0;
  std::vector<uint64_t> groups;
  for (const auto& [sim, gid] : *targets) {
    if (std::find(groups.begin(), groups.end(), gid) != groups.end()) continue;
    groups.push_back(gid);
    ASSIGN_OR_RETURN(const pb::Tier1Group* g, txn_.FindGroup(gid));
    const uint64_t m = g == nullptr ? 0 : g->members();
    if (m > into_members) into = gid, into_members = m;
  }
  for (uint64_t gid : groups) {
    if (gid == into) continue;
    RETURN_IF_ERROR(t1_.MergeGroups(txn_, gid, into, &touched_));
    ++outcome_->merges;
  }
  return into;
}

// ---- Redirects (Case 3) ---------------------------------------------------------------------------

Status Tier1::BatchApply::ApplyRedirect(size_t i) {
  const PageUpdate& u = batch_[i];
  ASSIGN_OR_RETURN(const pb::Tier1Page* found, txn_.FindPage(u.url));
  const pb::Tier1Page old = found != nullptr ? *found : pb::Tier1Page();
  NoteContentLeft(old);
  if (old.has_signature()) outcome_->tier2_removals.emplace_back(u.url, old.home_cell());
  if (!old.redirect_to().empty() && old.redirect_to() != u.redirect_to) txn_.RemoveRedirect(old.redirect_to(), u.url);
  txn_.AddRedirect(u.redirect_to, u.url);
  RETURN_IF_ERROR(RecordRedirect(u));
  ASSIGN_OR_RETURN(const pb::Tier1Page* target, txn_.FindPage(u.redirect_to));
  if (target == nullptr) {  // a target never crawled: a placeholder in a group of its own
    const uint64_t gid = txn_.NewGroupId();
    ++outcome_->new_groups;
    RETURN_IF_ERROR(t1_.MovePages(txn_, {u.redirect_to}, 0, gid, &touched_));
  }
  // Follow q1 -> q2 -> ... -> qt; a cycle stops at the last page before it closes.
  bool cycle = false;
  ASSIGN_OR_RETURN(const std::string end, RedirectChainEnd(txn_, u, &cycle));
  if (cycle) {
    ++outcome_->redirect_cycles;
    txn_.AddCounter("redirect_cycles", 1);
  }
  ASSIGN_OR_RETURN(const pb::Tier1Page* endpoint, txn_.FindPage(end));
  uint64_t into = endpoint->group();
  if (into == 0) {  // a new page whose chain closes on itself (a -> a): a group of its own
    into = txn_.NewGroupId();
    ++outcome_->new_groups;
  }
  RETURN_IF_ERROR(t1_.RedirectClosure(txn_, u.url, &moving_));
  ASSIGN_OR_RETURN(const pb::Tier1Page* now, txn_.FindPage(u.url));
  if (now->group() != 0 && now->group() != into) ++outcome_->moves;
  RETURN_IF_ERROR(t1_.MovePages(txn_, moving_, 0, into, &touched_));
  txn_.AddCounter("redirects", 1);
  return Status::Ok();
}

Status Tier1::BatchApply::RecordRedirect(const PageUpdate& u) {
  ASSIGN_OR_RETURN(pb::Tier1Page * rec, txn_.MutablePage(u.url));
  if (rec->rejected()) RETURN_IF_ERROR(DropRejection(rec->group()));
  const uint64_t gid = rec->group();
  rec->Clear();
  rec->set_group(gid);
  rec->set_crawled(true);
  rec->set_redirect_to(u.redirect_to);
  rec->set_popularity(u.popularity);
  rec->set_market(u.market);
  rec->set_fetched_at_ms(u.fetched_at_ms);
  if (gid != 0) touched_.groups[gid].full = true;  // it can no longer be the winner
  return Status::Ok();
}

// ---- After the records ----------------------------------------------------------------------------

Status Tier1::BatchApply::UpdateGroups() {
  RETURN_IF_ERROR(t1_.UpdateWinners(txn_, &touched_));
  for (const uint64_t gid : content_left_) {
    ASSIGN_OR_RETURN(const pb::Tier1Group* g, txn_.FindGroup(gid));
    if (g == nullptr || g->members() <= 1) continue;
    t1_.reverify_.push_back(gid);
    if (g->rejections() > 0) t1_.repair_queue_.push_back(gid);
  }
  return Status::Ok();
}

Status Tier1::BatchApply::UpdateRoutesAndKeptSets() {
  std::unordered_map<std::string, const pb::PageSignature*> signatures;
  for (size_t i = 0; i < batch_.size(); ++i) {
    if (classes_[i] == Classification::kSuperseded || classes_[i] == Classification::kGone) continue;
    ASSIGN_OR_RETURN(const pb::Tier1Page* p, txn_.FindPage(batch_[i].url));
    if (p == nullptr) continue;
    if (const uint32_t route = static_cast<uint32_t>(classes_[i]) + 1; p->route() != route) {
      ASSIGN_OR_RETURN(pb::Tier1Page * rec, txn_.MutablePage(batch_[i].url));
      rec->set_route(route);
    }
    if (classes_[i] == Classification::kUnchanged || p->group() == 0) continue;
    t1_.KeptWorkOf(p->group()).pages.push_back(batch_[i].url);
    if (batch_[i].signature != nullptr && batch_[i].signature->shingles_size() > 0) {
      signatures[batch_[i].url] = batch_[i].signature;
    }
  }
  return t1_.UpdateKeptSets(txn_, &signatures);
}

}  // namespace neardup::tier1
