// Tier1's status queries (tier1/tier1.h): Query, the crawler's read-only question, and
// QueryAndRecord, the ingest path's acknowledgement, which keeps the verification it computed and
// counts a rejection against the group (written by Flush, in repair.cc).
#include "tier1/tier1.h"

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

}  // namespace neardup::tier1
