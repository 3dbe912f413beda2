#include "gencrawl/recrawls.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace neardup::gencrawl {

namespace {

// Picks a recrawl kind: 45% unchanged, 28% small edit, 15% rewrite, 12% turned into a redirect.
uint8_t PickRecrawlKind(Rng& rng) {
  const double t = rng.Uniform();
  return t < 0.45 ? kRecrawlUnchanged : t < 0.73 ? kRecrawlSmallEdit : t < 0.88 ? kRecrawlRewrite : kRecrawlToRedirect;
}

// Adds the refetch of recs[ri] (a first fetch of a content page) as `kind` at time `t`. A redirect
// leads to another member of the page's family when it has one, else to another first fetch among
// recs[0, content_recs) that does not itself become a redirect; with no such target the page is
// refetched unchanged.
void AddRefetch(PlanBuilder* b, uint32_t ri, uint8_t kind, double pop, uint32_t t,
                const std::vector<uint8_t>& becomes_redirect, uint32_t content_recs) {
  CrawlPlan& p = b->plan();
  Rng& rng = b->rng();
  const Rec orig = p.recs[ri];  // copy: recs grows below
  switch (kind) {
    case kRecrawlUnchanged:
      b->AddRec(kRecrawlUnchanged, orig.format, orig.url, orig.content, kNone, orig.content, orig.family, pop, t);
      break;
    case kRecrawlSmallEdit: {
      Content c2 = p.contents[orig.content];
      const int layer = c2.edit_shingles[0] == 0 ? 0 : 1;
      // A few substituted words: aim at a Jaccard to the previous fetch uniform in [0.80, 0.99].
      c2.edit_seed[layer] = rng.Next();
      c2.edit_shingles[layer] = EditShinglesFor(WordCount(c2, b->hosts()), 0.80 + 0.19 * rng.Uniform(), false);
      const uint32_t content = b->AddContent(c2);
      b->AddRec(kRecrawlSmallEdit, orig.format, orig.url, content, kNone, orig.content, orig.family, pop, t);
      break;
    }
    case kRecrawlRewrite: {
      const uint32_t content = b->NewContent(p.urls[orig.url].host);
      b->AddRec(kRecrawlRewrite, orig.format, orig.url, content, kNone, orig.content, -1, pop, t);
      break;
    }
    default: {
      uint32_t target = kNone;
      if (orig.family >= 0) {
        const Family& f = p.families[static_cast<size_t>(orig.family)];
        for (int tries = 0; tries < 8 && target == kNone; ++tries) {
          const uint32_t c = f.first_rec + static_cast<uint32_t>(rng.Below(f.size));
          if (c != ri && !becomes_redirect[c] && p.recs[c].url != orig.url) target = c;
        }
      }
      for (int tries = 0; tries < 64 && target == kNone; ++tries) {
        const uint32_t c = static_cast<uint32_t>(rng.Below(content_recs));
        if (c != ri && !becomes_redirect[c] && p.recs[c].url != orig.url) target = c;
      }
      if (target == kNone) {
        b->AddRec(kRecrawlUnchanged, orig.format, orig.url, orig.content, kNone, orig.content, orig.family, pop, t);
      } else {
        b->AddRec(kRecrawlToRedirect, kRedirectOnly, orig.url, kNone, p.recs[target].url, kNone,
                  p.recs[target].family, pop, t);
      }
      break;
    }
  }
}

// A content record offered for recrawl, with its Efraimidis-Spirakis key (weighted sampling
// without replacement: popular pages are recrawled more).
struct Cand {
  double key;
  uint32_t rec;
};

Cand Candidate(Rng& rng, const Rec& r, uint32_t i) { return Cand{DetLog(1.0 - rng.Uniform()) / (1.0 + r.popularity), i}; }

// Keeps the `count` candidates with the largest keys (ties: the earlier record), in record order.
void KeepSample(std::vector<Cand>* cands, uint64_t count) {
  auto better = [](const Cand& a, const Cand& c) { return a.key != c.key ? a.key > c.key : a.rec < c.rec; };
  std::nth_element(cands->begin(), cands->begin() + static_cast<ptrdiff_t>(count - 1), cands->end(), better);
  cands->resize(count);
  std::sort(cands->begin(), cands->end(), [](const Cand& a, const Cand& c) { return a.rec < c.rec; });
}

// A recrawl kind for each sampled record; the records that become redirects are marked in *mark
// (so that nothing redirects to them).
std::vector<uint8_t> PickKinds(Rng& rng, const std::vector<Cand>& cands, std::vector<uint8_t>* mark) {
  std::vector<uint8_t> kinds(cands.size());
  for (size_t i = 0; i < cands.size(); ++i) {
    kinds[i] = PickRecrawlKind(rng);
    if (kinds[i] == kRecrawlToRedirect) (*mark)[cands[i].rec] = 1;
  }
  return kinds;
}

}  // namespace

uint64_t AddRecrawls(PlanBuilder* b, uint64_t count, uint32_t content_recs) {
  if (count == 0) return 0;
  CrawlPlan& p = b->plan();
  Rng& rng = b->rng();
  // Candidates: first fetches early enough to be fetched again at least a day later.
  std::vector<Cand> cands;
  for (uint32_t i = 0; i < content_recs; ++i) {
    const Rec& r = p.recs[i];
    if (r.time + 86400 >= kTraceSeconds) continue;
    cands.push_back(Candidate(rng, r, i));
  }
  count = std::min<uint64_t>(count, cands.size());
  if (count == 0) return 0;
  KeepSample(&cands, count);
  std::vector<uint8_t> becomes_redirect(content_recs, 0);
  const std::vector<uint8_t> kinds = PickKinds(rng, cands, &becomes_redirect);
  for (uint64_t i = 0; i < count; ++i) {
    const uint32_t ri = cands[i].rec;
    const Rec& orig = p.recs[ri];
    const uint32_t earliest = orig.time + 6 * 3600;
    const uint32_t t = earliest + static_cast<uint32_t>(rng.Below(kTraceSeconds - earliest));
    const double pop = std::floor(orig.popularity * (0.8 + 0.45 * rng.Uniform()) * 1000.0 + 0.5) / 1000.0;
    AddRefetch(b, ri, kinds[i], pop, t, becomes_redirect, content_recs);
  }
  return count;
}

uint64_t AddSecondCrawlRefetches(PlanBuilder* b, uint64_t count, uint32_t content_recs, uint32_t first_recrawl) {
  if (count == 0) return 0;
  CrawlPlan& p = b->plan();
  Rng& rng = b->rng();
  // URLs the first crawl fetched again: their first fetch is not their latest version.
  std::vector<uint8_t> refetched(p.urls.size(), 0);
  for (size_t i = first_recrawl; i < p.recs.size(); ++i) refetched[p.recs[i].url] = 1;
  std::vector<Cand> cands;
  // Excluded pages are no redirect targets either (they may have become redirects or gone).
  std::vector<uint8_t> not_target(content_recs, 0);
  for (uint32_t i = 0; i < content_recs; ++i) {
    const Rec& r = p.recs[i];
    if (refetched[r.url]) { not_target[i] = 1; continue; }
    cands.push_back(Candidate(rng, r, i));
  }
  count = std::min<uint64_t>(count, cands.size());
  if (count == 0) return 0;
  KeepSample(&cands, count);
  const std::vector<uint8_t> kinds = PickKinds(rng, cands, &not_target);
  for (uint64_t i = 0; i < count; ++i) {
    const uint32_t ri = cands[i].rec;
    const uint32_t t = kTraceSeconds + static_cast<uint32_t>(rng.Below(kTraceSeconds));
    const double pop = std::floor(p.recs[ri].popularity * (0.8 + 0.45 * rng.Uniform()) * 1000.0 + 0.5) / 1000.0;
    AddRefetch(b, ri, kinds[i], pop, t, not_target, content_recs);
  }
  return count;
}

uint64_t MakeRecrawlsGone(CrawlPlan* plan, uint32_t first, double share, uint64_t seed) {
  Rng rng(Mix(seed, kSaltGone));
  uint64_t turned = 0;
  for (size_t i = first; i < plan->recs.size(); ++i) {
    Rec& r = plan->recs[i];
    if (r.kind < kRecrawlUnchanged || !rng.Chance(share)) continue;
    r.kind = kRecrawlGone;
    r.format = kGoneOnly;
    r.content = kNone;
    r.target_url = kNone;
    r.src_content = kNone;
    ++turned;
  }
  return turned;
}

}  // namespace neardup::gencrawl
