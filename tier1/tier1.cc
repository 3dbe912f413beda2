#include "tier1/tier1.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "document/shingle.h"

namespace neardup::tier1 {
namespace {

constexpr int kMaxRedirectHops = 100000;

double Similarity(const pb::PageSignature& a, const pb::PageSignature& b) {
  const std::span<const uint64_t> x(a.shingles().data(), static_cast<size_t>(a.shingles_size()));
  const std::span<const uint64_t> y(b.shingles().data(), static_cast<size_t>(b.shingles_size()));
  return Jaccard(x, y);
}

bool Similar(const pb::PageSignature& a, const pb::PageSignature& b, double threshold, double* sim) {
  const std::span<const uint64_t> x(a.shingles().data(), static_cast<size_t>(a.shingles_size()));
  const std::span<const uint64_t> y(b.shingles().data(), static_cast<size_t>(b.shingles_size()));
  const size_t overlap = Overlap(x, y);
  const size_t uni = x.size() + y.size() - overlap;
  *sim = uni == 0 ? 0.0 : static_cast<double>(overlap) / static_cast<double>(uni);
  return JaccardAtLeast(overlap, x.size(), y.size(), threshold);
}

Candidate CandidateOf(const std::string& url, const pb::Tier1Page& p) {
  return Candidate{url, p.popularity(), p.crawled() && p.redirect_to().empty()};
}

bool IsMarketWinner(const pb::Tier1Group& g, const std::string& url) {
  if (g.winner() == url) return true;
  for (const auto& mw : g.market_winners()) {
    if (mw.url() == url) return true;
  }
  return false;
}

struct UnionFind {
  std::vector<uint32_t> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0u); }
  uint32_t Find(uint32_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void Union(uint32_t a, uint32_t b) {
    a = Find(a), b = Find(b);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);
  }
};

}  // namespace

const char* RouteName(Route r) {
  switch (r) {
    case Route::kUnchanged: return "unchanged";
    case Route::kFastPath: return "fast_path";
    case Route::kTier2: return "tier2";
    case Route::kEmpty: return "empty";
    case Route::kRedirect: return "redirect";
    case Route::kSuperseded: return "superseded";
  }
  return "?";
}

const char* StatusName(StatusAnswer::Kind k) {
  switch (k) {
    case StatusAnswer::kUnknown: return "unknown";
    case StatusAnswer::kPending: return "pending";
    case StatusAnswer::kUnique: return "unique";
    case StatusAnswer::kWinner: return "winner";
    case StatusAnswer::kDuplicate: return "duplicate";
  }
  return "?";
}

Tier1Options Tier1OptionsFromConfig(const pb::Tier1Config& config, double threshold) {
  Tier1Options o;
  o.threshold = threshold;
  o.rules = WinnerRulesFromConfig(config);
  o.fast_path = config.fast_path();
  o.repair_rejection_share = config.repair_rejection_share();
  o.repair_min_rejections = config.repair_min_rejections();
  o.repair_max_members = config.repair_max_members();
  o.cache_records = config.cache_records();
  return o;
}

// Groups whose winners must be brought up to date before a commit.
struct Tier1::Touched {
  struct Entry {
    bool full = false;                 // recompute over all members
    std::vector<std::string> added;    // members that joined or changed (compare with the winners)
  };
  std::map<uint64_t, Entry> groups;
};

Tier1::Tier1(GroupStore* store, SignatureSource* source, Tier1Options options)
    : store_(store), source_(source), options_(std::move(options)), txn_(store) {}

StatusOr<pb::PageSignature> Tier1::FetchSignature(const std::string& url, const pb::Tier1Page& page) {
  if (auto it = batch_signatures_.find(url); it != batch_signatures_.end()) return *it->second;
  if (!page.has_signature()) return NotFound("page " + url + " has no stored signature");
  return source_->Fetch(url, page.home_cell());
}

// ---- Classify ----------------------------------------------------------------------------------

Status Tier1::Classify(std::span<const PageUpdate> batch, std::vector<Route>* routes, std::vector<bool>* changed) {
  batch_signatures_.clear();
  RETURN_IF_ERROR(Flush());  // queries' changes first: Classify reads through the working set
  routes->assign(batch.size(), Route::kTier2);
  if (changed != nullptr) changed->assign(batch.size(), false);
  std::unordered_map<std::string_view, size_t> last;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i].url.empty()) return InvalidArgument("batch page " + std::to_string(i) + " has no URL");
    if (batch[i].redirect_to.empty() && batch[i].signature == nullptr) {
      return InvalidArgument("batch page " + std::to_string(i) + " (" + batch[i].url + ") has neither content nor a redirect");
    }
    auto [it, fresh] = last.emplace(batch[i].url, i);
    if (!fresh) {
      (*routes)[it->second] = Route::kSuperseded;
      it->second = i;
    }
  }
  batch_signatures_.clear();
  for (size_t i = 0; i < batch.size(); ++i) {
    if ((*routes)[i] != Route::kSuperseded && batch[i].redirect_to.empty() && batch[i].signature->shingles_size() > 0) {
      batch_signatures_[batch[i].url] = batch[i].signature;
    }
  }
  // Only Classify reads them: queries and repairs before Apply must see the stored versions, and
  // the caller's batch may be gone by then.
  struct ClearOnExit {
    std::unordered_map<std::string, const pb::PageSignature*>* m;
    ~ClearOnExit() { m->clear(); }
  } clear_on_exit{&batch_signatures_};
  for (size_t i = 0; i < batch.size(); ++i) {
    Route& route = (*routes)[i];
    if (route == Route::kSuperseded) continue;
    const PageUpdate& u = batch[i];
    if (!u.redirect_to.empty()) { route = Route::kRedirect; continue; }
    if (u.signature->shingles_size() == 0) { route = Route::kEmpty; continue; }
    route = Route::kTier2;
    ASSIGN_OR_RETURN(const pb::Tier1Page* page, txn_.FindPage(u.url));
    if (page == nullptr) continue;
    if (!page->crawled() || !page->redirect_to().empty() || !page->has_signature()) continue;
    if (page->content_digest() == u.signature->content_digest()) { route = Route::kUnchanged; continue; }
    if (changed != nullptr) (*changed)[i] = true;
    if (!options_.fast_path) continue;
    ASSIGN_OR_RETURN(const pb::Tier1Group* group, txn_.FindGroup(page->group()));
    if (group == nullptr) continue;
    // The representative: the winner's signature. When q is the winner, its previous version.
    StatusOr<pb::PageSignature> rep = NotFound("");
    if (group->winner() == u.url) {
      rep = source_->Fetch(u.url, page->home_cell());
    } else {
      ASSIGN_OR_RETURN(const pb::Tier1Page* winner_page, txn_.FindPage(group->winner()));
      if (winner_page == nullptr) continue;
      rep = FetchSignature(group->winner(), *winner_page);
    }
    if (!rep.ok()) {
      if (rep.status().code() == StatusCode::kNotFound) continue;
      return rep.status();
    }
    double sim = 0;
    if (Similar(*u.signature, *rep, options_.threshold, &sim)) route = Route::kFastPath;
  }
  return Status::Ok();
}

// ---- Apply -------------------------------------------------------------------------------------

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

Status Tier1::MovePages(GroupStore::Txn& txn, const std::vector<std::string>& pages, uint64_t /*from*/,
                        uint64_t to, Touched* touched) {
  ASSIGN_OR_RETURN(pb::Tier1Group * dest, txn.MutableGroup(to));
  for (const std::string& url : pages) {
    ASSIGN_OR_RETURN(pb::Tier1Page * rec, txn.MutablePage(url));
    const uint64_t from = rec->group();
    if (from == to) continue;
    if (from != 0) {
      ASSIGN_OR_RETURN(pb::Tier1Group * src, txn.MutableGroup(from));
      txn.RemoveMember(from, url);
      src->set_members(src->members() > 0 ? src->members() - 1 : 0);
      if (rec->rejected()) src->set_rejections(src->rejections() > 0 ? src->rejections() - 1 : 0);
      if (src->members() == 0) {
        txn.DeleteGroup(from);
        touched->groups.erase(from);
      } else if (IsMarketWinner(*src, url)) {
        touched->groups[from].full = true;
      }
      txn.AddCounter("moves", 1);
    }
    rec->set_rejected(false);
    rec->set_group(to);
    txn.AddMember(to, url);
    dest->set_members(dest->members() + 1);
    touched->groups[to].added.push_back(url);
  }
  return Status::Ok();
}

Status Tier1::MergeGroups(GroupStore::Txn& txn, uint64_t from, uint64_t into, Touched* touched) {
  if (from == into) return Status::Ok();
  std::vector<std::string> members;
  RETURN_IF_ERROR(txn.Members(from, &members));
  RETURN_IF_ERROR(MovePages(txn, members, from, into, touched));
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
  return Status::Ok();
}

Status Tier1::UpdateWinners(GroupStore::Txn& txn, Touched* touched) {
  for (auto& [gid, entry] : touched->groups) {
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
  }
  touched->groups.clear();
  return Status::Ok();
}

Status Tier1::Apply(std::span<const PageUpdate> batch, std::span<const Route> routes, const Tier2Matches& matches,
                    const pb::Tier1Progress* progress, ApplyOutcome* outcome) {
  *outcome = ApplyOutcome();
  if (routes.size() != batch.size()) return InvalidArgument("Tier1::Apply: routes and batch differ in size");
  RETURN_IF_ERROR(Flush());  // queries' cached records must not outlive this batch
  const size_t n = batch.size();
  std::vector<std::vector<std::pair<std::string_view, double>>> resident(n);
  std::vector<std::vector<std::pair<uint32_t, double>>> partners(n);
  for (const auto& r : matches.resident) {
    if (r.page >= n || routes[r.page] != Route::kTier2) {
      return InvalidArgument("Tier 2 match for batch page " + std::to_string(r.page) + " that was not sent to Tier 2");
    }
    resident[r.page].emplace_back(r.url, r.similarity);
  }
  for (const auto& m : matches.in_batch) {
    const auto compared = [&](uint32_t k) { return routes[k] == Route::kTier2 || routes[k] == Route::kFastPath; };
    if (m.a >= n || m.b >= n || !compared(m.a) || !compared(m.b) ||
        (routes[m.a] != Route::kTier2 && routes[m.b] != Route::kTier2)) {
      return InvalidArgument("in-batch match (" + std::to_string(m.a) + ", " + std::to_string(m.b) +
                             ") not between a page sent to Tier 2 and another sent to it or kept by the fast path");
    }
    partners[m.a].emplace_back(m.b, m.similarity);
    partners[m.b].emplace_back(m.a, m.similarity);
  }
  // Resident versions of URLs whose new version is in this batch (re-compared, kept by the fast
  // path with new content, emptied or turned into a redirect) are stale: matches with them do not
  // count. The new versions of kTier2 and kFastPath pages meet the batch's kTier2 pages in the
  // in-batch join instead.
  std::unordered_set<std::string_view> stale;
  for (size_t i = 0; i < n; ++i) {
    if (routes[i] == Route::kTier2 || routes[i] == Route::kFastPath || routes[i] == Route::kEmpty ||
        routes[i] == Route::kRedirect) {
      stale.insert(batch[i].url);
    }
  }

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
  auto drop_rejection = [&](uint64_t gid) -> Status {
    if (gid == 0) return Status::Ok();
    ASSIGN_OR_RETURN(pb::Tier1Group * g, txn.MutableGroup(gid));
    g->set_rejections(g->rejections() > 0 ? g->rejections() - 1 : 0);
    return Status::Ok();
  };

  // 1. Pages Tier 1 kept: refresh their records; a changed rank may change the winner.
  for (size_t i = 0; i < n; ++i) {
    if (routes[i] != Route::kUnchanged && routes[i] != Route::kFastPath) continue;
    const PageUpdate& u = batch[i];
    ASSIGN_OR_RETURN(pb::Tier1Page * rec, txn.MutablePage(u.url));
    const bool rank_changed = rec->popularity() != u.popularity || rec->market() != u.market;
    if (rec->has_signature() && rec->home_cell() != u.home_cell) {
      outcome->tier2_removals.emplace_back(u.url, rec->home_cell());
    }
    uint64_t rejection_group = 0;
    set_content(rec, u, &rejection_group);
    RETURN_IF_ERROR(drop_rejection(rejection_group));
    if (rank_changed) {
      ASSIGN_OR_RETURN(const pb::Tier1Group* g, txn.FindGroup(rec->group()));
      if (g != nullptr) {
        if (IsMarketWinner(*g, u.url)) touched.groups[rec->group()].full = true;
        else touched.groups[rec->group()].added.push_back(u.url);
      }
    }
    txn.AddCounter(routes[i] == Route::kUnchanged ? "unchanged" : "fast_path", 1);
  }

  // 2. Pages Tier 2 decided, in input order (Cases 1 and 2). A page kept by the fast path is in
  // its group already: a kTier2 page matching its new version joins that group.
  std::vector<bool> done(n, false);
  for (size_t i = 0; i < n; ++i) done[i] = routes[i] == Route::kFastPath;
  std::vector<std::string> moving;
  for (size_t i = 0; i < n; ++i) {
    if (routes[i] != Route::kTier2 && routes[i] != Route::kEmpty) continue;
    const PageUpdate& u = batch[i];
    ASSIGN_OR_RETURN(const pb::Tier1Page* found, txn.FindPage(u.url));
    const bool existed = found != nullptr;
    const pb::Tier1Page old = existed ? *found : pb::Tier1Page();
    if (existed && !old.redirect_to().empty()) txn.RemoveRedirect(old.redirect_to(), u.url);
    if (existed && old.has_signature() && (routes[i] == Route::kEmpty || old.home_cell() != u.home_cell)) {
      outcome->tier2_removals.emplace_back(u.url, old.home_cell());
    }
    // The groups of its duplicates, best match first.
    std::vector<std::pair<double, uint64_t>> targets;
    for (const auto& [url, sim] : resident[i]) {
      if (url == u.url || stale.count(url) > 0) continue;
      // Only the group matters here: most matches are old pages the cache no longer holds.
      ASSIGN_OR_RETURN(const uint64_t gid, txn.ContentGroupOf(url));
      if (gid != 0) targets.emplace_back(sim, gid);
    }
    for (const auto& [j, sim] : partners[i]) {
      if (!done[j]) continue;  // the later page of the pair links them
      ASSIGN_OR_RETURN(const pb::Tier1Page* p, txn.FindPage(batch[j].url));
      if (p != nullptr && p->group() != 0) targets.emplace_back(sim, p->group());
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
    done[i] = true;
    txn.AddCounter(routes[i] == Route::kEmpty ? "empty" : "tier2", 1);
  }

  // 3. Redirects (Case 3), after the content pages they may point to.
  for (size_t i = 0; i < n; ++i) {
    if (routes[i] != Route::kRedirect) continue;
    const PageUpdate& u = batch[i];
    ASSIGN_OR_RETURN(const pb::Tier1Page* found, txn.FindPage(u.url));
    const pb::Tier1Page old = found != nullptr ? *found : pb::Tier1Page();
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
  }

  RETURN_IF_ERROR(UpdateWinners(txn, &touched));
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

// ---- Queries -----------------------------------------------------------------------------------

Status Tier1::Query(const std::string& url, const pb::PageSignature* current, StatusAnswer* out) {
  return Answer(url, current, /*record=*/false, out);
}

Status Tier1::QueryAndRecord(const std::string& url, StatusAnswer* out) {
  return Answer(url, nullptr, /*record=*/true, out);
}

Status Tier1::Answer(const std::string& url, const pb::PageSignature* current, bool record, StatusAnswer* out) {
  *out = StatusAnswer();
  if (txn_.cached() > options_.cache_records) {
    // Bound the working set: commit the verification results so far (which evicts the records
    // least recently used).
    // Repairs wait for Flush(), so when they happen does not depend on the cache's size.
    RETURN_IF_ERROR(CommitWorkingSet(/*durable=*/false));
  }
  if (pending_.count(url) > 0) {
    out->status = StatusAnswer::kPending;
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(const pb::Tier1Page* page, txn_.FindPage(url));
  if (page == nullptr) return Status::Ok();
  out->group = page->group();
  if (!page->crawled()) return Status::Ok();  // a redirect target never crawled
  ASSIGN_OR_RETURN(const pb::Tier1Group* group, txn_.FindGroup(page->group()));
  if (group == nullptr) return Corruption("page " + url + " names group " + std::to_string(page->group()) + ", which does not exist");
  out->group_members = group->members();
  std::string winner = group->winner();
  for (const auto& mw : group->market_winners()) {
    if (!page->market().empty() && mw.market() == page->market()) winner = MarketWinnerUrl(*group, mw);
  }
  out->winner_url = winner;
  // A redirect is a duplicate by redirection, even when its group has no content to win it.
  if (!page->redirect_to().empty()) {
    out->status = StatusAnswer::kDuplicate;
    out->redirect = true;
    out->verified = true;
    return Status::Ok();
  }
  if (winner == url) {
    out->status = group->members() <= 1 ? StatusAnswer::kUnique : StatusAnswer::kWinner;
    out->verified = true;
    out->similarity_to_winner = 1.0;
    return Status::Ok();
  }
  if (!page->has_signature()) {
    out->status = StatusAnswer::kUnique;  // no words: similar to nothing
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(const pb::Tier1Page* wp, txn_.FindPage(winner));
  if (wp == nullptr || !wp->has_signature()) {
    out->status = StatusAnswer::kUnique;
    return Status::Ok();
  }
  const bool stored_version = current == nullptr || current->content_digest() == page->content_digest();
  double sim = 0;
  if (stored_version && page->verified_winner() == winner && page->verified_winner_digest() == wp->content_digest() &&
      page->verified_digest() == page->content_digest()) {
    sim = page->similarity_to_winner();
  } else {
    ASSIGN_OR_RETURN(pb::PageSignature wsig, FetchSignature(winner, *wp));
    pb::PageSignature own;
    if (current == nullptr) {
      ASSIGN_OR_RETURN(own, FetchSignature(url, *page));
      current = &own;
    }
    sim = Similarity(*current, wsig);
    if (record) txn_.AddCounter("verifications", 1);
    if (record && stored_version) {
      const std::string wdigest = wp->content_digest();
      ASSIGN_OR_RETURN(pb::Tier1Page * rec, txn_.MutablePage(url));
      rec->set_verified_winner(winner);
      rec->set_verified_winner_digest(wdigest);
      rec->set_verified_digest(rec->content_digest());
      rec->set_similarity_to_winner(sim);
      page = rec;
    }
  }
  out->verified = true;
  out->similarity_to_winner = sim;
  const bool ok = sim >= options_.threshold - 1e-9;
  out->status = ok ? StatusAnswer::kDuplicate : StatusAnswer::kUnique;
  if (record && stored_version && ok == page->rejected()) {
    // The verdict on this version changed: count (or uncount) it against the group.
    ASSIGN_OR_RETURN(pb::Tier1Page * rec, txn_.MutablePage(url));
    ASSIGN_OR_RETURN(pb::Tier1Group * g, txn_.MutableGroup(rec->group()));
    rec->set_rejected(!ok);
    if (!ok) {
      g->set_rejections(g->rejections() + 1);
      txn_.AddCounter("rejections", 1);
      // A candidate: whether it is due depends on its content members, which Flush counts.
      repair_queue_.push_back(rec->group());
    } else {
      g->set_rejections(g->rejections() > 0 ? g->rejections() - 1 : 0);
    }
  }
  return Status::Ok();
}

Status Tier1::Flush(std::vector<RepairReport>* repairs) {
  std::sort(repair_queue_.begin(), repair_queue_.end());
  repair_queue_.erase(std::unique(repair_queue_.begin(), repair_queue_.end()), repair_queue_.end());
  for (uint64_t gid : repair_queue_) {
    ASSIGN_OR_RETURN(const bool due, RepairDue(txn_, gid));
    if (!due) continue;
    RepairReport r;
    Status s = RepairIn(txn_, gid, &r);
    if (s.code() == StatusCode::kNotFound) continue;
    RETURN_IF_ERROR(s);
    if (repairs != nullptr) repairs->push_back(r);
  }
  repair_queue_.clear();
  // Caches and repairs are recomputable, and the next batch's write syncs the log anyway.
  return CommitWorkingSet(/*durable=*/false);
}

Status Tier1::CommitWorkingSet(bool durable) {
  RETURN_IF_ERROR(txn_.Commit(durable, /*keep_cache=*/true));
  // Past the bound, the records least recently used go: a quarter of the cache at least, so that
  // the scan over it is paid once every so many records read.
  if (txn_.cached() > options_.cache_records) return txn_.Evict(options_.cache_records / 4 * 3);
  return Status::Ok();
}

StatusOr<bool> Tier1::RepairDue(GroupStore::Txn& txn, uint64_t group) {
  ASSIGN_OR_RETURN(const pb::Tier1Group* g, txn.FindGroup(group));
  if (g == nullptr || g->rejections() == 0) return false;
  const double rejections = static_cast<double>(g->rejections());
  // The threshold for c content members: min(max(repair_min_rejections, share * c), max(c - 1, 1)).
  // It never decreases with c, so once it passes the rejections for the members counted so far,
  // the rest need not be read.
  auto threshold = [&](uint64_t c) {
    const double share = std::max<double>(options_.repair_min_rejections,
                                          options_.repair_rejection_share * static_cast<double>(c));
    return std::min(share, static_cast<double>(std::max<uint64_t>(c, 2) - 1));
  };
  std::vector<std::string> members;
  RETURN_IF_ERROR(txn.Members(group, &members));
  uint64_t content = 0;
  for (const std::string& url : members) {
    ASSIGN_OR_RETURN(const pb::Tier1Page* p, txn.FindPage(url));
    if (p == nullptr || !p->has_signature()) continue;
    if (threshold(++content) > rejections) return false;
  }
  return rejections >= threshold(content);
}

Status Tier1::Repair(uint64_t group, RepairReport* report) {
  RETURN_IF_ERROR(Flush());
  RETURN_IF_ERROR(RepairIn(txn_, group, report));
  return txn_.Commit();
}

Status Tier1::RepairIn(GroupStore::Txn& txn, uint64_t group, RepairReport* report) {
  *report = RepairReport();
  report->group = group;
  ASSIGN_OR_RETURN(const pb::Tier1Group* g, txn.FindGroup(group));
  if (g == nullptr) return NotFound("group " + std::to_string(group) + " does not exist");
  std::vector<std::string> members;
  RETURN_IF_ERROR(txn.Members(group, &members));
  report->members = members.size();
  std::vector<pb::Tier1Page> pages(members.size());
  std::unordered_map<std::string, uint32_t> index;
  std::vector<uint32_t> content;
  for (uint32_t i = 0; i < members.size(); ++i) {
    ASSIGN_OR_RETURN(const pb::Tier1Page* p, txn.FindPage(members[i]));
    if (p != nullptr) pages[i] = *p;
    index.emplace(members[i], i);
    if (pages[i].has_signature()) content.push_back(i);
  }
  if (content.size() > options_.repair_max_members) {
    report->skipped = 1;
    txn.AddCounter("repairs_skipped", 1);
    spdlog::warn("tier1: group {} has {} content members, over repair_max_members {}: not repaired", group,
                 content.size(), options_.repair_max_members);
    return Status::Ok();
  }
  std::vector<pb::PageSignature> sigs(content.size());
  for (size_t k = 0; k < content.size(); ++k) {
    ASSIGN_OR_RETURN(sigs[k], FetchSignature(members[content[k]], pages[content[k]]));
  }
  UnionFind uf(members.size());
  double sim = 0;
  for (size_t a = 0; a < content.size(); ++a) {
    for (size_t b = a + 1; b < content.size(); ++b) {
      if (Similar(sigs[a], sigs[b], options_.threshold, &sim)) uf.Union(content[a], content[b]);
    }
  }
  // Redirecting members stay with the page their chain ends at (when it is in this group).
  for (uint32_t i = 0; i < members.size(); ++i) {
    if (pages[i].redirect_to().empty()) continue;
    auto it = index.find(pages[i].redirect_to());
    if (it != index.end()) uf.Union(i, it->second);
  }
  std::map<uint32_t, std::vector<std::string>> components;
  for (uint32_t i = 0; i < members.size(); ++i) components[uf.Find(i)].push_back(members[i]);
  std::vector<std::vector<std::string>> parts;
  for (auto& [root, urls] : components) parts.push_back(std::move(urls));
  std::stable_sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  report->components = parts.size();
  Touched touched;
  for (size_t k = 1; k < parts.size(); ++k) {
    RETURN_IF_ERROR(MovePages(txn, parts[k], group, txn.NewGroupId(), &touched));
  }
  for (auto& [gid, e] : touched.groups) e.full = true;
  touched.groups[group].full = true;
  // Verification starts afresh for every page of the repaired groups.
  for (const std::string& url : members) {
    ASSIGN_OR_RETURN(pb::Tier1Page * rec, txn.MutablePage(url));
    rec->set_rejected(false);
    rec->clear_verified_winner();
  }
  for (auto& [gid, e] : touched.groups) {
    ASSIGN_OR_RETURN(pb::Tier1Group * tg, txn.MutableGroup(gid));
    tg->set_rejections(0);
  }
  ASSIGN_OR_RETURN(pb::Tier1Group * mg, txn.MutableGroup(group));
  mg->set_repairs(mg->repairs() + 1);
  RETURN_IF_ERROR(UpdateWinners(txn, &touched));
  txn.AddCounter("repairs", 1);
  txn.AddCounter("repair_splits", static_cast<int64_t>(parts.size()) - 1);
  return Status::Ok();
}

}  // namespace neardup::tier1
