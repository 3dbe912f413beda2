// Tier1::Classify: the fast path (tier1/tier1.h). Decides per page of a batch whether Tier 1
// keeps it (unchanged, or still similar to its group's representative) or Tier 2 decides.
#include "tier1/tier1.h"

#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tier1/tier1_internal.h"

namespace neardup::tier1 {

Status Tier1::Classify(std::span<const PageUpdate> batch, std::vector<Classification>* classes,
                       std::vector<bool>* changed) {
  batch_signatures_.clear();
  RETURN_IF_ERROR(Flush());  // queries' changes first: Classify reads through the working set
  classes->assign(batch.size(), Classification::kTier2);
  if (changed != nullptr) changed->assign(batch.size(), false);
  std::unordered_map<std::string_view, size_t> last;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i].url.empty()) return InvalidArgument("batch page " + std::to_string(i) + " has no URL");
    if (batch[i].gone) {
      if (!batch[i].redirect_to.empty() || batch[i].signature != nullptr) {
        return InvalidArgument("batch page " + std::to_string(i) + " (" + batch[i].url + ") is gone but has content or a redirect");
      }
    } else if (batch[i].redirect_to.empty() && batch[i].signature == nullptr) {
      return InvalidArgument("batch page " + std::to_string(i) + " (" + batch[i].url +
                             ") has neither content nor a redirect, and is not gone");
    }
    auto [it, fresh] = last.emplace(batch[i].url, i);
    if (!fresh) {
      (*classes)[it->second] = Classification::kSuperseded;
      it->second = i;
    }
  }
  batch_signatures_.clear();
  for (size_t i = 0; i < batch.size(); ++i) {
    if ((*classes)[i] != Classification::kSuperseded && batch[i].signature != nullptr && batch[i].redirect_to.empty() &&
        batch[i].signature->shingles_size() > 0) {
      batch_signatures_[batch[i].url] = batch[i].signature;
    }
  }
  // Only Classify reads them: queries and repairs before Apply must see the stored versions, and
  // the caller's batch may be gone by then.
  struct ClearOnExit {
    std::unordered_map<std::string, const pb::PageSignature*>* m;
    ~ClearOnExit() { m->clear(); }
  } clear_on_exit{&batch_signatures_};
  // The changed pages' representatives: the winner's signature, or when the page is the winner,
  // its previous version. Found first and hinted to the source together, then fetched. A winner
  // recrawled in this batch is met in its new version only by the pages after its record: a page
  // before it meets the version the store holds, as it would had the batch been cut between them.
  struct Representative {
    size_t page;                        // in the batch
    const std::string* url;             // the winner's URL (a stored record's: stable here)
    const pb::Tier1Page* record;        // the winner's page record
    bool stored;                        // R is the stored version: the page's own, or the winner's
  };
  std::vector<Representative> reps;
  for (size_t i = 0; i < batch.size(); ++i) {
    Classification& classification = (*classes)[i];
    if (classification == Classification::kSuperseded) continue;
    const PageUpdate& u = batch[i];
    if (u.gone) { classification = Classification::kGone; continue; }
    if (!u.redirect_to.empty()) { classification = Classification::kRedirect; continue; }
    if (u.signature->shingles_size() == 0) { classification = Classification::kEmpty; continue; }
    classification = Classification::kTier2;
    ASSIGN_OR_RETURN(const pb::Tier1Page* page, txn_.FindPage(u.url));
    if (page == nullptr) continue;
    if (!page->crawled() || !page->redirect_to().empty() || !page->has_signature()) continue;
    if (page->content_digest() == u.signature->content_digest()) {
      classification = Classification::kUnchanged;
      continue;
    }
    if (changed != nullptr) (*changed)[i] = true;
    if (!options_.fast_path) continue;
    ASSIGN_OR_RETURN(const pb::Tier1Group* group, txn_.FindGroup(page->group()));
    if (group == nullptr) continue;
    if (group->winner() == u.url) {
      reps.push_back({i, &u.url, page, true});
      continue;
    }
    ASSIGN_OR_RETURN(const pb::Tier1Page* winner_page, txn_.FindPage(group->winner()));
    if (winner_page == nullptr) continue;
    const auto winner_record = last.find(group->winner());
    reps.push_back({i, &group->winner(), winner_page, winner_record != last.end() && winner_record->second > i});
  }
  std::vector<SignatureRef> hint;
  hint.reserve(reps.size());
  for (const Representative& r : reps) {
    if (r.record->has_signature() && (r.stored || !batch_signatures_.contains(*r.url))) {
      hint.push_back({*r.url, r.record->home_cell()});
    }
  }
  if (!hint.empty()) source_->WillFetch(hint);
  for (const Representative& r : reps) {
    StatusOr<pb::PageSignature> rep = !r.stored                  ? FetchSignature(*r.url, *r.record)
                                      : r.record->has_signature() ? source_->Fetch(*r.url, r.record->home_cell())
                                                                  : NotFound("no stored signature");
    if (!rep.ok()) {
      if (rep.status().code() == StatusCode::kNotFound) continue;
      return rep.status();
    }
    double sim = 0;
    if (Similar(*batch[r.page].signature, *rep, options_.threshold, &sim)) {
      (*classes)[r.page] = Classification::kFastPath;
    }
  }
  return Status::Ok();
}

}  // namespace neardup::tier1
