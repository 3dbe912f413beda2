// Tier1's status queries (tier1/tier1.h): Query, the crawler's read-only question, and
// QueryAndRecord, the ingest path's acknowledgement, which keeps the verification it computed and
// counts a rejection against the group (written by Flush, in repair.cc).
#include "tier1/tier1.h"

#include <algorithm>
#include <future>
#include <map>
#include <span>
#include <string>

#include "document/shingle.h"

namespace neardup::tier1 {
namespace {

double Similarity(const pb::PageSignature& a, const pb::PageSignature& b) {
  const std::span<const uint64_t> x(a.shingles().data(), static_cast<size_t>(a.shingles_size()));
  const std::span<const uint64_t> y(b.shingles().data(), static_cast<size_t>(b.shingles_size()));
  return Jaccard(x, y);
}

}  // namespace

Status Tier1::Query(const std::string& url, const pb::PageSignature* current, StatusAnswer* out) {
  return Answer(url, current, /*record=*/false, out);
}

Status Tier1::QueryAndRecord(const std::string& url, StatusAnswer* out) {
  return Answer(url, nullptr, /*record=*/true, out);
}

namespace {

// What Answer learnt beyond the answer: whether it computed a verification (not the cached one),
// on the stored version of the page, and against which winner version.
struct Verification {
  bool computed = false;
  bool stored_version = false;
  std::string winner_digest;
};

// The answer to a status query over a record source: Records has FindPage(url) ->
// StatusOr<const pb::Tier1Page*> (null when absent; pointers stay valid during the call),
// FindGroup(id) -> StatusOr<const pb::Tier1Group*>, Fetch(url, page) ->
// StatusOr<pb::PageSignature>, and FetchBoth(url_a, page_a, url_b, page_b, &a, &b) (the two
// Fetches, at once where that helps); with kUnverifiedWhenUnavailable, Unavailable from Fetch
// leaves the answer unverified (Tier 1's grouping) instead of failing.
template <bool kUnverifiedWhenUnavailable, typename Records>
Status AnswerVerified(Records& records, const std::string& url, const pb::PageSignature* current, double threshold,
                      StatusAnswer* out, Verification* v, const pb::Tier1Page** page_out,
                      const pb::Tier1Group** group_out) {
  ASSIGN_OR_RETURN(const pb::Tier1Page* page, records.FindPage(url));
  if (page == nullptr) return Status::Ok();
  out->group = page->group();
  if (page->route() > 0 && page->route() <= static_cast<uint32_t>(Classification::kGone) + 1) {
    out->route = static_cast<Classification>(page->route() - 1);
  }
  if (!page->crawled()) return Status::Ok();  // a redirect target never crawled
  ASSIGN_OR_RETURN(const pb::Tier1Group* group, records.FindGroup(page->group()));
  *page_out = page;
  *group_out = group;
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
  ASSIGN_OR_RETURN(const pb::Tier1Page* wp, records.FindPage(winner));
  if (wp == nullptr || !wp->has_signature()) {
    out->status = StatusAnswer::kUnique;
    return Status::Ok();
  }
  v->stored_version = current == nullptr || current->content_digest() == page->content_digest();
  double sim = 0;
  if (v->stored_version && page->verified_winner() == winner && page->verified_winner_digest() == wp->content_digest() &&
      page->verified_digest() == page->content_digest()) {
    sim = page->similarity_to_winner();
  } else {
    StatusOr<pb::PageSignature> wsig = Unavailable("not fetched"), own = Unavailable("not fetched");
    if (current != nullptr) {
      wsig = records.Fetch(winner, *wp);
      own = *current;
    } else {
      records.FetchBoth(winner, *wp, url, *page, &wsig, &own);
    }
    for (const Status& s : {wsig.status(), own.status()}) {
      if (kUnverifiedWhenUnavailable && s.code() == StatusCode::kUnavailable) {
        out->status = StatusAnswer::kDuplicate;  // Tier 1's grouping, not verified
        return Status::Ok();
      }
      RETURN_IF_ERROR(s);
    }
    sim = Similarity(*own, *wsig);
    v->computed = true;
    v->winner_digest = wp->content_digest();
  }
  out->verified = true;
  out->similarity_to_winner = sim;
  out->status = sim >= threshold - 1e-9 ? StatusAnswer::kDuplicate : StatusAnswer::kUnique;
  return Status::Ok();
}

// AnswerVerified, then the group's kept set (tier1/kept.cc) decides a stored content page's
// status: kept pages are unique (the winner winner), dropped ones duplicate of their kept page.
// Without a kept set, or for content given in the query, a duplicate is one of the winner.
template <bool kUnverifiedWhenUnavailable, typename Records>
Status AnswerFrom(Records& records, const std::string& url, const pb::PageSignature* current, double threshold,
                  StatusAnswer* out, Verification* v) {
  const pb::Tier1Page* page = nullptr;
  const pb::Tier1Group* group = nullptr;
  RETURN_IF_ERROR(AnswerVerified<kUnverifiedWhenUnavailable>(records, url, current, threshold, out, v, &page, &group));
  const bool stored = current == nullptr || (page != nullptr && current->content_digest() == page->content_digest());
  if (page != nullptr && group != nullptr && group->kept_set() && stored && page->redirect_to().empty() &&
      out->winner_url != url && page->has_signature()) {
    if (page->kept()) {
      out->status = StatusAnswer::kUnique;
    } else if (!page->duplicate_of().empty()) {
      out->status = StatusAnswer::kDuplicate;
      out->duplicate_of = page->duplicate_of();
      out->similarity_to_duplicate_of = page->similarity_to_kept();
    }
    return Status::Ok();
  }
  if (out->status == StatusAnswer::kDuplicate) {
    out->duplicate_of = out->winner_url;
    out->similarity_to_duplicate_of = out->redirect ? 1.0 : out->similarity_to_winner;
  }
  return Status::Ok();
}

}  // namespace

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
  struct TxnRecords {
    Tier1* t;
    StatusOr<const pb::Tier1Page*> FindPage(const std::string& u) { return t->txn_.FindPage(u); }
    StatusOr<const pb::Tier1Group*> FindGroup(uint64_t g) { return t->txn_.FindGroup(g); }
    StatusOr<pb::PageSignature> Fetch(const std::string& u, const pb::Tier1Page& p) { return t->FetchSignature(u, p); }
    void FetchBoth(const std::string& a, const pb::Tier1Page& pa, const std::string& b, const pb::Tier1Page& pb,
                   StatusOr<pb::PageSignature>* ra, StatusOr<pb::PageSignature>* rb) {
      *ra = Fetch(a, pa);  // the working set's source is used from one thread
      *rb = Fetch(b, pb);
    }
  } records{this};
  Verification v;
  RETURN_IF_ERROR(AnswerFrom<false>(records, url, current, options_.threshold, out, &v));
  if (!record || !out->verified || out->redirect || out->winner_url == url) return Status::Ok();
  if (v.computed) txn_.AddCounter("verifications", 1);
  if (!v.stored_version) return Status::Ok();
  if (v.computed) {
    ASSIGN_OR_RETURN(pb::Tier1Page * rec, txn_.MutablePage(url));
    rec->set_verified_winner(out->winner_url);
    rec->set_verified_winner_digest(v.winner_digest);
    rec->set_verified_digest(rec->content_digest());
    rec->set_similarity_to_winner(out->similarity_to_winner);
  }
  // Rejections are verifications against the winner (what repairs act on), whatever the kept set
  // answers.
  const bool ok = out->similarity_to_winner >= options_.threshold - 1e-9;
  ASSIGN_OR_RETURN(const pb::Tier1Page* page, txn_.FindPage(url));
  if (page != nullptr && ok == page->rejected()) {
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

Status Tier1::Reverify(ReverifyReport* report) {
  ReverifyReport r;
  RETURN_IF_ERROR(LoadTodo());
  // The groups stay in reverify_ (so in the todo row of a commit the working set's bound makes
  // meanwhile) until every one is done: a crash before then verifies them all again, which skips
  // the members already current.
  std::sort(reverify_.begin(), reverify_.end());
  reverify_.erase(std::unique(reverify_.begin(), reverify_.end()), reverify_.end());
  const std::vector<uint64_t> groups = reverify_;
  struct ClearOnExit {
    std::unordered_map<std::string, pb::PageSignature>* m;
    ~ClearOnExit() { m->clear(); }
  } clear_on_exit{&reverify_signatures_};
  for (uint64_t gid : groups) {
    if (options_.reverify_max_members == 0) break;
    ASSIGN_OR_RETURN(const pb::Tier1Group* found, txn_.FindGroup(gid));
    if (found == nullptr || found->members() <= 1) continue;
    if (found->members() > options_.reverify_max_members) {
      ++r.skipped;
      continue;
    }
    // The group's winners (default and per market), copied: recording changes the working set.
    // Each winner's signature is fetched once, when a member first needs it (a group whose members
    // are all current, as after a page left it, costs no fetch).
    const pb::Tier1Group g = *found;
    std::map<std::string, std::string> winner_digest;  // winner URL -> its content digest
    std::map<std::string, pb::Tier1Page> winner_page;  // winner URL -> its record, until fetched
    reverify_signatures_.clear();
    auto add_winner = [&](const std::string& w) -> Status {
      if (winner_digest.count(w) > 0) return Status::Ok();
      ASSIGN_OR_RETURN(const pb::Tier1Page* wp, txn_.FindPage(w));
      if (wp == nullptr || !wp->has_signature()) return Status::Ok();
      winner_digest[w] = wp->content_digest();
      winner_page[w] = *wp;
      return Status::Ok();
    };
    RETURN_IF_ERROR(add_winner(g.winner()));
    for (const auto& mw : g.market_winners()) RETURN_IF_ERROR(add_winner(MarketWinnerUrl(g, mw)));
    std::vector<std::string> members;
    RETURN_IF_ERROR(txn_.Members(gid, &members));
    ++r.groups;
    StatusAnswer a;
    for (const std::string& url : members) {
      if (winner_digest.count(url) > 0 || pending_.count(url) > 0) continue;
      ASSIGN_OR_RETURN(const pb::Tier1Page* p, txn_.FindPage(url));
      if (p == nullptr || !p->crawled() || !p->redirect_to().empty() || !p->has_signature()) continue;
      std::string winner = g.winner();
      for (const auto& mw : g.market_winners()) {
        if (!p->market().empty() && mw.market() == p->market()) winner = MarketWinnerUrl(g, mw);
      }
      auto wd = winner_digest.find(winner);
      if (wd == winner_digest.end()) continue;  // a winner without content: nothing to verify against
      if (p->verified_winner() == winner && p->verified_winner_digest() == wd->second &&
          p->verified_digest() == p->content_digest()) {
        continue;  // current already
      }
      if (auto wp = winner_page.find(winner); wp != winner_page.end()) {
        ASSIGN_OR_RETURN(reverify_signatures_[winner], FetchSignature(winner, wp->second));
        winner_page.erase(wp);
      }
      RETURN_IF_ERROR(Answer(url, nullptr, /*record=*/true, &a));
      ++r.verified;
    }
  }
  // Nothing queued groups meanwhile (queries record verifications and repair candidates only).
  reverify_.clear();
  if (r.verified > 0) txn_.AddCounter("reverifications", static_cast<int64_t>(r.verified));
  if (report != nullptr) *report = r;
  return Status::Ok();
}

Status AnswerCommitted(const GroupStore& store, SignatureSource* source, double threshold, const std::string& url,
                       const pb::PageSignature* current, StatusAnswer* out) {
  *out = StatusAnswer();
  struct CommittedRecords {
    const GroupStore& store;
    SignatureSource* source;
    std::map<std::string, pb::Tier1Page> pages;
    pb::Tier1Group group;
    StatusOr<const pb::Tier1Page*> FindPage(const std::string& u) {
      pb::Tier1Page p;
      Status s = store.GetPage(u, &p);
      if (s.code() == StatusCode::kNotFound) return static_cast<const pb::Tier1Page*>(nullptr);
      RETURN_IF_ERROR(s);
      return &(pages[u] = std::move(p));
    }
    StatusOr<const pb::Tier1Group*> FindGroup(uint64_t g) {
      Status s = store.GetGroup(g, &group);
      if (s.code() == StatusCode::kNotFound) return static_cast<const pb::Tier1Group*>(nullptr);
      RETURN_IF_ERROR(s);
      return &group;
    }
    StatusOr<pb::PageSignature> Fetch(const std::string& u, const pb::Tier1Page& p) {
      if (source == nullptr || !p.has_signature()) return Unavailable("no signature source");
      StatusOr<pb::PageSignature> sig = source->Fetch(u, p.home_cell());
      // A shard that cannot answer now, or a page between a batch's commit and its shard's (the
      // source has not stored it yet): the answer stays unverified.
      if (!sig.ok() && sig.status().code() != StatusCode::kInvalidArgument) return Unavailable(sig.status().message());
      return sig;
    }
    // The winner's and the page's signatures usually live on different shards (in a cluster,
    // other servers): both asked at once, a round trip apart instead of two.
    void FetchBoth(const std::string& a, const pb::Tier1Page& pa, const std::string& b, const pb::Tier1Page& pb,
                   StatusOr<pb::PageSignature>* ra, StatusOr<pb::PageSignature>* rb) {
      if (source == nullptr) {
        *ra = Fetch(a, pa);
        *rb = Fetch(b, pb);
        return;
      }
      auto second = std::async(std::launch::async, [&] { return Fetch(b, pb); });
      *ra = Fetch(a, pa);
      *rb = second.get();
    }
  } records{store, source, {}, {}};
  Verification v;
  // A commit between two reads can make a page name a group it just left: read again.
  Status s;
  for (int attempt = 0; attempt < 3; ++attempt) {
    *out = StatusAnswer();
    s = AnswerFrom<true>(records, url, current, threshold, out, &v);
    if (s.code() != StatusCode::kCorruption) break;
  }
  return s;
}

}  // namespace neardup::tier1
