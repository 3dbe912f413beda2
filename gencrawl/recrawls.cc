#include "gencrawl/recrawls.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace neardup::gencrawl {

uint64_t AddRecrawls(PlanBuilder* b, uint64_t count, uint32_t content_recs) {
  if (count == 0) return 0;
  CrawlPlan& p = b->plan();
  Rng& rng = b->rng();
  // Candidates: first fetches early enough to be fetched again at least a day later.
  struct Cand {
    double key;
    uint32_t rec;
  };
  std::vector<Cand> cands;
  for (uint32_t i = 0; i < content_recs; ++i) {
    const Rec& r = p.recs[i];
    if (r.time + 86400 >= kTraceSeconds) continue;
    // Efraimidis-Spirakis weighted sampling without replacement: popular pages are recrawled more.
    cands.push_back(Cand{DetLog(1.0 - rng.Uniform()) / (1.0 + r.popularity), i});
  }
  count = std::min<uint64_t>(count, cands.size());
  if (count == 0) return 0;
  auto better = [](const Cand& a, const Cand& c) { return a.key != c.key ? a.key > c.key : a.rec < c.rec; };
  std::nth_element(cands.begin(), cands.begin() + static_cast<ptrdiff_t>(count - 1), cands.end(), better);
  cands.resize(count);
  std::sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& c) { return a.rec < c.rec; });
  std::vector<uint8_t> kinds(count);
  std::vector<uint8_t> becomes_redirect(content_recs, 0);
  for (uint64_t i = 0; i < count; ++i) {
    const double t = rng.Uniform();
    kinds[i] = t < 0.45 ? kRecrawlUnchanged : t < 0.73 ? kRecrawlSmallEdit : t < 0.88 ? kRecrawlRewrite
                                                                                      : kRecrawlToRedirect;
    if (kinds[i] == kRecrawlToRedirect) becomes_redirect[cands[i].rec] = 1;
  }
  for (uint64_t i = 0; i < count; ++i) {
    const uint32_t ri = cands[i].rec;
    const Rec orig = p.recs[ri];  // copy: recs grows below
    const uint32_t earliest = orig.time + 6 * 3600;
    const uint32_t t = earliest + static_cast<uint32_t>(rng.Below(kTraceSeconds - earliest));
    const double pop = std::floor(orig.popularity * (0.8 + 0.45 * rng.Uniform()) * 1000.0 + 0.5) / 1000.0;
    switch (kinds[i]) {
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
        // Redirect to another member of the family (a mirror or copy), else to some other page.
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
