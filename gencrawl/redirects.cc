#include "gencrawl/redirects.h"

#include <algorithm>
#include <unordered_set>
#include <vector>

namespace neardup::gencrawl {
namespace {

// A fresh URL that redirects to `target_url`: its http/https twin (once per target: `flipped`
// holds the targets that have one), an old path on the same host, or a shortener link.
uint32_t RedirectSourceUrl(PlanBuilder* b, std::unordered_set<uint32_t>* flipped, uint32_t target_url,
                           bool allow_flip) {
  CrawlPlan& p = b->plan();
  Rng& rng = b->rng();
  const double v = rng.Uniform();
  if (allow_flip && v < 0.4 && flipped->insert(target_url).second) {
    Url u = p.urls[target_url];
    u.flip = 1;
    return b->AddUrl(u);
  }
  if (v < 0.7) return b->NewUrl(p.urls[target_url].host, rng.Chance(0.5) ? kStyleOldPath : kStyleCgi);
  return b->NewUrl(p.sites.shorteners[rng.Below(p.sites.shorteners.size())], kStyleShortener);
}

}  // namespace

void AddRedirects(PlanBuilder* b, uint64_t count, uint32_t content_recs) {
  if (count == 0 || content_recs == 0) return;
  CrawlPlan& p = b->plan();
  Rng& rng = b->rng();
  std::unordered_set<uint32_t> flipped;
  uint64_t used = 0;
  // Cycles: a->b->a and a->b->c->a, alternating; a few percent of the redirect records.
  const uint64_t cycles = count >= 20 ? std::max<uint64_t>(5, count * 3 / 100) : 0;
  for (bool two = true; used + (two ? 2 : 3) <= cycles; two = !two) {
    const uint32_t len = two ? 2 : 3;
    const uint32_t host = b->PickHost();
    const uint32_t first_url = static_cast<uint32_t>(p.urls.size());
    for (uint32_t i = 0; i < len; ++i) b->NewUrl(host, kStyleLoginLoop);
    const uint32_t t0 = static_cast<uint32_t>(rng.Below(kTraceSeconds - 8));
    for (uint32_t i = 0; i < len; ++i) {
      b->AddRec(kRedirectCycle, kRedirectOnly, first_url + i, kNone, first_url + (i + 1) % len, kNone, -1,
                SamplePopularity(rng, 0.5), t0 + i);
    }
    used += len;
  }
  // Chains of 2..4 redirects, ~30% of the redirect records.
  const uint64_t chain_budget = count * 30 / 100;
  uint64_t chained = 0;
  while (chain_budget - chained >= 2) {
    const uint32_t len = static_cast<uint32_t>(std::min<uint64_t>(2 + rng.Below(3), chain_budget - chained));
    const Rec& target = p.recs[rng.Below(content_recs)];
    const uint32_t target_url = target.url;
    const int32_t family = target.family;
    // Build from the end: hop[len-1] -> target, hop[i] -> hop[i+1].
    std::vector<uint32_t> hops(len);
    hops[len - 1] = RedirectSourceUrl(b, &flipped, target_url, true);
    for (uint32_t i = len - 1; i-- > 0;) {
      if (i == 0 && rng.Chance(0.5)) {
        hops[i] = b->NewUrl(p.sites.shorteners[rng.Below(p.sites.shorteners.size())], kStyleShortener);
      } else {
        const uint32_t host = b->PickHost();
        hops[i] = b->NewUrl(host, rng.Chance(0.5) ? kStyleOldPath : kStyleCgi);
      }
    }
    const uint32_t t0 = static_cast<uint32_t>(rng.Below(kTraceSeconds - 8));
    for (uint32_t i = 0; i < len; ++i) {
      b->AddRec(kRedirectChain, kRedirectOnly, hops[i], kNone, i + 1 < len ? hops[i + 1] : target_url, kNone,
                family, SamplePopularity(rng, 1.0), t0 + i);
    }
    chained += len;
  }
  used += chained;
  // Direct redirects: the rest.
  for (; used < count; ++used) {
    const Rec& target = p.recs[rng.Below(content_recs)];
    const uint32_t target_url = target.url;
    const int32_t family = target.family;
    const uint32_t src = RedirectSourceUrl(b, &flipped, target_url, true);
    const double popularity = SamplePopularity(rng, 1.0);
    const uint32_t time = b->RandomTime();
    b->AddRec(kRedirect, kRedirectOnly, src, kNone, target_url, kNone, family, popularity, time);
  }
}

}  // namespace neardup::gencrawl
